"""The table of known releases (package data) and the key check for ``inspect --release``."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from ppaux.dump.release_keys import release_key_findings
from ppaux.errors import SettingError
from ppaux.report import Finding, Severity
from ppaux.sglang import known_release, releases

OLD_ONLY = ["next_token_sampling_mask_idx", "next_token_sampling_logprobs"]
MASK_0520 = [
    "sampling_mask_token_ids",
    "sampling_mask_lengths",
    "sampling_mask_selected_logprobs",
    "sampling_mask_statuses",
]


def test_table_is_package_data_and_well_formed():
    doc = json.loads(resources.files("ppaux").joinpath("data/releases.json").read_text("utf-8"))
    assert doc["schema"] == "ppaux.releases/1"
    assert doc["prefix"] == "__sampling_observer_output__."
    assert [f["name"] for f in doc["families"]] == ["<=0.5.18", "0.5.19", "0.5.20-0.5.23"]
    assert releases.release_versions() == (
        "0.5.18",
        "0.5.19",
        "0.5.20",
        "0.5.21",
        "0.5.22",
        "0.5.23",
    )
    every_version = [v for f in releases.families() for v in f.versions]
    assert every_version == list(releases.release_versions())


def test_families_hold_the_reference_facts():
    old, first, current = releases.families()
    assert (old.transport, old.transport_sha256, old.transport_digests) == (False, None, {})
    assert (
        first.transport_sha256 == "4fe27cef77f9b65dfbc7123145d348eef6b0291456e97031b4ca7ad47e0f70eb"
    )
    assert (
        current.transport_sha256
        == "0b6db77de1177db6275bcc6fbf92abb8403b13c55ae7df263d06987779d45f5d"
    )
    assert (first.transport_lines, current.transport_lines) == (86, 84)
    assert first.aux_output_defined_in == "sglang/srt/sampling/sampling_observer.py"
    assert current.aux_output_defined_in == "sglang/srt/managers/auxiliary_output.py"
    # Only imports changed in 0.5.20: the functions and Protocols are the same.
    assert first.transport_digests == current.transport_digests
    assert set(first.transport_digests) == {
        "add_auxiliary_output_to_pp_tensors",
        "pop_auxiliary_output_from_pp_tensors",
        "PipelineParallelAuxiliaryOutput",
        "PipelineParallelSamplingObserver",
    }
    # The wire code is the same from 0.5.18 to 0.5.23.
    assert old.wire_digests == first.wire_digests == current.wire_digests


@pytest.mark.parametrize(
    "version, count, torch",
    [
        ("0.5.18", 14, "2.13.0"),
        ("0.5.19", 14, "2.13.0"),
        ("0.5.20", 16, "2.13.0"),
        ("0.5.21", 17, "2.13.0"),
        ("0.5.22", 18, "2.14.1"),
        ("0.5.23", 18, "2.14.1"),
    ],
)
def test_logprob_key_counts_and_torch_pins(version, count, torch):
    facts = releases.release(version)
    assert len(facts.logprob_keys) == count
    assert len(set(facts.logprob_keys)) == count
    assert facts.torch == torch
    assert facts.output_keys == ("next_token_ids",)


def test_key_set_changes_between_releases():
    r = {v: set(releases.release(v).logprob_keys) for v in releases.release_versions()}
    assert r["0.5.18"] == r["0.5.19"]
    assert r["0.5.19"] - r["0.5.20"] == set(OLD_ONLY)
    assert r["0.5.20"] - r["0.5.19"] == set(MASK_0520)
    assert r["0.5.21"] - r["0.5.20"] == {"sampling_mask_support_logprobs"}
    assert r["0.5.22"] - r["0.5.21"] == {"sampling_mask_num_accept_tokens"}
    assert r["0.5.22"] == r["0.5.23"]
    # 0.5.20+ receivers index the mask's first key on every logprob batch.
    assert "sampling_mask_token_ids" in releases.release("0.5.20").receiver_logprob_keys
    assert releases.release("0.5.19").receiver_sampling_mask_keys == ()


def test_known_release():
    assert known_release("0.5.23") and known_release(" 0.5.18 ")
    assert not known_release("0.5.17") and not known_release("0.6.0") and not known_release("")
    with pytest.raises(LookupError) as caught:
        releases.release("0.6.0")
    assert str(caught.value) == (
        "unknown sglang release '0.6.0'; known: 0.5.18, 0.5.19, 0.5.20, 0.5.21, 0.5.22, 0.5.23"
    )


def test_match_transport():
    first, current = releases.families()[1:]
    assert releases.match_transport(current.transport_sha256, {}) == ("release", "0.5.20-0.5.23")
    assert releases.match_transport(first.transport_sha256, {}) == ("release", "0.5.19")
    assert releases.match_transport("0" * 64, dict(current.transport_digests)) == (
        "functions",
        "0.5.19-0.5.23",
    )
    changed = {**current.transport_digests, "add_auxiliary_output_to_pp_tensors": "x"}
    assert releases.match_transport("0" * 64, changed) == ("modified", None)


def _output(version: str, *, logprobs: bool = True, mask: bool = True) -> list[str]:
    facts = releases.release(version)
    keys = ["next_token_ids"]
    if logprobs:
        keys += [k for k in facts.logprob_keys if mask or not k.startswith("sampling_mask_")]
    return [*keys, "__sampling_observer_output__.scores", "__msg_type__"]


def test_release_key_findings_on_a_matching_message():
    for version in releases.release_versions():
        assert release_key_findings("dump.pt", _output(version), version) == []


def test_release_key_findings_predicts_the_key_error():
    found = release_key_findings("dump.pt", _output("0.5.19"), "0.5.23")
    assert found[0] == Finding(
        code="PP321",
        severity=Severity.ERROR,
        message="sglang 0.5.23's first stage indexes 'sampling_mask_token_ids' on logprob "
        "batches; this message lacks it",
        path="dump.pt",
        key="sampling_mask_token_ids",
        sglang_error="KeyError: 'sampling_mask_token_ids'",
        hint=found[0].hint,
    )
    assert [(f.code, f.key) for f in found] == [
        ("PP321", "sampling_mask_token_ids"),
        ("PP322", "next_token_sampling_mask_idx"),
        ("PP322", "next_token_sampling_logprobs"),
    ]
    assert found[1].message == (
        "'next_token_sampling_mask_idx' is sent by sglang "
        "0.5.18-0.5.19, not by 0.5.23: the last stage runs another release"
    )
    assert found[1].severity is Severity.WARNING


def test_release_key_findings_the_other_way_round():
    found = release_key_findings("d.pt", _output("0.5.23"), "0.5.19")
    missing = [f for f in found if f.code == "PP321"]
    assert [f.sglang_error for f in missing] == [
        "KeyError: 'next_token_sampling_mask_idx'",
        "KeyError: 'next_token_sampling_logprobs'",
    ]
    assert {f.key for f in found if f.code == "PP322"} == set(MASK_0520) | {
        "sampling_mask_support_logprobs",
        "sampling_mask_num_accept_tokens",
    }


def test_mask_keys_only_when_the_message_carries_a_mask():
    keys = [k for k in _output("0.5.21") if k != "sampling_mask_support_logprobs"]
    found = release_key_findings("d.pt", keys, "0.5.21")
    assert [(f.code, f.key, f.message) for f in found] == [
        (
            "PP321",
            "sampling_mask_support_logprobs",
            "sglang 0.5.21's first stage indexes 'sampling_mask_support_logprobs' when the message "
            "carries a sampling mask; this message lacks it",
        )
    ]
    # 0.5.21 still sends the mask keys (as None) without a mask; a message without any is a
    # 0.5.19 one, caught by the unconditional key.
    assert release_key_findings("d.pt", _output("0.5.22", mask=False), "0.5.22")[0].key == (
        "sampling_mask_token_ids"
    )


def test_messages_that_are_not_logprob_batches_or_not_output():
    assert release_key_findings("d.pt", _output("0.5.23", logprobs=False), "0.5.19") == []
    assert release_key_findings("d.pt", ["hidden_states", "residual"], "0.5.23") == []
    assert release_key_findings("d.pt", [], "0.5.23") == []
    found = release_key_findings("d.pt", ["next_token_logprobs"], "0.5.23")
    assert found[0].sglang_error == "KeyError: 'next_token_ids'"


def test_unknown_release_raises():
    with pytest.raises(SettingError) as caught:
        release_key_findings("d.pt", ["next_token_ids"], "9.9.9")
    assert caught.value.option == "release" and caught.value.value == "9.9.9"
    assert str(caught.value) == (
        "unknown sglang release '9.9.9'; known: 0.5.18, 0.5.19, 0.5.20, 0.5.21, 0.5.22, 0.5.23"
    )
