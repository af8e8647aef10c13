"""``ppaux check-observer`` runs the target in a child process: nothing the target does (its
neighbours, its patches, its prints, its forks, threads, hangs and exits, its objects' own
methods) changes the verdict, corrupts the report or ends ppaux."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import REPO, ppaux_process
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.observer import ObserverOptions, check_observer
from ppaux.observer.fresh import FORK_HOOK

pytestmark = pytest.mark.torch

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
ONE = ObserverOptions(batch_sizes=(2,), steps=2)


def observer(tmp_path: Path, *, head: str = "", after_sample: str = "", output: str = "") -> str:
    """The worked example's observer with ``head`` after its imports, ``after_sample``'s body
    before it returns, and ``output`` as the output's ``to_pp_tensors`` body before it returns."""
    text = GOOD.replace("import torch\n", "import torch\n" + head, 1)
    if after_sample:
        text = text.replace(
            "        return EntropyOutput(state)",
            after_sample + "        return EntropyOutput(state)",
        )
    if output:
        text = text.replace(
            '        return {"entropy": self.entropy}',
            output + '        return {"entropy": self.entropy}',
        )
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    return f"{tmp_path / 'obs.py'}:EntropyObserver"


def in_output(text: str, lines: str) -> str:
    """``text`` with ``lines`` at the end of the device output's ``__init__``."""
    head, marker, tail = text.partition("class EntropyOutput:")
    tail = tail.replace(
        "        self.entropy = entropy\n", "        self.entropy = entropy\n" + lines, 1
    )
    assert marker and lines in tail
    return head + marker + tail


def codes(report) -> list[str]:
    return [item.code for item in report.findings]


def test_neighbours_named_like_the_standard_library_never_run(tmp_path, fresh_child):
    # The child's start is the subject (its isolated path): a forked child would have imported
    # json and html before the target, whatever its path (tests/conftest.py's CHILD_FORKS).
    marker = tmp_path / "ran"
    folder = tmp_path / "observers"
    folder.mkdir()
    for name in ("json", "html", "hashlib", "selectors"):
        (folder / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r})\nraise SystemExit('shadowed')\n",
            encoding="utf-8",
        )
    target = observer(folder, head="import json\nimport html\n")
    result = ppaux_process("check-observer", target, "--format", "html", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    assert result.stdout.lstrip().lower().startswith("<!doctype html")


@pytest.mark.parametrize(
    "patch",
    [
        "torch.equal = lambda a, b: True\n",
        "import ppaux.observer.compare as _c\n_c.differences = lambda a, b: []\n",
        "import ppaux.observer.judge as _j\n_j.Judge.take = lambda self, m: None\n",
        "import hashlib\nhashlib.sha256 = lambda *a: hashlib.md5(b'')\n",
    ],
)
def test_a_target_that_patches_the_judge_changes_nothing(tmp_path, patch):
    # Rank 0 rebuilds the output one too high: PP711 whatever the module patches.
    text = GOOD.replace(
        '        return EntropyOutput(tensors["entropy"])',
        '        return EntropyOutput(tensors["entropy"] + 1)',
    )
    assert text != GOOD
    (tmp_path / "obs.py").write_text(text.replace("import torch\n", "import torch\n" + patch, 1))
    report = check_observer(f"{tmp_path / 'obs.py'}:EntropyObserver", ONE)
    assert "PP711" in codes(report)


def test_a_chdir_at_import_does_not_move_the_output(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = observer(tmp_path, head=f"import os\nos.chdir({str(elsewhere)!r})\n")
    result = ppaux_process(
        "check-observer", target, "-o", "r.json", "--format", "json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["findings"] == []
    assert not (elsewhere / "r.json").exists()


def test_a_thread_writing_to_descriptor_1_never_reaches_the_report(tmp_path):
    head = (
        "import os, threading, time\n"
        "def _spam():\n"
        "    for _ in range(200):\n"
        "        os.write(1, b'{garbage')\n"
        "        time.sleep(0.001)\n"
        "threading.Thread(target=_spam, daemon=True).start()\n"
        "print('printed at import')\n"
    )
    target = observer(
        tmp_path, head=head, after_sample="        print('printed in after_sample')\n"
    )
    result = ppaux_process("check-observer", target, "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)  # one valid document, nothing else
    assert document["findings"] == []
    assert "printed at import" in result.stderr
    assert "printed in after_sample" in result.stderr


def test_a_fork_in_after_sample_gives_one_report_and_a_finding(tmp_path):
    target = observer(tmp_path, after_sample="        import os\n        os.fork()\n")
    result = ppaux_process("check-observer", target, "--format", "json", cwd=tmp_path)
    document = json.loads(result.stdout)
    assert result.returncode == 1, result.stderr
    ended = [f for f in document["findings"] if f["code"] == "PP715"]
    assert [f["extra"]["end"] for f in ended] == ["fork"]
    assert len(document["steps"]) == 3 + 3  # batch sizes 1 and 4, three steps each


def test_closing_every_descriptor_at_import_is_a_finding(tmp_path):
    target = observer(tmp_path, head="import os\nos.closerange(0, 4096)\n")
    report = check_observer(target, ONE)
    [ended] = [f for f in report.findings if f.code == "PP715"]
    assert ended.extra["end"] in ("exit", "signal")


STRAY = (
    "import threading, time\n"
    "threading.Thread(target=time.sleep, args=(3600,), name='stray').start()\n"
)


def test_a_thread_left_running_is_a_finding_and_does_not_hold_ppaux(tmp_path):
    report = check_observer(observer(tmp_path, head=STRAY), ONE)
    [ended] = report.findings
    assert (ended.code, ended.severity.value, ended.extra["end"]) == ("PP718", "warning", "threads")
    assert "stray" in ended.message


def test_a_thread_left_running_is_a_warning_the_gate_can_waive(tmp_path):
    # In sglang such a thread runs on inside the scheduler and never stops it: the PP event
    # loop never returns and a shutdown kills the scheduler processes (read in the wheels by
    # test_observer_shutdown_wheels.py), so the check passes with a warning by default.
    target = observer(tmp_path, head=STRAY)
    rcs = {}
    for name, extra in {"plain": (), "fail": ("--fail-on", "warning")}.items():
        rcs[name] = ppaux_process("check-observer", target, "-f", "json", *extra, cwd=tmp_path)
    waived = ppaux_process(
        "check-observer",
        target,
        "-f",
        "json",
        "--fail-on",
        "warning",
        "--ignore",
        "PP718",
        cwd=tmp_path,
    )
    assert (rcs["plain"].returncode, rcs["fail"].returncode, waived.returncode) == (0, 1, 0)
    assert [f["code"] for f in json.loads(rcs["plain"].stdout)["findings"]] == ["PP718"]
    assert json.loads(waived.stdout)["findings"] == []


def test_a_hang_is_killed_at_the_timeout(tmp_path):
    target = observer(tmp_path, after_sample="        import time\n        time.sleep(3600)\n")
    report = check_observer(target, ObserverOptions(batch_sizes=(1,), steps=1, timeout_s=1.0))
    [ended] = [f for f in report.findings if f.code == "PP715"]
    assert ended.extra["end"] == "timeout"


def test_os_exit_in_a_method_is_a_finding(tmp_path):
    target = observer(tmp_path, after_sample="        import os\n        os._exit(3)\n")
    report = check_observer(target, ONE)
    [ended] = [f for f in report.findings if f.code == "PP715"]
    assert "exited with status 3" in ended.message


RAISING_REPR = """
class Sly:
    def __repr__(self):
        raise RuntimeError("no repr for you")
"""


@pytest.mark.parametrize(
    ("output", "method"),
    [
        ("        self.extra = Sly()\n", "__repr__"),
    ],
)
def test_an_object_that_cannot_be_described_is_the_targets_failure(tmp_path, output, method):
    # (A 100,000-deep list is no failure: it is not compared, and the report says so.)
    text = in_output(GOOD.replace("import torch\n", "import torch\n" + RAISING_REPR, 1), output)
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    report = check_observer(f"{tmp_path / 'obs.py'}:EntropyObserver", ONE)
    failed = [f for f in report.findings if f.code == "PP710"]
    assert failed, codes(report)
    assert failed[0].location is not None
    assert failed[0].location.file.endswith("obs.py")


def test_a_raising_getattribute_on_the_output_is_the_targets_failure(tmp_path):
    text = GOOD.replace(
        "    def copy_to_host(self, copy_tensor) -> EntropyHostOutput:",
        "    def __getattribute__(self, name):\n"
        "        if name == '__dict__':\n"
        "            raise RuntimeError('hidden')\n"
        "        return object.__getattribute__(self, name)\n\n"
        "    def copy_to_host(self, copy_tensor) -> EntropyHostOutput:",
        1,
    )
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    report = check_observer(f"{tmp_path / 'obs.py'}:EntropyObserver", ONE)
    [failed] = [f for f in report.findings if f.code == "PP710"]
    assert "RuntimeError: hidden" in failed.message
    assert failed.location is not None
    assert failed.location.function == "__getattribute__"


NAN_OUTPUT = """
        self.entropy = self.entropy.clone()
        self.entropy[0] = float("nan")
        self.note = float("nan")
"""


def test_equal_nans_are_equal(tmp_path):
    text = in_output(GOOD, NAN_OUTPUT)
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    report = check_observer(f"{tmp_path / 'obs.py'}:EntropyObserver", ONE)
    assert not {"PP711", "PP712"} & set(codes(report)), report.findings


def test_negative_zero_against_zero_is_reported_bitwise(tmp_path):
    text = GOOD.replace(
        '        return EntropyOutput(tensors["entropy"])',
        '        return EntropyOutput(torch.zeros_like(tensors["entropy"]))',
    ).replace("        return EntropyOutput(state)", "        return EntropyOutput(state * -0.0)")
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    report = check_observer(f"{tmp_path / 'obs.py'}:EntropyObserver", ONE)
    [item] = [f for f in report.findings if f.code == "PP711"]
    assert item.extra["what"] == "bits"
    assert "bitwise" in item.extra["rule"]


def test_with_outputs_given_rank_0_needs_only_from_pp_tensors(tmp_path):
    (tmp_path / "rank0.py").write_text(
        "import sys\n"
        f"sys.path.append({str(REPO / 'fixtures' / 'observers')!r})\n"
        "import torch\n"
        "from entropy_good import EntropyOutput\n"
        "class Rank0Only:\n"
        "    def from_pp_tensors(self, tensors):\n"
        "        return EntropyOutput(tensors['entropy'])\n"
        "def outputs():\n"
        "    return [EntropyOutput(torch.tensor([0.5, 1.5]))]\n",
        encoding="utf-8",
    )
    report = check_observer(
        f"{tmp_path / 'rank0.py'}:Rank0Only",
        ObserverOptions(batch_sizes=(2,)),
        outputs=f"{tmp_path / 'rank0.py'}:outputs",
    )
    assert codes(report) == []
    assert [row[3] for row in report.tables[0].rows] == ["same on both paths"]


def test_a_consume_that_reads_what_real_ones_read_is_clean(tmp_path):
    text = GOOD.replace(
        "            if commit is None:\n",
        "            if commit is None or req.finished() or req.is_retracted:\n"
        "                continue\n"
        "            if req.finished_reason is not None or not req.origin_input_ids:\n",
        1,
    )
    assert text != GOOD
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    assert codes(check_observer(f"{tmp_path / 'obs.py'}:EntropyObserver", ONE)) == []


def test_impl_both_is_neither_offered_nor_taken():
    from helpers import cli

    shown = cli("check-observer", "--help")
    assert "[reference|sglang]" in shown.stdout
    refused = cli("check-observer", "x.py:X", "--impl", "both")
    assert refused.exit_code == 2
    assert "'both' is not one of reference, sglang" in refused.stderr


def test_a_huge_exception_message_is_cut_where_it_is_shown(tmp_path):
    target = observer(tmp_path, after_sample="        raise ValueError('x' * 5_000_000)\n")
    report = check_observer(target, ONE)
    [failed] = [f for f in report.findings if f.code == "PP710"]
    assert len(failed.message) < 1000
    assert all(len(json.dumps(step)) < 10_000 for step in report.data["steps"])


def test_a_method_that_raises_is_located_at_the_line_that_raised(tmp_path):
    target = observer(
        tmp_path,
        output="        if True:\n            raise KeyError('entropy missing')\n",
    )
    text = (tmp_path / "obs.py").read_text(encoding="utf-8").splitlines()
    line = next(n for n, t in enumerate(text, 1) if "raise KeyError('entropy missing')" in t)
    report = check_observer(target, ONE)
    [failed] = [f for f in report.findings if f.code == "PP710"]
    assert failed.location is not None
    assert (failed.location.line, failed.location.function) == (line, "to_pp_tensors")


def test_a_correct_observer_is_clean_in_its_child_and_consume_sees_the_stand_ins(
    tmp_path, monkeypatch
):
    monkeypatch.delenv(FORK_HOOK, raising=False)  # as users run it: rank 0 fresh, no note of it
    report = check_observer(observer(tmp_path), ONE)
    assert codes(report) == []
    assert report.data["observer"]["requests"] == "ppaux stand-ins"
    assert report.notes == ()  # a clean check stays quiet
    # A consume that reads what only sglang's own Req has fails on the stand-ins, and the
    # report says which requests it saw.
    text = GOOD.replace(
        "            if commit is None:\n",
        "            if req.origin_input_text is None:\n                continue\n"
        "            if commit is None:\n",
        1,
    )
    (tmp_path / "reads.py").write_text(text, encoding="utf-8")
    failing = check_observer(f"{tmp_path / 'reads.py'}:EntropyObserver", ONE)
    assert "PP710" in codes(failing)
    assert "consume saw ppaux stand-ins as its requests and batch" in failing.notes


def test_an_output_that_is_the_observers_own_buffer_is_seen_changed(tmp_path):
    # Not a view: the very tensor the observer keeps and writes into at every step. The check
    # holds no output itself; the observer holding it is what lets a later step change it.
    text = GOOD.replace(
        "        return EntropyOutput(state)",
        "        if not hasattr(self, 'buffer'):\n"
        "            self.buffer = torch.zeros_like(state)\n"
        "        self.buffer.copy_(state)\n"
        "        return EntropyOutput(self.buffer)",
    )
    assert text != GOOD
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    report = check_observer(f"{tmp_path / 'obs.py'}:EntropyObserver", ONE)
    assert "PP713" in codes(report)


def test_outputs_nobody_keeps_are_not_reported_changed(tmp_path):
    # Every step's output is a view of that step's own fresh tensor, dropped after the step.
    target = observer(tmp_path, after_sample="        state = torch.stack([state, state])[0]\n")
    report = check_observer(target, ONE)
    assert codes(report) == []


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(["float32", "float64", "int64", "int8", "bool", "float16"]),
    shape=st.lists(st.integers(0, 7), min_size=0, max_size=3),
    transpose=st.booleans(),
    step=st.integers(1, 3),
    chunk=st.sampled_from([1, 5, 1 << 20]),
)
def test_a_tensors_digest_is_that_of_its_row_major_bytes(dtype, shape, transpose, step, chunk):
    import hashlib
    from unittest import mock

    import torch

    from ppaux.observer.compare import record

    generator = torch.Generator().manual_seed(len(shape) * 7 + step)
    base = (torch.randn(tuple(shape), generator=generator) * 50).to(getattr(torch, dtype))
    tensor = base
    if transpose and base.dim() >= 2:
        tensor = base.transpose(0, 1)
    if tensor.dim() >= 1:
        tensor = tensor[::step]
    # The expected bytes, built apart: each element's bytes in row-major order, one at a time.
    flat = tensor.reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    expected = b"".join(
        bytes(torch.tensor([flat[i].item()], dtype=flat.dtype).view(torch.uint8).tolist())
        for i in range(flat.numel())
    )
    # Digested a chunk at a time (chunk elements), wherever the chunks fall.
    with mock.patch("ppaux.observer.array_digests._CHUNK", chunk):
        assert record(tensor)["sha256"] == hashlib.sha256(expected).hexdigest()


_PLAIN = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=300),
)


@settings(max_examples=200, deadline=None)
@given(before=st.lists(_PLAIN, max_size=20), value=_PLAIN)
def test_a_plain_values_record_does_not_depend_on_what_was_recorded_before(before, value):
    # Records of plain values are kept and handed out again; what comes out must be what a
    # first record of that value says: its own type and its own text, whatever came before
    # (1 after True, -0.0 after 0.0, one NaN after another).
    import math

    from ppaux.observer.compare import record

    for earlier in before:
        record(earlier)
    made = record(value)
    assert made["kind"] == "value"
    assert made["type"] == type(value).__name__
    if isinstance(value, float) and not math.isnan(value):
        assert made["text"] == repr(value)
    if isinstance(value, float) and value == 0:
        # A float compares as Python's == does: -0.0 equals 0.0 (its text still tells them).
        assert made["key"] == "0.0"


def test_equal_plain_values_of_other_types_or_signs_keep_their_own_records():
    from ppaux.observer.compare import record

    assert record(True)["type"] == "bool" and record(1)["type"] == "int"
    assert record(1)["type"] == "int" and record(True)["type"] == "bool"
    assert record(0.0)["text"] == "0.0" and record(-0.0)["text"] == "-0.0"
    assert record(float("nan"))["key"] == record(float("-nan"))["key"] == "nan"


@pytest.mark.parametrize("given", [None, "ACTIVE"])
def test_the_childs_threads_wait_passively_unless_the_user_chose(monkeypatch, given):
    from ppaux.observer.child import _environment

    if given is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", given)
    monkeypatch.setenv("PYTHONSTARTUP", "/somewhere/startup.py")
    env = _environment()
    assert env["OMP_WAIT_POLICY"] == (given or "PASSIVE")
    assert "PYTHONSTARTUP" not in env
