"""Copying an instance given in hand (``assert_pp_safe``): its deep copy for rank 0 and its
pickling for a fresh rank 0 run the instance's own ``__deepcopy__``, ``__reduce_ex__`` or
``__getstate__``, in the checking process, before any step's clock.

sglang never copies nor pickles an observer: each scheduler builds its own. So what those
methods do is ppaux's doing, not the observer's, and two things are kept from it:

- a method that never returns (one that waits for a flush nothing starts) is not waited for
  past the check's ``timeout_s`` (:func:`in_time`): it runs in a daemon thread, which is left
  where it waits (a daemon thread does not keep the interpreter from exiting), and the check
  ends with a finding that names the step (:func:`stuck`);
- a ``__getstate__`` that changes the instance's own attributes (one that pops an unpicklable
  lock from the live ``__dict__`` rather than from a copy of it) does not change what the
  last stage runs (:func:`kept_as_given`): the instance's attributes are put back as they
  were before, and the report's note says which were changed (:func:`changed_note`).

Imports nothing beyond the standard library and :mod:`ppaux.errors`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ppaux.errors import PpauxError

__all__ = ["Stuck", "changed_note", "in_time", "kept_as_given", "stuck"]

T = TypeVar("T")


class Stuck(PpauxError):
    """The step ``step`` ('deep-copying the instance', 'pickling the instance') did not end
    within ``timeout_s`` seconds; its thread is left where it waits."""

    def __init__(self, step: str, timeout_s: float) -> None:
        super().__init__(f"{step} did not end within {timeout_s:g} s")
        self.step = step
        self.timeout_s = timeout_s


def in_time(call: Callable[[], T], timeout_s: float | None, step: str) -> T:
    """``call()``'s value, or what it raised, where it ends within ``timeout_s`` seconds
    (None: no bound, it runs here); else :class:`Stuck` naming ``step``."""
    if timeout_s is None:
        return call()
    done: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            done.append((True, call()))
        except BaseException as exc:  # the instance's own method raised: raised where asked
            done.append((False, exc))

    thread = threading.Thread(target=run, name=f"ppaux {step}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not done:
        raise Stuck(step, timeout_s)
    ok, value = done[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def stuck(exc: Stuck) -> str:
    """What the finding of a check stopped at ``exc`` says: the step, its bound, what to do."""
    return (
        f"{exc.step} for rank 0 (its own __deepcopy__, __reduce_ex__ or __getstate__, run by "
        f"ppaux{'' if 'rank 0' in exc.step else ' in the checking process'}) did not end "
        "within the check's timeout "
        f"({exc.timeout_s:g} s); no step ran, and its thread is left waiting (a daemon thread, "
        "which does not keep the process from exiting); sglang never copies an observer: give "
        "the class or a factory (assert_pp_safe(MyObserver)) to have rank 0 build its own, or "
        "make the copy return"
    )


def _attributes(value: object) -> dict[str, Any] | None:
    """``value``'s own ``__dict__`` (not a copy), read without its ``__getattribute__``; None
    where it has none."""
    try:
        found = object.__getattribute__(value, "__dict__")
    except Exception:  # no __dict__ (__slots__), or a descriptor of its class's that raises
        return None
    return found if type(found) is dict else None


def kept_as_given(call: Callable[[], T], value: object) -> tuple[T, list[str]]:
    """``call()``'s value (a copy or pickling of ``value``) and the names of ``value``'s own
    attributes it added, removed or rebound, each put back as it was before (also where
    ``call`` raised)."""
    attributes = _attributes(value)
    before = dict(attributes) if attributes is not None else None
    changed: list[str] = []
    try:
        result = call()
    finally:
        if attributes is not None and before is not None:
            changed = _put_back(attributes, before)
    return result, changed


def _put_back(attributes: dict[str, Any], before: dict[str, Any]) -> list[str]:
    """Make ``attributes`` hold ``before`` again; the names that differed."""
    differ = attributes.keys() ^ before.keys()
    differ |= {k for k in before.keys() & attributes.keys() if attributes[k] is not before[k]}
    if differ:
        attributes.clear()
        attributes.update(before)
    return sorted(str(name) for name in differ)


def changed_note(names: list[str], how: str) -> str:
    """The report's note for an instance whose attributes ``names`` its own copying (``how``:
    'deep-copying', 'pickling') changed, and ppaux put back."""
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (
        f"{how} the instance given for rank 0 changed its own attributes ({shown}: its "
        "__getstate__ or __reduce_ex__ changed the instance rather than a copy of its state); "
        "ppaux put them back as they were before the check ran them, as sglang never copies "
        "an observer"
    )
