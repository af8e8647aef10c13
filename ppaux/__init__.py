"""ppaux: tools for sglang's pipeline-parallel auxiliary-output transport.

Importing this package is cheap: it never imports torch, and the names below are imported on
first use. The areas are subpackages: :mod:`ppaux.dump` (reading dumps, ``inspect``),
:mod:`ppaux.skew` (fingerprints, ``check-skew``), :mod:`ppaux.replay` (the torch wing:
transport, wires, ``replay``), :mod:`ppaux.capture` (recording inside sglang),
:mod:`ppaux.sglang` (what ppaux knows of sglang) and :mod:`ppaux.report` (findings, formats);
:mod:`ppaux.fix` rewrites dumps (``tensorize``, torch wing) and :mod:`ppaux.guard` checks a PP
tensor dict in the code that writes it.
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports
from ppaux._version import __version__

if TYPE_CHECKING:
    from ppaux.dump import inspect_paths, read_dump
    from ppaux.errors import DumpError, LimitExceeded, PpauxError
    from ppaux.limits import Limits
    from ppaux.replay import replay_paths
    from ppaux.report import Finding, Report
    from ppaux.skew import Fingerprint

#: Each public name and the module that holds it, imported on first use.
_EXPORTS = {
    "PpauxError": "errors",
    "DumpError": "errors",
    "LimitExceeded": "errors",
    "Limits": "limits",
    "Finding": "report",
    "Report": "report",
    "read_dump": "dump",
    "inspect_paths": "dump",
    "Fingerprint": "skew",
    "replay_paths": "replay",
}

__all__ = [
    "DumpError",
    "Finding",
    "Fingerprint",
    "LimitExceeded",
    "Limits",
    "PpauxError",
    "Report",
    "__version__",
    "inspect_paths",
    "read_dump",
    "replay_paths",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
