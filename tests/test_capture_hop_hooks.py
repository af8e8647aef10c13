"""install()'s wrappers on the scheduler's and the PP group's methods: with the methods' own
parameters when those are sglang's releases' (read from the 0.5.18 - 0.5.23 wheels here), the
generic hook otherwise; either way a call reaches the method exactly as it was made.
"""

from __future__ import annotations

import ast
import functools
import inspect
import zipfile
from typing import Any

import pytest
import torch
import wheels

from ppaux.capture import hop_hooks
from ppaux.capture.markers import WRAPPER_MARK
from ppaux.capture.settings import CaptureConfig
from ppaux.capture.state import STATE
from ppaux.sglang import ADD, HOP_SHAPES, POP

pytestmark = pytest.mark.torch

PREFIX = "__sampling_observer_output__."


@pytest.fixture(autouse=True)
def capture_on(tmp_path):
    STATE.activate(CaptureConfig(tmp_path / "captures"))
    yield
    STATE.activate(None)


# Stand-ins with the releases' parameter lists; each returns what it was given.


def send(self, tensor_dict, dst=None, all_gather_group=None, async_send=False):
    return ("send", self, tensor_dict, dst, all_gather_group, async_send)


def recv(self, src=None, all_gather_group=None):
    return {"__msg_type__": "output", "given": (self, src, all_gather_group)}


def send_dict(self, tensor_dict, async_send=True, msg_type="default"):
    return ("send_dict", self, tensor_dict, async_send, msg_type)


def send_dict_ready(self, tensor_dict, async_send=True, msg_type="default", ready_event=None):
    return ("send_dict", self, tensor_dict, async_send, msg_type, ready_event)


def prepare(self, result, batch):
    return {"next_token_ids": "ids", "given": (self, result, batch)}


class Self:
    pp_group = None


MESSAGE = {"__msg_type__": "output", PREFIX + "scores": torch.ones(2)}

CALLS = {
    "send": (
        send,
        [
            ((Self, MESSAGE), {}),
            ((Self,), {"tensor_dict": MESSAGE, "all_gather_group": "g", "async_send": True}),
            ((Self, MESSAGE, 3, "g", True), {}),
            ((Self, MESSAGE), {"dst": 1}),
        ],
    ),
    "recv": (recv, [((Self,), {}), ((Self, 1), {}), ((Self,), {"all_gather_group": "g"})]),
    "send_dict": (
        send_dict,
        [
            ((Self, MESSAGE), {"async_send": True, "msg_type": "output"}),
            ((Self, MESSAGE, False, "proxy"), {}),
            ((Self,), {"tensor_dict": MESSAGE}),
        ],
    ),
    "prepare": (prepare, [((Self, "r", "b"), {}), ((Self,), {"result": 1, "batch": 2})]),
}


@pytest.mark.parametrize("hop", sorted(CALLS))
def test_a_call_reaches_the_method_as_it_was_made(hop: str):
    original, calls = CALLS[hop]
    wrapper = hop_hooks.method_wrapper(hop, original)
    # The wrapper has the method's own parameters, not (*args, **kwargs).
    assert inspect.signature(wrapper, follow_wrapped=False) == inspect.signature(original)
    assert getattr(wrapper, WRAPPER_MARK) is True and wrapper.__wrapped__ is original
    for args, kwargs in calls:
        assert wrapper(*args, **kwargs) == original(*args, **kwargs)


def test_the_ready_event_form_of_send_dict():
    wrapper = hop_hooks.method_wrapper("send_dict", send_dict_ready)
    assert inspect.signature(wrapper, follow_wrapped=False) == inspect.signature(send_dict_ready)
    event = object()
    assert wrapper(Self, MESSAGE, True, "output", event) == (
        "send_dict",
        Self,
        MESSAGE,
        True,
        "output",
        event,
    )
    assert wrapper(Self, MESSAGE, msg_type="output")[-1] is None


def test_a_bad_call_fails_as_the_method_itself_fails():
    wrapper = hop_hooks.method_wrapper("send", send)
    for args, kwargs in [
        ((Self,), {}),
        ((Self, MESSAGE), {"dest": 1}),
        ((Self, 1, 2, 3, 4, 5), {}),
    ]:
        with pytest.raises(TypeError) as direct:
            send(*args, **kwargs)
        with pytest.raises(TypeError) as wrapped:
            wrapper(*args, **kwargs)
        assert str(wrapped.value) == str(direct.value)


def _other_default(self, tensor_dict, dst=None, all_gather_group=None, async_send=True):
    return ("other", tensor_dict, async_send)


def _more(self, tensor_dict, dst=None, all_gather_group=None, async_send=False, extra=1):
    return ("more", tensor_dict, extra)


def _keyword_only(self, tensor_dict, *, dst=None, all_gather_group=None, async_send=False):
    return ("keyword", tensor_dict, async_send)


def _renamed(self, tensors, dst=None, all_gather_group=None, async_send=False):
    return ("renamed", tensors)


def _flexible(self, *args, **kwargs):
    return ("flexible", args, kwargs)


def _logged(function):
    """A decorator that keeps the signature it shows (``__signature__``), not its code's."""

    @functools.wraps(function)
    def logging_wrapper(*args, **kwargs):
        return ("logged", function(*args, **kwargs))

    logging_wrapper.__signature__ = inspect.signature(function)
    return logging_wrapper


_shows_the_signature = _logged(send)
_wrapped_plainly = functools.wraps(send)(lambda *args, **kwargs: ("plain", args, kwargs))


def _positional_only(self, tensor_dict, /, dst=None, all_gather_group=None, async_send=False):
    return ("positional", tensor_dict)


@pytest.mark.parametrize(
    "other",
    [
        _other_default,
        _more,
        _keyword_only,
        _renamed,
        _flexible,
        _shows_the_signature,
        _wrapped_plainly,
        _positional_only,
    ],
)
def test_another_parameter_list_gets_the_generic_hook(other):
    assert not any(hop_hooks.matches(other, shape) for shape in HOP_SHAPES["send"])
    assert hop_hooks.fixed_wrapper("send", other) is None
    wrapper = hop_hooks.method_wrapper("send", other)
    for args, kwargs in [
        ((Self, MESSAGE), {}),
        ((Self, MESSAGE), {"async_send": True}),
        ((Self,), {"tensor_dict" if other is not _renamed else "tensors": MESSAGE}),
    ]:
        if other is _positional_only and not args[1:]:
            continue  # it takes tensor_dict by position only
        assert wrapper(*args, **kwargs) == other(*args, **kwargs)


def test_the_fixed_wrappers_look_at_the_message():
    # A dirty output message handed to the fixed send wrapper is followed and captured, as
    # through the generic hook.
    class Group:
        is_last_rank = True

    dirty = {"__msg_type__": "output", PREFIX + "scores": [0.5]}
    wrapper = hop_hooks.method_wrapper("send", send)
    assert wrapper(Group(), dirty)[2] is dirty  # the call goes on (strict mode is off)
    assert STATE.stats().written == 1
    healthy = {"__msg_type__": "output", PREFIX + "scores": torch.ones(1)}
    wrapper(Group(), healthy)
    assert STATE.stats().written == 1 and id(healthy) not in STATE.messages


def _send_dict_more(self, tensor_dict, async_send=True, msg_type="default", flag=0):
    return ("send_dict", tensor_dict, msg_type, flag)


@pytest.mark.parametrize(
    ("hop", "method", "args", "kwargs"),
    [
        ("send", _flexible, "positional", {}),
        ("send", _flexible, "keyword", {}),
        ("send_dict", _send_dict_more, "positional", {"msg_type": "output"}),
        ("send_dict", _send_dict_more, "keyword", {"msg_type": "output", "flag": 1}),
    ],
)
def test_the_generic_hooks_look_at_the_message(hop, method, args, kwargs):
    class Group:
        is_last_rank = True
        pp_group = None

    wrapper = hop_hooks.method_wrapper(hop, method)
    assert str(inspect.signature(wrapper, follow_wrapped=False)) == "(*args, **kwargs)"
    dirty = {"__msg_type__": "output", PREFIX + "scores": [0.5]}
    group = Group()
    if args == "positional":
        assert wrapper(group, dirty, **kwargs) == method(group, dirty, **kwargs)
    else:
        assert wrapper(group, tensor_dict=dirty, **kwargs) == method(
            group, tensor_dict=dirty, **kwargs
        )
    assert STATE.stats().written == 1
    # An output message that is healthy, and a message of another type, are left alone.
    wrapper(group, {"__msg_type__": "output", PREFIX + "scores": torch.ones(1)}, **kwargs)
    wrapper(group, {"__msg_type__": "proxy", PREFIX + "scores": [1]})
    assert STATE.stats().written == 1


# ----------------------------------------------------------------------------------------------
# The releases' parameter lists, from the wheels

TARGETS = {
    "prepare": ("sglang/srt/managers/scheduler_pp_mixin.py", "_pp_prepare_tensor_dict"),
    "send_dict": ("sglang/srt/managers/scheduler_pp_mixin.py", "_pp_send_dict_to_next_stage"),
    "send": ("sglang/srt/distributed/parallel_state.py", "send_tensor_dict"),
    "recv": ("sglang/srt/distributed/parallel_state.py", "recv_tensor_dict"),
}


def _stand_in(wheel: Any, path: str, name: str) -> Any:
    """A function with the parameter list (names, kinds, literal defaults) of method ``name``
    in the wheel's file ``path``, without its annotations or body."""
    with zipfile.ZipFile(wheel) as archive:
        tree = ast.parse(archive.read(path).decode())
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    arguments = node.args
    for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        argument.annotation = None
    for variadic in (arguments.vararg, arguments.kwarg):
        if variadic is not None:
            variadic.annotation = None
    defaults = [ast.literal_eval(d) for d in arguments.defaults]
    stub = ast.FunctionDef(
        name=name,
        args=ast.arguments(
            posonlyargs=arguments.posonlyargs,
            args=arguments.args,
            vararg=arguments.vararg,
            kwonlyargs=arguments.kwonlyargs,
            kw_defaults=[None for _ in arguments.kwonlyargs],
            kwarg=arguments.kwarg,
            defaults=[ast.Constant(value=d) for d in defaults],
        ),
        body=[ast.Pass()],
        decorator_list=[],
        returns=None,
        **({"type_params": []} if "type_params" in ast.FunctionDef._fields else {}),
    )
    module = ast.fix_missing_locations(ast.Module(body=[stub], type_ignores=[]))
    namespace: dict[str, Any] = {}
    exec(compile(module, path, "exec"), namespace)  # a parameter list and `pass`
    return namespace[name]


@pytest.mark.wheels
@pytest.mark.parametrize("version", ["0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"])
def test_every_release_gets_the_fixed_wrappers(version: str):
    wheel = wheels.sglang_wheel(version)
    for hop, (path, name) in TARGETS.items():
        stand_in = _stand_in(wheel, path, name)
        wrapper = hop_hooks.method_wrapper(hop, stand_in)
        assert inspect.signature(wrapper, follow_wrapped=False) == inspect.signature(stand_in), (
            version,
            hop,
        )


def test_add_and_pop_read_their_parameters_from_their_code():
    from ppaux.capture import hooks

    hook_for = hop_hooks.hook_for

    def add(tensors, output):
        return None

    def pop(tensors, observer):
        return None

    assert hook_for(ADD, add) is hop_hooks._around_add_fixed
    assert hook_for(POP, pop) is hop_hooks._around_pop_fixed
    # A decorator that shows (tensors, output) but takes anything gets the generic hooks.
    assert hook_for(ADD, _logged(add)) is hooks.around_add
    assert hook_for(POP, _logged(pop)) is hooks.around_pop
    assert hook_for(ADD, functools.wraps(add)(lambda *a, **k: None)) is hooks.around_add
