"""Capability facts come from the construct itself, never from a name that merely looks like
it: a tensor made (``torch.Tensor()``), a type whose name holds the word (``TensorMetadata``),
a ``Counter`` built or indexed, a ``hasattr`` are no check and no message key."""

from __future__ import annotations

import pytest
from skew_fixtures import TRANSPORT, copy_tree

from ppaux.sglang import SCHEDULER_FILE
from ppaux.sglang_source import analyse

TENSOR_TEST = "        if not torch.is_tensor(value):\n"
NAME_TEST = '        if not isinstance(label, str) or label == "":\n'


def _transport_with(tmp_path, old: str, new: str):
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    return analyse(str(root))


@pytest.mark.parametrize(
    ("test", "is_check"),
    [
        (TENSOR_TEST, True),
        ("        if not isinstance(value, torch.Tensor):\n", True),
        ("        if not isinstance(value, (int, torch.Tensor)):\n", True),
        ("        if not isinstance(value, torch.Tensor()):\n", False),
        ("        if not isinstance(value, TensorMetadata):\n", False),
        ("        if not isinstance(value, type(torch.Tensor())):\n", False),
        ("        if not counts.is_tensor(value):\n", False),
        ("        if not torch.is_tensor(label):\n", False),
        ("        if not isinstance(Counter(value), torch.Tensor):\n", False),
    ],
)
def test_only_a_real_tensor_test_is_the_senders_tensor_check(tmp_path, test, is_check):
    cap = _transport_with(tmp_path, TENSOR_TEST, test)
    assert cap.sender_checks is not None
    assert cap.sender_checks["tensors"] is is_check


@pytest.mark.parametrize(
    ("test", "is_check"),
    [
        (NAME_TEST, True),
        ("        if not isinstance(label, (str, bytes)):\n", True),
        ("        if not isinstance(label, Counter(str)):\n", False),
        ("        if not hasattr(label, str):\n", False),
        ("        if not isinstance(len(label), str):\n", False),
    ],
)
def test_only_isinstance_of_str_is_the_senders_name_check(tmp_path, test, is_check):
    cap = _transport_with(tmp_path, NAME_TEST, test)
    assert cap.sender_checks is not None
    assert cap.sender_checks["names"] is is_check


def test_a_counter_in_the_sender_puts_no_key_in_the_message(tmp_path):
    """Keys of a Counter built, or of one indexed, are not the message's; a dict literal
    given to ``update`` or ``dict`` is."""
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    text = path.read_text()
    old = '        message = {"next_token_ids": result.next_token_ids}\n'
    assert text.count(old) == 1
    new = old + (
        '        seen = Counter({"counted_key": 1})\n'
        "        tally = Counter()\n"
        '        tally["tallied_key"] += 1\n'
        '        message.update({"updated_key": 1})\n'
        '        message["stored_key"] = dict({"inner_key": 2})\n'
    )
    path.write_text(text.replace(old, new))
    cap = analyse(str(root))
    assert cap.output_keys is not None
    keys = set(cap.output_keys) | set(cap.optional_output_keys or ())
    assert {"next_token_ids", "updated_key", "stored_key", "inner_key"} <= keys
    assert not {"counted_key", "tallied_key"} & keys
