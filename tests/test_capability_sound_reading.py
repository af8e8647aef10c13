"""A verdict on the scheduler's calls and on the transport only where a sound reading of the
source can give it: where the program may not do what its text says (an import from elsewhere,
or that may not run; the name bound again anywhere, a method's own variable of the name
included; a write to the module's names that the syntax does not spell), the fact is unknown,
with its reason (a warning), never "calls" or "present". And the readings that were too strict:
an import under another name, a transport re-exported by its package."""

from __future__ import annotations

import pytest
from skew_fixtures import TRANSPORT, copy_tree

from ppaux.sglang import ADD, POP, SCHEDULER_FILE
from ppaux.sglang_source import analyse

IMPORT = f"from sglang.srt.sampling.sampling_observer_pp import (\n    {ADD},\n    {POP},\n)\n"
ADD_CALL = f"        {ADD}(message, auxiliary)\n"


def _scheduler(tmp_path, edit):
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    text = path.read_text()
    assert text.count(IMPORT) == 1 and text.count(ADD_CALL) == 1
    path.write_text(edit(text))
    return analyse(str(root))


def _replace(old, new):
    return lambda text: text.replace(old, new, 1)


def _append(tail):
    return lambda text: text + "\n" + tail


#: Schedulers whose calls of add or pop may reach something else than the transport, each with
#: words of its reason.
DOUBTFUL = {
    "an import from outside sglang": (
        _replace(IMPORT, f"from my_plugin.transport import {ADD}, {POP}\n"),
        "not from sglang",
    ),
    "an import only under TYPE_CHECKING": (
        lambda text: text.replace(IMPORT, "", 1).replace(
            "from typing import Any\n",
            "from typing import TYPE_CHECKING, Any\n\nif TYPE_CHECKING:\n"
            + "".join(f"    {line}\n" for line in IMPORT.splitlines()),
            1,
        ),
        "only inside a block",
    ),
    "an import in a try that never reaches it": (
        _replace(
            IMPORT,
            "try:\n    raise ImportError\n"
            + "".join(f"    {line}\n" for line in IMPORT.splitlines())
            + "except ImportError:\n    pass\n",
        ),
        "only inside a block",
    ),
    "the transport's function patched before the import": (
        _replace(
            IMPORT,
            "import sglang.srt.sampling.sampling_observer_pp as _obs\n\n"
            f"_obs.{ADD} = print\n" + IMPORT,
        ),
        "before its import",
    ),
    "a def of the name before an import under another name": (
        _replace(
            IMPORT,
            f"def {ADD}(*args):\n    return None\n\n\n"
            f"from sglang.srt.sampling.sampling_observer_pp import {ADD} as _add\n",
        ),
        "before its import",
    ),
    "the name assigned in the calling method": (
        _replace(ADD_CALL, f"        {ADD} = print\n" + ADD_CALL),
        "an assignment",
    ),
    "the name a parameter of the calling method": (
        _replace("def _pp_prepare_tensor_dict(self,", f"def _pp_prepare_tensor_dict(self, {ADD},"),
        "a parameter",
    ),
    "del globals()[...]": (_append(f'del globals()["{ADD}"]\n'), "globals() call"),
    "globals().update(...)": (_append(f"globals().update({ADD}=print)\n"), "globals() call"),
    "exec(...)": (_append(f'exec("{ADD} = print")\n'), "exec() call"),
    "setattr with a key built when it runs": (
        _append(f'import sys\n\n_name = "{ADD}"\nsetattr(sys.modules["x"], _name, print)\n'),
        "a setattr call with a key built when it runs",
    ),
    "setattr of the name on a module": (
        _append(f'import os\n\nsetattr(os, "{ADD}", print)\n'),
        "a setattr call",
    ),
}


@pytest.mark.parametrize("case", list(DOUBTFUL))
def test_a_scheduler_call_that_may_not_reach_the_transport_is_unknown(tmp_path, case):
    edit, words = DOUBTFUL[case]
    cap = _scheduler(tmp_path, edit)
    assert cap.scheduler_calls is None
    reason = cap.unknown["scheduler_calls"]
    assert words in reason, reason
    assert reason.startswith(str(tmp_path))


def test_a_call_after_false_and_is_no_call(tmp_path):
    cap = _scheduler(tmp_path, _replace(ADD_CALL, f"        False and {ADD}(message, auxiliary)\n"))
    assert cap.scheduler_calls == {"add": False, "pop": True}


def test_a_call_after_true_or_is_no_call(tmp_path):
    cap = _scheduler(tmp_path, _replace(ADD_CALL, f"        True or {ADD}(message, auxiliary)\n"))
    assert cap.scheduler_calls == {"add": False, "pop": True}


def test_a_call_before_false_and_is_a_call(tmp_path):
    cap = _scheduler(tmp_path, _replace(ADD_CALL, f"        {ADD}(message, auxiliary) and False\n"))
    assert cap.scheduler_calls == {"add": True, "pop": True}


def test_calls_through_an_import_under_another_name_are_calls(tmp_path):
    def edit(text):
        text = text.replace(
            IMPORT,
            f"from sglang.srt.sampling.sampling_observer_pp import {ADD} as _add, {POP} as _pop\n",
        )
        return text.replace(f"{ADD}(", "_add(").replace(f"{POP}(", "_pop(")

    cap = _scheduler(tmp_path, edit)
    assert cap.scheduler_calls == {"add": True, "pop": True}
    assert "scheduler_calls" not in cap.unknown


def test_an_import_under_another_name_never_called_is_no_call(tmp_path):
    cap = _scheduler(
        tmp_path,
        _replace(
            IMPORT, f"from sglang.srt.sampling.sampling_observer_pp import {ADD} as _add, {POP}\n"
        ),
    )
    # The file calls add by its own name, which nothing binds: never the transport's add.
    assert cap.scheduler_calls == {"add": False, "pop": True}


def test_a_method_call_of_the_name_without_an_import_is_unknown(tmp_path):
    def edit(text):
        text = text.replace(IMPORT, "import my_plugin.transport as _t\n")
        return text.replace(f"{ADD}(", f"_t.{ADD}(").replace(f"{POP}(", f"_t.{POP}(")

    cap = _scheduler(tmp_path, edit)
    assert cap.scheduler_calls is None
    assert "without importing it from sglang" in cap.unknown["scheduler_calls"]


@pytest.mark.parametrize("package", ["absolute", "relative"])
def test_a_transport_re_exported_by_its_package_is_read(tmp_path, package):
    root = copy_tree("v0523", tmp_path)
    scheduler = root / "sglang" / SCHEDULER_FILE
    text = scheduler.read_text()
    scheduler.write_text(text.replace(IMPORT, f"from sglang.srt.sampling import {ADD}, {POP}\n"))
    source = "sglang.srt.sampling.sampling_observer_pp" if package == "absolute" else "."
    name = "" if package == "absolute" else "sampling_observer_pp"
    init = root / "sglang" / "srt" / "sampling" / "__init__.py"
    if name:
        init.write_text(f"from .{name} import {ADD}, {POP}\n")
    else:
        init.write_text(f"from {source} import {ADD}, {POP}\n")
    cap = analyse(str(root))
    # The fixture's transport is shaped like sglang's, not a release's own: "modified".
    assert (cap.transport, cap.match) == ("present", "modified")
    assert cap.sender_checks is not None and cap.receiver_checks is not None
    assert cap.scheduler_calls == {"add": True, "pop": True}
    transport = next(f for f in cap.files if f.role == "transport")
    assert transport.path.endswith("sampling_observer_pp.py")


def test_a_package_that_does_not_hold_the_transport_is_absent(tmp_path):
    root = copy_tree("v0523", tmp_path)
    scheduler = root / "sglang" / SCHEDULER_FILE
    text = scheduler.read_text()
    scheduler.write_text(text.replace(IMPORT, f"from sglang.srt.sampling import {ADD}, {POP}\n"))
    (root / "sglang" / "srt" / "sampling" / "__init__.py").write_text("VALUE = 1\n")
    cap = analyse(str(root))
    assert cap.transport == "absent"


#: Module-level statements of the transport that may bind add or pop in a way the syntax does
#: not spell, each with words of its reason.
DYNAMIC = [
    ('del globals()["NAME"]\n', "globals() call"),
    ("globals().update(NAME=None)\n", "globals() call"),
    ('exec("NAME = None")\n', "exec() call"),
    ('import sys\n_n = "NAME"\nsetattr(sys.modules[__name__], _n, None)\n', "a setattr call"),
    ('import sys\nsys.modules[__name__].__dict__["NAME"] = None\n', "write through ."),
    ('import builtins\nbuiltins.setattr(__import__("x"), "NAME"[:], None)\n', "a setattr call"),
    ('import builtins\nbuiltins.getattr(__import__("x"), "y").NAME = None\n', "__import__() call"),
    ('vars()["NAME"] = None\n', "vars() call"),
    ("def _later():\n    globals().pop('NAME')\n", "globals() call"),
    ('import operator\noperator.setitem(locals(), "NAME", None)\n', "locals() call"),
]


@pytest.mark.parametrize("name", [ADD, POP])
@pytest.mark.parametrize(
    ("statement", "words"), DYNAMIC, ids=[d[1] + str(i) for i, d in enumerate(DYNAMIC)]
)
def test_a_dynamic_write_in_the_transport_makes_it_unknown(tmp_path, name, statement, words):
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    path.write_text(path.read_text() + "\n" + statement.replace("NAME", name))
    cap = analyse(str(root))
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert cap.sender_checks is None and cap.receiver_checks is None
    assert words in cap.unknown["transport"], cap.unknown["transport"]


@pytest.mark.parametrize("name", [ADD, POP])
def test_a_decorated_transport_function_is_unknown(tmp_path, name):
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    text = path.read_text()
    assert text.count(f"\ndef {name}(") == 1
    path.write_text(text.replace(f"\ndef {name}(", f"\n@(lambda f: print)\ndef {name}(", 1))
    cap = analyse(str(root))
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert f"{name} is decorated" in cap.unknown["transport"]


TENSOR_CHECK = (
    "        if not torch.is_tensor(value):\n"
    '            raise RuntimeError(f"auxiliary PP output {label!r} is not a tensor")\n'
)

#: The sender's tensor check made one whose error never reaches the caller.
SWALLOWED = {
    "a continue before the raise": TENSOR_CHECK.replace(
        "            raise", "            continue\n            raise"
    ),
    "inside a try whose handler may catch it": (
        "        try:\n"
        + "".join(f"    {line}\n" for line in TENSOR_CHECK.splitlines())
        + "        except RuntimeError:\n"
        + "            pass\n"
    ),
}


@pytest.mark.parametrize("case", list(SWALLOWED))
def test_a_check_whose_error_never_reaches_the_caller_checks_nothing(tmp_path, case):
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    text = path.read_text()
    assert text.count(TENSOR_CHECK) == 1
    path.write_text(text.replace(TENSOR_CHECK, SWALLOWED[case]))
    cap = analyse(str(root))
    assert cap.sender_checks is not None and cap.sender_checks["tensors"] is False
    assert cap.sender_validates is False


def test_a_check_inside_a_try_without_a_handler_still_checks(tmp_path):
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    text = path.read_text()
    wrapped = (
        "        try:\n"
        + "".join(f"    {line}\n" for line in TENSOR_CHECK.splitlines())
        + "        finally:\n"
        + "            pass\n"
    )
    path.write_text(text.replace(TENSOR_CHECK, wrapped))
    cap = analyse(str(root))
    assert cap.sender_checks is not None and cap.sender_checks["tensors"] is True


def _first_in_body(text: str, name: str, lines: str) -> str:
    """``text`` with ``lines`` (indented one level) first in the body of ``def name``."""
    start = text.index(f"\ndef {name}(")
    end = text.index(":\n", start) + 2  # the end of the signature
    return text[:end] + lines + text[end:]


#: Edits after which a call of the function runs none of its body, with words of the reason.
SUSPENDED = {
    "async def": (lambda t, n: t.replace(f"\ndef {n}(", f"\nasync def {n}(", 1), "is an async def"),
    "a dead yield": (
        lambda t, n: _first_in_body(t, n, "    if False:\n        yield\n"),
        "is a generator",
    ),
    "a yield from after return": (
        lambda t, n: _first_in_body(t, n, "    if 0:\n        return\n        yield from ()\n"),
        "is a generator",
    ),
    "a yield in a nested def's default": (
        lambda t, n: _first_in_body(t, n, "    def inner(a=(yield)):\n        pass\n"),
        "is a generator",
    ),
}


@pytest.mark.parametrize("name", [ADD, POP])
@pytest.mark.parametrize("case", sorted(SUSPENDED))
def test_a_transport_function_a_call_does_not_run_is_unknown(tmp_path, name, case):
    edit, words = SUSPENDED[case]
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    text = path.read_text()
    assert text.count(f"\ndef {name}(") == 1
    path.write_text(edit(text, name))
    cap = analyse(str(root))
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert cap.sender_checks is None and cap.receiver_checks is None
    assert f"{name} {words}" in cap.unknown["transport"], cap.unknown["transport"]


@pytest.mark.parametrize("name", [ADD, POP])
def test_a_yield_in_a_nested_scope_leaves_the_transport_present(tmp_path, name):
    # A yield in a nested function's or lambda's body makes that one a generator, not this.
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    nested = "    def inner():\n        yield\n    gen = lambda: (yield)\n"
    path.write_text(_first_in_body(path.read_text(), name, nested))
    cap = analyse(str(root))
    assert cap.transport == "present", cap.unknown
