"""The capability analyser on the fixture trees: every variant told apart, never a crash."""

from __future__ import annotations

import ast
import os
import zipfile
from pathlib import Path

import pytest
from skew_fixtures import TRANSPORT, copy_tree, tree

from ppaux.sglang import SCHEDULER_FILE
from ppaux.sglang_source import Capability, analyse
from ppaux.sglang_source.digest import definition_digests, node_digest
from ppaux.sglang_source.tree import SglangPathError

ALL_CHECKS = {
    "names": True,
    "tensors": True,
    "duplicates": True,
    "protocol": True,
    "non_empty": True,
}
POP_CHECKS = {"observer": True, "protocol": True, "tensors": True, "reconstructed": True}
PREFIX = "__sampling_observer_output__."

BASE = [
    "extend_input_len_per_req",
    "extend_logprob_start_len_per_req",
    "next_token_logprobs",
    "next_token_top_logprobs_val",
    "next_token_top_logprobs_idx",
    "next_token_token_ids_logprobs_val",
    "next_token_token_ids_logprobs_idx",
]
INPUT = [
    "input_token_logprobs",
    "input_top_logprobs_val",
    "input_top_logprobs_idx",
    "input_token_ids_logprobs_val",
    "input_token_ids_logprobs_idx",
]
OLD = [*BASE, "next_token_sampling_mask_idx", "next_token_sampling_logprobs", *INPUT]
MASK_0522 = [
    "sampling_mask_token_ids",
    "sampling_mask_lengths",
    "sampling_mask_selected_logprobs",
    "sampling_mask_support_logprobs",
    "sampling_mask_statuses",
    "sampling_mask_num_accept_tokens",
]
# The receiver indexes the mask's first key unconditionally (it is the test of the if).
RECEIVER_0520 = ["sampling_mask_token_ids", *BASE[2:], *INPUT, *BASE[:2]]


def test_no_transport_tree():
    cap = analyse(tree("no_transport"))
    assert (cap.found, cap.origin, cap.version) == (True, "directory", "0.5.18")
    assert cap.location == os.path.join(tree("no_transport"), "sglang")
    assert (cap.transport, cap.match, cap.match_family) == ("absent", "absent", None)
    assert cap.prefix is None and cap.sender_checks is None and cap.receiver_checks is None
    assert cap.scheduler_calls == {"add": False, "pop": False}
    assert list(cap.logprob_keys) == OLD
    assert list(cap.receiver_logprob_keys) == [k for k in OLD if k not in BASE[:2]] + BASE[:2]
    assert cap.receiver_sampling_mask_keys == ()
    assert cap.unknown == {}
    transport = next(f for f in cap.files if f.role == "transport")
    assert (transport.status, transport.reason) == ("absent", "no such file")


def test_v0519_tree():
    cap = analyse(tree("v0519"))
    assert (cap.version, cap.transport, cap.match) == ("0.5.19", "present", "modified")
    assert cap.sender_checks == ALL_CHECKS and cap.sender_validates is True
    assert cap.receiver_checks == POP_CHECKS and cap.receiver_validates is True
    assert (cap.prefix, cap.receiver_prefix) == (PREFIX, PREFIX)
    assert cap.scheduler_calls == {"add": True, "pop": True}
    assert list(cap.logprob_keys) == OLD
    assert cap.receiver_sampling_mask_keys == ()
    assert (cap.output_keys, cap.optional_output_keys) == (("next_token_ids",), ())
    assert (cap.wire, cap.non_tensor_values) == ("modified", "pickled")
    assert cap.unknown == {}


def test_v0520_and_v0523_trees_differ_only_in_keys():
    v0520, v0523 = analyse(tree("v0520")), analyse(tree("v0523"))
    assert list(v0520.logprob_keys) == BASE + MASK_0522[:3] + MASK_0522[4:5] + INPUT
    assert list(v0520.receiver_logprob_keys) == RECEIVER_0520
    assert list(v0520.receiver_sampling_mask_keys) == [
        "sampling_mask_lengths",
        "sampling_mask_selected_logprobs",
        "sampling_mask_statuses",
    ]
    assert list(v0523.logprob_keys) == BASE + MASK_0522 + INPUT
    assert list(v0523.receiver_sampling_mask_keys) == MASK_0522[1:]
    assert v0520.digests == v0523.digests
    assert v0520.wire_digest == v0523.wire_digest


def test_unvalidated_sender_tree():
    cap = analyse(tree("unvalidated_sender"))
    assert cap.sender_checks == {
        **ALL_CHECKS,
        "names": False,
        "tensors": False,
        "duplicates": False,
    }
    assert cap.sender_validates is False
    assert cap.receiver_validates is True
    assert cap.prefix == PREFIX
    assert (
        cap.digests["add_auxiliary_output_to_pp_tensors"]
        != analyse(tree("v0523")).digests["add_auxiliary_output_to_pp_tensors"]
    )


def test_other_prefix_tree():
    cap = analyse(tree("other_prefix"))
    assert (cap.prefix, cap.receiver_prefix) == ("__aux_output__.", "__aux_output__.")
    assert cap.sender_validates is True


def test_old_logprob_keys_tree():
    cap = analyse(tree("old_logprob_keys"))
    assert cap.version == "0.5.22"
    assert "sampling_mask_num_accept_tokens" not in cap.logprob_keys
    assert len(cap.logprob_keys) == 17
    assert "sampling_mask_num_accept_tokens" in cap.receiver_sampling_mask_keys


def test_wire_modified_tree():
    cap, plain = analyse(tree("wire_modified")), analyse(tree("v0523"))
    assert (cap.wire, cap.non_tensor_values) == ("modified", "other")
    assert cap.wire_digest != plain.wire_digest
    assert (
        cap.digests["GroupCoordinator.send_tensor_dict"]
        == plain.digests["GroupCoordinator.send_tensor_dict"]
    )


def test_syntax_error_makes_the_transport_unknown(tmp_path):
    root = copy_tree("v0520", tmp_path)
    path = root / TRANSPORT
    path.write_text(path.read_text() + "\ndef broken(:\n")
    cap = analyse(str(root))
    where = str(root / TRANSPORT)
    reason = (
        f"{where}: not valid Python: invalid syntax (line {len(path.read_text().splitlines())})"
    )
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert cap.unknown == {
        k: reason for k in ("transport", "prefix", "sender_checks", "receiver_checks", "match")
    }
    transport = next(f for f in cap.files if f.role == "transport")
    assert transport.status == "unparsable" and transport.sha256 is not None
    # The other files were still read.
    assert cap.logprob_keys is not None and cap.wire == "modified"


def test_missing_file_makes_its_facts_unknown(tmp_path):
    root = copy_tree("v0523", tmp_path)
    utils = root / "sglang" / "srt" / "managers" / "utils.py"
    utils.unlink()
    utils.mkdir()  # a directory where the file should be counts as no file
    cap = analyse(str(root))
    assert cap.logprob_keys is None and cap.receiver_logprob_keys is None
    assert cap.unknown == {
        "logprob_keys": f"{utils}: no such file",
        "receiver_logprob_keys": f"{utils}: no such file",
    }
    assert cap.transport == "present"


def test_oversized_file_is_unreadable_naming_the_limit(tmp_path):
    from ppaux.limits import Limits

    root = copy_tree("v0523", tmp_path)
    cap = analyse(str(root), Limits(max_source_bytes=100))
    transport = next(f for f in cap.files if f.role == "transport")
    why = "larger than 100 bytes (limit max_source_bytes=100 reached)"
    assert (transport.status, transport.reason) == ("unreadable", why)
    assert cap.transport == "unknown"
    assert cap.unknown["transport"] == f"{root / TRANSPORT}: {why}"
    size = (root / TRANSPORT).stat().st_size
    raised = analyse(str(root), Limits(max_source_bytes=size))
    assert next(f for f in raised.files if f.role == "transport").status == "ok"


def test_nul_byte_source_is_unparsable(tmp_path):
    root = copy_tree("v0523", tmp_path)
    (root / SCHEDULER_PATH).write_bytes(b"x = 1\x00\n")
    cap = analyse(str(root))
    assert cap.unknown["scheduler_calls"].startswith(f"{root / SCHEDULER_PATH}: not valid Python")
    assert cap.scheduler_calls is None


SCHEDULER_PATH = "sglang/" + SCHEDULER_FILE


def test_wheel_and_directory_agree(tmp_path):
    wheel = tmp_path / "sglang-0.5.23-py3-none-any.whl"
    root = Path(tree("v0523"))
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(root.rglob("*.py")):
            archive.write(path, path.relative_to(root).as_posix())
    from_wheel, from_dir = analyse(str(wheel)), analyse(tree("v0523"))
    assert (from_wheel.origin, from_wheel.location) == ("wheel", str(wheel))
    assert from_wheel.files[1].path == f"{wheel}!{TRANSPORT}"

    def strip(cap: Capability) -> dict:
        return {k: v for k, v in cap.to_json().items() if k not in ("origin", "location", "files")}

    assert strip(from_wheel) == strip(from_dir)


def test_the_package_directory_itself_is_accepted():
    assert analyse(os.path.join(tree("v0523"), "sglang")).location == os.path.join(
        tree("v0523"), "sglang"
    )


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda p: p / "missing", "no such file or directory"),
        (lambda p: p, "no sglang package here (expected sglang/srt/ inside)"),
        (
            lambda p: _write(p / "x.whl", b"not a zip"),
            "not a directory or a wheel (zip) file: File is not a zip file",
        ),
        (lambda p: _zip(p / "y.whl"), "the wheel holds no sglang/ package"),
    ],
)
def test_bad_sglang_paths(tmp_path, make, reason):
    path = make(tmp_path)
    with pytest.raises(SglangPathError) as caught:
        analyse(str(path))
    assert str(caught.value) == f"{path}: {reason}"


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("other/__init__.py", "")
    return path


def test_not_installed(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    cap = analyse()
    assert cap == Capability(
        found=False,
        transport="unknown",
        unknown={"sglang": "sglang is not installed in this Python environment"},
    )


def test_installed_sglang_is_found_without_running_it(tmp_path, monkeypatch):
    root = copy_tree("v0519", tmp_path)
    # If anything imported the package, this would raise.
    (root / "sglang" / "__init__.py").write_text("raise RuntimeError('sglang was imported')\n")
    monkeypatch.syspath_prepend(str(root))
    cap = analyse()
    assert (cap.origin, cap.version, cap.transport) == ("installed", "0.5.19", "present")


def test_capability_json_round_trip():
    cap = analyse(tree("old_logprob_keys"))
    assert Capability.from_json(cap.to_json()) == cap


def test_digest_ignores_layout_and_docstrings_but_not_code():
    a = ast.parse("def f(x):\n    '''doc'''\n    return x + 1  # note\n")
    b = ast.parse("def f(x):\n\n    return (x +\n            1)\n")
    c = ast.parse("def f(x):\n    return x + 2\n")
    assert node_digest(a.body[0]) == node_digest(b.body[0])
    assert node_digest(a.body[0]) != node_digest(c.body[0])


def test_definition_digests_take_the_last_definition():
    tree_ = ast.parse(
        "def f():\n    return 1\n\nclass C:\n    def m(self):\n        pass\n\n"
        "def f():\n    return 2\n"
    )
    digests = definition_digests(tree_, ["f", "C.m", "absent"])
    assert set(digests) == {"f", "C.m"}
    assert digests["f"] == node_digest(tree_.body[2])
