"""The run of a check in hand (:func:`ppaux.observer.check.check_loaded`): rank 0's process
started (fresh, else forked: :func:`~ppaux.observer.handnotes.hand_rank0`), the observer
driven in this process (:func:`~ppaux.observer.runner.run_checks`), what the target did here
and in rank 0's process (forks, threads, timers) into the judge.

Imports nothing beyond the standard library at import.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppaux.limits import Limits
    from ppaux.observer.handguard import HandGuard
    from ppaux.observer.judge import Judge
    from ppaux.observer.options import ObserverOptions
    from ppaux.observer.target import LoadedObserver
    from ppaux.replay import Wire

__all__ = ["run_in_hand"]


def run_in_hand(
    loaded: LoadedObserver,
    options: ObserverOptions,
    outputs: Iterable[Any] | None,
    wire: Wire | None,
    limits: Limits,
    judge: Judge,
    notes: list[str],
    guard: HandGuard,
) -> tuple[str, str]:
    """:func:`~ppaux.observer.check.check_loaded`'s run, into ``judge``: where rank 0 ran and
    why (see :func:`~ppaux.observer.handnotes.hand_rank0`); ``guard`` is told rank 0's
    process as it starts."""
    from ppaux.observer.digests import digest_budget
    from ppaux.observer.findings import Ending
    from ppaux.observer.handapart import in_hand_endings
    from ppaux.observer.handnotes import hand_rank0
    from ppaux.observer.inhand import watched
    from ppaux.observer.parts import machinery
    from ppaux.observer.runner import run_checks

    # Before any of the target's methods run: a fresh interpreter, else a forked copy.
    rank0, how = hand_rank0(loaded, options, limits, outputs is not None, notes, guard)
    if how[0] == "stuck":  # copying the instance given did not end: no step ran
        judge.ended(Ending("timeout", how[1]))
        return how
    with watched() as seen, machinery(options, wire) as (machine, info, device, sglang_parts):
        try:
            with digest_budget(
                limits.max_digested_items, limits.max_value_nesting, limits.max_digested_elements
            ):
                run_checks(
                    loaded, options, machine, info, device, sglang_parts, outputs, judge.take, rank0
                )
        except (Exception, KeyboardInterrupt, SystemExit):
            raise  # ppaux's own errors, a person stopping it, sys.exit(): as they are
        except BaseException as exc:
            # GeneratorExit, CancelledError or a class of the target's own, raised outside
            # the methods the check drives: the target's failure, never an escape.
            judge.ended(
                Ending(
                    "exit",
                    f"its code raised {type(exc).__name__} while it was checked, outside the "
                    "methods the check drives",
                )
            )
        finally:
            if rank0 is not None:
                rank0.close()
    for ending in in_hand_endings(seen, rank0):
        judge.ended(ending)  # threads left running: a warning (PP718), not a way it ended
    return how
