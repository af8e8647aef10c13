"""The checkpoint hooks on the scheduler's and the PP group's methods (the hops "prepare
returned", "send_dict called", "send called" / "send returned" and "recv returned"), and every
fixed-signature wrapper of the capture: the forms of :mod:`ppaux.capture.hooks`' add and pop
hooks for the parameters of sglang's releases (:func:`hook_for` picks one), the methods' fixed
wrappers (:func:`fixed_wrapper`) and the stand-ins install() puts in place (:func:`wrap`,
:func:`method_wrapper`).

Each hook has the signature of an sglang AROUND hook, ``hook(original_fn, *args, **kwargs)``
(``self`` first in ``args``), and takes any call its target takes; the sglang plugin registers
these. For :func:`ppaux.capture.install`, which wraps the function it has in hand,
:func:`fixed_wrapper` gives a cheaper wrapper when that function's parameters are exactly those
of sglang's releases (0.5.18 - 0.5.23, :data:`ppaux.sglang.HOP_SHAPES`): it takes the same
parameters with the same defaults and hands them on by position, so that no argument tuple or
keyword dict is built per call (most of what a generic wrapper costs). A hook never changes the
call, its arguments or its result.

Each hook does its look itself, without a helper function: every healthy output message passes
here, between the host's own work, where each Python call costs (docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from ppaux.capture.checkpoints import is_first_rank, is_release, look, look_at_add, look_at_pop
from ppaux.capture.hooks import (
    around_add,
    around_pop,
    capture_add,
    capture_pop,
    sampled_call,
    size_of,
)
from ppaux.capture.hops import HOP_TARGETS
from ppaux.capture.markers import HOOK_MARK, WRAPPER_MARK
from ppaux.capture.state import STATE
from ppaux.sglang import ADD, HOP_SHAPES, MSG_TYPE_KEY, OUTPUT_MSG_TYPE, POP, TRANSPORT_SHAPES

__all__ = [
    "METHOD_HOOKS",
    "around_prepare",
    "around_recv",
    "around_send",
    "around_send_dict",
    "fixed_wrapper",
    "hook_for",
    "matches",
    "method_wrapper",
    "wrap",
]


def _sent(self: object, tensors: Mapping[object, object], original: Callable[..., Any]) -> None:
    # Only other code inside ppaux's hook (a wrapper applied before it) can change the dict
    # while it is sent, so only then is the message looked at again.
    error = look("sent", tensors, original, self)
    if error is not None:
        raise error


def _is_output(tensors: object) -> TypeGuard[dict[object, object]]:
    return tensors.__class__ is dict and tensors.get(MSG_TYPE_KEY) == OUTPUT_MSG_TYPE


# ----------------------------------------------------------------------------------------------
# The generic hooks: any call the target takes (``self`` stays inside ``args``: handing the call
# on as it came is the cheapest there is)


def around_prepare(original: Callable[..., Any], *args: object, **kwargs: object) -> Any:
    """AROUND hook for ``SchedulerPPMixin._pp_prepare_tensor_dict``: look at what it returns."""
    result = original(*args, **kwargs)
    if STATE.config is not None and result.__class__ is dict and args:
        STATE.scheduler_type = args[0].__class__
        error = look("prepare", result, original, True)
        if error is not None:
            raise error
    return result


def around_send_dict(original: Callable[..., Any], *args: object, **kwargs: object) -> Any:
    """AROUND hook for ``SchedulerPPMixin._pp_send_dict_to_next_stage``: look at an output
    message as it is handed over (parameters: self, tensor_dict, async_send, msg_type, ...)."""
    if STATE.config is not None and args:
        msg_type = kwargs.get("msg_type", args[3] if len(args) > 3 else None)
        tensors = args[1] if len(args) > 1 else kwargs.get("tensor_dict")
        if msg_type == OUTPUT_MSG_TYPE and tensors.__class__ is dict:
            STATE.scheduler_type = args[0].__class__
            error = look("send_dict", tensors, original, getattr(args[0], "pp_group", None))
            if error is not None:
                raise error
    return original(*args, **kwargs)


def around_send(original: Callable[..., Any], *args: object, **kwargs: object) -> Any:
    """AROUND hook for ``GroupCoordinator.send_tensor_dict``: look at an output message when
    it is sent and after (parameters: self, tensor_dict, dst, all_gather_group, async_send)."""
    tensors = args[1] if len(args) > 1 else kwargs.get("tensor_dict")
    if STATE.config is None or not args or not _is_output(tensors):
        return original(*args, **kwargs)
    STATE.group_type = args[0].__class__
    # sglang's own send never changes the dict: then this is the sender's last look at the
    # message, and there is no "sent" hop.
    release = is_release(original)
    error = look("send", tensors, original, args[0], last=release)
    if error is not None:
        raise error
    result = original(*args, **kwargs)
    if not release:
        _sent(args[0], tensors, original)
    return result


def around_recv(original: Callable[..., Any], *args: object, **kwargs: object) -> Any:
    """AROUND hook for ``GroupCoordinator.recv_tensor_dict``: look at a received output message."""
    result = original(*args, **kwargs)
    if STATE.config is not None and args and _is_output(result):
        look("recv", result, original, False, forget=is_first_rank(args[0]))
    return result


#: The hops hooked on methods: hop name -> (dotted target, generic hook).
METHOD_HOOKS: dict[str, tuple[str, Callable[..., Any]]] = {
    "prepare": (HOP_TARGETS["prepare"], around_prepare),
    "send_dict": (HOP_TARGETS["send_dict"], around_send_dict),
    "send": (HOP_TARGETS["send"], around_send),
    "recv": (HOP_TARGETS["recv"], around_recv),
}


# ----------------------------------------------------------------------------------------------
# The fixed forms, for the parameters of sglang's releases


def matches(target: object, shape: tuple[tuple[str, Any], ...]) -> bool:
    """True when ``target`` is a plain function whose own code takes exactly ``shape``: the same
    names in the same order, each positional-or-keyword (no ``*args``, ``**kwargs``,
    positional-only or keyword-only parameters), with equal defaults of the same type. Then a
    call binds to a function with ``shape``'s parameters as it binds to ``target``. Read from
    the code object and ``__defaults__``, never from a ``__signature__`` a decorator may have
    set."""
    code = getattr(target, "__code__", None)
    if not inspect.isfunction(target) or code is None:
        return False
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return False
    if code.co_posonlyargcount or code.co_kwonlyargcount or code.co_argcount != len(shape):
        return False
    if tuple(code.co_varnames[: len(shape)]) != tuple(name for name, _ in shape):
        return False
    wanted = [default for _, default in shape if default is not inspect.Parameter.empty]
    if any(default is inspect.Parameter.empty for _, default in shape[len(shape) - len(wanted) :]):
        return False  # a shape lists its required parameters first
    defaults = target.__defaults__ or ()
    if len(defaults) != len(wanted) or target.__kwdefaults__:
        return False
    return all(
        type(have) is type(want) and have == want
        for have, want in zip(defaults, wanted, strict=True)
    )


def fixed_wrapper(hop: str, original: Callable[..., Any]) -> Callable[..., Any] | None:
    """A wrapper for ``original`` at ``hop`` with ``original``'s own parameters, when they are
    one of :data:`ppaux.sglang.HOP_SHAPES`; None otherwise (the generic hook is then the way)."""
    for shape in HOP_SHAPES.get(hop, ()):
        if matches(original, shape):
            wrapper = _FACTORIES[(hop, len(shape))](original)
            # The same default objects as the function it stands for.
            wrapper.__defaults__ = original.__defaults__
            return wrapper
    return None


def _prepare_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: object, result: object, batch: object) -> Any:
        tensors = original(self, result, batch)
        if STATE.config is not None and tensors.__class__ is dict:
            STATE.scheduler_type = self.__class__
            error = look("prepare", tensors, original, True)
            if error is not None:
                raise error
        return tensors

    return wrapper


def _send_dict_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(
        self: object, tensor_dict: object, async_send: object = True, msg_type: object = "default"
    ) -> Any:
        if (
            msg_type == OUTPUT_MSG_TYPE
            and STATE.config is not None
            and tensor_dict.__class__ is dict
        ):
            STATE.scheduler_type = self.__class__
            error = look("send_dict", tensor_dict, original, getattr(self, "pp_group", None))
            if error is not None:
                raise error
        return original(self, tensor_dict, async_send, msg_type)

    return wrapper


# The same as _send_dict_wrapper, with ready_event (0.5.21 - 0.5.23): a wrapper must have its
# method's exact parameters, and a shared helper would cost a call on every message.
def _send_dict_ready_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(
        self: object,
        tensor_dict: object,
        async_send: object = True,
        msg_type: object = "default",
        ready_event: object = None,
    ) -> Any:
        if (
            msg_type == OUTPUT_MSG_TYPE
            and STATE.config is not None
            and tensor_dict.__class__ is dict
        ):
            STATE.scheduler_type = self.__class__
            error = look("send_dict", tensor_dict, original, getattr(self, "pp_group", None))
            if error is not None:
                raise error
        return original(self, tensor_dict, async_send, msg_type, ready_event)

    return wrapper


def _send_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    # Whether ``original`` is sglang's release code, asked once (this wrapper's function is
    # fixed; see around_send).
    release: list[bool | None] = [None]

    def wrapper(
        self: object,
        tensor_dict: object,
        dst: object = None,
        all_gather_group: object = None,
        async_send: object = False,
    ) -> Any:
        if (
            STATE.config is None
            or tensor_dict.__class__ is not dict
            or tensor_dict.get(MSG_TYPE_KEY) != OUTPUT_MSG_TYPE
        ):
            return original(self, tensor_dict, dst, all_gather_group, async_send)
        STATE.group_type = self.__class__
        known = release[0]
        if known is None:
            known = release[0] = is_release(original)
        error = look("send", tensor_dict, original, self, last=known)
        if error is not None:
            raise error
        result = original(self, tensor_dict, dst, all_gather_group, async_send)
        if not known:
            _sent(self, tensor_dict, original)
        return result

    return wrapper


def _recv_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: object, src: object = None, all_gather_group: object = None) -> Any:
        result = original(self, src, all_gather_group)
        if (
            STATE.config is not None
            and result.__class__ is dict
            and result.get(MSG_TYPE_KEY) == OUTPUT_MSG_TYPE
        ):
            look("recv", result, original, False, forget=is_first_rank(self))
        return result

    return wrapper


_FACTORIES: dict[tuple[str, int], Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    ("prepare", 3): _prepare_wrapper,
    ("send_dict", 4): _send_dict_wrapper,
    ("send_dict", 5): _send_dict_ready_wrapper,
    ("send", 5): _send_wrapper,
    ("recv", 3): _recv_wrapper,
}


# ----------------------------------------------------------------------------------------------
# sglang's add and pop, and the stand-ins install() puts in place of a function or a method

# around_add and around_pop (ppaux.capture.hooks) for the signatures of sglang 0.5.19 - 0.5.23,
# (tensors, output) and (tensors, observer): without **kwargs a call costs no dict, which is
# most of a generic wrapper's price. Used only after _has_signature() confirmed the target's
# parameters.


def _around_add_fixed(original: Callable[..., Any], tensors: object, output: object) -> Any:
    config = STATE.config
    if config is None:
        return original(tensors, output)
    if STATE.sampling and next(STATE.counters[ADD]) % config.sample_every == 0:
        return sampled_call(ADD, config, original, (tensors, output), {})
    before = len(tensors) if tensors.__class__ is dict else size_of(tensors)
    try:
        result = original(tensors, output)
    except Exception as exc:
        capture_add(config, exc, (tensors, output), {}, before)
        raise
    if tensors.__class__ is dict and before >= 0:
        if original is _release_add[0] and STATE.trace_armed is None:
            # sglang's own add, known from an earlier call: only note the message, as
            # look_at_add would, without its calls (this path runs on every healthy message).
            STATE.last_add = id(tensors)
            return result
        error = look_at_add(tensors, original, before)
        if error is not None:
            raise error
        if is_release(original):
            _release_add[0] = original
    return result


#: The add found to be sglang's release code (by the release table's digests), once known.
_release_add: list[Any] = [None]


def _around_pop_fixed(
    original: Callable[..., Any], tensors: Mapping[object, object], observer: object
) -> Any:
    config = STATE.config
    if config is None:
        return original(tensors, observer)
    if STATE.sampling and next(STATE.counters[POP]) % config.sample_every == 0:
        return sampled_call(POP, config, original, (tensors, observer), {})
    if STATE.messages:
        look_at_pop(tensors)
    try:
        return original(tensors, observer)
    except Exception as exc:
        capture_pop(config, exc, (tensors, observer), {})
        raise


def _has_signature(function: str, target: object) -> bool:
    """True when ``target``'s own code takes exactly (tensors, output|observer), as sglang's do
    (read as :func:`matches` reads a method's)."""
    return matches(target, TRANSPORT_SHAPES[function])


def hook_for(function: str, target: object) -> Callable[..., Any]:
    """The cheapest hook that accepts every call ``target`` accepts."""
    fixed = _has_signature(function, target)
    if function == ADD:
        return _around_add_fixed if fixed else around_add
    return _around_pop_fixed if fixed else around_pop


def wrap(original: Callable[..., Any], hook: Callable[..., Any]) -> Callable[..., Any]:
    """A stand-in for ``original`` that runs ``hook(original, ...)``, named and documented
    like it; it takes exactly ``original``'s two parameters when ``hook`` is a fixed one."""
    if hook is _around_add_fixed:

        def wrapper(tensors: object, output: object) -> Any:
            return _around_add_fixed(original, tensors, output)

    elif hook is _around_pop_fixed:

        def wrapper(tensors: Mapping[object, object], observer: object) -> Any:  # type: ignore[misc]
            return _around_pop_fixed(original, tensors, observer)

    else:

        def wrapper(*args: object, **kwargs: object) -> Any:  # type: ignore[misc]
            return hook(original, *args, **kwargs)

    functools.update_wrapper(wrapper, original)
    setattr(wrapper, WRAPPER_MARK, True)
    return wrapper


def method_wrapper(hop: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """The stand-in install() puts for the method ``original`` at ``hop``: with its own
    parameters when they are those of sglang's releases, else the generic hook's wrapper."""
    fixed = fixed_wrapper(hop, original)
    if fixed is None:
        return wrap(original, METHOD_HOOKS[hop][1])
    functools.update_wrapper(fixed, original)
    setattr(fixed, WRAPPER_MARK, True)
    return fixed


for _hook in (
    _around_add_fixed,
    _around_pop_fixed,
    around_prepare,
    around_send_dict,
    around_send,
    around_recv,
):
    setattr(_hook, HOOK_MARK, True)
