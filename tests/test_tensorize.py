"""``ppaux tensorize`` on every bundled dump, then ``replay`` and ``inspect`` on what it wrote.

The expectation for each fixture is written down here, from fixtures/README.md (what the file
holds), not computed by ppaux: the keys it converts and what they become, or the reason it
refuses.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch

REPO = Path(__file__).resolve().parent.parent
DUMPS = REPO / "fixtures" / "dumps"
P = "__sampling_observer_output__."
NOTHING = "every auxiliary value is a tensor already (or there is none): nothing to convert"

#: Fixtures whose auxiliary values convert: the conversion lines tensorize prints, and the
#: values (as torch.load gives them back) of the converted entries.
CONVERTED = {
    "aux_list.pt": (
        [f"converted ['{P}scores']: a list of 2 floats -> float32 tensor of shape (2,) on cpu"],
        {("", P + "scores"): [0.25, 0.75]},
    ),
    "aux_float.pt": (
        [f"converted ['{P}scores']: a float -> float32 tensor of shape () on cpu"],
        {("", P + "scores"): 0.5},
    ),
    "aux_list_of_tensors.pt": (
        [
            f"converted ['{P}scores']: a list with 2 tensors inside -> "
            "float32 tensor of shape (2, 2) on cpu"
        ],
        {("", P + "scores"): [[0.25, 0.75], [1.25, 1.75]]},
    ),
    # Converted from the bytes numpy pickled (the fixture writes 0.25 and 0.75 as float32).
    "aux_numpy_array.pt": (
        [
            f"converted ['{P}scores']: a numpy.ndarray (float32, shape [2]) -> float32 tensor "
            "of shape (2,) on cpu"
        ],
        {("", P + "scores"): [0.25, 0.75]},
    ),
    "capture_pop_error.pt": (
        [
            f"converted ['tensors']['{P}scores']: a list of 2 floats -> "
            "float32 tensor of shape (2,) on cpu"
        ],
        {("tensors", P + "scores"): [0.25, 0.75]},
    ),
    "capture_add_error.pt": (
        [
            "converted ['output']['scores']: a list of 2 floats -> float32 "
            "tensor of shape (2,) on cpu"
        ],
        {("output", "scores"): [0.25, 0.75]},
    ),
}

#: Fixtures that are refused: the refusal lines tensorize prints (DUMP stands for the path).
REFUSED = {
    "aux_none.pt": [
        f"refused ['{P}scores']: there is no value to send; leave the key out of the "
        "dict, or send an empty tensor (torch.empty(0)) if the receiver expects the "
        "name"
    ],
    "aux_str.pt": [
        f"refused ['{P}scores']: text does not travel as a tensor; encode it (for "
        "example as token ids) or send it outside the auxiliary output"
    ],
    "aux_custom_class.pt": [
        f"refused ['{P}scores']: a ppaux_fixture_types.SamplingScores object "
        "(its class was not imported) is not rebuilt by ppaux, which never "
        "imports a class from a file; return a tensor from to_pp_tensors() "
        "where the value is made"
    ],
    "non_string_key.pt": [
        "refused ['7']: the key is not a string: pop fails on it whatever its "
        "value; tensorize converts values, not keys"
    ],
    "no_tensor_dict.pt": ["refused DUMP: no tensor dict found in the file"],
    "pp_proxy.pt": [
        f"refused DUMP: {NOTHING}",
        "refused DUMP: the file also holds a ppaux_fixture_types.PPProxyTensors, "
        "which ppaux cannot write back as it was; nothing is written rather than a "
        "changed copy",
    ],
    **{
        name: [f"refused DUMP: {NOTHING}"]
        for name in (
            "aux_bare_prefix.pt",
            "aux_device_mismatch.pt",
            "aux_empty_tensor.pt",
            "aux_in_default_message.pt",
            "aux_in_proxy_message.pt",
            "aux_meta.pt",
            "aux_non_contiguous.pt",
            "aux_parameter.pt",
            "aux_quantized.pt",
            "aux_sparse.pt",
            "clean_output.pt",
            "cuda1_output.pt",
            "deflated_datapkl.pt",
            "near_miss_doubled_prefix.pt",
            "near_miss_missing_dot.pt",
            "near_miss_other_case.pt",
            "near_miss_whitespace.pt",
            "plain_pickle.pkl",
            "storage_record_missing.pt",
            "storage_record_short.pt",
            "tensor_in_list.pt",
        )
    },
}


def ppaux(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``ppaux ARGS`` in this process (torch is imported once), run in ``cwd``, its text wide
    enough that each conversion or refusal is one line."""
    from typer.testing import CliRunner

    from ppaux_cli.app import app

    here = os.getcwd()
    os.chdir(cwd or REPO)
    try:
        result = CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "1000"})
    finally:
        os.chdir(here)
    # Only the CLI's own exits are expected: anything else would be a traceback for a user.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_fixture_has_an_expectation():
    assert sorted(CONVERTED) + sorted(REFUSED) and set(CONVERTED) | set(REFUSED) == {
        p.name for p in DUMPS.iterdir()
    }
    assert not set(CONVERTED) & set(REFUSED)


@pytest.mark.parametrize("name", sorted(CONVERTED))
def test_convertible_fixture_is_rewritten_and_pops_cleanly(name, tmp_path):
    source, fixed = DUMPS / name, tmp_path / "fixed.pt"
    before = _sha(source)
    done = ppaux("tensorize", str(source), "-o", str(fixed))
    lines, values = CONVERTED[name]
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        *lines,
        f"wrote {fixed} ({len(lines)} value{'s' if len(lines) != 1 else ''} converted)",
    ]
    assert _sha(source) == before
    # What it wrote is a torch.save file that torch reads with weights_only=True.
    import torch

    loaded = torch.load(io.BytesIO(fixed.read_bytes()), weights_only=True)
    for (part, key), expected in values.items():
        tensor = (loaded[part] if part else loaded)[key]
        assert torch.is_tensor(tensor) and tensor.tolist() == expected
    replay = ppaux("replay", str(fixed), "--format", "json")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    document = json.loads(replay.stdout)
    assert document["findings"] == []  # no PP408: the capture records what this dict does
    [result] = document["results"]
    assert result["outcome"] == "ok" and result["error"] is None
    inspect = ppaux("inspect", str(fixed), "--format", "json")
    assert inspect.returncode == 0 and json.loads(inspect.stdout)["findings"] == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_other_fixture_is_refused_with_the_reason_and_nothing_is_written(name, tmp_path):
    source = DUMPS / name
    before = _sha(source)
    done = ppaux("tensorize", str(source), "-o", "fixed.pt", cwd=tmp_path)
    if REFUSED[name] == [f"refused DUMP: {NOTHING}"]:
        # Nothing to convert is not a failure: a note, exit 0, nothing written.
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [f"note: {source}: {NOTHING}; -o fixed.pt not written"]
        assert os.listdir(tmp_path) == []
        assert _sha(source) == before
        return
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    expected = [line.replace("DUMP", str(source)) for line in REFUSED[name]]
    assert done.stdout.splitlines() == [*expected, "nothing written to fixed.pt"]
    assert os.listdir(tmp_path) == []
    assert _sha(source) == before


def test_a_capture_keeps_its_format_and_records_the_rewrite(tmp_path):
    from ppaux.dump.capture_format import META_FIELDS, REWRITE_FIELDS
    from ppaux.dump.dumpfile import read_dump

    source = DUMPS / "capture_pop_error.pt"
    fixed = tmp_path / "fixed.pt"
    assert ppaux("tensorize", str(source), "-o", str(fixed)).returncode == 0
    original, rewritten = read_dump(source).capture, read_dump(fixed).capture
    assert rewritten is not None and rewritten["__ppaux_capture__"] == 1
    meta = rewritten["meta"]
    assert list(meta) == [*META_FIELDS, *REWRITE_FIELDS]
    for field in META_FIELDS:
        if field not in ("exception_type", "exception_message"):
            assert meta[field] == original["meta"][field], field
    assert meta["exception_type"] is None and meta["exception_message"] is None
    assert meta["original_exception_type"] == "RuntimeError"
    assert meta["original_exception_message"] == "received a non-tensor auxiliary PP output"
    assert meta["rewritten_by"] == "ppaux tensorize 0.1.0"
    assert meta["rewritten_from"] == str(source)
    assert meta["rewritten_from_sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert meta["rewritten_keys"] == f"['tensors']['{P}scores']"
    assert rewritten["output"] is None


def test_storages_keep_the_device_they_were_saved_on(tmp_path):
    # A message received on cuda:1, saved as rank 0 would save it (the location is what
    # torch.save records; this machine needs no GPU to write or read it).
    import torch

    from ppaux.dump.dumpfile import read_dump

    source = tmp_path / "cuda1.pt"
    message = {
        "next_token_ids": torch.arange(2),
        P + "scores": [0.25, 0.75],
        P + "top": torch.ones(2),
        "__msg_type__": "output",
    }
    registry = torch.serialization._package_registry
    saved = list(registry)
    torch.serialization.register_package(0, lambda storage: "cuda:1", lambda s, loc: None)
    try:
        torch.save(message, source)
    finally:
        registry[:] = saved
    fixed = tmp_path / "fixed.pt"
    done = ppaux("tensorize", str(source), "-o", str(fixed))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        f"converted ['{P}scores']: a list of 2 floats -> float32 tensor of shape (2,) on cuda:1"
    )
    root = read_dump(fixed).root
    assert {k: v.device for k, v in root.items() if k != "__msg_type__"} == {
        "next_token_ids": "cuda:1",
        P + "scores": "cuda:1",
        P + "top": "cuda:1",
    }
    assert ppaux("inspect", str(fixed)).returncode == 0
    # torch's own location taggers are left as they were.
    assert torch.serialization._package_registry == saved


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink", "hardlink"])
def test_never_overwrites_its_input(spelling, tmp_path):
    source = tmp_path / "dump.pt"
    source.write_bytes((DUMPS / "aux_list.pt").read_bytes())
    target = {
        "same": "dump.pt",
        "dotted": "./sub/../dump.pt",
        "symlink": "link.pt",
        "hardlink": "hard.pt",
    }[spelling]
    (tmp_path / "sub").mkdir()
    if spelling == "symlink":
        (tmp_path / "link.pt").symlink_to(source)
    if spelling == "hardlink":
        os.link(source, tmp_path / "hard.pt")
    before = _sha(source)
    done = ppaux("tensorize", "dump.pt", "-o", target, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    named = "" if target == "dump.pt" else " dump.pt"
    assert done.stderr == (
        f"ppaux: error: --output {target}: is the input{named}; ppaux never writes over an "
        "input: give another output file\n"
    )
    assert _sha(source) == before
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["dump.pt", "sub"]
        + (["link.pt"] if spelling == "symlink" else [])
        + (["hard.pt"] if spelling == "hardlink" else [])
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.pt", "-o", "x.pt"], "missing.pt: no such file"),
        (
            [str(DUMPS / "aux_list.pt"), "-o", "."],
            "--output .: is a directory; give a file name",
        ),
        (
            [str(DUMPS / "aux_list.pt"), "-o", "no/such/x.pt"],
            "--output no/such/x.pt: its folder does not exist",
        ),
        ([str(REPO / "fixtures" / "corrupt" / "truncated.pt"), "-o", "x.pt"], None),
    ],
)
def test_bad_inputs_are_one_line_and_exit_2(args, message, tmp_path):
    done = ppaux("tensorize", *args, cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith("ppaux: error: ")
    if message is not None:
        assert line == f"ppaux: error: {message}"
    assert "Traceback" not in done.stderr and os.listdir(tmp_path) == []


def _hostile() -> list[Path]:
    # The adversarial corpus (fixtures/adversarial) goes through tensorize in
    # tests/test_adversarial.py, one process per file, with these same checks
    # (test_byte_readers_survive_the_corpus, test_tensorize_writes_only_what_it_converts).
    return sorted(
        p for p in (REPO / "fixtures" / "malicious").iterdir() if p.suffix in (".pt", ".pkl")
    )


def test_hostile_corpus_runs_nothing_and_writes_nothing(tmp_path):
    files = _hostile()
    for path in files:
        (Path("/tmp") / f"ppaux_pwned_{path.stem}").unlink(missing_ok=True)
    before = {p: _sha(p) for p in files}
    for path in files:
        done = ppaux("tensorize", str(path), "-o", "fixed.pt", cwd=tmp_path)
        assert done.returncode in (0, 1, 2), (path, done.returncode, done.stderr)
        if done.returncode == 0:  # nothing to convert: a note, and nothing written
            assert done.stdout.endswith("; -o fixed.pt not written\n"), path
            assert done.stdout.startswith("note: "), path
        elif done.returncode == 2:
            [line] = done.stderr.splitlines()
            assert line.startswith("ppaux: error: "), (path, done.stderr)
        else:
            assert done.stdout.splitlines()[-1] == "nothing written to fixed.pt"
        assert os.listdir(tmp_path) == [], path
    assert [p for p in files if (Path("/tmp") / f"ppaux_pwned_{p.stem}").exists()] == []
    assert {p: _sha(p) for p in files} == before
