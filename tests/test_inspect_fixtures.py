"""``ppaux inspect`` on every bundled fixture: exact findings, predictions and golden reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import REPO, check_golden, cli

from ppaux.dump.inspection import inspect_file

GOLDEN = Path(__file__).resolve().parent / "golden" / "inspect"
AUX = "__sampling_observer_output__."
NON_TENSOR = "received a non-tensor auxiliary PP output"

# fixture -> ([(code, key), ...] in report order, predicted pop outcome of the first payload)
EXPECTED = {
    "dumps/clean_output.pt": ([], "ok"),
    "dumps/cuda1_output.pt": ([], "ok"),
    "dumps/deflated_datapkl.pt": ([("PP118", None)], "ok"),
    "dumps/plain_pickle.pkl": ([], "ok"),
    # torch.load's default refuses the three below (a custom class, a numpy array): PP119.
    "dumps/pp_proxy.pt": ([("PP201", None), ("PP119", None)], "no-aux"),
    "dumps/aux_list.pt": ([("PP101", AUX + "scores")], "error"),
    "dumps/aux_float.pt": ([("PP101", AUX + "scores")], "error"),
    "dumps/aux_none.pt": ([("PP101", AUX + "scores")], "error"),
    "dumps/aux_str.pt": ([("PP101", AUX + "scores")], "error"),
    "dumps/aux_list_of_tensors.pt": ([("PP101", AUX + "scores")], "error"),
    "dumps/aux_numpy_array.pt": ([("PP119", None), ("PP101", AUX + "scores")], "error"),
    "dumps/aux_custom_class.pt": (
        [("PP201", AUX + "scores"), ("PP119", None), ("PP101", AUX + "scores")],
        "error",
    ),
    "dumps/aux_bare_prefix.pt": ([("PP102", AUX)], "ok"),
    "dumps/non_string_key.pt": ([("PP103", "7")], "error"),
    "dumps/near_miss_missing_dot.pt": ([("PP104", "__sampling_observer_output__scores")], "no-aux"),
    "dumps/near_miss_other_case.pt": ([("PP104", "__SAMPLING_OBSERVER_OUTPUT__.scores")], "no-aux"),
    "dumps/near_miss_doubled_prefix.pt": ([("PP104", AUX + AUX + "scores")], "ok"),
    "dumps/near_miss_whitespace.pt": ([("PP104", " " + AUX + "scores")], "no-aux"),
    "dumps/aux_device_mismatch.pt": ([("PP105", AUX + "b")], "ok"),
    "dumps/aux_non_contiguous.pt": ([("PP106", AUX + "scores")], "ok"),
    "dumps/aux_sparse.pt": ([("PP107", AUX + "scores")], "waits"),
    "dumps/aux_quantized.pt": ([("PP107", AUX + "scores")], "waits"),
    "dumps/aux_meta.pt": ([("PP108", AUX + "scores")], "ok"),
    "dumps/aux_parameter.pt": ([("PP109", AUX + "scores")], "ok"),
    "dumps/tensor_in_list.pt": ([("PP110", "next_token_token_ids_logprobs_val")], "no-aux"),
    "dumps/aux_in_default_message.pt": ([("PP111", AUX + "scores")], "ok"),
    "dumps/aux_in_proxy_message.pt": ([("PP111", AUX + "scores")], "ok"),
    "dumps/aux_empty_tensor.pt": ([("PP112", AUX + "scores")], "ok"),
    "dumps/storage_record_missing.pt": (
        [("PP118", None), ("PP117", "next_token_logprobs")],
        "ok",
    ),
    "dumps/storage_record_short.pt": ([("PP118", None), ("PP117", "next_token_ids")], "ok"),
    "dumps/no_tensor_dict.pt": ([("PP114", None)], None),
    "dumps/capture_pop_error.pt": ([("PP101", AUX + "scores")], "error"),
    "dumps/capture_add_error.pt": ([("PP115", "scores")], "no-aux"),
}


def fixture_names(folder: str) -> list[str]:
    return sorted(
        f"{folder}/{p.name}" for p in (REPO / "fixtures" / folder).iterdir() if p.is_file()
    )


pytestmark = pytest.mark.usefixtures("in_repo")


def test_every_dump_fixture_has_an_expectation():
    assert set(fixture_names("dumps")) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_findings_and_prediction(name):
    description, findings = inspect_file(f"fixtures/{name}")
    codes, outcome = EXPECTED[name]
    assert [(f.code, f.key) for f in findings] == codes
    assert all(f.path == f"fixtures/{name}" for f in findings)
    payloads = description["payloads"]
    got = payloads[0]["predicted_pop"]["outcome"] if payloads else None
    assert got == outcome
    if outcome == "error" and name != "dumps/non_string_key.pt":
        assert payloads[0]["predicted_pop"]["error"] == NON_TENSOR
        pp101 = [f for f in findings if f.code == "PP101"]
        assert pp101 and all(f.sglang_error == NON_TENSOR for f in pp101)


def test_non_tensor_messages_name_the_type():
    messages = {}
    for name in (
        "aux_list",
        "aux_float",
        "aux_none",
        "aux_str",
        "aux_list_of_tensors",
        "aux_numpy_array",
        "aux_custom_class",
    ):
        _, findings = inspect_file(f"fixtures/dumps/{name}.pt")
        messages[name] = next(f.message for f in findings if f.code == "PP101")
    assert messages == {
        "aux_list": "auxiliary entry 'scores' holds a list of 2 floats, not a tensor",
        "aux_float": "auxiliary entry 'scores' holds a float, not a tensor",
        "aux_none": "auxiliary entry 'scores' holds None, not a tensor",
        "aux_str": "auxiliary entry 'scores' holds a str, not a tensor",
        "aux_list_of_tensors": "auxiliary entry 'scores' holds a list with 2 tensors inside, "
        "not a tensor",
        "aux_numpy_array": "auxiliary entry 'scores' holds a numpy.ndarray (float32, shape [2]), "
        "not a tensor",
        "aux_custom_class": "auxiliary entry 'scores' holds a ppaux_fixture_types.SamplingScores "
        "object (its class was not imported), not a tensor",
    }


def test_non_string_key_predicts_the_attribute_error():
    description, findings = inspect_file("fixtures/dumps/non_string_key.pt")
    assert description["payloads"][0]["predicted_pop"] == {
        "outcome": "error",
        "error_type": "AttributeError",
        "error": "'int' object has no attribute 'startswith'",
    }
    assert findings[0].sglang_error == "'int' object has no attribute 'startswith'"


def test_cuda1_devices_are_reported_as_saved():
    description, _ = inspect_file("fixtures/dumps/cuda1_output.pt")
    devices = {e["device"] for e in description["payloads"][0]["entries"] if e["kind"] == "tensor"}
    assert devices == {"cuda:1"}


def test_capture_metadata_is_read():
    description, _ = inspect_file("fixtures/dumps/capture_pop_error.pt")
    meta = description["capture"]
    assert (
        meta["function"],
        meta["exception_type"],
        meta["exception_message"],
        meta["pp_rank"],
    ) == (
        "pop_auxiliary_output_from_pp_tensors",
        "RuntimeError",
        NON_TENSOR,
        0,
    )


@pytest.mark.parametrize("name", fixture_names("malicious"))
def test_malicious_globals_are_named(name):
    _, findings = inspect_file(f"fixtures/{name}")
    assert any(f.code == "PP201" for f in findings)
    assert all(f.severity.value == "error" for f in findings if f.code == "PP201")


def _golden(name: str, text: str) -> None:
    check_golden(GOLDEN / name, text)


@pytest.mark.parametrize("name", sorted(EXPECTED) + fixture_names("malicious"))
def test_golden_json(name):
    result = cli("inspect", f"fixtures/{name}", "--format", "json")
    codes = [c for c, _ in EXPECTED.get(name, ([("PP201", None)], None))[0]]
    assert result.exit_code == (
        1
        if any(c in ("PP101", "PP103", "PP107", "PP113", "PP115", "PP117", "PP201") for c in codes)
        else 0
    )
    json.loads(result.stdout)
    _golden(name.replace("/", "__") + ".json", result.stdout)


@pytest.mark.parametrize(
    "name",
    [
        "dumps/aux_list.pt",
        "dumps/clean_output.pt",
        "dumps/capture_pop_error.pt",
        "malicious/os_system_reduce.pt",
    ],
)
def test_golden_text(name):
    result = cli("inspect", f"fixtures/{name}")
    _golden(name.replace("/", "__") + ".txt", result.stdout)


def test_a_sparse_tensor_is_an_error_that_says_rank_0_waits():
    result = cli("inspect", "fixtures/dumps/aux_sparse.pt", "--format", "json")
    assert result.exit_code == 1
    (found,) = json.loads(result.stdout)["findings"]
    assert (found["code"], found["severity"]) == ("PP107", "error")
    assert found["message"] == (
        "auxiliary tensor 'scores' is sparse (torch.sparse_coo); the sender fails on it after "
        "the metadata went out, at the attention-TP group's reshape, which has no sparse "
        "kernel, and rank 0 waits forever"
    )
