"""``ppaux fingerprint`` and ``ppaux check-skew`` on the command line: output, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import ENV, cli
from skew_fixtures import BAD, SETS, fingerprint_set, tree

run = cli


def test_fingerprint_to_stdout_and_to_a_file(tmp_path):
    result = run("fingerprint", "--sglang-path", tree("v0523"), "--pp-rank", "1", "--pp-size", "2")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "ppaux.fingerprint/1"
    assert (doc["rank"]["pp_rank"], doc["rank"]["pp_size"]) == (1, 2)
    assert doc["sglang"]["version"] == "0.5.23"
    target = tmp_path / "stage.json"
    result = run("fingerprint", "-o", str(target), "--sglang-path", tree("v0519"))
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert json.loads(target.read_text())["sglang"]["version"] == "0.5.19"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--pp-rank", "2", "--pp-size", "2"], "--pp-rank: 2 is not a stage of a 2-stage pipeline"),
        (["--pp-size", "0"], "--pp-size: must be at least 1, not 0"),
        (["--pp-rank", "-1"], "--pp-rank: must not be negative, not -1"),
        (
            ["--sglang-path", "/nonexistent/sglang"],
            "--sglang-path /nonexistent/sglang: no such file or directory",
        ),
    ],
)
def test_fingerprint_bad_options(args, message):
    result = run("fingerprint", *args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"ppaux: error: {message}\n")


def test_fingerprint_unwritable_output(tmp_path):
    target = tmp_path / "missing" / "stage.json"
    result = run("fingerprint", "-o", str(target))
    assert result.exit_code == 2
    assert result.stderr == f"ppaux: error: --output {target}: its folder does not exist\n"
    (tmp_path / "file").write_text("")
    target = tmp_path / "file" / "stage.json"
    result = run("fingerprint", "-o", str(target))
    assert result.exit_code == 2
    assert result.stderr == f"ppaux: error: --output {target}: cannot write: Not a directory\n"


def test_check_skew_consistent_and_skewed():
    clean = run("check-skew", str(SETS / "consistent"))
    assert clean.exit_code == 0, clean.stderr
    # the verdict, then the matrix
    assert clean.stdout.splitlines()[:3] == [
        "0 error(s), 0 warning(s), 0 info, 0 input(s) not checked",
        "",
        "4 stage(s)",
    ]
    assert clean.stdout.rstrip().splitlines()[-1] == (
        "0 error(s), 0 warning(s), 0 info, 0 input(s) not checked"
    )
    skewed = run(
        "check-skew",
        *sorted(str(p) for p in (SETS / "skewed").glob("*.json")),
        env={"COLUMNS": "1000"},
    )
    assert skewed.exit_code == 1
    assert (
        f"PP301 error {SETS / 'skewed' / 'pp3.json'}: sglang 0.5.19 here; 0.5.23 on 3 other "
        "stages (pp0, pp1, pp2)" in skewed.stdout
    )
    assert "    predicts: KeyError: 'sampling_mask_token_ids'" in skewed.stdout
    assert run("check-skew", "--fail-on", "never", str(SETS / "skewed")).exit_code == 0
    warnings_only = run("check-skew", "--fail-on", "warning", str(SETS / "consistent"))
    assert warnings_only.exit_code == 0


def test_check_skew_json_carries_stages_and_verdicts():
    result = run("check-skew", "-f", "json", str(SETS / "releases"))
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["schema"] == "ppaux.report/1" and doc["command"] == "check-skew"
    stages = doc["stages"]
    assert [s["label"] for s in stages] == ["pp0", "pp1", "pp2", "pp3"]
    assert [s["role"] for s in stages] == ["first", "middle", "middle", "last"]
    assert [s["capability"]["match"] for s in stages] == [
        "release",
        "absent",
        "release",
        "modified",
    ]
    assert stages[3]["capability"]["sender_checks"]["tensors"] is False
    assert stages[0]["packages"]["sglang"] == "0.5.23"
    assert doc["baseline"] is None and doc["missing_ranks"] == []
    assert {f["code"] for f in doc["findings"]} == {
        "PP301",
        "PP302",
        "PP303",
        "PP304",
        "PP307",
        "PP309",
    }


def test_baseline_option():
    golden = str(SETS / "consistent" / "pp0.json")
    result = run("check-skew", "--baseline", golden, str(SETS / "skewed"), env={"COLUMNS": "1000"})
    assert result.exit_code == 1
    assert "torch 2.13.0+cu128 here; the baseline has 2.14.1+cu128" in result.stdout
    bad = run("check-skew", "--baseline", str(BAD / "schema_v2.json"), str(SETS / "consistent"))
    assert bad.exit_code == 2 and len(bad.stderr.splitlines()) == 1
    assert bad.stderr.startswith(f"ppaux: error: {BAD / 'schema_v2.json'}: fingerprint schema ")


@pytest.mark.parametrize("name", sorted(p.name for p in BAD.glob("*.json")))
def test_each_bad_fingerprint_is_one_error_line(name):
    path = str(BAD / name)
    result = run("check-skew", path)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ppaux: error: {path}: ")
    assert "Traceback" not in result.output


def test_a_bad_file_among_good_ones_still_exits_2():
    result = run("check-skew", str(SETS / "consistent"), str(BAD / "missing_field.json"))
    assert result.exit_code == 2
    assert (
        result.stderr == f"ppaux: error: {BAD / 'missing_field.json'}: missing field 'packages'\n"
    )
    assert "4 stage(s)" in result.stdout


def test_usage_errors(tmp_path):
    cases = [
        ([], "no fingerprints given: pass files or directories, or --distributed"),
        (
            ["--distributed", str(SETS / "consistent")],
            "give fingerprint files or --distributed, not both",
        ),
        (["--rank", "1", str(SETS / "consistent")], "--rank applies only with --distributed"),
    ]
    for args, message in cases:
        result = run("check-skew", *args)
        assert (result.exit_code, result.stderr) == (2, f"ppaux: error: {message}\n"), args
    empty = run("check-skew", str(tmp_path))
    assert (empty.exit_code, empty.stderr) == (
        2,
        f"ppaux: error: {tmp_path}: no *.json fingerprints in this directory\n",
    )
    missing = run("check-skew", str(tmp_path / "none.json"))
    assert missing.stderr == f"ppaux: error: {tmp_path / 'none.json'}: no such file\n"


def test_distributed_without_a_launcher_is_a_usage_error():
    unset = {name: None for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    result = run("check-skew", "--distributed", env=unset)
    assert (result.exit_code, result.stderr) == (
        2,
        "ppaux: error: this process's rank unknown: run under torchrun, or pass --init-method, "
        "--rank and --world-size\n",
    )
    result = run(
        "check-skew",
        "--distributed",
        "--rank",
        "0",
        "--world-size",
        "2",
        "--init-method",
        "file:///tmp/x",
        env=unset,
    )
    assert result.stderr == (
        "ppaux: error: --init-method 'file:///tmp/x': expected tcp://HOST:PORT or env://\n"
    )
    result = run("check-skew", "--distributed", "--rank", "2", "--world-size", "2", env=unset)
    assert result.stderr == "ppaux: error: rank 2 is not in a world of size 2\n"


def test_a_host_that_cannot_be_resolved_is_one_line_before_any_store():
    """An empty DNS label fails in the resolver itself (no lookup leaves the machine); torch's
    store would retry the name until the timeout, writing a warning line per try."""
    unset = {name: None for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    ranked = ("--rank", "1", "--world-size", "2", "--timeout", "30")
    given = run(
        "check-skew", "--distributed", *ranked, "--init-method", "tcp://bad..host:29500", env=unset
    )
    assert given.exit_code == 2
    assert given.stderr.startswith(
        "ppaux: error: --init-method: host 'bad..host' cannot be resolved ("
    )
    assert given.stderr.count("\n") == 1
    from_env = run(
        "check-skew",
        "--distributed",
        *ranked,
        env={**unset, "MASTER_ADDR": "bad..host", "MASTER_PORT": "29500"},
    )
    assert from_env.exit_code == 2
    assert from_env.stderr.startswith("ppaux: error: $MASTER_ADDR: host 'bad..host' cannot be ")
    assert from_env.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["fingerprint", "--sglang-path", tree("v0523")],
        ["check-skew", str(SETS / "skewed")],
        ["check-skew", "-f", "json", str(SETS / "releases")],
    ],
)
def test_torch_is_never_imported(args):
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from ppaux_cli.app import app\n"
        f"result = CliRunner().invoke(app, {args!r})\n"
        "print(result.exit_code, 'torch' in sys.modules, 'sglang' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
        timeout=120,
    )
    exit_code, torch_loaded, sglang_loaded = done.stdout.split()
    assert (torch_loaded, sglang_loaded) == ("False", "False"), done.stderr
    assert exit_code in ("0", "1")


def test_binary_data_and_a_missing_config_are_named_as_what_they_are(tmp_path):
    blob = tmp_path / "stage-0.json"
    blob.write_bytes(b"\x00\x01\xff\xfe\x80binary")
    result = cli("check-skew", "--", str(blob), str(blob))
    assert result.exit_code == 2
    assert result.stderr == f"ppaux: error: {blob}: binary data, not a fingerprint JSON\n"
    missing = tmp_path / "nosuch.toml"
    result = cli("check-skew", "--config", str(missing), "--", str(blob), str(blob))
    assert result.exit_code == 2
    assert result.stderr == f"ppaux: error: --config {missing}: no such file\n"


def test_a_fingerprint_from_a_python_without_sglang_is_refused(tmp_path):
    # This Python (the test environment) has no sglang: the fingerprint would hold no facts.
    import importlib.util

    assert importlib.util.find_spec("sglang") is None
    target = tmp_path / "stage.json"
    result = run("fingerprint", "-o", str(target))
    assert result.exit_code == 2 and not target.exists()
    assert result.stderr.startswith(
        f"ppaux: error: sglang is not importable from this Python ({sys.executable}), so a "
        "fingerprint taken here holds none of sglang's facts; take it with the Python that "
        "runs sglang (PYTHON -m ppaux_cli fingerprint"
    )
    assert result.stderr.count("\n") == 1


def test_strict_fails_a_gate_that_a_stage_without_sglang_only_warns(tmp_path):
    # docs/ci.md: one stage without sglang's facts among stages with them is PP319, a warning
    # that passes the gate; --strict makes it an error (exit 1), not a refusal (exit 2).
    paths = []
    for source in fingerprint_set("consistent"):
        with open(source, encoding="utf-8") as handle:
            doc = json.load(handle)
        if doc["rank"]["pp_rank"] == 1:
            doc["sglang"] = {"found": False, "unknown": {"sglang": "sglang is not importable"}}
        paths.append(tmp_path / os.path.basename(source))
        paths[-1].write_text(json.dumps(doc), encoding="utf-8")
    lenient = run("check-skew", "--findings-only", *map(str, paths))
    assert (lenient.exit_code, lenient.stderr) == (0, "")
    assert lenient.stdout.startswith("0 error(s), 1 warning(s)")
    assert "PP319 warning " in lenient.stdout
    strict = run("check-skew", "--findings-only", "--strict", *map(str, paths))
    assert (strict.exit_code, strict.stderr) == (1, "")
    assert strict.stdout.startswith("1 error(s), 0 warning(s)")
    assert "PP319 error " in strict.stdout


def test_check_skew_over_fingerprints_without_sglang_is_no_pass(tmp_path):
    # Fingerprints taken by a Python without sglang (as earlier versions wrote them): nothing
    # of the transport can be compared, so the run is not a pass but its inputs not checked.
    from ppaux.skew import collect

    paths = []
    for rank in (0, 1):
        snapshot = collect(pp_rank=rank, pp_size=2)
        assert not snapshot.sglang.found
        paths.append(tmp_path / f"stage{rank}.json")
        paths[-1].write_text(snapshot.dumps(), encoding="utf-8")
    result = run("check-skew", *map(str, paths))
    assert result.exit_code == 2
    assert result.stdout.splitlines()[0] == (
        "0 error(s), 2 warning(s), 0 info, 2 input(s) not checked"
    )
    lines = result.stderr.splitlines()
    assert [line.split(": ")[2] for line in lines] == [str(p) for p in paths]
    assert all("holds none of sglang's facts" in line for line in lines)
    # One stage read from a tree: that stage's facts are compared, the other is PP319.
    mixed = run("check-skew", str(paths[0]), *fingerprint_set("consistent")[1:2])
    assert mixed.exit_code in (0, 1) and mixed.stderr == ""
    assert "0 input(s) not checked" in mixed.stdout and "PP319" in mixed.stdout
