"""Fingerprints: what collect records, secrets kept out, and every malformed file refused."""

from __future__ import annotations

import enum
import json
import os
import platform
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skew_fixtures import BAD, SETS, tree

import ppaux
from ppaux.skew.fingerprint import (
    PACKAGES,
    SCHEMA,
    Fingerprint,
    FingerprintError,
    load,
    loads,
)
from ppaux.skew.snapshot import collect, redact_environment

GOOD = str(SETS / "consistent" / "pp0.json")
_GOOD_TEXT = (SETS / "consistent" / "pp0.json").read_text(encoding="utf-8")


def test_collect_records_this_process():
    env = {
        "RANK": "3",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "8",
        "SGLANG_ENABLE_PP_SPEC": "1",
        "HOME": "/root",
        "PATH": "/bin",
    }
    fp = collect(sglang_path=tree("v0519"), pp_rank=1, pp_size=2, environ=env)
    assert fp.schema == SCHEMA and fp.tool_version == ppaux.__version__
    assert fp.pid == os.getpid()
    assert (fp.rank.rank, fp.rank.local_rank, fp.rank.world_size) == (3, 1, 8)
    assert (fp.rank.pp_rank, fp.rank.pp_size) == (1, 2)
    assert fp.python == {
        "version": platform.python_version(),
        "implementation": sys.implementation.name,
    }
    assert set(fp.packages) == set(PACKAGES)
    assert fp.packages["ppaux"] == ppaux.__version__
    assert fp.environment == {
        "LOCAL_RANK": "1",
        "RANK": "3",
        "SGLANG_ENABLE_PP_SPEC": "1",
        "WORLD_SIZE": "8",
    }
    assert fp.sglang.version == "0.5.19" and fp.sglang.transport == "present"
    assert fp.driver["version"] in ("unknown",) or fp.driver["version"][0].isdigit()
    assert fp.nccl["version"] == "unknown" or fp.nccl["version"][0].isdigit()


@pytest.mark.torch  # only to know what to expect; the child never imports it
def test_torch_build_is_read_without_importing_torch():
    code = (
        "import sys, json\n"
        "from ppaux.skew.snapshot import collect\n"
        "fp = collect()\n"
        "print(json.dumps([fp.torch_build, 'torch' in sys.modules, 'sglang' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    build, torch_loaded, sglang_loaded = json.loads(done.stdout)
    import torch

    assert build["version"] == torch.__version__
    assert build["cuda"] == torch.version.cuda
    assert build["git_version"] == torch.version.git_version
    assert (torch_loaded, sglang_loaded) == (False, False)


def test_redaction():
    env = {
        "HF_TOKEN": "hf_abc",
        "SGLANG_API_KEY": "k",
        "NCCL_IB_PASSWORD": "p",
        "SGLANG_PP_SKIP_PURE_CHUNKED_OUTPUT_COMM": "1",
        "SGLANG_MODEL_URL": "https://user:hunter2@models.example/x",
        "TORCH_SECRET_THING": "s",
        "AWS_SECRET_ACCESS_KEY": "not PP related",
        "MASTER_ADDR": "10.0.0.1",
    }
    assert redact_environment(env) == {
        "MASTER_ADDR": "10.0.0.1",
        "SGLANG_API_KEY": "<redacted>",
        "SGLANG_MODEL_URL": "https://<redacted>@models.example/x",
        "SGLANG_PP_SKIP_PURE_CHUNKED_OUTPUT_COMM": "1",
        "TORCH_SECRET_THING": "<redacted>",
        "NCCL_IB_PASSWORD": "<redacted>",
    }
    assert "HF_TOKEN" not in redact_environment(env)  # not a PP variable at all


def test_round_trip():
    fp = collect(sglang_path=tree("v0523"), pp_rank=0, pp_size=4)
    again = loads(fp.dumps(), "x.json")
    assert again == fp and again.source == "x.json"
    assert json.loads(fp.dumps())["schema"] == "ppaux.fingerprint/1"


def test_committed_sets_load():
    for name in ("consistent", "skewed", "releases"):
        for path in sorted((SETS / name).glob("*.json")):
            fp = load(str(path))
            assert isinstance(fp, Fingerprint) and fp.source == str(path)


BAD_REASONS = {
    "malformed.json": "not valid JSON: Expecting property name enclosed in double quotes (line 12, "
    "column 2)",
    "schema_v2.json": "fingerprint schema 'ppaux.fingerprint/2' is not supported by ppaux "
    f"{ppaux.__version__}, which reads 'ppaux.fingerprint/1'; take the fingerprints with the same "
    "ppaux version",
    "other_tool.json": "not a ppaux fingerprint (schema 'ppaux.report/1', expected "
    "'ppaux.fingerprint/1')",
    "no_schema.json": "not a ppaux fingerprint (no 'schema' field); make one with "
    "'ppaux fingerprint -o FILE'",
    "not_object.json": "not a ppaux fingerprint: the document is a list, not an object",
    "missing_field.json": "missing field 'packages'",
    "wrong_type.json": "field 'rank.pp_rank' must be an integer or null, not a string \"first\"",
    "wrong_sglang_type.json": "field 'sglang.logprob_keys' must be a list or null, not a string "
    '"next_token_logprobs"',
}


@pytest.mark.parametrize("name", sorted(BAD_REASONS))
def test_bad_fingerprints(name):
    path = str(BAD / name)
    with pytest.raises(FingerprintError) as caught:
        load(path)
    assert caught.value.reason == BAD_REASONS[name]
    assert str(caught.value) == f"{path}: {BAD_REASONS[name]}"


def test_every_bad_fixture_is_covered():
    assert sorted(p.name for p in BAD.glob("*.json")) == sorted(BAD_REASONS)


def test_unreadable_inputs(tmp_path):
    with pytest.raises(FingerprintError, match=r": no such file$"):
        load(str(tmp_path / "none.json"))
    with pytest.raises(FingerprintError, match=r": is a directory, not a fingerprint file$"):
        load(str(tmp_path))
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(FingerprintError, match=r": binary data, not a fingerprint JSON$"):
        load(str(binary))


def test_booleans_are_not_ranks():
    with open(GOOD, encoding="utf-8") as handle:
        doc = json.load(handle)
    doc["rank"]["rank"] = True
    with pytest.raises(FingerprintError) as caught:
        loads(json.dumps(doc), "t.json")
    assert caught.value.reason == "field 'rank.rank' must be an integer or null, not a boolean true"


@pytest.mark.parametrize("name", ["transport", "match", "wire", "non_tensor_values"])
def test_a_null_where_a_string_is_needed_is_named_once(name):
    with open(GOOD, encoding="utf-8") as handle:
        doc = json.load(handle)
    doc["sglang"][name] = None
    with pytest.raises(FingerprintError) as caught:
        loads(json.dumps(doc), "t.json")
    assert caught.value.reason == f"field 'sglang.{name}' must be a string, not null"


def test_a_verdict_no_release_of_ppaux_writes_is_refused_by_name():
    with open(GOOD, encoding="utf-8") as handle:
        doc = json.load(handle)
    doc["sglang"]["match"] = "patched"
    with pytest.raises(FingerprintError) as caught:
        loads(json.dumps(doc), "t.json")
    assert caught.value.reason == (
        "field 'sglang.match' must be one of release, functions, modified, absent, unknown, "
        'not "patched"'
    )


_VERDICT_WORDS = {
    "transport": {"present", "absent", "unknown"},
    "match": {"release", "functions", "modified", "absent", "unknown"},
    "wire": {"release", "modified", "absent", "unknown"},
}


@settings(max_examples=25, deadline=None)
@given(
    field=st.sampled_from(sorted(_VERDICT_WORDS)),
    word=st.one_of(st.sampled_from(["present", "release", "modified", "functions"]), st.text()),
)
def test_a_verdict_loads_as_its_member_or_is_refused(field, word):
    # Any string in a verdict field: one of its words loads as that word's member (a string
    # equal to it, written back the same); any other is refused with one line naming the field.
    doc = json.loads(_GOOD_TEXT)
    doc["sglang"][field] = word
    if word in _VERDICT_WORDS[field]:
        loaded = loads(json.dumps(doc), "t.json")
        verdict = getattr(loaded.sglang, field)
        assert isinstance(verdict, enum.Enum) and verdict.value == word
        assert json.loads(loaded.dumps())["sglang"][field] == word
    else:
        with pytest.raises(FingerprintError) as caught:
            loads(json.dumps(doc), "t.json")
        assert caught.value.reason.startswith(f"field 'sglang.{field}' must be one of ")
        assert "\n" not in caught.value.reason
