"""A check counts only where its error reaches the caller and it looks at the value the code goes
on to use. Wrapped in ``with contextlib.suppress(...)``, or in a ``try`` whose ``finally`` leaves
it, the check refuses nothing ("does not check"); a checked name bound again, or deleted (or an
item of it), after the check makes what the function refuses unknown, with the line; a
scheduler's method that calls add but holds a ``yield`` anywhere runs none of its body when
called, so whether the scheduler calls the transport is unknown. Each expected verdict is
written by hand."""

from __future__ import annotations

import pytest
from skew_fixtures import TRANSPORT, copy_tree

from ppaux.sglang import ADD, POP, SCHEDULER_FILE
from ppaux.sglang_source import analyse

NAME_CHECK = (
    '        if not isinstance(label, str) or label == "":\n'
    '            raise RuntimeError("auxiliary PP tensor names must be non-empty strings")\n'
)
TENSOR_CHECK = (
    "        if not torch.is_tensor(value):\n"
    '            raise RuntimeError(f"auxiliary PP output {label!r} is not a tensor")\n'
)
DUPLICATE_CHECK = (
    "        if slot in tensors:\n"
    '            raise RuntimeError(f"duplicate auxiliary PP tensor {label!r}")\n'
)
RECEIVER_CHECK = (
    "    if not all(torch.is_tensor(value) for value in carried.values()):\n"
    '        raise RuntimeError("received a non-tensor auxiliary PP output")\n'
)


def _indent(text: str, by: str = "    ") -> str:
    return "".join(by + line + "\n" for line in text.splitlines())


def _edited(tmp_path, old: str, new: str, head: str = ""):
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(head + text.replace(old, new))
    return analyse(str(root))


#: The sender's checks made ones whose error never reaches the caller: (check, its key, edit).
SWALLOWED = {
    "tensors under suppress(RuntimeError)": (
        TENSOR_CHECK,
        "tensors",
        "        with contextlib.suppress(RuntimeError):\n" + _indent(TENSOR_CHECK),
    ),
    "names under suppress(Exception)": (
        NAME_CHECK,
        "names",
        "        with contextlib.suppress(Exception):\n" + _indent(NAME_CHECK),
    ),
    "names in a try whose finally continues": (
        NAME_CHECK,
        "names",
        "        for _ in (0,):\n            try:\n"
        + _indent(NAME_CHECK, "        ")
        + "            finally:\n                continue\n",
    ),
    "tensors in a try whose finally may return": (
        TENSOR_CHECK,
        "tensors",
        "        try:\n"
        + _indent(TENSOR_CHECK)
        + "        finally:\n            if not label:\n                return\n",
    ),
    "duplicates in a try whose finally breaks out of an if": (
        DUPLICATE_CHECK,
        "duplicates",
        "        try:\n"
        + _indent(DUPLICATE_CHECK)
        + "        finally:\n            if label:\n                break\n",
    ),
}


@pytest.mark.parametrize("case", sorted(SWALLOWED))
def test_a_check_whose_error_is_swallowed_is_no_check(tmp_path, case):
    check, key, edit = SWALLOWED[case]
    cap = _edited(tmp_path, check, edit, head="import contextlib\n")
    assert cap.transport == "present", cap.unknown
    assert cap.sender_checks is not None and cap.sender_checks[key] is False
    others = {"names", "tensors", "duplicates"} - {key}
    assert all(cap.sender_checks[other] is True for other in others)
    assert cap.sender_validates is False


def test_a_receiver_check_under_suppress_is_no_check(tmp_path):
    edit = "    with contextlib.suppress(RuntimeError):\n" + _indent(RECEIVER_CHECK)
    cap = _edited(tmp_path, RECEIVER_CHECK, edit, head="import contextlib\n")
    assert cap.receiver_checks is not None and cap.receiver_checks["tensors"] is False
    assert cap.receiver_validates is False


def test_a_finally_that_only_passes_leaves_the_check(tmp_path):
    edit = "        try:\n" + _indent(TENSOR_CHECK) + "        finally:\n            pass\n"
    cap = _edited(tmp_path, TENSOR_CHECK, edit)
    assert cap.sender_checks is not None and cap.sender_checks["tensors"] is True
    assert cap.sender_validates is True


def test_a_return_in_a_function_defined_in_the_finally_leaves_the_check(tmp_path):
    edit = (
        "        try:\n"
        + _indent(TENSOR_CHECK)
        + "        finally:\n            def later():\n                return 1\n"
    )
    cap = _edited(tmp_path, TENSOR_CHECK, edit)
    assert cap.sender_checks is not None and cap.sender_checks["tensors"] is True


STORE = "        tensors[slot] = value\n"

#: Sender edits after which a checked value is not the one used: (old, new, words of the reason).
CHANGED = {
    "the container's item deleted after the duplicate check": (
        STORE,
        "        del tensors[slot]\n" + STORE,
        "line 44 (a del of a part of it) changes tensors, which the check at line 42 reads",
    ),
    "the tensor rebound after its check": (
        STORE,
        "        value = torch.zeros(1)\n" + STORE,
        "line 44 (an assignment) changes value, which the check at line 39 reads",
    ),
    "the tensor deleted after its check": (
        STORE,
        "        del value\n" + STORE,
        "line 44 (a del) changes value, which the check at line 39 reads",
    ),
    "the tensor rebound before its check": (
        TENSOR_CHECK,
        "        value = torch.zeros(1)\n" + TENSOR_CHECK,
        "value, which a check reads, is bound at line 36 and again at line 39",
    ),
    "the name rebound by a walrus after its check": (
        STORE,
        "        if (label := 0) is None:\n            pass\n" + STORE,
        "(an assignment) changes label, which the check at line 37 reads",
    ),
}


@pytest.mark.parametrize("case", sorted(CHANGED))
def test_a_checked_value_changed_around_the_check_makes_the_checks_unknown(tmp_path, case):
    old, new, words = CHANGED[case]
    cap = _edited(tmp_path, old, new)
    assert cap.transport == "present", cap.unknown
    assert cap.sender_checks is None and cap.sender_validates is None
    assert f"{ADD}: " in cap.unknown["sender_checks"]
    assert words in cap.unknown["sender_checks"], cap.unknown["sender_checks"]
    # The receiver's reading does not depend on the sender's.
    assert cap.receiver_validates is True


def test_a_receiver_whose_checked_dict_is_rebuilt_after_the_check_is_unknown(tmp_path):
    rebuilt = "    rebuilt = observer.from_pp_tensors(carried)\n"
    cap = _edited(tmp_path, rebuilt, "    carried = dict(tensors)\n" + rebuilt)
    assert cap.receiver_checks is None and cap.receiver_validates is None
    assert f"{POP}: line 62 (an assignment) changes carried" in cap.unknown["receiver_checks"]
    assert cap.sender_validates is True


ADD_CALL = f"        {ADD}(message, auxiliary)\n"


def _scheduler(tmp_path, old: str, new: str):
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    return analyse(str(root))


def test_a_scheduler_method_made_a_generator_calls_nothing_for_sure(tmp_path):
    cap = _scheduler(tmp_path, ADD_CALL, ADD_CALL + "        if False:\n            yield\n")
    assert cap.scheduler_calls is None
    reason = cap.unknown["scheduler_calls"]
    assert f"_pp_prepare_tensor_dict calls {ADD} and is a generator (yield at line 28)" in reason


def test_a_generator_that_does_not_call_the_transport_leaves_the_calls(tmp_path):
    cap = _scheduler(tmp_path, ADD_CALL, ADD_CALL + "        def rows():\n            yield 1\n")
    assert cap.scheduler_calls == {"add": True, "pop": True}, cap.unknown
