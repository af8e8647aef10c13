"""``ppaux diff A B``: keys, kinds, tensor metadata and values, pop on each side; every format."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parent.parent
DUMPS = REPO / "fixtures" / "dumps"
P = "__sampling_observer_output__."
NON_TENSOR = "received a non-tensor auxiliary PP output"
SARIF_SCHEMA = json.loads((REPO / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())


def ppaux(*args: str, cwd: Path | None = None):
    from typer.testing import CliRunner

    from ppaux_cli.app import app

    here = os.getcwd()
    os.chdir(cwd or REPO)
    try:
        result = CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "100"})
    finally:
        os.chdir(here)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_diff_never_imports_torch():
    code = (
        "import sys; from ppaux.dump.diff import diff_paths; "
        f"r = diff_paths({str(DUMPS / 'clean_output.pt')!r}, "
        f"{str(DUMPS / 'cuda1_output.pt')!r}); "
        "print(len(r.findings), 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert done.stdout.split() == ["4", "False"]


# -- a capture and its tensorized copy -----------------------------------------------------------

#: The keys tensorize converts in each convertible fixture (from fixtures/README.md).
CONVERTED_KEYS = {
    "aux_list.pt": {P + "scores"},
    "aux_float.pt": {P + "scores"},
    "aux_list_of_tensors.pt": {P + "scores"},
    "capture_pop_error.pt": {P + "scores"},
    "capture_add_error.pt": {"scores"},
}


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CONVERTED_KEYS))
def test_diff_of_a_dump_and_its_tensorized_copy_names_exactly_the_converted_keys(name, tmp_path):
    fixed = tmp_path / "fixed.pt"
    assert ppaux("tensorize", str(DUMPS / name), "-o", str(fixed)).exit_code == 0
    done = ppaux("diff", str(DUMPS / name), str(fixed), "--format", "json")
    assert done.exit_code == 1
    findings = json.loads(done.stdout)["findings"]
    assert {f["key"] for f in findings if f["key"] is not None} == CONVERTED_KEYS[name]
    assert [f["code"] for f in findings if f["key"] is not None] == ["PP603"]
    # On the side it is about: A holds the non-tensor that rank 0 refuses, and A's pop fails.
    assert {f["path"] for f in findings if f["code"] in ("PP603", "PP606")} == {str(DUMPS / name)}
    pops = [f for f in findings if f["code"] == "PP606"]
    if name == "capture_add_error.pt":  # the add-side output is not popped: no verdict on pop
        assert pops == []
    else:
        assert [f["message"] for f in pops] == [
            f"A: pop raises RuntimeError: {NON_TENSOR}; B: pop succeeds"
        ]
        assert pops[0]["sglang_error"] == NON_TENSOR
    meta = [f["message"] for f in findings if f["code"] == "PP609"]
    if name.startswith("capture_"):
        assert meta == [
            "capture metadata differs in exception_type, exception_message, "
            "original_exception_type, original_exception_message, rewritten_by, rewritten_from, "
            "rewritten_from_sha256, rewritten_keys (B: ppaux tensorize 0.1.0 rewrote "
            f"{os.path.relpath(DUMPS / name)})"  # relative, as the user gave it: no machine path
        ]
    else:
        assert meta == []


def test_a_dump_and_its_copy_do_not_differ(tmp_path):
    copy = tmp_path / "copy.pt"
    shutil.copy(DUMPS / "clean_output.pt", copy)
    done = ppaux("diff", str(DUMPS / "clean_output.pt"), str(copy), "--format", "json")
    assert done.exit_code == 0
    document = json.loads(done.stdout)
    assert document["findings"] == []
    [compared] = document["diff"]["dicts"]
    assert {e["status"] for e in compared["entries"]} == {"same"}
    assert len(compared["entries"]) == 22
    # deflated_datapkl.pt is the same message with data.pkl compressed: no difference either.
    assert (
        ppaux("diff", str(DUMPS / "clean_output.pt"), str(DUMPS / "deflated_datapkl.pt")).exit_code
        == 0
    )


def test_a_dump_rank_0_refuses_compared_with_itself_is_equally_broken_not_fine(tmp_path):
    copy = tmp_path / "copy.pt"
    shutil.copy(DUMPS / "aux_list.pt", copy)
    done = ppaux("diff", str(DUMPS / "aux_list.pt"), str(copy), "--format", "json")
    assert done.exit_code == 1
    document = json.loads(done.stdout)
    [compared] = document["diff"]["dicts"]
    assert {e["status"] for e in compared["entries"]} == {"same"}
    assert [(f["code"], f["severity"], f["sglang_error"]) for f in document["findings"]] == [
        ("PP610", "error", NON_TENSOR)
    ]
    assert document["findings"][0]["message"] == f"A and B: pop raises RuntimeError: {NON_TENSOR}"
    # Where only one side fails, that is PP606, not PP610.
    one = ppaux(
        "diff", str(DUMPS / "aux_list.pt"), str(DUMPS / "clean_output.pt"), "--format", "json"
    )
    assert "PP610" not in one.stdout and "PP606" in one.stdout


def test_device_changes_are_errors_on_aux_entries_and_info_elsewhere():
    done = ppaux(
        "diff", str(DUMPS / "clean_output.pt"), str(DUMPS / "cuda1_output.pt"), "--format", "json"
    )
    assert done.exit_code == 1
    findings = json.loads(done.stdout)["findings"]
    assert [(f["code"], f["severity"], f["key"], f["message"]) for f in findings] == [
        ("PP604", "info", "next_token_ids", "device cpu -> cuda:1"),
        ("PP604", "info", "next_token_logprobs", "device cpu -> cuda:1"),
        ("PP604", "error", P + "entropy", "device cpu -> cuda:1"),
        ("PP604", "error", P + "top_ids", "device cpu -> cuda:1"),
    ]


def _save(path: Path, message: dict) -> Path:
    import torch

    torch.save(message, path)
    return path


@pytest.mark.torch
def test_values_keys_and_metadata(tmp_path):
    import torch

    a = _save(
        tmp_path / "a.pt",
        {
            "next_token_ids": torch.arange(2),
            "logprobs": [0.5, 0.25],
            P + "scores": torch.tensor([1.0, 2.0]),
            P + "gone": torch.ones(1),
            P + "wide": torch.ones(2, 3),
            "__msg_type__": "output",
        },
    )
    b = _save(
        tmp_path / "b.pt",
        {
            "next_token_ids": torch.arange(2),
            "logprobs": [0.5, 0.125],
            P + "scores": torch.tensor([1.0, 3.0]),
            P + "wide": torch.ones(3, 2, dtype=torch.float16),
            P + "new": torch.zeros(1),
            "__msg_type__": "output",
        },
    )
    done = ppaux("diff", str(a), str(b), "--format", "json")
    assert done.exit_code == 1
    # Digests of the raw little-endian float32 bytes, worked out here with hashlib.
    da = hashlib.sha256(struct.pack("<2f", 1.0, 2.0)).hexdigest()[:12]
    db = hashlib.sha256(struct.pack("<2f", 1.0, 3.0)).hexdigest()[:12]
    assert [
        (f["code"], f["severity"], f["key"], f["message"])
        for f in json.loads(done.stdout)["findings"]
    ] == [
        ("PP605", "info", "logprobs", "the values differ ([0.5, 0.25] in A, [0.5, 0.125] in B)"),
        (
            "PP605",
            "error",
            P + "scores",
            f"the tensors' bytes differ (sha256 {da}... in A, {db}... in B)",
        ),
        ("PP602", "error", P + "gone", "only in A (float32 (1,) cpu)"),
        (
            "PP604",
            "error",
            P + "wide",
            "dtype float32 -> float16, shape (2, 3) -> (3, 2), stride (3, 1) -> (2, 1)",
        ),
        ("PP601", "error", P + "new", "only in B (float32 (1,) cpu)"),
    ]


@pytest.mark.torch
def test_tensor_bytes_are_read_in_blocks(tmp_path, monkeypatch):
    import torch

    from ppaux.dump import diff

    big = torch.arange(3 * 2**20 // 4, dtype=torch.float32)  # 3 MiB
    changed = big.clone()
    changed[-1] = -1.0
    a = _save(tmp_path / "a.pt", {P + "big": big})
    b = _save(tmp_path / "b.pt", {P + "big": changed})
    c = _save(tmp_path / "c.pt", {P + "big": big.clone()})
    reads: list[int] = []
    from ppaux.dump import digests

    real = digests.StorageRecords._read

    def counting(self, storage, start, end, sink):
        return real(
            self, storage, start, end, lambda block: (reads.append(len(block)), sink(block))
        )

    monkeypatch.setattr(digests.StorageRecords, "_read", counting)
    report = diff.diff_paths(str(a), str(b))
    assert [f.code for f in report.findings] == ["PP605"]
    assert max(reads) <= digests.BLOCK_BYTES and sum(reads) == 2 * big.numel() * 4
    assert diff.diff_paths(str(a), str(c)).findings == ()


@pytest.mark.torch
def test_views_compare_by_the_elements_they_see(tmp_path):
    import torch

    base = torch.arange(8, dtype=torch.float32)
    a = _save(tmp_path / "a.pt", {P + "v": base[2:5]})  # a view into a bigger storage
    b = _save(tmp_path / "b.pt", {P + "v": torch.tensor([2.0, 3.0, 4.0])})
    c = _save(tmp_path / "c.pt", {P + "v": torch.tensor([2.0, 3.0, 9.0])})
    from ppaux.dump.diff import diff_paths

    assert diff_paths(str(a), str(b)).findings == ()
    assert [f.code for f in diff_paths(str(a), str(c)).findings] == ["PP605"]


@pytest.mark.torch
@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
def test_negative_and_conjugate_views_compare_by_the_values_torch_load_gives(tmp_path, zipped):
    import torch

    def save(name: str, value: torch.Tensor) -> str:
        path = tmp_path / f"{name}.pt"
        torch.save({P + "v": value}, path, _use_new_zipfile_serialization=zipped)
        return str(path)

    stored = torch.tensor([1.0, -2.0, 0.0])
    complex_stored = torch.tensor([1 + 2j, -3 - 4j])
    neg_view = save("neg_view", torch._neg_view(stored))  # torch.load reads [-1, 2, -0]
    negated = save("negated", torch.tensor([-1.0, 2.0, -0.0]))
    plain = save("plain", stored.clone())
    conj_view = save("conj_view", complex_stored.conj())  # torch.load reads [1-2j, -3+4j]
    conjugated = save("conjugated", torch.tensor([1 - 2j, -3 + 4j]))
    complex_plain = save("complex_plain", complex_stored.clone())
    int_view = save("int_view", torch._neg_view(torch.tensor([1, -128, 0], dtype=torch.int8)))
    int_negated = save("int_negated", torch.tensor([-1, -128, 0], dtype=torch.int8))
    from ppaux.dump.diff import diff_paths

    def codes(a: str, b: str) -> list[str]:
        return [f.code for f in diff_paths(a, b).findings]

    assert codes(neg_view, negated) == []
    assert codes(neg_view, plain) == ["PP605"]
    assert codes(conj_view, conjugated) == []
    assert codes(conj_view, complex_plain) == ["PP605"]
    assert codes(int_view, int_negated) == []
    # The finding says what was compared: a view's values, not the bytes it views.
    (found,) = diff_paths(conj_view, complex_plain).findings
    assert found.message.startswith(
        "the values the tensors read (A is a conjugate view: compared by value) differ (sha256 "
    )
    (found,) = diff_paths(plain, neg_view).findings
    assert "(B is a negative view: compared by value)" in found.message
    plain_b = save("plain_b", torch.tensor([1.0, -2.0, 0.5]))
    (found,) = diff_paths(plain, plain_b).findings
    assert found.message.startswith("the tensors' bytes differ (sha256 ")


# -- formats, bad inputs, hostile files ----------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif", "junit", "gitlab"])
def test_every_format(fmt):
    done = ppaux("diff", str(DUMPS / "aux_list.pt"), str(DUMPS / "aux_float.pt"), "--format", fmt)
    assert done.exit_code == 1
    out = done.stdout
    if fmt == "text":
        # wrapped at the width: the words, in order
        assert (
            f"PP603 error {DUMPS / 'aux_float.pt'} [{P}scores]: a list of 2 floats in A, 0.5 in B"
        ) in " ".join(out.split())
    elif fmt == "json":
        assert json.loads(out)["command"] == "diff"
    elif fmt == "github":
        assert out.startswith("::error file=")
    elif fmt == "sarif":
        jsonschema.Draft4Validator(SARIF_SCHEMA).validate(json.loads(out))
    elif fmt == "junit":
        assert ET.fromstring(out).tag == "testsuites"
    else:
        assert json.loads(out)[0]["check_name"] == "PP603"


def test_fail_on_never_and_select():
    assert (
        ppaux(
            "diff", str(DUMPS / "aux_list.pt"), str(DUMPS / "aux_float.pt"), "--fail-on", "never"
        ).exit_code
        == 0
    )
    assert (
        ppaux(
            "diff",
            str(DUMPS / "clean_output.pt"),
            str(DUMPS / "cuda1_output.pt"),
            "--ignore",
            "PP604",
        ).exit_code
        == 0
    )


@pytest.mark.parametrize(
    "args, line",
    [
        (["missing.pt", str(DUMPS / "aux_list.pt")], "ppaux: error: missing.pt: no such file"),
        (
            [str(DUMPS / "aux_list.pt"), str(REPO / "fixtures" / "corrupt" / "empty.pt")],
            f"ppaux: error: {REPO / 'fixtures' / 'corrupt' / 'empty.pt'}: empty file",
        ),
    ],
)
def test_bad_inputs_are_one_line_and_exit_2(args, line):
    done = ppaux("diff", *args)
    assert done.exit_code == 2
    assert done.stderr.splitlines() == [line]


def test_hostile_corpus_runs_nothing(tmp_path):
    # The adversarial corpus (fixtures/adversarial) goes through this same diff in
    # tests/test_adversarial.py, one process per file, with these same checks
    # (test_byte_readers_survive_the_corpus, test_byte_readers_report_the_corpus_in_json).
    files = sorted(
        p for p in (REPO / "fixtures" / "malicious").iterdir() if p.suffix in (".pt", ".pkl")
    )
    for path in files:
        (Path("/tmp") / f"ppaux_pwned_{path.stem}").unlink(missing_ok=True)
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    for path in files:
        done = ppaux(
            "diff", str(DUMPS / "clean_output.pt"), str(path), "--format", "json", cwd=tmp_path
        )
        assert done.exit_code in (0, 1, 2), path
        if done.exit_code == 2:
            [line] = done.stderr.splitlines()
            assert line.startswith("ppaux: error: "), (path, done.stderr)
        else:
            json.loads(done.stdout)
        assert os.listdir(tmp_path) == [], path
    assert [p for p in files if (Path("/tmp") / f"ppaux_pwned_{p.stem}").exists()] == []
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in files} == before


def test_a_file_name_with_a_newline_is_read_by_its_name_and_shown_escaped(tmp_path):
    odd = tmp_path / "odd\nname.pt"
    shutil.copy(DUMPS / "clean_output.pt", odd)
    done = ppaux("diff", str(DUMPS / "clean_output.pt"), str(odd), "--format", "json")
    assert done.exit_code == 0
    document = json.loads(done.stdout)
    assert document["findings"] == []  # every tensor's bytes read and compared: no PP608
    assert document["diff"]["b"] == str(odd).replace("\n", "\\n")


def test_a_hostile_wide_dict_is_listed_in_part_and_counted():
    # 100,000 keys only in A: every key is compared, the report lists the first findings of the
    # code and the first max_report_entries entries, and counts the rest.
    result = ppaux(
        "diff",
        "fixtures/adversarial/bomb_wide_dict.pt",
        "fixtures/dumps/clean_output.pt",
        "--format",
        "json",
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    pp602 = [f for f in report["findings"] if f["code"] == "PP602"]
    assert len(pp602) == 101
    assert pp602[-1]["message"].startswith("99901 more PP602 findings in this file are not listed")
    (compared,) = report["diff"]["dicts"]
    assert len(compared["entries"]) == 10_000
    # A holds 100,002 keys (k0..k99999, scores, __msg_type__), B 22, __msg_type__ in both.
    assert compared["entries_omitted"] == 100_002 + 22 - 1 - 10_000
