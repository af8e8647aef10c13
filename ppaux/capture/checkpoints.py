"""Checkpoints along sglang's PP output path: a cheap look at each output message, hop by hop.

The last stage builds an output message (``add_auxiliary_output_to_pp_tensors`` inside
``_pp_prepare_tensor_dict``), queues it, and sends it (``_pp_send_dict_to_next_stage``, then the
PP group's ``send_tensor_dict``); rank 0 receives it (``recv_tensor_dict``) and pops the
auxiliary values. At each of these hops the capture looks at the message: its keys with the
auxiliary prefix, and ``torch.is_tensor`` of their values. A look never changes the dict, the
call or its result. Only output messages are looked at.

A message is followed by the identity of its dict (one small integer per message while it is
healthy). The first hop where it carries a non-tensor auxiliary value starts its *trail*: the
hops it passed clean, then the dirty one. On the last stage the capture is written at once,
before the message goes on, with the trail and the *culprit* (:mod:`ppaux.capture.culprit`);
rank 0's capture at pop carries rank 0's own trail. In strict mode the last stage raises at that
hop with the message sglang's own sender uses for that value.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any

from ppaux.capture.hops import HOP_TARGETS, HOP_TEXT, HOPS, SENDER_HOPS
from ppaux.capture.settings import MAX_FOLLOWED_MESSAGES
from ppaux.capture.state import STATE
from ppaux.capture.trail import Followed, Trail
from ppaux.sglang import ADD_NOT_TENSOR, OUTPUT_PREFIX

__all__ = [
    "dirty_values",
    "is_first_rank",
    "is_release",
    "look",
    "look_at_add",
    "look_at_pop",
    "trail_for",
]

_BIT = {hop: 1 << i for i, hop in enumerate(HOPS)}
_ADD_BIT = _BIT["add"]

# The hop that starts a message's record on each side (earlier bits are then stale).
_FIRST = {"add", "recv"}
# prepare starts it as well when add was only noted (see look_at_add).
# The hops after which a message is forgotten.
_LAST = {"sent", "pop"}

_TENSOR: type | None = None


def _tensor_class() -> type:
    global _TENSOR
    if _TENSOR is None:
        import torch  # already loaded wherever sglang runs

        _TENSOR = torch.Tensor
    return _TENSOR


def dirty_values(tensors: Mapping[object, object], start: int = 0) -> Sequence[tuple[str, str]]:
    """(auxiliary name, type name) of every prefixed value of ``tensors`` that is not a tensor,
    in the dict's order; with ``start`` > 0, of its items from that position on only (what add
    inserted). Empty (a shared empty tuple) when there is none."""
    tensor = _TENSOR or _tensor_class()
    found: list[tuple[str, str]] | None = None
    if tensors.__class__ is dict:
        # A plain dict: its items in one pass, the value tested first (a tensor, nearly always,
        # settles an entry without looking at its key).
        items = tensors.items() if start <= 0 else itertools.islice(tensors.items(), start, None)
        for key, value in items:
            if (
                not isinstance(value, tensor)  # what torch.is_tensor tests
                and key.__class__ is str
                and key.startswith(OUTPUT_PREFIX)
            ):
                if found is None:
                    found = []
                found.append((key[len(OUTPUT_PREFIX) :], type(value).__qualname__))
        return found or ()
    # Another mapping: each value as its own item lookup gives it.
    keys = tensors if start <= 0 else itertools.islice(tensors, start, None)
    for key in keys:
        if key.__class__ is str and key.startswith(OUTPUT_PREFIX):
            value = tensors[key]
            if not isinstance(value, tensor):
                if found is None:
                    found = []
                found.append((key[len(OUTPUT_PREFIX) :], type(value).__qualname__))
    return found or ()


def look(
    hop: str,
    tensors: Mapping[object, object],
    original: Callable[..., Any],
    last_stage: object,
    start: int = 0,
    last: bool = False,
    forget: bool = False,
) -> BaseException | None:
    """Look at an output message at ``hop``; return the strict-mode error to raise, if any.

    ``last_stage``: True or False, or the PP group, whose ``is_last_rank`` is asked only when
    the message is dirty. ``original`` is the function the hook wraps there (what runs inside
    the look); ``start`` > 0 looks only at the items from that position on (at add: what add
    inserted, the rest having been looked at by the hops before or being looked at by the
    next). ``last``: this is the sender's last look at the message (the send hop when sglang's
    own send runs inside it), after which it is forgotten. ``forget``: a message found clean
    here needs no record (recv on rank 0, where pop and a failing pop's capture use only a trail
    found dirty; a middle stage keeps it, for the trail of the message it passes on). Never
    raises.
    """
    try:
        if start <= 0 and tensors.__class__ is dict:
            # The healthy path, kept short (it runs with cold caches, between the host's own
            # work): the values in one pass, a tensor settling an entry without its key.
            tensor = _TENSOR or _tensor_class()
            dirty = False
            for name, value in tensors.items():
                if (
                    not isinstance(value, tensor)
                    and name.__class__ is str
                    and name.startswith(OUTPUT_PREFIX)
                ):
                    dirty = True
                    break
        else:
            dirty = bool(dirty_values(tensors, start))
        messages = STATE.messages
        key = id(tensors)
        seen = messages.get(key, 0)
        if dirty or seen.__class__ is not int:
            return _look_closer(hop, tensors, original, last_stage, start, last, key, seen)
        # Clean, and followed clean so far.
        if last or forget or hop in _LAST:
            if seen:
                messages.pop(key, None)  # another thread may have forgotten it already
        else:
            if hop == "prepare" and STATE.last_add == key:
                seen = _ADD_BIT  # sglang's own add ran on it, through ppaux's hook
                STATE.last_add = None
            messages[key] = _BIT[hop] if hop in _FIRST else seen | _BIT[hop]
            if len(messages) > MAX_FOLLOWED_MESSAGES:
                del messages[next(iter(messages))]  # the oldest
        if STATE.trace_armed is not None:
            _tracer.at_clean_hop(hop, tensors)
        return None
    except Exception as error:  # never into the host
        from ppaux.capture.writer import note_failure

        note_failure(f"could not look at the message at {HOP_TEXT.get(hop, hop)}", error)
        return None


def _look_closer(
    hop: str,
    tensors: Mapping[object, object],
    original: Callable[..., Any],
    last_stage: object,
    start: int,
    last: bool,
    key: int,
    seen: Followed,
) -> BaseException | None:
    """:func:`look` for a message that is dirty at ``hop`` or already followed dirty (``seen``:
    its record under ``key``, hop bits or its trail)."""
    dirty = dirty_values(tensors, start)
    messages = STATE.messages
    if isinstance(seen, int):  # dirty, for the first time
        if hop == "prepare" and STATE.last_add == key:
            seen = _ADD_BIT
            STATE.last_add = None
        error = _first_dirty(
            hop, tensors, original, dirty, 0 if hop in _FIRST else seen, last_stage
        )
        if last:
            messages.pop(key, None)
        return error
    seen.add(hop, dirty)
    if last or hop == "sent":  # at pop, the capture of the failing pop takes the trail
        messages.pop(key, None)
    return None


def _first_dirty(
    hop: str,
    tensors: Mapping[object, object],
    original: Callable[..., Any],
    dirty: Sequence[tuple[str, str]],
    seen: int,
    last_stage: object,
) -> BaseException | None:
    from ppaux.capture import culprit as culprits
    from ppaux.capture.writer import record

    clean = [h for h in HOPS if seen & _BIT[h]]
    trail = Trail(clean)
    trail.add(hop, dirty)
    STATE.messages[id(tensors)] = trail
    config = STATE.config
    if hop not in SENDER_HOPS:
        return None  # rank 0: the capture at pop carries this trail
    last_clean = clean[-1] if clean and clean[-1] in SENDER_HOPS else None
    traced = _tracer.finish(tensors)
    trail.culprit = culprits.resolve(
        last_clean, hop, original, STATE.scheduler_type, STATE.group_type, traced
    )
    if traced is None and last_clean is not None:
        _tracer.arm(last_clean, hop)
    error: BaseException | None = None
    if config is not None and config.strict and _is_last_stage(last_stage):
        # The message sglang's own sender (add) gives for this value.
        error = RuntimeError(ADD_NOT_TENSOR.format(dirty[0][0]))
    if config is not None and not trail.captured:
        trail.captured = True
        function = HOP_TARGETS[hop].rsplit(".", 1)[1]
        record(function, config, error, dict(tensors.items()), None, trail.extra())
    return error


def _is_last_stage(last_stage: object) -> bool:
    """``last_stage`` as given to :func:`look`: a bool, or the PP group (a GroupCoordinator),
    asked only here, at a first dirty hop, so that healthy messages never pay for it."""
    if last_stage is True or last_stage is False:
        return last_stage
    try:
        return bool(getattr(last_stage, "is_last_rank", False))
    except Exception:
        return False


# id(function) -> whether it is sglang's release code (its digest is the release table's); the
# functions are kept so that their ids stay theirs while cached.
_RELEASE: dict[int, bool] = {}
_KEPT: list[Any] = []


def is_release(function: object) -> bool:
    """True when ``function`` is sglang's release code by the release table's digests (cached)."""
    known = _RELEASE.get(id(function))
    if known is None:
        from ppaux.capture.culprit import provenance

        known = provenance(function)["code"] == "release"
        _RELEASE[id(function)] = known
        _KEPT.append(function)
    return known


# id(PP group) -> whether this process is its first rank (rank 0), asked once per group; the
# groups are kept so that their ids stay theirs.
_FIRST_RANK: dict[int, bool] = {}


def is_first_rank(group: object) -> bool:
    """True when ``group`` (a GroupCoordinator) says this process is its first rank; False when
    it says otherwise or cannot say. Asked once per group."""
    known = _FIRST_RANK.get(id(group))
    if known is None:
        try:
            known = bool(getattr(group, "is_first_rank", False))
        except Exception:
            known = False
        _FIRST_RANK[id(group)] = known
        _KEPT.append(group)
    return known


def look_at_add(
    tensors: Mapping[object, object], original: Callable[..., Any], before: int
) -> BaseException | None:
    """The add hop, after add returned: what add inserted (the items from ``before`` on).

    When the add that ran is sglang's release code, it refused every non-tensor it was given
    (and a refusal is captured as a failing add), so there is nothing to look at: the hop is
    only noted, for the next hop's trail. Never raises.
    """
    try:
        if is_release(original):
            STATE.last_add = id(tensors)
            if STATE.trace_armed is not None:
                _tracer.at_clean_hop("add", tensors)
            return None
    except Exception:
        pass
    return look("add", tensors, original, True, before)


def look_at_pop(tensors: Mapping[object, object]) -> None:
    """The pop hop: pop checks every value itself and the capture of a failing pop takes the
    message as it is, so only a message already followed dirty (from recv) is looked at."""
    try:
        found = STATE.messages.pop(id(tensors), None)
        if isinstance(found, Trail):
            found.add("pop", dirty_values(tensors))
            STATE.messages[id(tensors)] = found
    except Exception as error:  # never into the host
        from ppaux.capture.writer import note_failure

        note_failure("could not look at the message at pop", error)


def trail_for(tensors: object) -> dict[str, Any] | None:
    """The capture fields of the message ``tensors`` when it was followed dirty, else None."""
    try:
        found = STATE.messages.pop(id(tensors), None)
    except Exception:
        return None
    # A trail of the failing hop alone says nothing the capture does not: leave it out.
    if isinstance(found, Trail) and len(found.hops) > 1:
        return found.extra()
    return None


class _LineTracer:
    """After a first dirty message, trace the next one from its last clean hop to its first
    dirty hop, to find the line that wrote the value. Healthy traffic is never traced."""

    def __init__(self) -> None:
        self.watched: Any = None
        self.thread: int | None = None
        self.found: tuple[Any, int, Any] | None = None
        self.last: tuple[Any, int, Any] | None = None
        self.frames: list[Any] = []

    def arm(self, start: str, end: str) -> None:
        STATE.trace_armed = (start, end)

    def at_clean_hop(self, hop: str, tensors: object) -> None:
        armed = STATE.trace_armed
        if armed is None:
            return
        if self.watched is not None:
            if self.watched is tensors and (hop == armed[1] or hop in _LAST):
                self.finish(tensors)  # clean this time: stop, and trace the next one
                STATE.trace_armed = armed
            return
        if armed[0] != hop:
            return
        self.watched = tensors
        self.thread = threading.get_ident()
        self.found = None
        self.last = None
        frame: Any = sys._getframe(1)
        self.frames = []
        while frame is not None:  # lines of the callers count too: the write may be there
            frame.f_trace = self._local
            self.frames.append(frame)
            frame = frame.f_back
        sys.settrace(self._global)

    def _global(self, frame: FrameType, event: str, arg: object) -> Any:
        return self._local

    def _local(self, frame: FrameType, event: str, arg: object) -> Any:
        if self.watched is None or self.found is not None:
            return None
        try:
            if self.last is not None and dirty_values(self.watched):
                self.found = self.last
                return None
        except Exception:
            return None
        if event == "line":
            self.last = (frame.f_code, frame.f_lineno, frame.f_globals.get("__name__"))
        return self._local

    def finish(self, tensors: object) -> tuple[Any, int, Any] | None:
        """Stop tracing; the (code, line, module name) that made ``tensors`` dirty, if it was
        traced."""
        if self.watched is None or threading.get_ident() != self.thread:
            return None
        watched, found = self.watched, self.found
        sys.settrace(None)
        for frame in self.frames:
            frame.f_trace = None
        self.frames = []
        self.watched = None
        STATE.trace_armed = None
        return found if watched is tensors else None


_tracer = _LineTracer()
