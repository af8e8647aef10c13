"""``ppaux check-observer`` and :mod:`ppaux.observer`: each faulty observer of
fixtures/observers is flagged with sglang's exact message and the side that raises it, or with
the differing tensor or field; the good ones pass; unusable targets are one line and exit 2.

The tests of faulty.py's rules (each sglang error and its side, sparse and cast tensors, crossed
fields, a reused buffer, rank 0's instance, numpy) run the check in this process (``in_hand``,
the path ``assert_pp_safe`` takes for an observer in hand, one wire for all): their subject is
how the records are judged, which is the same code in either process, and a child would add only
its torch import (about 1.6 s of CPU each). The child still runs for the good observers, lists,
the CLI's runs, locations, files of a test's own and every setting that starts processes;
test_the_child_judges_as_the_check_in_hand_does checks that both give the same findings."""

from __future__ import annotations

import copy
import json
import os
import sys

import pytest
from helpers import REPO, cli

import ppaux.observer
from ppaux.limits import Limits
from ppaux.observer import ObserverOptions, TargetError
from ppaux.report import Report

pytestmark = pytest.mark.torch

OBSERVERS = REPO / "fixtures" / "observers"

_check_observer = ppaux.observer.check_observer
#: The reports of the bundled observers' checks, by target, settings, limits and directory.
_REPORTS: dict[tuple[str, ObserverOptions, Limits, str], Report] = {}


def check_observer(target: str, options: ObserverOptions = ObserverOptions(), **kwargs) -> Report:
    """:func:`ppaux.observer.check_observer`, run once per question about a bundled observer.

    Each check starts a child process that imports torch (about 1.5 s of CPU), and several tests
    ask the same question of the same file of fixtures/observers (the library's report, then the
    CLI's formats, ``--strict`` and ``--ignore`` over it): the first asks it for real and the
    others get a copy of that report. Those files print nothing, so no output is lost; anything
    else (a test's own file, ``--outputs``, a directory of its own) runs every time."""
    limits = kwargs.get("limits", Limits())
    own = {name for name, value in kwargs.items() if value is not None} - {"limits", "on_output"}
    if not target.startswith(f"{OBSERVERS}{os.sep}") or own:
        return _check_observer(target, options, **kwargs)
    key = (target, options, limits, os.getcwd())
    if key not in _REPORTS:
        _REPORTS[key] = _check_observer(target, options, **kwargs)
    return copy.deepcopy(_REPORTS[key])


@pytest.fixture(autouse=True)
def _cli_checks_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's check-observer (which imports the function when it runs) asks the same."""
    monkeypatch.setattr(ppaux.observer, "check_observer", check_observer)


@pytest.fixture(scope="module")
def in_hand():
    """``in_hand(name, options)``: the check of the bundled ``name`` (``file.py:attr``) run in
    this process, as ``assert_pp_safe`` runs an observer in hand; the checks of the default
    transport all send through one wire."""
    from ppaux.observer import check_loaded, load_observer
    from ppaux.replay.wiring import open_wire

    default = ObserverOptions()
    wire = open_wire(default.transport, timeout_s=default.timeout_s)

    def check(name: str, options: ObserverOptions = default) -> Report:
        same = options.transport.value == wire.transport and options.device == "cpu"
        shared = wire if same else None
        return check_loaded(load_observer(target(name)), options, wire=shared)

    yield check
    wire.close()


def target(name: str) -> str:
    file, _, attr = name.partition(":")
    return f"{OBSERVERS / file}:{attr}"


def codes(report) -> list[str]:
    return [f.code for f in report.findings]


def only(report, code: str):
    found = [f for f in report.findings if f.code == code]
    assert found, [(f.code, f.message) for f in report.findings]
    return found[0]


@pytest.mark.parametrize(
    "name", ["entropy_good.py:EntropyObserver", "entropy_fixed.py:EntropyObserver"]
)
def test_a_pp_safe_observer_passes_with_exit_0(name):
    result = cli("check-observer", target(name))
    assert result.exit_code == 0, result.output
    assert "same on both paths" in result.stdout
    report = check_observer(target(name))
    assert report.findings == ()
    # Every step of both batch sizes sent the output down both paths.
    assert [(r["batch_size"], r["step"]) for r in report.data["steps"]] == [
        (1, 0),
        (1, 1),
        (1, 2),
        (4, 0),
        (4, 1),
        (4, 2),
    ]
    assert all(r["sent"] == ["entropy"] for r in report.data["steps"])


def test_a_list_is_refused_by_the_last_stage_with_sglangs_message():
    report = check_observer(target("entropy_list.py:EntropyObserver"))
    item = only(report, "PP705")
    assert item.sglang_error == "auxiliary PP output 'entropy' is not a tensor"
    assert item.key == "entropy"
    assert item.message.startswith(
        "the last stage's add raises RuntimeError: auxiliary PP output 'entropy' is not a "
        "tensor; the entry at fault is 'entropy', a list ["
    )
    assert codes(report) == ["PP705"]  # once, not once per step


def test_a_list_behind_a_legacy_sender_fails_on_rank_0():
    report = check_observer(
        target("entropy_list.py:EntropyObserver"), ObserverOptions(sender="legacy")
    )
    item = only(report, "PP706")
    assert item.sglang_error == "received a non-tensor auxiliary PP output"
    assert item.message.startswith("rank 0's pop raises RuntimeError: received a non-tensor")
    assert "the entry at fault is 'entropy', a list" in item.message


@pytest.mark.parametrize(
    ("name", "code", "message", "side"),
    [
        (
            "NoToPPObserver",
            "PP701",
            "auxiliary output does not support pipeline-parallel transport",
            "the last stage's add",
        ),
        (
            "NoFromPPObserver",
            "PP702",
            "sampling observer does not support pipeline-parallel transport",
            "rank 0's pop",
        ),
        (
            "EmptyObserver",
            "PP703",
            "auxiliary PP output must contain at least one tensor",
            "the last stage's add",
        ),
        (
            "BadNameObserver",
            "PP704",
            "auxiliary PP tensor names must be non-empty strings",
            "the last stage's add",
        ),
        (
            "NotRebuiltObserver",
            "PP707",
            "sampling observer did not reconstruct its PP output",
            "rank 0's pop",
        ),
    ],
)
def test_each_sglang_error_with_its_exact_message_and_side(in_hand, name, code, message, side):
    report = in_hand(f"faulty.py:{name}")
    assert codes(report) == [code]
    item = report.findings[0]
    assert item.sglang_error == message
    assert item.message.startswith(f"{side} raises RuntimeError: {message}")


@pytest.mark.parametrize("name", ["faulty.py:NotRebuiltObserver", "faulty.py:HalfOnWireObserver"])
def test_the_child_judges_as_the_check_in_hand_does(in_hand, name):
    # The tests of faulty.py's rules run the check in hand: the same records, the same judge.
    # The child of check-observer gives the same findings, word for word and line for line.
    def seen(report: Report) -> list:
        return [
            (f.code, f.severity, f.message, f.location, f.sglang_error) for f in report.findings
        ]

    child = check_observer(target(name))
    assert child.findings and seen(child) == seen(in_hand(name))


def test_a_bad_name_names_the_entry_and_its_value(in_hand):
    item = only(in_hand("faulty.py:BadNameObserver"), "PP704")
    # The name is the int 0: it must not read as the string '0', which sglang would accept.
    assert "the entry at fault is named 0, a float32 (1,) cpu" in item.message
    assert "'0'" not in item.message


def test_an_empty_name_reads_as_the_empty_string(tmp_path):
    (tmp_path / "empty_name.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(OBSERVERS)!r})\n"
        "from entropy_good import EntropyObserver, EntropyOutput\n"
        "class Output(EntropyOutput):\n"
        "    def to_pp_tensors(self):\n"
        "        return {'': self.entropy}\n"
        "class Observer(EntropyObserver):\n"
        "    def after_sample(self, state, token_ids):\n"
        "        return Output(state)\n"
    )
    item = only(check_observer(f"{tmp_path / 'empty_name.py'}:Observer"), "PP704")
    assert item.sglang_error == "auxiliary PP tensor names must be non-empty strings"
    assert "the entry at fault is named '', a float32 (1,) cpu" in item.message


def test_a_sparse_tensor_is_refused_by_the_wire_on_the_sender(in_hand):
    report = in_hand("faulty.py:SparseObserver")
    item = only(report, "PP709")
    assert item.key == "entropy"
    # sglang's send reshapes it first for the scheduler's one-rank attention-TP group
    message = "fails on the sender: RuntimeError: reshape is not implemented for sparse"
    assert message in item.message
    assert "a float32 (1,) cpu sparse_coo" in item.message


def test_a_sparse_tensor_passes_without_a_wire(in_hand):
    # sglang's add accepts any tensor: only the wire refuses the sparse layout.
    report = in_hand("faulty.py:SparseObserver", ObserverOptions(transport="none"))
    assert "PP709" not in codes(report)


def test_a_cast_on_the_wire_is_silent_corruption_named_by_tensor_and_field(in_hand):
    report = in_hand("faulty.py:HalfOnWireObserver")
    output = only(report, "PP711")
    assert output.key == ".entropy"
    assert "differs (dtype): single stage float32 (1,) cpu, PP float16 (1,) cpu" in output.message
    request = only(report, "PP712")
    assert request.key == ".customized_info['entropy'][0]"
    assert request.sglang_error is None
    # The field leads, then where it is: the path is not glued onto the prose.
    assert output.message.startswith(".entropy of the output rank 0 rebuilt differs (dtype)")
    assert request.message.startswith(
        ".customized_info['entropy'][0] of request 0 after consume differs (value)"
    )
    assert all(f.severity.value == "error" for f in report.findings)


def test_crossed_fields_are_named(in_hand):
    report = in_hand("faulty.py:SwappedObserver", ObserverOptions(steps=1))
    keys = [f.key for f in report.findings if f.code == "PP711"]
    assert keys == [".entropy", ".top"]
    assert "(bits)" in report.findings[0].message


def test_a_reused_buffer_is_found_over_several_steps(in_hand):
    report = in_hand("faulty.py:ReusedBufferObserver")
    item = only(report, "PP713")
    assert item.key == ".entropy"
    assert "the output of step 0 (batch size 1) changed by step 2" in item.message
    # The table's row of that step says so and is marked; it never reads 'same on both paths'.
    table = report.tables[0]
    first = next(i for i, row in enumerate(table.rows) if row[:2] == ("1", "0"))
    assert table.rows[first][3] == "changed by step 2 (PP713)"
    assert (first, 3) in table.marked
    # One step cannot show it.
    assert in_hand("faulty.py:ReusedBufferObserver", ObserverOptions(steps=1)).findings == ()


def test_rank_0_uses_another_instance_of_the_observer(in_hand):
    report = in_hand("faulty.py:StatefulRank0Observer")
    item = only(report, "PP710")
    assert item.message.startswith("from_pp_tensors raised TypeError: ")
    assert "on rank 0" in item.message
    assert item.extra["method"] == "from_pp_tensors"


def test_numpy_arrays_are_refused(in_hand):
    pytest.importorskip("numpy")
    item = only(in_hand("faulty.py:NumpyObserver"), "PP705")
    assert "a ndarray" in item.message


def test_an_observer_that_is_never_active_is_inconclusive():
    report = check_observer(target("faulty.py:NeverActiveObserver"))
    item = only(report, "PP714")
    assert item.severity.value == "warning"
    plain = cli("check-observer", target("faulty.py:NeverActiveObserver"))
    assert plain.exit_code == 0
    # The command line says the fix with its own flag (the library says outputs=).
    assert "give --outputs a zero-argument callable returning them" in " ".join(
        plain.stdout.split()
    )
    strict = cli("check-observer", target("faulty.py:NeverActiveObserver"), "--strict")
    assert strict.exit_code == 1


@pytest.mark.parametrize(
    ("given", "line"),
    [
        (
            "nosuchmodule_xyz:Observer",
            "nosuchmodule_xyz:Observer: no module named 'nosuchmodule_xyz'",
        ),
        (
            "no_colon",
            "no_colon: expected module:attr or path/to/file.py:attr (a colon, then a name)",
        ),
        ("json:nothing_here", "json:nothing_here: json has no attribute 'nothing_here'"),
        (
            "good.py:Obs:x",
            "good.py:Obs:x: 'good.py:Obs' is neither a module name nor a .py file: a target "
            "takes one colon, before the name (module:attr or path/to/file.py:attr; an "
            "attribute of it is named with a dot, module:Outer.inner)",
        ),
        (
            "json:__name__",
            "json:__name__: is a str, not a sampling observer, a class or a factory "
            "(it lacks is_active, before_grammar, after_sample)",
        ),
    ],
)
def test_unusable_targets_are_one_line_and_exit_2(given, line):
    result = cli("check-observer", given)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"ppaux: error: {line}\n"


def test_a_file_python_cannot_compile_without_a_line_names_no_line(tmp_path):
    # A NUL byte: Python's SyntaxError has no line number, and the line says none.
    path = tmp_path / "nul.py"
    path.write_bytes(b"import os\n\0\n")
    result = cli("check-observer", f"{path}:Obs")
    assert result.exit_code == 2
    assert result.stderr == (
        f"ppaux: error: {path}:Obs: cannot run {path}: SyntaxError: source code string "
        "cannot contain null bytes\n"
    )


def test_a_module_in_the_current_directory_but_not_importable_says_why(tmp_path, monkeypatch):
    # The console script does not put the current directory on the import path (python -m
    # does): the module is there, yet not found, and the line says so and what to do.
    (tmp_path / "cwd_only_observers.py").write_text("Observer = None\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", [p for p in sys.path if p not in ("", str(tmp_path))])
    result = cli("check-observer", "cwd_only_observers:Observer")
    assert result.exit_code == 2
    assert result.stderr == (
        "ppaux: error: cwd_only_observers:Observer: no module named 'cwd_only_observers' "
        "('cwd_only_observers' is in the current directory, which is not on the import path: "
        "install the package (pip install -e .) or name the file, path/to/file.py:attr)\n"
    )


def test_a_file_that_is_not_python_says_only_py_files_are_taken_as_files(tmp_path, monkeypatch):
    (tmp_path / "bin.pt").write_bytes(b"PK\x03\x04")
    monkeypatch.chdir(tmp_path)
    result = cli("check-observer", "bin.pt:X")
    assert result.exit_code == 2
    assert result.stderr == (
        "ppaux: error: bin.pt:X: no module named 'bin' ('bin.pt' is a file, but only a .py "
        "file is taken as one: a target is module:attr or path/to/file.py:attr)\n"
    )


COLUMN_OBSERVER = """
import sys
sys.path.insert(0, {observers!r})
import torch
from entropy_good import EntropyObserver, EntropyOutput

class Column(EntropyObserver):
    # The entropy as a column of a (B, 2) matrix: for B = 1 a tensor of shape (1,) and
    # stride 2, which torch calls contiguous.
    def after_sample(self, state, token_ids):
        return EntropyOutput(torch.stack([state, state], 1)[:, 0])

class ColumnOffByOne(Column):
    def from_pp_tensors(self, tensors):
        return EntropyOutput(tensors["entropy"] + 1)
"""


def test_a_column_of_a_matrix_is_compared_not_an_internal_error(tmp_path):
    file = tmp_path / "column.py"
    file.write_text(COLUMN_OBSERVER.format(observers=str(OBSERVERS)), encoding="utf-8")
    options = ObserverOptions(transport="none", batch_sizes=(1,), steps=1)
    assert check_observer(f"{file}:Column", options).findings == ()
    item = only(check_observer(f"{file}:ColumnOffByOne", options), "PP711")
    assert item.key == ".entropy"
    assert "differs (bits)" in item.message


QUANTIZED_OBSERVER = """
import sys
sys.path.insert(0, {observers!r})
import torch
from entropy_good import EntropyHostOutput, EntropyObserver, EntropyOutput

class Host(EntropyHostOutput):
    def consume(self, batch, commits):
        self.entropy = self.entropy.dequantize()
        super().consume(batch, commits)

class Output(EntropyOutput):
    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.entropy))

class Quantized(EntropyObserver):
    def after_sample(self, state, token_ids):
        return Output(torch.quantize_per_tensor(state, 0.5, 0, torch.quint8))

    def from_pp_tensors(self, tensors):
        return Output(tensors["entropy"])

class Requantized(Quantized):
    def from_pp_tensors(self, tensors):
        value = tensors["entropy"].dequantize()
        return Output(torch.quantize_per_tensor(value, 0.25, 0, torch.quint8))
"""


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_quantized_output_is_compared_with_its_parameters(tmp_path):
    # Without a wire (which refuses quantized tensors) the output arrives as it was sent.
    file = tmp_path / "quantized.py"
    file.write_text(QUANTIZED_OBSERVER.format(observers=str(OBSERVERS)), encoding="utf-8")
    options = ObserverOptions(transport="none", batch_sizes=(1,), steps=1)
    assert check_observer(f"{file}:Quantized", options).findings == ()
    item = only(check_observer(f"{file}:Requantized", options), "PP711")
    assert item.key == ".entropy"
    assert "differs (quantization)" in item.message


LOUD_OBSERVER = """
import sys
sys.path.insert(0, {observers!r})
from entropy_good import EntropyObserver, EntropyOutput

LOUD = "first sentence of a long message. " + "detail " * 60 + "\\nsecond line"

class Output(EntropyOutput):
    def to_pp_tensors(self):
        raise RuntimeError(LOUD)

class SendsLoudly(EntropyObserver):
    def after_sample(self, state, token_ids):
        return Output(state)

class SamplesLoudly(EntropyObserver):
    def after_sample(self, state, token_ids):
        raise RuntimeError(LOUD)
"""


@pytest.mark.parametrize(
    ("name", "method"), [("SendsLoudly", "to_pp_tensors"), ("SamplesLoudly", "after_sample")]
)
def test_a_long_exception_from_the_observer_is_cut_to_its_first_sentence(tmp_path, name, method):
    file = tmp_path / "loud.py"
    file.write_text(LOUD_OBSERVER.format(observers=str(OBSERVERS)), encoding="utf-8")
    report = check_observer(f"{file}:{name}", ObserverOptions(batch_sizes=(1,), steps=1))
    item = only(report, "PP710")
    assert item.message.startswith(
        f"{method} raised RuntimeError: first sentence of a long message. ... on "
    ), item.message
    assert "detail" not in item.message
    assert "second line" not in item.message


SECOND_STEP_FAILS = """
import sys
sys.path.insert(0, {observers!r})
from entropy_good import EntropyObserver

class FailsLater(EntropyObserver):
    calls = 0

    def after_sample(self, state, token_ids):
        FailsLater.calls += 1
        if FailsLater.calls == 2:
            raise ValueError("no state for this batch\\nsecond line")
        return super().after_sample(state, token_ids)
"""


def test_an_after_sample_that_raises_is_in_the_json_steps(tmp_path):
    file = tmp_path / "fails_later.py"
    file.write_text(SECOND_STEP_FAILS.format(observers=str(OBSERVERS)), encoding="utf-8")
    result = cli(
        "check-observer",
        f"{file}:FailsLater",
        "--batch-size",
        "1",
        "--steps",
        "3",
        "--format",
        "json",
    )
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert [f["code"] for f in doc["findings"]] == ["PP710"]
    first, second = doc["steps"]
    # Step 0 went down both paths; step 1's after_sample raised and the batch size stopped.
    assert (first["step"], first["sent"], first["driving"], first["pp"]) == (
        0,
        ["entropy"],
        None,
        None,
    )
    # Where the target's code raised: its after_sample, in the target's file.
    where = second["driving"].pop("where")
    assert where["function"] == "after_sample"
    assert where["file"].endswith(".py") and where["line"] >= 1
    assert second == {
        "batch_size": 1,
        "step": 1,
        "sent": [],
        "sent_left_out": 0,
        "driving": {
            "stage": "hook",
            "side": "last stage",
            "method": "after_sample",
            "error_type": "ValueError",
            "message": "no state for this batch",
            "name": None,
            "value": None,
        },
        "single_stage": None,
        "pp": None,
        "differences": [],
    }


@pytest.mark.parametrize("error", ["ValueError('no more')", "TypeError('no more')"])
def test_outputs_from_a_generator_that_fails_are_one_line(tmp_path, error):
    file = tmp_path / "outputs.py"
    file.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(OBSERVERS)!r})\n"
        "import torch\n"
        "from entropy_good import EntropyOutput\n"
        "def outputs():\n"
        "    yield EntropyOutput(torch.tensor([1.0]))\n"
        f"    raise {error}\n",
        encoding="utf-8",
    )
    result = cli(
        "check-observer", target("entropy_good.py:EntropyObserver"), "--outputs", f"{file}:outputs"
    )
    assert result.exit_code == 2
    kind = error.partition("(")[0]
    assert result.stderr == (
        f"ppaux: error: {file}:outputs: iterating what it returned raised {kind}: no more "
        f"(at {file}:7)\n"
    )


def test_a_missing_sglang_path_is_named(tmp_path):
    missing = tmp_path / "no-sglang-here"
    result = cli(
        "check-observer",
        target("entropy_good.py:EntropyObserver"),
        "--impl",
        "sglang",
        "--sglang-path",
        str(missing),
    )
    assert result.exit_code == 2
    assert result.stderr == f"ppaux: error: --sglang-path {missing}: no such file or directory\n"


def test_a_python_file_given_as_sglang_is_refused_unrun(tmp_path):
    mark = tmp_path / "ran"
    given = tmp_path / "my_observer.py"
    given.write_text(f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')\n")
    result = cli(
        "check-observer",
        target("entropy_good.py:EntropyObserver"),
        "--impl",
        "sglang",
        "--sglang-path",
        str(given),
    )
    assert (result.exit_code, result.stderr) == (
        2,
        f"ppaux: error: --sglang-path {given}: not sglang's sampling_observer_pp.py; expected an "
        "sglang tree (a directory holding sglang/srt/sampling/sampling_observer_pp.py), a release "
        "wheel (.whl) or that file itself\n",
    )
    assert not mark.exists()


def test_a_target_with_a_space_is_quoted_and_a_class_that_is_no_observer_is_named(tmp_path):
    folder = tmp_path / "sp ace"
    folder.mkdir()
    (folder / "my obs.py").write_text("class Obs:\n    def is_active(self):\n        return 1\n")
    result = cli("check-observer", f"{folder}/my obs.py:Obs")
    assert result.exit_code == 2
    assert result.stderr == (
        f"ppaux: error: '{folder}/my obs.py:Obs': calling the class Obs gave an Obs, which is "
        "not a sampling observer: it lacks before_grammar, after_sample\n"
    )
    missing = cli("check-observer", f"{folder}/nofile.py:Obs")
    assert missing.stderr == (
        f"ppaux: error: '{folder}/nofile.py:Obs': no such file '{folder}/nofile.py'\n"
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--batch-size", "0"], "--batch-size: must be 1 or more, not 0"),
        (["--steps", "-1"], "--steps: must be 1 or more, not -1"),
        (["--vocab-size", "1"], "--vocab-size: must be 2 or more, not 1"),
        (["--batch-size", "x"], "--batch-size: must be a whole number, 1 or more, not 'x'"),
        (["--steps", "1.5"], "--steps: must be a whole number, 1 or more, not '1.5'"),
        (["--vocab-size", ""], "--vocab-size: must be a whole number, 2 or more, not ''"),
    ],
)
def test_a_count_out_of_range_is_worded_as_other_bad_values(args, line):
    result = cli("check-observer", "obs.py:Obs", *args)
    assert (result.exit_code, result.stderr) == (2, f"ppaux: error: {line}\n")


def test_a_missing_file_and_a_failing_file_are_named(tmp_path):
    missing = tmp_path / "gone.py"
    result = cli("check-observer", f"{missing}:Observer")
    assert result.exit_code == 2
    assert result.stderr == f"ppaux: error: {missing}:Observer: no such file {missing}\n"
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\nraise ValueError('no GPU here')\n", encoding="utf-8")
    result = cli("check-observer", f"{broken}:Observer")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"ppaux: error: {broken}:Observer: running {broken} raised ValueError: no GPU here"
    )
    assert result.stderr.count("\n") == 1
    with pytest.raises(TargetError) as caught:
        check_observer(f"{broken}:Observer")
    assert caught.value.target == f"{broken}:Observer"


def test_a_class_that_returns_no_observer_is_refused():
    result = cli("check-observer", target("entropy_good.py:EntropyHostOutput"))
    assert result.exit_code == 2
    assert "cannot be called without arguments" in result.stderr


def test_every_format_and_the_json_document():
    for fmt in ("text", "json", "github", "sarif", "junit", "gitlab", "markdown", "html"):
        result = cli("check-observer", target("entropy_list.py:EntropyObserver"), "--format", fmt)
        assert result.exit_code == 1, (fmt, result.output)
        assert "PP705" in result.stdout, fmt
    doc = json.loads(
        cli("check-observer", target("entropy_list.py:EntropyObserver"), "--format", "json").stdout
    )
    assert doc["command"] == "check-observer"
    schema = json.loads((REPO / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, schema)
    assert doc["observer"]["sampling_info"] == "stand-in"
    assert doc["observer"]["transport"] == "wire"
    assert doc["steps"][0]["pp"]["stage"] == "add"
    assert doc["steps"][0]["pp"]["message"] == "auxiliary PP output 'entropy' is not a tensor"


def test_fail_on_and_ignore_apply():
    result = cli("check-observer", target("entropy_list.py:EntropyObserver"), "--ignore", "PP705")
    assert result.exit_code == 0


def test_outputs_given_instead_of_driving(tmp_path):
    module = tmp_path / "given_outputs.py"
    module.write_text(
        "import torch\n"
        f"import sys; sys.path.insert(0, {str(OBSERVERS)!r})\n"
        "from entropy_good import EntropyOutput\n"
        "def outputs():\n"
        "    return [EntropyOutput(torch.tensor([0.5, 1.5])), None]\n",
        encoding="utf-8",
    )
    report = check_observer(
        target("entropy_good.py:EntropyObserver"),
        ObserverOptions(batch_sizes=(2,)),
        outputs=f"{module}:outputs",
    )
    assert report.findings == ()
    assert report.data["observer"]["outputs_given"] is True
    assert len(report.data["steps"]) == 1


@pytest.mark.wheels
def test_impl_sglang_runs_sglangs_own_module():
    wheel = pytest.importorskip("wheels").sglang_wheel("0.5.23")
    report = check_observer(
        target("entropy_list.py:EntropyObserver"),
        ObserverOptions(impl="sglang", sglang_path=str(wheel)),
    )
    assert only(report, "PP705").sglang_error == "auxiliary PP output 'entropy' is not a tensor"


def test_help_says_that_the_targets_code_runs():
    text = cli("check-observer", "--help").stdout
    assert text.splitlines()[0] == "Usage: ppaux check-observer [OPTIONS] TARGET"
    flat = " ".join(text.split())
    assert "TARGET's code runs." in flat
    assert "Its module is imported (its code runs), as pytest imports test modules." in flat
    assert "<" not in text.split("Options:")[0] and "list[" not in text


def test_settings_that_cannot_work_are_one_line():
    good = target("entropy_good.py:EntropyObserver")
    result = cli("check-observer", good, "--impl", "both")
    assert (result.exit_code, result.stderr) == (
        2,
        "ppaux: error: --impl: 'both' is not one of reference, sglang\n",
    )
    import torch

    if not torch.cuda.is_available():
        result = cli("check-observer", good, "--device", "cuda")
        assert result.exit_code == 2
        assert result.stderr.startswith("ppaux: error: --device cuda: ")
        assert result.stderr.count("\n") == 1


def test_the_real_torch_distributed_wire():
    # Two processes over gloo: a list rides in the pickled metadata and arrives a list; a
    # float16 rebuild crosses intact and differs only because rank 0 rebuilds it so.
    options = ObserverOptions(transport="torch-distributed", batch_sizes=(2,), steps=1)
    legacy = check_observer(
        target("entropy_list.py:EntropyObserver"),
        ObserverOptions(transport="torch-distributed", sender="legacy", batch_sizes=(2,), steps=1),
    )
    assert codes(legacy) == ["PP706"]
    assert "a list [" in legacy.findings[0].message
    half = check_observer(target("faulty.py:HalfOnWireObserver"), options)
    assert codes(half) == ["PP711", "PP712"]


def test_findings_point_at_the_line_to_fix():
    report = check_observer(target("entropy_list.py:EntropyObserver"))
    location = report.findings[0].location
    source = (OBSERVERS / "entropy_list.py").read_text(encoding="utf-8").splitlines()
    assert location.function == "EntropyOutput.to_pp_tensors"
    # The line that makes the list, not the method's def.
    assert source[location.line - 1].strip() == (
        'return {"entropy": self.entropy.tolist()}  # a list, not a tensor'
    )
    assert location.file.endswith("entropy_list.py")
    rank0 = check_observer(target("faulty.py:NotRebuiltObserver")).findings[0].location
    assert rank0.function == "NotRebuiltObserver.from_pp_tensors"
    faulty = (OBSERVERS / "faulty.py").read_text(encoding="utf-8").splitlines()
    # It falls off its end: the last line it ran.
    assert faulty[rank0.line - 1].strip() == 'EntropyOutput(tensors["entropy"])'
    github = cli("check-observer", target("faulty.py:NotRebuiltObserver"), "--format", "github")
    assert f",line={rank0.line}," in github.stdout


def test_a_rebuilt_output_of_another_class_is_named(tmp_path):
    module = tmp_path / "dict_back.py"
    module.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(OBSERVERS)!r})\n"
        "from entropy_good import EntropyObserver, EntropyOutput\n"
        "class Rebuilt(EntropyOutput):\n"
        "    pass\n"
        "class DictBack(EntropyObserver):\n"
        "    def from_pp_tensors(self, tensors):\n"
        "        return Rebuilt(tensors['entropy'])\n",
        encoding="utf-8",
    )
    report = check_observer(f"{module}:DictBack", ObserverOptions(steps=1, batch_sizes=(1,)))
    [item] = report.findings
    assert item.code == "PP711"
    assert "differs (type): single stage EntropyOutput, PP Rebuilt" in item.message


def test_a_consume_that_reads_the_sampling_params_is_clean_on_the_stand_ins(tmp_path):
    """Real ``consume`` methods keep values only for the requests that asked for them
    (``custom_params``) and up to ``max_new_tokens``: the stand-in request carries both."""
    good = (OBSERVERS / "entropy_good.py").read_text(encoding="utf-8")
    text = good.replace(
        "            if commit is None:\n",
        "            params = req.sampling_params\n"
        "            if (params.custom_params or {}).get('skip'):\n"
        "                continue\n"
        "            if params.max_new_tokens < len(req.output_ids) or params.temperature < 0:\n"
        "                continue\n"
        "            if commit is None:\n",
        1,
    )
    assert text != good
    (tmp_path / "reads.py").write_text(text, encoding="utf-8")
    report = check_observer(f"{tmp_path / 'reads.py'}:EntropyObserver")
    assert report.data["observer"]["requests"] == "ppaux stand-ins"
    assert report.findings == ()


def test_a_transport_from_a_path_that_is_no_release_says_so(tmp_path):
    sampling = tmp_path / "tree" / "sglang" / "srt" / "sampling"
    sampling.mkdir(parents=True)
    (sampling / "sampling_observer_pp.py").write_text(
        "def add_auxiliary_output_to_pp_tensors(tensors, output):\n"
        "    tensors.update(output.to_pp_tensors())\n"
        "def pop_auxiliary_output_from_pp_tensors(tensors, observer):\n"
        "    return None\n",
        encoding="utf-8",
    )
    report = check_observer(
        target("entropy_good.py:EntropyObserver"),
        ObserverOptions(impl="sglang", sglang_path=str(tmp_path / "tree"), steps=1),
    )
    said = [n for n in report.notes if "no known release's" in n]
    assert said == [
        f"the sglang transport read from {tmp_path / 'tree'} (add and pop) is no known "
        "release's: a patched, forked or newer build; what it does is that build's"
    ]


DELEGATING = """
import sys
sys.path.insert(0, {observers!r})
from entropy_good import EntropyObserver, EntropyOutput

class Proxy:
    # Every attribute comes through __getattr__, as a thin delegating wrapper's do.
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

class ProxiedOutput(EntropyObserver):
    def after_sample(self, state, token_ids):
        return Proxy(EntropyOutput(state))

    def from_pp_tensors(self, tensors):
        return Proxy(super().from_pp_tensors(tensors))

class ProxiedObserver:
    def __init__(self):
        self._inner = EntropyObserver()

    def __getattr__(self, name):
        return getattr(self._inner, name)
"""


@pytest.mark.parametrize(
    ("attr", "code"), [("ProxiedOutput", "PP701"), ("ProxiedObserver", "PP702")]
)
def test_a_method_only_getattr_supplies_is_judged_as_pythons_protocol_check_does(
    tmp_path, attr, code
):
    # sglang's add and pop ask isinstance against runtime-checkable Protocols. From Python 3.12
    # that check looks attributes up statically (the 3.12 changelog: inspect.getattr_static), so
    # a method only __getattr__ supplies is missing there and sglang raises; before 3.12 it is
    # found. The check runs the target under this same Python.
    file = tmp_path / "delegating.py"
    file.write_text(DELEGATING.format(observers=str(OBSERVERS)), encoding="utf-8")
    report = check_observer(f"{file}:{attr}", ObserverOptions(steps=1))
    if sys.version_info >= (3, 12):
        assert codes(report) == [code], [(f.code, f.message) for f in report.findings]
    else:
        assert report.findings == (), [(f.code, f.message) for f in report.findings]
