"""The adversarial corpus (``fixtures/adversarial/``) through ``ppaux inspect``, one process each.

Every case of ``fixtures/make_adversarial.py`` runs as ``ppaux inspect FILE --format json`` in
its own process and its own empty directory, with stdout encoded strictly as UTF-8 (as on a
UTF-8 terminal), and in every other ``--format`` as well. The processes are forked from one
that has imported the CLI already (see ``hostile_run.run_cli_many``; a test below checks that
this gives what ``python -m ppaux_cli`` gives). Each case's formats run in one process that
reads the file once and runs the command line once per format from that read
(``hostile_run.run_cli_formats``): the reading is what the corpus attacks, and rendering is
cheap next to it; a test below runs a sample of cases of every group and outcome with one read
per format and checks that the two give the same bytes and exit codes.

Each must give: no traceback; its expected outcome (PP201 naming every hostile global with exit
1, or exactly one ``ppaux: error: FILE: ...`` line with exit 2, or a plain read); no file
created (a payload that ran would leave its marker there); the corpus file byte-for-byte
unchanged; and the wall-time and peak-memory bounds below. A control proves the payloads live:
plain ``pickle`` (or ``torch.load(weights_only=False)`` for zips) does create the markers.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import REPO
from hostile_run import Run, inspect_command, run_cli_formats, run_cli_many, run_measured

sys.path.insert(0, str(REPO / "fixtures"))

import make_adversarial as corpus

#: CPU-time bound (user + system) per file's process. The worst case measures 1.3 s; the bound
#: is loose so that only a hang that computes (or a quadratic blow-up) fails it, and the
#: machine's load (wall time of 31 s on 1.7 s of CPU seen on a busy 2-core machine) does not.
CPU_BOUND_S = 30.0
#: Wall-clock limit per file (per format): a process past it is killed and the test fails, so
#: a hang that sleeps or waits still fails, while a busy machine has room.
WALL_LIMIT_S = 120.0
#: Peak RSS bound per file. The worst case (bomb_wide_dict: a JSON report of 100,000 entries)
#: measures about 250 MB; Python with the CLI loaded is about 35 MB.
RSS_BOUND_MB = 320.0
#: CLI processes run side by side.
WORKERS = 2

CASES = {c.name: c for c in corpus.CASES}


def _env() -> dict[str, str]:
    # Warnings are errors, as in the test suite: a reader that warns on some input fails here.
    return {
        **os.environ,
        "NO_COLOR": "1",
        "COLUMNS": "100",
        "PYTHONIOENCODING": "utf-8:strict",
        "PYTHONWARNINGS": "error",
    }


def _strict_json(text: str):
    # NaN and Infinity are not JSON: a strict parser refuses them.
    def refuse(token: str):
        raise ValueError(f"non-JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Outcome:
    def __init__(
        self, run: Run, created: list[str], before: str, after: str, wrote: bool = False
    ) -> None:
        self.run, self.created, self.before, self.after = run, created, before, after
        #: Whether the command left its output file (tensorize's ``-o out.pt``) behind.
        self.wrote = wrote


def _argv(case: corpus.Case, fmt: str = "json") -> list[str]:
    return ["inspect", str(corpus.OUT / case.filename), "--format", fmt]


#: The formats besides json that every case also runs in.
OTHER_FORMATS = ("text", "github", "sarif", "junit", "gitlab", "markdown", "html")


@pytest.fixture(scope="module")
def format_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, _Outcome]]:
    """Every case in json and every other format: one forked process per case reads the file
    once and runs the command line in each format (json first, so that its time includes the
    read); see ``hostile_run.run_cli_formats``, and test_one_read_gives_what_a_read_per_format
    gives below."""
    root = tmp_path_factory.mktemp("adversarial")
    before = {c.name: _sha256(corpus.OUT / c.filename) for c in corpus.CASES}
    formats = ["json", *OTHER_FORMATS]

    def batch(cases: list[corpus.Case]) -> list[tuple[str, dict[str, Run]]]:
        runs = run_cli_formats(
            [(_argv(c), root / c.name) for c in cases], formats, WALL_LIMIT_S, _env()
        )
        return [(c.name, each) for c, each in zip(cases, runs, strict=True)]

    with ThreadPoolExecutor(WORKERS) as pool:
        parts = pool.map(batch, [corpus.CASES[k::WORKERS] for k in range(WORKERS)])
    found = {}
    for part in parts:
        for name, runs in part:
            # Files written by any of the case's formats are in the one directory.
            created = sorted(os.listdir(root / name))
            after = _sha256(corpus.OUT / CASES[name].filename)
            found[name] = {
                fmt: _Outcome(run, created, before[name], after) for fmt, run in runs.items()
            }
    return found


@pytest.fixture(scope="module")
def outcomes(format_runs: dict[str, dict[str, _Outcome]]) -> dict[str, _Outcome]:
    return {name: runs["json"] for name, runs in format_runs.items()}


@pytest.fixture(scope="module")
def format_outcomes(format_runs: dict[str, dict[str, _Outcome]]) -> dict[tuple[str, str], Run]:
    found = {}
    for name, runs in format_runs.items():
        for fmt in OTHER_FORMATS:
            assert runs[fmt].created == [], f"{name} --format {fmt} wrote a file"
            found[name, fmt] = runs[fmt].run
    return found


def test_corpus_has_at_least_thirty_named_cases():
    assert len(CASES) == len(corpus.CASES) >= 30
    names = sorted(p.name for p in corpus.OUT.iterdir())
    assert names == sorted([c.filename for c in corpus.CASES] + ["CATALOGUE.md"])
    groups = {c.group for c in corpus.CASES}
    assert groups == {
        "code execution",
        "hidden globals",
        "zip tricks",
        "pickle bombs",
        "truncation",
    }


def test_catalogue_is_written_from_the_case_list():
    assert corpus.CATALOGUE.read_text(encoding="utf-8") == corpus.catalogue()
    text = corpus.CATALOGUE.read_text(encoding="utf-8")
    for case in corpus.CASES:
        assert f"| `{case.filename}` |" in text


@pytest.mark.parametrize("name", [c.name for c in corpus.CASES if not c.heavy])
def test_file_is_what_the_script_writes(name):
    case = CASES[name]
    if case.version_specific and sys.version_info[:2] != (3, 11):
        pytest.skip("bytecode of another Python version")
    assert (corpus.OUT / case.filename).read_bytes() == case.build(case.name)


@pytest.mark.parametrize("name", list(CASES))
def test_inspect_survives(name, outcomes):
    case, outcome = CASES[name], outcomes[name]
    run = outcome.run
    stderr = run.stderr.decode("utf-8", "replace")
    assert not run.timed_out, f"no result within {WALL_LIMIT_S} s"
    assert "Traceback" not in stderr, stderr
    assert run.cpu_s < CPU_BOUND_S, f"{run.cpu_s:.1f} s of CPU"
    assert run.rss_mb < RSS_BOUND_MB, f"peak RSS {run.rss_mb:.0f} MB"
    assert outcome.created == [], "the payload ran or something was written"
    assert outcome.after == outcome.before, "the corpus file changed"
    path = str(corpus.OUT / case.filename)
    if case.expect == "error":
        assert run.rc == 2, stderr
        lines = stderr.splitlines()
        assert len(lines) == 1, stderr
        assert lines[0].startswith(f"ppaux: error: {path}: "), lines[0]
        assert case.error in lines[0], lines[0]
        return
    assert run.rc in (0, 1), stderr
    assert stderr == ""
    document = _strict_json(run.stdout.decode("utf-8"))
    hostile = [f["extra"]["global"] for f in document["findings"] if f["code"] == "PP201"]
    if case.expect == "refused":
        # torch could read the file differently: refused unchecked, never described as clean.
        assert run.rc == 1
        (refusal,) = document["findings"]
        assert refusal["code"] == case.code and refusal["severity"] == "error"
        assert case.error in refusal["message"], refusal["message"]
        assert document["files"] == [] and document["problems"] == []
        return
    if case.expect == "finding":
        assert run.rc == 1
        assert set(case.globals) <= set(hostile), hostile
        if not document["files"]:
            # torch refuses the file (or would read it otherwise) after the calls: the calls
            # are findings all the same, the refusal one more.
            others = {f["code"] for f in document["findings"]} - {"PP201"}
            assert others and others <= {"PP117", "PP118", "PP202"}, others
            return
        # Every global the file names but the allowlist does not know is reported.
        unknown = {g["name"] for g in document["files"][0]["globals"] if not g["allowed"]}
        assert set(hostile) == unknown
    else:
        assert hostile == []
        assert document["problems"] == []


@pytest.mark.parametrize("name", list(CASES))
def test_every_format_survives(name, outcomes, format_outcomes):
    # The same bounds in every output format, and the same verdict as --format json.
    import xml.etree.ElementTree as ET

    path = str(corpus.OUT / CASES[name].filename)
    for fmt in OTHER_FORMATS:
        run = format_outcomes[name, fmt]
        stderr = run.stderr.decode("utf-8", "replace")
        assert not run.timed_out, f"--format {fmt}: no result within {WALL_LIMIT_S} s"
        assert "Traceback" not in stderr, (fmt, stderr)
        assert run.rss_mb < RSS_BOUND_MB, f"--format {fmt}: peak RSS {run.rss_mb:.0f} MB"
        assert run.rc == outcomes[name].run.rc, fmt
        if run.rc == 2:
            (line,) = stderr.splitlines()
            assert line.startswith(f"ppaux: error: {path}: "), (fmt, line)
        else:
            assert stderr == "", (fmt, stderr)
        text = run.stdout.decode("utf-8")
        if fmt in ("sarif", "gitlab"):
            _strict_json(text)
        elif fmt == "junit":
            ET.fromstring(run.stdout)
        assert "\x1b" not in text, fmt
        # the CPU time of the process that wrote every format from one read
        assert run.cpu_s < CPU_BOUND_S, (fmt, run.cpu_s)


def test_figures_over_the_corpus(outcomes):
    # The figures docs/security.md quotes come from benchmarks/bench_adversarial.py; this keeps
    # the bounds honest in every run.
    worst_cpu = max(o.run.cpu_s for o in outcomes.values())
    worst_rss = max(o.run.rss_mb for o in outcomes.values())
    assert 0 < worst_cpu < CPU_BOUND_S
    assert worst_rss < RSS_BOUND_MB


@pytest.mark.parametrize(
    "name",
    [
        "exec_os_system_reduce",
        "zip_two_data_pkl",
        "bomb_surrogate_key",
        "zip_huge_declared_storage",
    ],
)
def test_forked_runs_match_python_m_ppaux_cli(name, outcomes, tmp_path):
    run = run_measured(
        inspect_command(corpus.OUT / CASES[name].filename), tmp_path, WALL_LIMIT_S, _env()
    )
    forked = outcomes[name].run
    assert (run.rc, run.stdout, run.stderr) == (forked.rc, forked.stdout, forked.stderr)


#: Cases of each group and outcome (a finding, a refusal, an error, a plain read, the widest
#: report) for the check below.
_ONE_READ_SAMPLE = [
    "exec_os_system_reduce",
    "exec_tar_polyglot",
    "hidden_escapes_in_device",
    "zip_newline_in_record_name",
    "zip_two_data_pkl",
    "bomb_surrogate_key",
    "bomb_wide_dict",
    "trunc_zip_at_data_0_archive_data_pkl",
]


def test_one_read_gives_what_a_read_per_format_gives(format_runs, tmp_path):
    # format_runs reads each file once and runs every format from that read; here each format
    # runs in a process of its own that reads the file itself (the CLI's path from end to end),
    # and gives the same exit code and the same bytes on stdout and stderr.
    formats = ["json", *OTHER_FORMATS]
    jobs = [
        (_argv(CASES[name], fmt), tmp_path / f"{name}.{fmt}")
        for name in _ONE_READ_SAMPLE
        for fmt in formats
    ]
    runs = iter(run_cli_many(jobs, WALL_LIMIT_S, _env()))
    for name in _ONE_READ_SAMPLE:
        for fmt in formats:
            alone, shared = next(runs), format_runs[name][fmt].run
            assert (alone.rc, alone.stdout, alone.stderr) == (
                shared.rc,
                shared.stdout,
                shared.stderr,
            ), (name, fmt)
            assert os.listdir(tmp_path / f"{name}.{fmt}") == []


_DISPLAY = [
    "hidden_newline_in_global_name",
    "hidden_escapes_in_device",
    "bomb_surrogate_key",
    "zip_newline_in_record_name",
    "bomb_giant_global_name",
    "bomb_wide_dict",
]


@pytest.mark.parametrize("name", _DISPLAY)
def test_text_view_of_hostile_names(name, format_outcomes):
    # Names and keys from a file reach the terminal escaped: no newline, no escape sequence.
    # The run is format_outcomes' --format text run of the file (the same command line, forked
    # as test_forked_runs_match_python_m_ppaux_cli checks).
    case = CASES[name]
    run = format_outcomes[name, "text"]
    stdout, stderr = run.stdout.decode("utf-8"), run.stderr.decode("utf-8")
    assert "Traceback" not in stderr
    assert "\x1b" not in stdout + stderr
    assert run.rc == {"finding": 1, "refused": 1, "error": 2, "read": run.rc}[case.expect]
    if case.expect == "error":
        assert len(stderr.splitlines()) == 1
    if name == "hidden_newline_in_global_name":
        assert "os.sys\\ntem\\x1b[2J" in stdout
    if name == "hidden_escapes_in_device":
        assert "cuda:0\\n\\x1b[2J" in stdout and "\x07" not in stdout
    if name == "bomb_wide_dict":
        assert "... and 99003 more keys" in stdout


_LOADER = r"""
import io, json, os, pickle, sys, time, warnings
warnings.simplefilter("ignore")
cases = json.loads(sys.argv[1])
for path, workdir, kind in cases:
    os.chdir(workdir)
    try:
        with open(path, "rb") as handle:
            if handle.read(4) == b"PK\x03\x04" or kind == "torch":
                import torch
                torch.load(path, weights_only=False, map_location="cpu")
            else:
                handle.seek(0)
                pickle.load(handle)
    except BaseException:
        pass
"""


def test_payloads_are_live(tmp_path, have_torch):
    # Control for the marker test: loading each executing case the ordinary way does run it.
    live = [c for c in corpus.CASES if c.executes is not None]
    if not have_torch:
        live = [c for c in live if c.executes == "pickle" and c.suffix == ".pkl"]
    if sys.version_info[:2] != (3, 11):
        live = [c for c in live if not c.version_specific]
    assert len(live) >= 20
    jobs = []
    for case in live:
        workdir = tmp_path / case.name
        workdir.mkdir()
        jobs.append((str(corpus.OUT / case.filename), str(workdir), case.executes))
    subprocess.run(
        [sys.executable, "-c", _LOADER, json.dumps(jobs)],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
        env=_env(),
    )
    # subprocess.Popen payloads finish on their own; give them a moment.
    deadline = time.monotonic() + 10
    missing = live
    while missing and time.monotonic() < deadline:
        missing = [c for c in live if not (tmp_path / c.name / corpus.marker(c.name)).exists()]
        time.sleep(0.05)
    assert [c.name for c in missing] == []


def test_huge_zip_directory_is_counted_before_it_is_parsed(tmp_path):
    # 300,000 directory entries (a 20 MB file): Python's zipfile would build an object for each
    # (about 180 MB) before the record limit could be checked. They are counted first.
    name = b"archive/x"
    local = b"PK\x03\x04" + bytes(22) + len(name).to_bytes(2, "little") + bytes(2) + name
    entries = []
    for k in range(300_000):
        entry = b"archive/data/%07d" % k
        entries.append(
            b"PK\x01\x02" + bytes(24) + len(entry).to_bytes(2, "little") + bytes(16) + entry
        )
    directory = b"".join(entries)
    end = (
        b"PK\x05\x06"
        + bytes(4)
        + b"\xff\xff\xff\xff"
        + len(directory).to_bytes(4, "little")
        + len(local).to_bytes(4, "little")
        + bytes(2)
    )
    path = tmp_path / "many.pt"
    path.write_bytes(local + directory + end)
    (run,) = run_cli_many(
        [(["inspect", str(path), "--format", "json"], tmp_path / "run")], WALL_LIMIT_S, _env()
    )
    assert run.stderr.decode() == (
        f"ppaux: error: {path}: the zip's directory holds more than 100000 records (limit "
        "max_zip_records=100000 reached); raise it with --limit max_zip_records=N\n"
    )
    assert run.rc == 2
    assert run.rss_mb < 100


@pytest.mark.torch
def test_replay_loads_the_corpus_without_running_it(tmp_path):
    # replay takes each dump's structure from the same reader, then rebuilds tensors with torch:
    # the whole corpus in one run, nothing executed, one line per file it cannot use.
    run = run_measured(
        [sys.executable, "-m", "ppaux_cli", "replay", str(corpus.OUT), "--format", "json"],
        tmp_path,
        300,
        _env(),
    )
    stderr = run.stderr.decode("utf-8")
    assert not run.timed_out and "Traceback" not in stderr, stderr
    assert run.rc == 2
    assert os.listdir(tmp_path) == []
    document = json.loads(run.stdout.decode("utf-8"))
    lines = stderr.splitlines()
    assert len(lines) == len(document["problems"]) > 0
    assert all(line.startswith(f"ppaux: error: {corpus.OUT}/") for line in lines)


#: Bounds for the commands that read tensor bytes. They load torch (about 150 MB before any
#: file), and diff of the wide-dict bombs measures about 25 s and 700 MB on a busy 2-core
#: machine (a report of every one of 100,000 entries): these bounds catch a hang or a runaway,
#: the figures for inputs under 1 MB are benchmarks' business.
BYTE_READER_TIME_S = 90.0
BYTE_READER_RSS_MB = 1024.0

#: The commands that read tensor bytes, as run over every corpus file: ARGS for one file.
_BYTE_READERS = {
    "diff": lambda path: [
        "diff",
        str(REPO / "fixtures" / "dumps" / "clean_output.pt"),
        path,
        "--format",
        "json",
    ],
    "replay": lambda path: ["replay", path, "--format", "json"],
    "tensorize": lambda path: ["tensorize", path, "-o", "out.pt"],
}


@pytest.fixture(scope="module")
def byte_reader_outcomes(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, str], _Outcome]:
    root = tmp_path_factory.mktemp("byte_readers")
    before = {c.name: _sha256(corpus.OUT / c.filename) for c in corpus.CASES}
    jobs = [(command, c) for command in _BYTE_READERS for c in corpus.CASES]
    env = {**_env(), "PPAUX_TEST_PRELOAD": "torch"}

    def batch(part: list[tuple[str, corpus.Case]]) -> list[tuple[tuple[str, str], Run]]:
        argvs = [
            (_BYTE_READERS[command](str(corpus.OUT / c.filename)), root / f"{command}.{c.name}")
            for command, c in part
        ]
        runs = run_cli_many(argvs, BYTE_READER_TIME_S, env)
        return [((command, c.name), run) for (command, c), run in zip(part, runs, strict=True)]

    with ThreadPoolExecutor(WORKERS) as pool:
        parts = pool.map(batch, [jobs[k::WORKERS] for k in range(WORKERS)])
    outcomes = {}
    for part in parts:
        for (command, name), run in part:
            listing = set(os.listdir(root / f"{command}.{name}"))
            outcomes[command, name] = _Outcome(
                run,
                sorted(listing - {"out.pt"}),
                before[name],
                _sha256(corpus.OUT / CASES[name].filename),
                "out.pt" in listing,
            )
    return outcomes


@pytest.mark.torch  # replay and tensorize need torch
@pytest.mark.parametrize("command", list(_BYTE_READERS))
def test_byte_readers_survive_the_corpus(command, byte_reader_outcomes):
    # diff, replay and tensorize read tensor bytes (a corrupt deflated storage record among
    # them): every file gives exit 0, 1 or 2, and 2 comes with exactly one error line naming
    # the file; never a traceback or an internal error, and nothing runs.
    broken = []
    for case in corpus.CASES:
        outcome = byte_reader_outcomes[command, case.name]
        run = outcome.run
        stderr = run.stderr.decode("utf-8", "replace")
        path = str(corpus.OUT / case.filename)
        why = None
        if run.timed_out or run.rc not in (0, 1, 2):
            why = f"rc {run.rc}, timed out {run.timed_out}"
        elif "Traceback" in stderr or "internal error" in stderr:
            why = stderr[-300:]
        elif run.rc == 2 and (
            len(stderr.splitlines()) != 1 or not stderr.startswith(f"ppaux: error: {path}: ")
        ):
            why = f"not one error line: {stderr[:300]!r}"
        elif run.rss_mb > BYTE_READER_RSS_MB:
            why = f"peak RSS {run.rss_mb:.0f} MB"
        elif outcome.created or outcome.after != outcome.before:
            why = f"wrote {outcome.created}, or changed the corpus file"
        if why is not None:
            broken.append((case.name, why))
    assert broken == [], broken
    corrupt = byte_reader_outcomes[command, "zip_corrupt_deflate_storage"].run
    stderr = corrupt.stderr.decode("utf-8")
    assert corrupt.rc == 2, (corrupt.rc, stderr)
    assert "archive/data/0 does not inflate" in stderr and "invalid block type" in stderr, stderr


@pytest.mark.torch
@pytest.mark.parametrize("command", ["diff", "replay"])
def test_byte_readers_report_the_corpus_in_json(command, byte_reader_outcomes):
    # Every file diff and replay do not refuse gives a JSON report on stdout, and they write
    # no file at all.
    for case in corpus.CASES:
        outcome = byte_reader_outcomes[command, case.name]
        run = outcome.run
        assert not outcome.wrote, case.name
        if run.rc != 2:
            json.loads(run.stdout.decode("utf-8"))


#: Corpus files that attack the cost of a report, not the reader, and hold values to convert:
#: tensorize writes them (the last line it prints).
_CONVERTIBLE = {"bomb_long_key_many_dicts": "wrote out.pt (1000 values converted)"}


@pytest.mark.torch
def test_tensorize_writes_only_what_it_converts(byte_reader_outcomes):
    # Over the corpus, tensorize -o out.pt writes the file only where it converted values, and
    # says what it did in its last line: a note that nothing was written (exit 0), "nothing
    # written" after its findings (exit 1), or one error line (exit 2).
    assert set(_CONVERTIBLE) <= set(CASES)
    for case in corpus.CASES:
        outcome = byte_reader_outcomes["tensorize", case.name]
        run = outcome.run
        stdout = run.stdout.decode("utf-8")
        where = (case.name, run.rc, stdout[-300:], run.stderr[-300:])
        if case.name in _CONVERTIBLE:
            # Costly to read, harmless to convert: the fix is written, and the report of it is
            # bounded (the long key is cut in each line).
            assert run.rc == 0, where
            assert stdout.splitlines()[-1] == _CONVERTIBLE[case.name], where
            assert len(stdout) < 500_000, where
            assert outcome.wrote, where
            continue
        assert not outcome.wrote, where
        if run.rc == 0:  # nothing to convert: a note, and nothing written
            assert stdout.startswith("note: "), where
            assert stdout.endswith("; -o out.pt not written\n"), where
        elif run.rc == 1:
            assert stdout.splitlines()[-1] == "nothing written to out.pt", where
