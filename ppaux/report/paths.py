"""Paths as code hosts want them: relative to the repository root, absolute only outside it.

GitHub annotations, GitLab code-quality issues and SARIF results attach to a file only when its
path is relative to the repository root; ppaux reports a path as the user gave it, relative to
the working directory or absolute. :func:`rebase_report` rewrites the paths of a report's
findings and unreadable inputs for those formats. The root is ``--root`` or, by default,
:func:`find_root`: the working tree of the git repository that holds the working directory.

Only paths are rewritten: an absolute path, and a relative one that names something on disk.
Other places (a distributed stage's ``rank 1 (host)``, ``-`` for standard input) stay as they
are.
"""

from __future__ import annotations

import dataclasses
import os

from ppaux.report.document import Report
from ppaux.report.findings import Location

__all__ = ["find_root", "rebase_report", "shown_path"]


def find_root(start: str) -> str | None:
    """The top of the git working tree that holds ``start`` (the nearest directory upward with a
    ``.git`` directory or file, as worktrees and submodules have), or None outside any."""
    here = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _inside(path: str, root: str) -> str | None:
    relative = os.path.relpath(path, root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return None
    return relative


def shown_path(path: str, root: str, cwd: str) -> str:
    """``path`` (as given, relative to ``cwd``) relative to ``root`` with ``/`` separators, or
    absolute when it lies outside ``root``; a relative name of nothing on disk is kept."""
    if not os.path.isabs(path) and not os.path.lexists(os.path.join(cwd, path)):
        return path
    absolute = os.path.normpath(os.path.join(cwd, path))
    relative = _inside(absolute, os.path.normpath(root))
    if relative is None:
        # The root may be reached through a symbolic link (or the path through one into it).
        relative = _inside(os.path.realpath(absolute), os.path.realpath(root))
    if relative is None:
        return absolute
    return relative.replace(os.sep, "/")


def _rebased_location(location: Location | None, root: str, cwd: str) -> Location | None:
    # A location's file (a log line for triage, a method's source for check-observer, the
    # culprit's frame for capture) is where an annotation lands, so it is rebased like the path.
    if location is None:
        return None
    return dataclasses.replace(location, file=shown_path(location.file, root, cwd))


def rebase_report(report: Report, root: str, cwd: str) -> Report:
    """A copy of ``report`` whose findings (their locations' files too) and unreadable inputs
    name their paths by :func:`shown_path`; everything else is shared with ``report``."""
    findings = [
        dataclasses.replace(
            f,
            path=shown_path(f.path, root, cwd),
            location=_rebased_location(f.location, root, cwd),
        )
        for f in report.findings
    ]
    problems = [dataclasses.replace(p, path=shown_path(p.path, root, cwd)) for p in report.problems]
    return dataclasses.replace(report, findings=findings, problems=problems)
