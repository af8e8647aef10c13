"""Every committed fixture replays with its expected outcome, under three settings.

The list of files comes from the fixture folders as they are; a fixture without an expectation
here fails, so a new fixture cannot go untested. Settings: the default (validating sender, no
wire), a legacy sender without a wire, and a legacy sender through the emulated wire. The real
torch.distributed wire is checked against the emulated one in test_replay_distributed.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import REPO

from ppaux.dump import inspect_paths
from ppaux.replay import ReplayOptions, Sender, Transport, replay_paths
from ppaux.suggestions import Setting

# Every replay here makes real tensors.
pytestmark = pytest.mark.torch

FOLDERS = ("dumps", "malicious", "corrupt")

NOT_A_TENSOR = ("error", "add", "RuntimeError", "auxiliary PP output 'scores' is not a tensor")
NON_TENSOR = ("error", "pop", "RuntimeError", "received a non-tensor auxiliary PP output")
BAD_NAME = "auxiliary PP tensor names must be non-empty strings"
INT_KEY = ("error", "pop", "AttributeError", "'int' object has no attribute 'startswith'")
OK = ("ok", None, None, None)
SPARSE_RESHAPE = ("error", "wire", "RuntimeError", "reshape is not implemented for sparse tensors")
# torch 2.13's dispatcher, as sglang's own send_tensor_dict meets it (seen with 0.5.19 and 0.5.23).
C10D_SEND_BACKENDS = (
    "CPU, CUDA, PrivateUse1, Meta, BackendSelect, Python, FuncTorchDynamicLayerBackMode, "
    "Functionalize, Conjugate, Negative, ZeroTensor, ADInplaceOrView, AutogradOther, AutogradCPU, "
    "AutogradCUDA, AutogradXLA, AutogradMPS, AutogradXPU, AutogradHPU, AutogradLazy, AutogradMTIA, "
    "AutogradMAIA, AutogradPrivateUse1, AutogradMeta, Tracer, AutocastCPU, AutocastMTIA, "
    "AutocastMAIA, AutocastXPU, AutocastMPS, AutocastCUDA, FuncTorchBatched, BatchedNestedTensor, "
    "FuncTorchVmapMode, Batched, VmapMode, FuncTorchGradWrapper, PythonTLSSnapshot, "
    "FuncTorchDynamicLayerFrontMode, PreDispatch, PythonDispatcher"
)


def not_sendable(backend: str) -> tuple:
    """c10d's send has no kernel for this tensor kind: the sender fails in torch's dispatcher."""
    return (
        "error",
        "wire",
        "NotImplementedError",
        f"Could not run 'c10d::send' with arguments from the '{backend}' backend. This could "
        "be because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build). If you are a Facebook "
        "employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for "
        "possible resolutions. 'c10d::send' is only available for these backends: "
        f"[{C10D_SEND_BACKENDS}].",
    )


def problem(message: str) -> tuple:
    return ("problem", message)


def judged(code: str) -> tuple:
    """Nothing to replay, judged as inspect judges it: a finding, not an unusable input."""
    return ("judged", code)


def same(expected: tuple) -> tuple:
    """The same outcome under all three settings."""
    return (expected, expected, expected)


def non_tensor() -> tuple:
    """A non-tensor auxiliary value: a validating sender refuses it at add, whatever the
    transport, so rank 0 never receives it; an unchecked sender sends it and pop refuses it."""
    return (NOT_A_TENSOR, NON_TENSOR, NON_TENSOR)


#: file -> (validating/none, legacy/none, legacy/wire); ("diverged", what) for a round trip
#: that does not give back the same bits; ("problem", message) for an unusable input.
EXPECTED = {
    "dumps/clean_output.pt": same(OK),
    "dumps/cuda1_output.pt": same(OK),
    "dumps/deflated_datapkl.pt": same(OK),
    "dumps/plain_pickle.pkl": same(OK),
    "dumps/pp_proxy.pt": same(OK),
    "dumps/aux_list.pt": non_tensor(),
    "dumps/aux_float.pt": non_tensor(),
    "dumps/aux_none.pt": non_tensor(),
    "dumps/aux_str.pt": non_tensor(),
    "dumps/aux_list_of_tensors.pt": non_tensor(),
    "dumps/aux_numpy_array.pt": non_tensor(),
    "dumps/aux_custom_class.pt": non_tensor(),
    "dumps/aux_bare_prefix.pt": (
        ("error", "add", "RuntimeError", BAD_NAME),
        ("error", "readd", "RuntimeError", BAD_NAME),
        ("error", "readd", "RuntimeError", BAD_NAME),
    ),
    "dumps/non_string_key.pt": same(INT_KEY),
    "dumps/near_miss_missing_dot.pt": same(OK),
    "dumps/near_miss_other_case.pt": same(OK),
    "dumps/near_miss_doubled_prefix.pt": same(OK),
    "dumps/near_miss_whitespace.pt": same(OK),
    "dumps/aux_device_mismatch.pt": same(OK),
    # The wire sends with the scheduler's one-rank attention-TP group, as every release does by
    # default: reshape(1, -1)[0] copies the view (it arrives), and refuses a sparse tensor.
    "dumps/aux_non_contiguous.pt": same(OK),
    "dumps/aux_sparse.pt": (OK, OK, SPARSE_RESHAPE),
    "dumps/aux_quantized.pt": (OK, OK, not_sendable("QuantizedCPU")),
    "dumps/aux_meta.pt": same(OK),
    "dumps/aux_parameter.pt": same(OK),
    "dumps/tensor_in_list.pt": same(OK),
    "dumps/aux_in_default_message.pt": same(OK),
    "dumps/aux_in_proxy_message.pt": same(OK),
    "dumps/aux_empty_tensor.pt": same(OK),
    "dumps/storage_record_missing.pt": same(
        problem(
            "cannot rebuild tensor ['next_token_logprobs']: storage record "
            "storage_record_missing/data/1 is missing"
        )
    ),
    "dumps/storage_record_short.pt": same(
        problem(
            "cannot rebuild tensor ['next_token_ids']: record storage_record_short/data/0 "
            "is 8 bytes, 16 needed"
        )
    ),
    "dumps/no_tensor_dict.pt": same(judged("PP114")),
    "dumps/capture_pop_error.pt": non_tensor(),
    "dumps/capture_add_error.pt": (NOT_A_TENSOR, NON_TENSOR, NON_TENSOR),
    # Hostile files replay without running anything: the objects stay placeholders outside
    # the auxiliary keys, so pop has nothing to refuse.
    **{
        f"malicious/{name}.pt": same(OK)
        for name in (
            "os_system_reduce",
            "eval_stack_global",
            "exec_builtin",
            "subprocess_popen_inst",
            "subprocess_check_call_obj",
            "import_getattr_chain",
            "build_setstate",
            "memo_stack_global",
            "nested_pickle_loads",
        )
    },
    "malicious/plain_pickle_os_system.pkl": same(judged("PP201")),
    "corrupt/truncated.pt": same(problem("truncated or corrupt zip file (File is not a zip file)")),
    "corrupt/empty.pt": same(problem("empty file")),
    "corrupt/random_bytes.pt": same(
        problem(
            "not a torch.save zip or a pickle file (malformed pickle at byte 0: unknown opcode "
            "b'\\xe3')"
        )
    ),
    "corrupt/text_file.pt": same(
        problem(
            "not a torch.save zip or a pickle file (malformed pickle at byte 0: unknown opcode "
            "b'n'); it is text: if it is a server log, triage reads it (ppaux triage "
            "fixtures/corrupt/text_file.pt)"
        )
    ),
    "corrupt/no_datapkl.pt": same(
        problem("zip file without a data.pkl record: not a torch.save file")
    ),
    "corrupt/two_datapkl.pt": same(
        problem(
            "torch.load refuses the file: its zip reader finds record archive/data.pkl outside "
            "the folder two_datapkl/ of the first record, as it lists names (cut to 511 bytes): "
            "file in archive is not in a subdirectory"
        )
    ),
    "corrupt/truncated_datapkl.pt": same(
        problem("truncated pickle: no STOP opcode before byte 592")
    ),
    # Read as torch.load reads the legacy format; its aux value is a list.
    "corrupt/legacy_format.pt": non_tensor(),
    "corrupt/deep_nesting.pt": same(
        problem("the dump nests too deeply (limit max_depth=100 reached)")
    ),
    # Shared and cyclic references are rebuilt once each, never expanded.
    "corrupt/shared_reference_bomb.pt": same(OK),
    "corrupt/self_reference.pt": same(OK),
}

SETTINGS = {
    "validating-none": ReplayOptions(),
    "legacy-none": ReplayOptions(sender=Sender.LEGACY),
    "legacy-wire": ReplayOptions(sender=Sender.LEGACY, transport=Transport.WIRE),
}


def present() -> list[str]:
    found = []
    for folder in FOLDERS:
        for name in sorted(os.listdir(REPO / "fixtures" / folder)):
            if (REPO / "fixtures" / folder / name).is_file():
                found.append(f"{folder}/{name}")
    return found


def observed(result) -> tuple:
    if result is None:
        return ()
    if result["outcome"] == "diverged":
        whats = {
            m["what"]
            for p in result["payloads"]
            for run in p["runs"].values()
            for m in run["mismatches"]
        }
        return ("diverged", ",".join(sorted(whats)))
    return (result["outcome"], result["stage"], result["error_type"], result["error"])


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("fixture", present())
def test_fixture_replays_as_expected(fixture, setting, monkeypatch):
    monkeypatch.chdir(REPO)
    assert fixture in EXPECTED, f"fixtures/{fixture} has no replay expectation: add one here"
    expected = EXPECTED[fixture][list(SETTINGS).index(setting)]
    path = f"fixtures/{fixture}"
    report = replay_paths([path], SETTINGS[setting])
    if expected[0] == "problem":
        assert [(p.path, p.message) for p in report.problems] == [(path, expected[1])]
        assert report.data["results"] == []
        return
    if expected[0] == "judged":
        assert report.problems == () and report.data["results"] == []
        assert expected[1] in {f.code for f in report.findings}
        # The same findings inspect gives the file (it holds no tensor dict to check).
        inspected = inspect_paths([path])
        assert [(f.code, f.key) for f in report.findings] == [
            (f.code, f.key) for f in inspected.findings
        ]
        return
    assert report.problems == ()
    (result,) = report.data["results"]
    assert result["path"] == path
    assert observed(result) == expected
    # Errors carry a finding of the matching severity; clean replays carry no error finding
    # of the replay's own. A hostile file is judged as inspect judges it, replayed or not.
    # PP118 (not as torch.save writes it) is the reader's judgement of the file's form, as inspect
    # gives it, not the replay's own.
    errors = [
        f
        for f in report.findings
        if f.severity.value == "error" and not f.code.startswith("PP2") and f.code != "PP118"
    ]
    assert bool(errors) == (expected[0] != "ok")
    assert _security(report) == _security(inspect_paths([path]))
    if fixture.startswith("malicious/"):
        assert "PP201" in {code for code, _ in _security(report)}


def _security(report) -> list[tuple[str, str | None]]:
    return [(f.code, f.key) for f in report.findings if f.code.startswith("PP2")]


def test_no_expectation_is_stale():
    assert sorted(set(EXPECTED) - set(present())) == []


def test_capture_records_are_compared(monkeypatch):
    monkeypatch.chdir(REPO)
    report = replay_paths(
        ["fixtures/dumps/capture_pop_error.pt", "fixtures/dumps/capture_add_error.pt"]
    )
    pop, add = report.data["results"]
    assert pop["recorded"] == {
        "function": "pop_auxiliary_output_from_pp_tensors",
        "exception_type": "RuntimeError",
        "exception_message": "received a non-tensor auxiliary PP output",
    }
    # A validating sender stops the message at add, with no wire as through one: the pop
    # capture is not reproduced (its sender did not validate), the add capture is.
    assert pop["reproduced"] is False and add["reproduced"] is True
    assert [f.code for f in report.findings] == ["PP402", "PP408", "PP402"]
    for transport in (Transport.NONE, Transport.WIRE):
        again = replay_paths(
            ["fixtures/dumps/capture_pop_error.pt"], ReplayOptions(transport=transport)
        )
        assert again.data["results"][0]["reproduced"] is False
        refused, not_reproduced = again.findings
        assert refused.message == (
            "a validating sender refuses this auxiliary output: add raises RuntimeError: "
            "auxiliary PP output 'scores' is not a tensor; rank 0 never receives it (the legacy "
            "sender, which does not check, shows what rank 0 would receive)"
        )
        assert refused.suggestions == (Setting("sender", "legacy"),)
        assert not_reproduced.message == (
            "the capture recorded RuntimeError: received a non-tensor auxiliary PP output in "
            f"pop_auxiliary_output_from_pp_tensors; this replay (sender validating, transport "
            f"{transport.value}) ends with RuntimeError: auxiliary PP output 'scores' is not a "
            "tensor at add; the recorded error happened on rank 0, so the sender did not "
            "validate: replay with the legacy sender"
        )
        assert not_reproduced.suggestions == (Setting("sender", "legacy"),)
    legacy = replay_paths(
        ["fixtures/dumps/capture_pop_error.pt"], ReplayOptions(sender=Sender.LEGACY)
    )
    assert legacy.data["results"][0]["reproduced"] is True
    assert [f.code for f in legacy.findings] == ["PP401"]


def test_malicious_files_run_nothing(monkeypatch):
    monkeypatch.chdir(REPO)
    markers = [
        Path(f"/tmp/ppaux_pwned_{Path(name).stem}")
        for name in os.listdir(REPO / "fixtures" / "malicious")
    ]
    for marker in markers:
        if marker.exists():
            marker.unlink()
    report = replay_paths(
        ["fixtures/malicious"], ReplayOptions(sender=Sender.LEGACY, transport=Transport.WIRE)
    )
    assert len(report.data["results"]) == 9
    assert [m for m in markers if m.exists()] == []


def replayable_dumps() -> int:
    """How many files under fixtures/dumps replay (rather than being refused as unusable)."""
    return sum(
        1
        for f in present()
        if f.startswith("dumps/") and EXPECTED[f][0][0] not in ("problem", "judged")
    )
