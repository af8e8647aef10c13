"""Hostile inputs other than dump contents: special files, fingerprints, configuration files and
sglang source trees.

Every command must answer within a bound, with one ``ppaux: error:`` line and exit 2 (or a
result) and never a traceback. Inputs that are not regular files (FIFOs, devices, sockets,
directories, symlink loops) must be refused without being read: opening a FIFO for reading
blocks until a writer comes, and a device such as /dev/zero never ends.

"""

from __future__ import annotations

import copy
import json
import os
import socket
import sys
from pathlib import Path

import pytest
from helpers import REPO
from hostile_run import run_cli_many, run_measured
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ADVERSARIAL = REPO / "fixtures" / "adversarial"
SKEW = REPO / "fixtures" / "skew"
GOOD_FINGERPRINT = SKEW / "fingerprints" / "consistent" / "pp0.json"
TREE = SKEW / "trees" / "v0523"
TRANSPORT = "sglang/srt/sampling/sampling_observer_pp.py"

#: A refusal takes well under a second; a hang is what this bound catches.
LIMIT_S = 20.0


def _env() -> dict[str, str]:
    return {**os.environ, "NO_COLOR": "1", "COLUMNS": "100", "PYTHONIOENCODING": "utf-8:strict"}


def _one_error_line(run, path: str) -> str:
    stderr = run.stderr.decode("utf-8")
    assert not run.timed_out, "hung"
    assert "Traceback" not in stderr, stderr
    assert run.rc == 2, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"ppaux: error: {path}: "), lines[0]
    return lines[0][len(f"ppaux: error: {path}: ") :]


# ---------------------------------------------------------------------------------------------
# Dumps that are not regular files


@pytest.fixture()
def specials(tmp_path: Path):
    made = {}
    fifo = tmp_path / "fifo.pt"
    os.mkfifo(fifo)
    made["fifo"] = str(fifo)
    made["dev_zero"] = "/dev/zero"
    made["dev_null"] = "/dev/null"
    made["directory_without_dumps"] = str(tmp_path / "empty")
    os.mkdir(made["directory_without_dumps"])
    loop = tmp_path / "loop.pt"
    os.symlink(tmp_path / "loop2.pt", loop)
    os.symlink(loop, tmp_path / "loop2.pt")
    made["symlink_loop"] = str(loop)
    zero = tmp_path / "zero.pt"
    os.symlink("/dev/zero", zero)
    made["symlink_to_dev_zero"] = str(zero)
    sock = tmp_path / "s.pt"
    made["broken_symlink"] = str(tmp_path / "gone.pt")
    os.symlink(tmp_path / "nowhere", made["broken_symlink"])
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock))
        made["socket"] = str(sock)
        yield made


# inspect reads a stream given as -: a pipe or a socket named as a path gets that suggestion.
_STREAM = "; give - and send it on standard input (cat dump.pt | ppaux inspect -)"

REFUSALS = {
    "fifo": "is not a regular file (a FIFO, socket or device)" + _STREAM,
    "dev_zero": "is not a regular file (a FIFO, socket or device)",
    "dev_null": "is not a regular file (a FIFO, socket or device)",
    "directory_without_dumps": "directory holds no dumps (*.pt, *.pth, *.pkl, *.pickle, *.bin, "
    "*.ppaux)",
    "symlink_loop": "cannot read: Too many levels of symbolic links",
    "symlink_to_dev_zero": "is not a regular file (a FIFO, socket or device)",
    "socket": "is not a regular file (a FIFO, socket or device)" + _STREAM,
    "broken_symlink": "no such file",
}


def test_special_files_are_refused_without_reading(specials, tmp_path):
    names = sorted(REFUSALS)
    runs = run_cli_many(
        [(["inspect", specials[n], "--format", "json"], tmp_path / "run" / n) for n in names],
        LIMIT_S,
        _env(),
    )
    for name, run in zip(names, runs, strict=True):
        assert _one_error_line(run, specials[name]) == REFUSALS[name], name
        assert run.seconds < LIMIT_S


def test_special_files_inside_a_directory(tmp_path):
    # A walked directory whose *.pt entries are a FIFO, a device link, a loop and a directory,
    # next to names that are no UTF-8 and that hold a newline.
    tree = tmp_path / "dumps"
    tree.mkdir()
    os.mkfifo(tree / "a_fifo.pt")
    os.symlink("/dev/zero", tree / "b_zero.pt")
    os.symlink(tree / "c_loop.pt", tree / "c_loop.pt")
    (tree / "d_dir.pt").mkdir()
    (tree / "e_new\nline.pt").write_bytes((ADVERSARIAL / "zip_empty_archive.pt").read_bytes())
    odd = os.fsencode(tree) + b"/f_not_utf8_\xff.pkl"
    with open(odd, "wb") as handle:
        handle.write((ADVERSARIAL / "exec_os_system_reduce.pkl").read_bytes())
    (run,) = run_cli_many(
        [(["inspect", str(tree), "--format", "json"], tmp_path / "run")], LIMIT_S, _env()
    )
    stderr = run.stderr.decode("utf-8")
    assert not run.timed_out and "Traceback" not in stderr and run.rc == 2
    assert stderr.splitlines() == [
        f"ppaux: error: {tree}/a_fifo.pt: is not a regular file (a FIFO, socket or device)",
        f"ppaux: error: {tree}/b_zero.pt: is not a regular file (a FIFO, socket or device)",
        f"ppaux: error: {tree}/c_loop.pt: cannot read: Too many levels of symbolic links",
        f"ppaux: error: $'{tree}/e_new\\nline.pt': zip file without a data.pkl record: not a "
        "torch.save file",
    ]
    document = json.loads(run.stdout.decode("utf-8"))
    assert [f["path"] for f in document["files"]] == [f"{tree}/f_not_utf8_\\udcff.pkl"]
    assert [f["extra"]["global"] for f in document["findings"] if f["code"] == "PP201"] == [
        "os.system"
    ]


def test_regular_files_whose_read_fails(tmp_path):
    # /proc/self/mem is a "regular" file of size 0 whose read fails with EIO: given directly,
    # and met through a link while walking a directory, it is one error line, never a traceback.
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("no /proc")
    tree = tmp_path / "dumps"
    tree.mkdir()
    os.symlink("/proc/self/mem", tree / "mem.pt")
    runs = run_cli_many(
        [
            (["inspect", "/proc/self/mem", "--format", fmt], tmp_path / f"a{fmt}")
            for fmt in ("json", "text")
        ]
        + [(["inspect", str(tree)], tmp_path / "b")],
        LIMIT_S,
        _env(),
    )
    for run in runs[:2]:
        assert _one_error_line(run, "/proc/self/mem") == "cannot read: Input/output error"
    assert _one_error_line(runs[2], f"{tree}/mem.pt") == "cannot read: Input/output error"


# ---------------------------------------------------------------------------------------------
# Fingerprints


def _fingerprint_doc() -> dict:
    return json.loads(GOOD_FINGERPRINT.read_text(encoding="utf-8"))


def _write(path: Path, data: bytes | str) -> str:
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return str(path)


def _hostile_fingerprints(tmp_path: Path) -> dict[str, tuple[str, str]]:
    doc = _fingerprint_doc()
    huge = copy.deepcopy(doc)
    huge["host"] = "h" * (15 * 1024 * 1024)
    wrong = copy.deepcopy(doc)
    wrong["packages"] = {"torch": ["2.13.0"]}
    nan = json.dumps(doc).replace('"pid": ', '"pid": NaN, "x": ', 1)
    return {
        "deep_json": (
            _write(tmp_path / "deep.json", "[" * 200_000 + "]" * 200_000),
            "nests arrays and objects deeper than 64 levels "
            "(limit max_fingerprint_nesting=64 reached)",
        ),
        "deep_field": (
            _write(
                tmp_path / "deepf.json",
                json.dumps(doc).replace('"pid": ', '"pid": ' + "[" * 60 + "]" * 60 + ', "x": ', 1),
            ),
            # A list or object is named, not written out (within max_fingerprint_nesting).
            "field 'pid' must be an integer, not a list [...]",
        ),
        "huge_int": (
            _write(
                tmp_path / "int.json",
                json.dumps(doc).replace('"pid": ', '"pid": ' + "9" * 5000 + ', "x": ', 1),
            ),
            "not valid JSON: ValueError",
        ),
        "nan": (
            _write(tmp_path / "nan.json", nan),
            "field 'pid' must be an integer, not a number NaN",
        ),
        "wrong_type": (
            _write(tmp_path / "wrong.json", json.dumps(wrong)),
            "field packages['torch'] must be a string or null, not a list",
        ),
        "not_utf8": (
            _write(tmp_path / "bin.json", b'{"a\xff": 1}'),
            "binary data, not a fingerprint JSON",
        ),
        "too_big": (
            _write(tmp_path / "big.json", b" " * (16 * 1024 * 1024 + 1)),
            "larger than 16777216 bytes (limit max_fingerprint_bytes=16777216 reached)",
        ),
        "dev_zero": ("/dev/zero", "is not a regular file (a FIFO, socket or device)"),
        "huge_string": (_write(tmp_path / "huge.json", json.dumps(huge)), ""),
    }


def test_hostile_fingerprints(tmp_path):
    from ppaux.skew.fingerprint import FingerprintError, load

    for name, (path, reason) in _hostile_fingerprints(tmp_path).items():
        if name == "huge_string":
            assert load(path).host == "h" * (15 * 1024 * 1024)
            continue
        with pytest.raises(FingerprintError) as caught:
            load(path)
        assert caught.value.reason == reason, name


def test_hostile_fingerprints_through_check_skew(tmp_path):
    cases = {n: v for n, v in _hostile_fingerprints(tmp_path).items() if n != "huge_string"}
    good = str(GOOD_FINGERPRINT)
    runs = run_cli_many(
        [
            (["check-skew", good, path, "--format", "json"], tmp_path / "run" / n)
            for n, (path, _) in cases.items()
        ],
        LIMIT_S,
        _env(),
    )
    for (name, (path, reason)), run in zip(cases.items(), runs, strict=True):
        # A limit reached is said with the flag that raises it.
        limit = {"too_big": "max_fingerprint_bytes", "deep_json": "max_fingerprint_nesting"}
        said = f"; raise it with --limit {limit[name]}=N" if name in limit else ""
        assert _one_error_line(run, path) == reason + said, name


def test_fingerprint_fifo_is_refused(tmp_path):
    fifo = tmp_path / "pp1.json"
    os.mkfifo(fifo)
    run = run_measured(
        [sys.executable, "-m", "ppaux_cli", "check-skew", str(GOOD_FINGERPRINT), str(fifo)],
        tmp_path / "run",
        LIMIT_S,  # a read that blocks on the FIFO is killed there, and says no error line
        _env(),
    )
    _one_error_line(run, str(fifo))


_JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=8),
)
_JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


_FINGERPRINT_PATHS = [p for p in _paths(json.loads(GOOD_FINGERPRINT.read_text())) if p]


@settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(
    where=st.lists(st.sampled_from(_FINGERPRINT_PATHS), min_size=1, max_size=3),
    values=st.lists(st.one_of(_JSON, st.just("<delete>")), min_size=3, max_size=3),
)
def test_fingerprint_parser_fuzz(where, values):
    # Any field replaced by any JSON value (or removed): a FingerprintError or a fingerprint.
    from ppaux.skew.fingerprint import FingerprintError, loads

    doc = _fingerprint_doc()
    for path, value in zip(where, values, strict=False):
        target = doc
        try:
            for step in path[:-1]:
                target = target[step]
            if value == "<delete>":
                del target[path[-1]]
            else:
                target[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    try:
        loads(json.dumps(doc), "fuzz.json")
    except FingerprintError as exc:
        assert "\n" not in str(exc)


# ---------------------------------------------------------------------------------------------
# Configuration files


def _hostile_configs(tmp_path: Path) -> dict[str, str]:
    return {
        "deep_array": _write(tmp_path / "deep.toml", "select = " + "[" * 5000 + "]" * 5000 + "\n"),
        "deep_inline_table": _write(
            tmp_path / "inline.toml", "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"
        ),
        "huge_int": _write(tmp_path / "int.toml", "strict = " + "9" * 10_000 + "\n"),
    }


def _config_cases(tmp_path: Path) -> dict[str, tuple[str, str]]:
    return {
        "not_utf8": (
            _write(tmp_path / "bin.toml", b'fail-on = "\xff"\n'),
            "not valid TOML: the file is not UTF-8",
        ),
        "wrong_type": (
            _write(tmp_path / "type.toml", "strict = [1, 2]\n"),
            "strict: must be true or false, not a list holding something other than strings",
        ),
        "unknown_key": (
            _write(tmp_path / "key.toml", "[" + ".".join(["a"] * 10_000) + "]\n"),
            "a: unknown key; known keys: fail-on, select, ignore, strict",
        ),
        "directory": (str(tmp_path), ""),
    }


def test_hostile_configuration_files(tmp_path):
    from ppaux.report.config import ConfigError, load_config

    for name, (path, reason) in _config_cases(tmp_path).items():
        with pytest.raises(ConfigError) as caught:
            load_config(path)
        if reason:
            assert str(caught.value) == f"{path}: {reason}", name
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["deep_array", "deep_inline_table", "huge_int"])
def test_hostile_toml_is_one_error_line(name, tmp_path):
    path = _hostile_configs(tmp_path)[name]
    run = run_measured(
        [
            sys.executable,
            "-m",
            "ppaux_cli",
            "inspect",
            "--config",
            path,
            str(ADVERSARIAL / "zip_huge_declared_storage.pt"),
        ],
        tmp_path / "run",
        LIMIT_S,
        _env(),
    )
    _one_error_line(run, f"--config {path}")


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_special_configuration_files_are_refused(special, tmp_path):
    path = special
    if special == "fifo":
        path = str(tmp_path / "ppaux.toml")
        os.mkfifo(path)
    run = run_measured(
        [
            sys.executable,
            "-m",
            "ppaux_cli",
            "inspect",
            "--config",
            path,
            str(ADVERSARIAL / "zip_huge_declared_storage.pt"),
        ],
        tmp_path / "run",
        4,
        _env(),
        address_space_mb=1024,
    )
    _one_error_line(run, f"--config {path}")


def test_special_files_named_like_configuration_are_skipped(tmp_path):
    # Discovery looks for regular files only: a FIFO or directory called ppaux.toml is passed by.
    from ppaux.report.config import find_config

    os.mkfifo(tmp_path / "ppaux.toml")
    (tmp_path / "pyproject.toml").mkdir()
    found = find_config(str(tmp_path))
    assert found is None or not found.startswith(str(tmp_path))


# ---------------------------------------------------------------------------------------------
# sglang source trees for the analyser


def _copy_tree(target: Path) -> Path:
    import shutil

    shutil.copytree(TREE, target)
    return target


def test_hostile_sglang_trees(tmp_path):
    from ppaux.sglang_source import analyse

    enormous = _copy_tree(tmp_path / "enormous")
    (enormous / TRANSPORT).write_text("x = 1\n" * 1_000_000)
    nul = _copy_tree(tmp_path / "nul")
    (nul / TRANSPORT).write_bytes(b"x = 1\x00\n")
    too_deep = _copy_tree(tmp_path / "too_deep")
    (too_deep / TRANSPORT).write_text("x = " + "+".join(["1"] * 100_000) + "\n")
    specials = _copy_tree(tmp_path / "specials")
    (specials / TRANSPORT).unlink()
    os.symlink(specials / TRANSPORT, specials / TRANSPORT)  # a symlink to itself
    managers = specials / "sglang/srt/managers"
    (managers / "scheduler_pp_mixin.py").unlink()
    os.mkfifo(managers / "scheduler_pp_mixin.py")
    (managers / "utils.py").unlink()
    os.symlink("/dev/zero", managers / "utils.py")
    wire = specials / "sglang/srt/distributed/parallel_state.py"
    wire.unlink()
    wire.mkdir()
    os.symlink(specials / "sglang", specials / "sglang/srt/loop")  # a directory cycle
    expected = {
        "enormous": "larger than 4194304 bytes",
        "nul": "not valid Python: source code string cannot contain null bytes",
        "too_deep": "not analysable: line 1: one statement of more than 50,000 tokens",
    }
    for name, reason in expected.items():
        capability = analyse(str(tmp_path / name))
        assert capability.transport == "unknown", name
        assert reason in capability.unknown["transport"], capability.unknown
    # Special files are never opened: the analysis treats them as missing.
    capability = analyse(str(specials))
    assert capability.transport == "absent"
    assert {f.role: (f.status, f.reason) for f in capability.files} == {
        role: ("absent", "no such file") for role in ("scheduler", "transport", "logprobs", "wire")
    }


def test_deep_expression_that_parses(tmp_path):
    from ppaux.sglang_source import analyse

    tree = _copy_tree(tmp_path / "deep")
    text = (tree / TRANSPORT).read_text()
    head = "def add_auxiliary_output_to_pp_tensors("
    start = text.index(":\n", text.index(head)) + 2
    (tree / TRANSPORT).write_text(
        text[:start] + "    _deep = " + "+".join(["x"] * 1500) + "\n" + text[start:]
    )
    capability = analyse(str(tree))
    # The file parses, but too deep to analyse: its facts are unknown, with the reason; the
    # other files are still read.
    reason = (
        "not analysable: its syntax nests deeper than 300 levels"
        " (limit max_syntax_depth=300 reached)"
    )
    assert capability.transport == "unknown"
    assert capability.unknown["transport"] == f"{tree / TRANSPORT}: {reason}"
    assert {f.role: (f.status, f.reason) for f in capability.files} == {
        "scheduler": ("ok", None),
        "transport": ("unparsable", reason),
        "logprobs": ("ok", None),
        "wire": ("ok", None),
    }


def test_special_sglang_paths_through_the_cli(tmp_path):
    fifo = tmp_path / "sglang.whl"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    cases = [str(fifo), "/dev/zero", str(loop), str(tmp_path / "missing")]
    runs = run_cli_many(
        [
            (["fingerprint", "--sglang-path", path], tmp_path / "run" / str(n))
            for n, path in enumerate(cases)
        ],
        LIMIT_S,
        _env(),
    )
    for path, run in zip(cases, runs, strict=True):
        stderr = run.stderr.decode("utf-8")
        assert not run.timed_out and "Traceback" not in stderr, (path, stderr)
        assert run.rc == 2 and len(stderr.splitlines()) == 1, (path, stderr)
