"""Checking a sampling observer before it ships: ``ppaux check-observer`` and
``ppaux.testing.assert_pp_safe``.

The target (``module:attr`` or ``file.py:attr``: an observer, a class or a zero-argument
factory) runs in a child process of its own (:mod:`.child`, :mod:`.worker`): there it is loaded,
which runs its code, and driven as sglang's model runner drives it (:mod:`.drive`, on the
stand-ins of :mod:`.standins` or sglang's own classes); each output goes down the single-stage
path and the PP path through one of replay's wires (:mod:`.paths`), and what happened is sent
back as records (:mod:`.runner`, :mod:`.framing`). This process compares them (:mod:`.compare`)
and judges them into findings PP701 - PP715 (:mod:`.judge`, :mod:`.check`), importing neither
torch nor the target. An object already in hand is run in-process and judged the same way.
Loading the face imports nothing.
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
