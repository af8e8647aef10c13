"""The hooks ppaux puts around sglang's PP output path, with the signature of an sglang AROUND
hook: ``hook(original_fn, *args, **kwargs)``.

* :func:`around_add` and :func:`around_pop` capture the dict when sglang's add or pop raises
  (and, with ``when='always'``, sampled healthy calls); they are also the checkpoints of the
  hops "add returned" and "pop called".
* :mod:`ppaux.capture.hop_hooks` holds the checkpoints of the scheduler's and the PP group's
  hops, and every fixed-signature form: the cheaper versions of these two hooks for the
  parameters of sglang's releases (chosen by its ``hook_for``) and the stand-ins
  :func:`ppaux.capture.install` puts in place.

The sglang plugin registers the hooks with sglang's ``HookRegistry``
(:func:`ppaux.capture.plugin.register_plugin_hooks`); :func:`ppaux.capture.install` wraps the
targets itself (:mod:`ppaux.capture.patching`). The
healthy path adds an attribute load, a test and a try block; everything else is off it. The
capture never raises into, blocks or changes its host, except in strict mode, on purpose.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sized
from typing import Any

from ppaux.capture.checkpoints import (
    look_at_add,
    look_at_pop,
    trail_for,
)
from ppaux.capture.markers import HOOK_MARK, WRAPPER_MARK
from ppaux.capture.settings import CaptureConfig
from ppaux.capture.state import STATE
from ppaux.capture.writer import note_failure, record
from ppaux.sglang import (
    ADD,
    OUTPUT_PREFIX,
    POP,
)

__all__ = [
    "around_add",
    "around_pop",
    "capture_add",
    "capture_original",
    "capture_pop",
    "sampled_call",
    "size_of",
]


def around_add(original: Callable[..., Any], *args: object, **kwargs: object) -> Any:
    """AROUND hook for ``add_auxiliary_output_to_pp_tensors``: capture when it raises."""
    config = STATE.config
    if config is None:
        return original(*args, **kwargs)
    if STATE.sampling and next(STATE.counters[ADD]) % config.sample_every == 0:
        return sampled_call(ADD, config, original, args, kwargs)
    # add inserts new keys one by one and stops at the first bad entry; a dict keeps
    # insertion order, so its first `before` items are the dict as it was at the call.
    given = args[0] if args else kwargs.get("tensors")
    before = len(given) if given.__class__ is dict else size_of(given)
    try:
        result = original(*args, **kwargs)
    except Exception as exc:
        capture_add(config, exc, args, kwargs, before)
        raise
    if isinstance(given, dict) and before >= 0:
        error = look_at_add(given, original, before)
        if error is not None:
            raise error
    return result


def around_pop(original: Callable[..., Any], *args: object, **kwargs: object) -> Any:
    """AROUND hook for ``pop_auxiliary_output_from_pp_tensors``: capture when it raises."""
    config = STATE.config
    if config is None:
        return original(*args, **kwargs)
    if STATE.sampling and next(STATE.counters[POP]) % config.sample_every == 0:
        return sampled_call(POP, config, original, args, kwargs)
    if STATE.messages:
        look_at_pop(_argument(args, kwargs, 0, "tensors"))
    try:
        return original(*args, **kwargs)
    except Exception as exc:
        # pop changes the dict only after every check passed, so on error it is as it came.
        capture_pop(config, exc, args, kwargs)
        raise


def size_of(tensors: object) -> int:
    """``len(tensors)``; -1 when ``tensors`` has no length or its ``__len__`` fails."""
    try:
        return len(tensors) if isinstance(tensors, Sized) else -1
    except Exception:
        return -1


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name)


def capture_add(
    config: CaptureConfig,
    exc: BaseException,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    before: int,
) -> None:
    """Record a failing add: the dict as it was before the call, ``before`` its entries then."""
    try:
        snapshot = _snapshot(_argument(args, kwargs, 0, "tensors"), before)
        output = _output_tensors(_argument(args, kwargs, 1, "output"))
    except Exception as error:  # never into the host
        note_failure("could not read the arguments of the failing call", error)
        return
    record(ADD, config, exc, snapshot, output)


def capture_pop(
    config: CaptureConfig, exc: BaseException, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Record a failing pop: the dict it was given and the trail of its hops."""
    try:
        snapshot = _snapshot(_argument(args, kwargs, 0, "tensors"), -1)
    except Exception as error:
        note_failure("could not read the arguments of the failing call", error)
        return
    record(POP, config, exc, snapshot, None, trail_for(_argument(args, kwargs, 0, "tensors")))


def sampled_call(
    function: str,
    config: CaptureConfig,
    original: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Run a call chosen for 'always' recording: copy the dict first, record after."""
    try:
        tensors = _argument(args, kwargs, 0, "tensors")
        snapshot = _snapshot(tensors, -1)
        before = len(snapshot) if isinstance(snapshot, dict) else -1
    except Exception:
        tensors, snapshot, before = None, None, -1
    try:
        result = original(*args, **kwargs)
    except Exception as exc:
        if snapshot is not None:
            output = None
            if function == ADD:
                output = _output_tensors(_argument(args, kwargs, 1, "output"))
            record(function, config, exc, snapshot, output)
        raise
    if snapshot is not None:
        output = None
        if function == ADD:
            try:  # what add inserted: every item after the ones that were there
                added = itertools.islice(tensors.items(), before, None)
                output = {k[len(OUTPUT_PREFIX) :]: v for k, v in added} or None
            except Exception:
                output = None
        record(function, config, None, snapshot, output)
    return result


def _snapshot(tensors: object, before: int) -> Any:
    """A plain-dict copy of the tensor dict (its first ``before`` items when that is >= 0)."""
    if isinstance(tensors, Mapping):
        items = tensors.items()
        if before >= 0:
            return dict(itertools.islice(items, before))
        return dict(items)
    return tensors


def _output_tensors(output: object) -> Any:
    """The add-side output's tensors, asked for once more; None when it has none."""
    if output is None:
        return None
    to_pp_tensors = getattr(output, "to_pp_tensors", None)
    if to_pp_tensors is None:
        return None
    try:
        tensors = to_pp_tensors()
    except Exception:
        return None
    if isinstance(tensors, Mapping):
        return dict(tensors.items())
    return tensors


# The other hooks are marked where they live (ppaux.capture.hop_hooks).
for _hook in (around_add, around_pop):
    setattr(_hook, HOOK_MARK, True)


def capture_original(function: object) -> Any:
    """The function that ``function`` runs, if it is a ppaux capture wrapper; else None.

    Recognises the wrappers of :func:`ppaux.capture.install` and the AROUND wrappers sglang's
    ``HookRegistry`` builds around this module's hooks (their closure holds the hook). Only
    looks at attributes and closure cells; calls nothing. For tools that check whether the
    transport was patched.
    """
    inner = getattr(function, "__wrapped__", None)
    if inner is None:
        return None
    if getattr(function, WRAPPER_MARK, False):
        return inner
    for cell in getattr(function, "__closure__", None) or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if getattr(contents, HOOK_MARK, False) and callable(contents):
            return inner
    return None
