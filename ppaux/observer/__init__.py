"""Checking a sampling observer before it ships: ``ppaux check-observer`` and
``ppaux.testing.assert_pp_safe``.

The target (``module:attr`` or ``file.py:attr``: an observer, a class or a zero-argument
factory) is loaded, which runs its code; it is driven as sglang's model runner drives it
(:mod:`.drive`, on the stand-ins of :mod:`.standins` or sglang's own classes); each output goes
down the single-stage path and the PP path through one of replay's wires (:mod:`.paths`), and
the two are compared (:mod:`.compare`) into findings PP701 - PP714 (:mod:`.check`). Loading the
face imports nothing; the check imports torch.
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports

if TYPE_CHECKING:
    from ppaux.observer.check import (
        ObserverConfigError,
        ObserverOptions,
        check_loaded,
        check_observer,
        observer_report,
    )
    from ppaux.observer.standins import StandInBatch, StandInRequest, StandInSamplingInfo
    from ppaux.observer.target import (
        LoadedObserver,
        TargetError,
        load_observer,
        load_outputs,
        observer_from,
        target_files,
    )

_EXPORTS = {
    "ObserverConfigError": "check",
    "ObserverOptions": "check",
    "check_loaded": "check",
    "check_observer": "check",
    "observer_report": "check",
    "StandInBatch": "standins",
    "StandInRequest": "standins",
    "StandInSamplingInfo": "standins",
    "LoadedObserver": "target",
    "TargetError": "target",
    "load_observer": "target",
    "load_outputs": "target",
    "observer_from": "target",
    "target_files": "target",
}

__all__ = [
    "LoadedObserver",
    "ObserverConfigError",
    "ObserverOptions",
    "StandInBatch",
    "StandInRequest",
    "StandInSamplingInfo",
    "TargetError",
    "check_loaded",
    "check_observer",
    "load_observer",
    "load_outputs",
    "observer_from",
    "observer_report",
    "target_files",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
