"""A copy of this checkout, as a user's clone would have it, for tests that install ppaux.

The copy holds the files git tracks and the untracked ones it does not ignore (so a test sees
work not yet committed), never a virtual environment or a build directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

__all__ = ["REPO", "clean_env", "commit_all", "copy_checkout"]


def copy_checkout(dest: Path) -> Path:
    """Copy the checkout's files to ``dest`` (created) and return it."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "surrogateescape")
    dest.mkdir(parents=True)
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not source.is_file():  # deleted in the work tree but not yet in the index
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return dest


def commit_all(repo: Path) -> str:
    """Make ``repo`` a git repository with everything in it committed; return the commit."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "ppaux tests",
        "GIT_AUTHOR_EMAIL": "tests@ppaux",
        "GIT_COMMITTER_NAME": "ppaux tests",
        "GIT_COMMITTER_EMAIL": "tests@ppaux",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--no-gpg-sign", "-m", "copy"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def clean_env(scratch: Path, *extra_path: Path) -> dict[str, str]:
    """The environment of a new shell: no virtual environment of this test run on ``PATH``
    (so ``ppaux`` is only what a recipe installs), torch, where a recipe asks for it, pinned to
    the CPU build that ``.ci/run`` installs (a constraints file in ``scratch``), and pip's
    ahead-of-time compiling off (``PIP_COMPILE=0``, pip's ``--no-compile``; torch alone has
    thousands of modules): what a recipe's commands import compiles as they run, and the
    recipes' own lines are unchanged."""
    ours = Path(sys.executable).parent
    path = [
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if p and Path(p).resolve() != ours.resolve()
    ]
    scratch.mkdir(parents=True, exist_ok=True)
    constraints = scratch / "constraints.txt"
    constraints.write_text("torch==2.13.0\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV")
    }
    env.update(
        PIP_CONSTRAINT=str(constraints),
        PIP_COMPILE="0",
        NO_COLOR="1",
        PATH=os.pathsep.join([*map(str, extra_path), *path]),
    )
    return env
