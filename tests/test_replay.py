"""``ppaux replay`` as a user runs it: outcomes, exit codes, one-line errors, implementations."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from helpers import REPO, cli
from test_replay_fixtures import replayable_dumps

from ppaux.replay import Impl, ReplayOptions, Sender, Transport, replay_paths

P = "__sampling_observer_output__."


pytestmark = [pytest.mark.usefixtures("in_repo"), pytest.mark.torch]
run = cli


def replay_json(*args: str) -> tuple[int, dict]:
    result = run("replay", *args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


# -- sglang-shaped modules -----------------------------------------------------------------------

# An implementation of the transport written from its documented behaviour (not sglang's code),
# in a tree laid out like sglang's: a package whose __init__ would be heavy, namespace packages
# below it, and the annotation imports the real file makes.
_SHAPED = """
from typing import Any, Optional, Protocol, runtime_checkable

import torch

from sglang.srt.managers.auxiliary_output import DeviceAuxiliaryOutput  # noqa: F401

_OUTPUT_PREFIX = "__sampling_observer_output__."


@runtime_checkable
class PipelineParallelAuxiliaryOutput(Protocol):
    def to_pp_tensors(self): ...


@runtime_checkable
class PipelineParallelSamplingObserver(Protocol):
    def from_pp_tensors(self, tensors): ...


def add_auxiliary_output_to_pp_tensors(tensors, output):
    if output is None:
        return
    if not isinstance(output, PipelineParallelAuxiliaryOutput):
        raise RuntimeError("auxiliary output does not support pipeline-parallel transport")
    produced = output.to_pp_tensors()
    if not produced:
        raise RuntimeError("auxiliary PP output must contain at least one tensor")
    for name, value in produced.items():
        if type(name) is not str and not isinstance(name, str) or name == "":
            raise RuntimeError("auxiliary PP tensor names must be non-empty strings")
        if not torch.is_tensor(value):
            raise RuntimeError("auxiliary PP output %r is not a tensor" % (name,))
        wire_key = _OUTPUT_PREFIX + name
        if wire_key in tensors:
            raise RuntimeError("duplicate auxiliary PP tensor %r" % (name,))
        tensors[wire_key] = value


def pop_auxiliary_output_from_pp_tensors(tensors, observer):
    found = {}
    for key in list(tensors.keys()):
        if key.startswith(_OUTPUT_PREFIX):
            found[key[len(_OUTPUT_PREFIX):]] = tensors[key]
    if len(found) == 0:
        return None
    if observer is None:
        raise RuntimeError("received auxiliary PP output without a sampling observer")
    if not isinstance(observer, PipelineParallelSamplingObserver):
        raise RuntimeError("sampling observer does not support pipeline-parallel transport")
    if not all(torch.is_tensor(v) for v in found.values()):
        raise RuntimeError("received a non-tensor auxiliary PP output")
    rebuilt = observer.from_pp_tensors(found)
    if rebuilt is None:
        raise RuntimeError("sampling observer did not reconstruct its PP output")
    for name in found:
        del tensors[_OUTPUT_PREFIX + name]
    return rebuilt
"""

# The same, patched the way a field fix might be: pop lets non-tensors through.
_PATCHED = _SHAPED.replace(
    "    if not all(torch.is_tensor(v) for v in found.values()):\n"
    '        raise RuntimeError("received a non-tensor auxiliary PP output")\n',
    "",
)


def shaped_tree(root: Path, source: str = _SHAPED) -> Path:
    """Write a sglang-shaped tree under ``root``; its __init__ raises if anything imports it."""
    package = root / "sglang"
    (package / "srt" / "sampling").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "raise ImportError('the heavy sglang package was imported')\n"
    )
    (package / "_version.py").write_text("__version__ = version = '0.5.23'\n")
    (package / "srt" / "sampling" / "sampling_observer_pp.py").write_text(textwrap.dedent(source))
    return root


# -- the whole failure, end to end ---------------------------------------------------------------


def test_validating_sender_stops_at_add_legacy_sender_fails_on_rank_0(tmp_path):
    dump = tmp_path / "list_aux.pt"
    torch.save(
        {
            "next_token_ids": torch.tensor([5, 6]),
            f"{P}scores": [0.25, 0.75],
            "__msg_type__": "output",
        },
        dump,
    )
    code, doc = replay_json(str(dump), "--transport", "wire")
    assert code == 1
    (result,) = doc["results"]
    assert (result["outcome"], result["stage"], result["error"]) == (
        "error",
        "add",
        "auxiliary PP output 'scores' is not a tensor",
    )
    assert [f["code"] for f in doc["findings"]] == ["PP402"]
    assert doc["findings"][0]["key"] == f"{P}scores"

    code, doc = replay_json(str(dump), "--transport", "wire", "--sender", "legacy")
    assert code == 1
    (result,) = doc["results"]
    assert (result["outcome"], result["stage"], result["error_type"], result["error"]) == (
        "error",
        "pop",
        "RuntimeError",
        "received a non-tensor auxiliary PP output",
    )
    run_ = result["payloads"][0]["runs"]["reference"]
    # The list rode inside the pickled metadata and arrived as a list.
    assert run_["received"] == [{"type": "list", "repr": "[0.25, 0.75]", "key": f"{P}scores"}]
    assert run_["wire"]["tensors"] == 1 and run_["wire"]["tensor_bytes"] == 16


def test_clean_replay_reports_the_output_and_exit_0():
    code, doc = replay_json("fixtures/dumps/clean_output.pt", "--transport", "wire")
    assert code == 0
    (result,) = doc["results"]
    assert (result["path"], result["outcome"], result["error"]) == (
        "fixtures/dumps/clean_output.pt",
        "ok",
        None,
    )
    run_ = result["payloads"][0]["runs"]["reference"]
    assert run_["output"] == [
        {
            "type": "torch.Tensor",
            "dtype": "float32",
            "shape": [2],
            "device": "cpu",
            "layout": "strided",
            "name": "entropy",
        },
        {
            "type": "torch.Tensor",
            "dtype": "int64",
            "shape": [2, 4],
            "device": "cpu",
            "layout": "strided",
            "name": "top_ids",
        },
    ]
    assert run_["remaining_keys"][-1] == "__msg_type__"
    assert not any(k.startswith(P) for k in run_["remaining_keys"])
    assert run_["mismatches"] == [] and run_["changes"] == []
    assert doc["replay"] == {
        "device": "cpu",
        "sender": "validating",
        "transport": "wire",
        "impl": "reference",
        "all_gather": 1,
        "implementations": {
            "reference": {
                "origin": "ppaux.replay.transport",
                "version": None,
                "sha256": None,
                "stock_releases": [],
            }
        },
        "sglang_runtime": None,
    }


def test_text_view_has_a_summary_and_a_table_per_payload():
    result = run(
        "replay",
        "fixtures/dumps/clean_output.pt",
        "fixtures/dumps/aux_list.pt",
        "--sender",
        "legacy",
    )
    assert result.exit_code == 1
    out = result.stdout
    assert "replay: 2 dump(s) on cpu, sender legacy, transport none, impl reference" in out
    assert "output entropy, top_ids, bit-identical" in out
    assert "RuntimeError: received a non-tensor auxiliary PP output" in out
    assert re.search(r"\n entropy +float32 \(2,\) cpu +float32 \(2,\) cpu +bit-identical\n", out)
    assert (
        "PP401 error fixtures/dumps/aux_list.pt [__sampling_observer_output__.scores]: pop on "
        "rank 0 raises RuntimeError: received a non-tensor auxiliary PP output"
        in " ".join(out.split())  # wrapped at the width: the words, in order
    )


def test_the_text_view_of_many_auxiliary_tensors_lists_a_bounded_part(tmp_path):
    from ppaux.replay.tables import DETAIL_ROWS_SHOWN, OUTPUT_NAMES_SHOWN

    path = tmp_path / "many.pt"
    count = DETAIL_ROWS_SHOWN + 30
    torch.save(
        {"logits": torch.zeros(2), **{f"{P}k{i}": torch.ones(1) for i in range(count)}}, path
    )
    out = " ".join(run("replay", str(path)).stdout.split())  # the words, in order
    listed = ", ".join(f"k{i}" for i in range(OUTPUT_NAMES_SHOWN))
    assert f"output {listed} and {count - OUTPUT_NAMES_SHOWN} more, bit-identical" in out
    assert f" k{DETAIL_ROWS_SHOWN - 1} float32 (1,) cpu float32 (1,) cpu bit-identical" in out
    assert f" k{DETAIL_ROWS_SHOWN} float32" not in out
    assert "(30 more rows; the JSON report lists every row)" in out
    _, doc = replay_json(str(path))
    (sent,) = [run["sent"] for run in doc["results"][0]["payloads"][0]["runs"].values()]
    assert len(sent) == count


def test_directory_and_exit_codes(tmp_path):
    clean = tmp_path / "clean"
    clean.mkdir()
    for name in ("clean_output.pt", "plain_pickle.pkl", "pp_proxy.pt"):
        (clean / name).write_bytes((REPO / "fixtures" / "dumps" / name).read_bytes())
    code, doc = replay_json(str(clean))
    # Each file is judged as inspect judges it: pp_proxy.pt pickles a class outside torch's
    # allowlist (PP201), whatever its replay gives.
    assert code == 1
    assert [(f["code"], f["path"]) for f in doc["findings"] if f["severity"] == "error"] == [
        ("PP201", str(clean / "pp_proxy.pt"))
    ]
    assert [r["path"] for r in doc["results"]] == [
        str(clean / "clean_output.pt"),
        str(clean / "plain_pickle.pkl"),
        str(clean / "pp_proxy.pt"),
    ]
    assert [r["outcome"] for r in doc["results"]] == ["ok", "ok", "ok"]
    # An unusable dump beside good ones: the others still replay, the exit code is 2.
    (clean / "broken.pt").write_bytes(b"")
    result = run("replay", str(clean))
    assert result.exit_code == 2
    assert result.stderr == f"ppaux: error: {clean / 'broken.pt'}: empty file\n"


def test_progress_is_reported_per_dump():
    calls = []
    replay_paths(
        ["fixtures/dumps/clean_output.pt", "fixtures/dumps/aux_list.pt"],
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(1, 2), (2, 2)]


def test_inputs_are_never_changed(tmp_path):
    dump = tmp_path / "dump.pt"
    dump.write_bytes((REPO / "fixtures" / "dumps" / "clean_output.pt").read_bytes())
    os.chmod(dump, 0o444)  # read-only: any attempt to open it for writing would fail
    before = (hashlib.sha256(dump.read_bytes()).hexdigest(), dump.stat().st_mtime_ns)
    for transport in ("none", "wire"):
        assert run("replay", str(dump), "--transport", transport).exit_code == 0
    assert (hashlib.sha256(dump.read_bytes()).hexdigest(), dump.stat().st_mtime_ns) == before


@pytest.mark.parametrize("size", ["1", "2"])
def test_all_gather_group_hides_a_non_contiguous_layout(size):
    # Without a group (--all-gather 0) gloo refuses the view; with one, even of one rank (the
    # scheduler's default in every release), reshape(size, -1) copies it.
    code, doc = replay_json(
        "fixtures/dumps/aux_non_contiguous.pt", "--transport", "wire", "--all-gather", "0"
    )
    assert (code, doc["results"][0]["error"]) == (1, "input tensor has to be contiguous")
    assert doc["findings"][0]["code"] == "PP403"
    assert doc["findings"][0]["message"] == (
        "the emulated wire fails on the sender after the metadata was sent, so the receiver waits "
        "for data that never comes: RuntimeError: input tensor has to be contiguous"
    )
    code, doc = replay_json(
        "fixtures/dumps/aux_non_contiguous.pt", "--transport", "wire", "--all-gather", size
    )
    assert code == 0
    (change,) = doc["results"][0]["payloads"][0]["runs"]["reference"]["changes"]
    assert change == {
        "key": f"{P}scores",
        "what": "stride",
        "detail": "the tensor came back with other strides",
        "sent": [1, 3],
        "received": [2, 1],
    }
    assert [f["code"] for f in doc["findings"]] == ["PP407"]


# -- settings that cannot work ---------------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a host without CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_cuda_is_one_line_exit_2(device):
    result = run("replay", "fixtures/dumps/clean_output.pt", "--device", device)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"ppaux: error: --device {device}: CUDA is not available here (torch was built without "
        f"CUDA; torch {torch.__version__})\n"
    ) or result.stderr == (
        f"ppaux: error: --device {device}: CUDA is not available here (no CUDA device is "
        f"visible; torch {torch.__version__})\n"
    )


def test_auto_device_falls_back_to_cpu_without_cuda():
    code, doc = replay_json("fixtures/dumps/clean_output.pt", "--device", "auto")
    assert code == 0
    assert doc["replay"]["device"] == ("cuda:0" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--device", "tpu"], "--device tpu: not a device; use cpu, cuda, cuda:N or auto"),
        (
            ["--sglang-path", "/nonexistent/sglang"],
            "--sglang-path /nonexistent/sglang: only used with sglang's implementation (alone "
            "or beside the reference) or with the sglang transport; try --impl sglang or "
            "--impl both or --transport sglang",
        ),
        (
            ["--impl", "both", "--sglang-path", "/nonexistent/sglang"],
            "--sglang-path /nonexistent/sglang: no such file or directory",
        ),
    ],
)
def test_bad_settings_are_one_line_exit_2(args, message):
    result = run("replay", "fixtures/dumps/clean_output.pt", *args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"ppaux: error: {message}\n")


def test_old_release_without_the_transport_is_refused(tmp_path):
    root = shaped_tree(tmp_path)
    (root / "sglang" / "srt" / "sampling" / "sampling_observer_pp.py").unlink()
    (root / "sglang" / "_version.py").write_text("__version__ = version = '0.5.18'\n")
    result = run(
        "replay", "fixtures/dumps/clean_output.pt", "--impl", "sglang", "--sglang-path", str(root)
    )
    assert result.exit_code == 2
    assert result.stderr == (
        f"ppaux: error: --sglang-path {root}: sglang 0.5.18 has no "
        "sglang/srt/sampling/sampling_observer_pp.py (the PP auxiliary transport first shipped "
        "in 0.5.19)\n"
    )


@pytest.mark.parametrize("name", ["observer.py", "sampling_observer_pp.py"])
def test_a_python_file_that_is_not_sglang_s_transport_is_refused_unrun(tmp_path, name):
    mark = tmp_path / "ran"
    given = tmp_path / name
    given.write_text(f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')\n")
    result = run(
        "replay", "fixtures/dumps/clean_output.pt", "--impl", "sglang", "--sglang-path", str(given)
    )
    if name == "observer.py":
        reason = (
            "not sglang's sampling_observer_pp.py; expected an sglang tree (a directory holding "
            "sglang/srt/sampling/sampling_observer_pp.py), a release wheel (.whl) or that file "
            "itself"
        )
    else:
        reason = (
            "sampling_observer_pp.py defines no add_auxiliary_output_to_pp_tensors and no "
            "pop_auxiliary_output_from_pp_tensors, so it is not sglang's transport (nothing of "
            "it was run)"
        )
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        f"ppaux: error: --sglang-path {given}: {reason}\n",
    )
    assert not mark.exists()


def test_help_does_not_import_torch():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from ppaux_cli.app import app\n"
        "r = CliRunner().invoke(app, ['replay', '--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "r = CliRunner().invoke(app, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))[:3])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stdout == "[]\n"


# -- implementations -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sender, transport", [("validating", "none"), ("legacy", "none"), ("legacy", "wire")]
)
def test_both_agrees_with_a_module_shaped_like_sglangs(tmp_path, sender, transport):
    root = shaped_tree(tmp_path)
    code, doc = replay_json(
        "fixtures/dumps",
        "--impl",
        "both",
        "--sglang-path",
        str(root),
        "--sender",
        sender,
        "--transport",
        transport,
    )
    assert code == 2  # the fixtures include unusable dumps
    assert doc["replay"]["implementations"]["sglang"]["version"] == "0.5.23"
    assert doc["replay"]["implementations"]["sglang"]["stock_releases"] == []
    assert len(doc["results"]) == replayable_dumps()
    for result in doc["results"]:
        for payload in result["payloads"]:
            assert payload["divergences"] == [], result["path"]
            runs = payload["runs"]
            assert list(runs) == ["reference", "sglang"]
            assert runs["reference"]["error"] == runs["sglang"]["error"]
    assert not any(f["code"] == "PP406" for f in doc["findings"])


def test_both_reports_where_a_patched_module_disagrees(tmp_path):
    root = shaped_tree(tmp_path, _PATCHED)
    code, doc = replay_json(
        "fixtures/dumps/aux_list.pt",
        "fixtures/dumps/clean_output.pt",
        "--impl",
        "both",
        "--sglang-path",
        str(root),
        "--sender",
        "legacy",
    )
    assert code == 1
    patched, clean = doc["results"]
    assert clean["outcome"] == "ok" and clean["payloads"][0]["divergences"] == []
    assert patched["outcome"] == "diverged"
    assert patched["error"] == "received a non-tensor auxiliary PP output"
    fields = {
        d["field"]: (d["reference"], d["sglang"]) for d in patched["payloads"][0]["divergences"]
    }
    assert fields["stage"] == ("pop", "readd")
    assert fields["error"] == (
        "received a non-tensor auxiliary PP output",
        "auxiliary PP output 'scores' is not a tensor",
    )
    assert fields["remaining_keys"][0] is None
    codes = [f["code"] for f in doc["findings"]]
    assert codes.count("PP406") == len(fields) and "PP401" in codes


def test_sglang_impl_is_found_on_the_path_without_importing_the_package(tmp_path, monkeypatch):
    root = shaped_tree(tmp_path)
    monkeypatch.syspath_prepend(str(root))
    report = replay_paths(
        ["fixtures/dumps/aux_list.pt"], ReplayOptions(impl=Impl.SGLANG, sender=Sender.LEGACY)
    )
    (result,) = report.data["results"]
    assert list(result["payloads"][0]["runs"]) == ["sglang"]
    assert result["error"] == "received a non-tensor auxiliary PP output"
    assert report.data["replay"]["implementations"]["sglang"]["origin"] == str(
        root / "sglang" / "srt" / "sampling" / "sampling_observer_pp.py"
    )
    assert "sglang" not in sys.modules


def test_readd_failure_and_no_output_findings():
    report = replay_paths(
        ["fixtures/dumps/aux_bare_prefix.pt", "fixtures/dumps/near_miss_missing_dot.pt"],
        ReplayOptions(sender=Sender.LEGACY, transport=Transport.WIRE),
    )
    bare, near = report.data["results"]
    assert (bare["stage"], bare["error"]) == (
        "readd",
        "auxiliary PP tensor names must be non-empty strings",
    )
    assert bare["payloads"][0]["runs"]["reference"]["output"][0]["name"] == ""
    assert near["outcome"] == "ok"
    assert [(f.code, f.path) for f in report.findings] == [
        ("PP404", "fixtures/dumps/aux_bare_prefix.pt"),
        ("PP409", "fixtures/dumps/near_miss_missing_dot.pt"),
    ]


def test_report_schema_accepts_a_replay_report(tmp_path):
    import jsonschema

    schema = json.loads((REPO / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    code, doc = replay_json("fixtures/dumps", "--sender", "legacy", "--transport", "wire")
    assert code == 2 and doc["command"] == "replay"
    assert [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)] == []
    for result in doc["results"]:
        assert result["outcome"] in ("ok", "error", "diverged")
        assert (result["error"] is None) == (result["outcome"] != "error")


# -- choices given as values ---------------------------------------------------------------------


class _Value(str):
    """A str subclass with an enum's value: what Typer 0.29 hands over where 0.28 gave members."""


def test_choices_given_as_values_replay_the_same_as_members():
    """Every choice is compared by value: plain strings and str subclasses select the same
    sender, transport and implementation as the members (an identity test would not)."""
    by_value = replay_paths(
        ["fixtures/dumps/aux_list.pt"],
        ReplayOptions(sender=_Value("legacy"), transport="wire", impl=_Value("reference")),
    )
    by_member = replay_paths(
        ["fixtures/dumps/aux_list.pt"],
        ReplayOptions(sender=Sender.LEGACY, transport=Transport.WIRE, impl=Impl.REFERENCE),
    )
    settings = by_value.data["replay"]
    assert (settings["sender"], settings["transport"], settings["impl"]) == (
        "legacy",
        "wire",
        "reference",
    )
    (result,) = by_value.data["results"]
    run_ = result["payloads"][0]["runs"]["reference"]
    # The emulated wire ran (its statistics are there) and rank 0's pop met the list.
    assert run_["wire"]["tensors"] == 1
    assert (result["stage"], result["error"]) == (
        "pop",
        "received a non-tensor auxiliary PP output",
    )
    assert [f.code for f in by_value.findings] == [f.code for f in by_member.findings] == ["PP401"]
    assert by_value.tables[0].columns[-1] == "wire"


def test_an_unknown_choice_is_a_setting_error():
    from ppaux.replay import ReplayConfigError

    with pytest.raises(ReplayConfigError) as caught:
        ReplayOptions(transport="pigeon")
    assert (caught.value.option, caught.value.value) == ("transport", "pigeon")
    assert caught.value.reason == "not one of none, wire, torch-distributed, sglang"


def test_formats_and_fail_on_given_as_values():
    """The report's format and gate take values too (Typer 0.29 passes them as strings)."""
    from ppaux.report import FailOn
    from ppaux.report.config import Config, resolve_gate
    from ppaux.report.formats import render

    report = replay_paths(
        ["fixtures/dumps/aux_list.pt"], ReplayOptions(sender="legacy", transport="none")
    )
    assert json.loads(render(report, _Value("json")))["command"] == "replay"
    assert render(report, "markdown").startswith("## ppaux replay")
    assert resolve_gate(Config(), fail_on=_Value("warning")).fail_on is FailOn.WARNING


def test_a_negative_view_replays_as_the_values_it_reads(tmp_path):
    # torch.load gives back the negative view; the wire carries the values it reads
    # ([-1, -2, -3]), as gloo does, so the replay ends as it began
    path = tmp_path / "negview.pt"
    torch.save(
        {"logits": torch.zeros(2), f"{P}t": torch._neg_view(torch.tensor([1.0, 2, 3]))}, path
    )
    for transport in ("wire", "none"):
        code, doc = replay_json(str(path), "--transport", transport)
        assert (code, doc["results"][0]["outcome"]) == (0, "ok"), transport
