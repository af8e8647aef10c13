"""What the checking process loads before the target runs in its child: every module it needs
to judge the run and to write the report in any format, so that a target writing ppaux's own
installed files changes nothing this process runs."""

from __future__ import annotations

__all__ = ["load_judge"]


def load_judge() -> None:
    """Import, before the child starts, every module this process needs to judge the run and
    to write its report in any format: the target can write ppaux's own files (an editable
    install, a virtual environment of the same user), and a module first imported after it ran
    would be the target's code running in the judge."""
    import importlib
    import os
    import pkgutil

    from ppaux.report import load_writers

    # This package's modules: the judge, the endings' findings and notes, the release note.
    for module in pkgutil.walk_packages([os.path.dirname(__file__)], f"{__package__}."):
        importlib.import_module(module.name)
    load_writers()
