"""Checkpoints along sglang's PP output path: trail, culprit, strict mode, and what reports say.

The first part runs sglang's real scheduler methods and PP group (tests/checkpoint_driver.py, in
the runtimes of sglang 0.5.23 and 0.5.19 prepared by tests/sglang_runtime.py) for each way a
non-tensor gets into an output message, through ``install()`` and through sglang's real
``HookRegistry``; every expected function, file and line is read from the driver's text, not
from ppaux. The second part checks the pieces without sglang: looks leave messages alone,
malformed trails are ignored, locations reach every format, ``capture status`` names skipped
hops.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import runtime_zygote
import sglang_runtime
from typer.testing import CliRunner

from ppaux.report.document import Report
from ppaux.report.findings import Finding, Location, Severity
from ppaux_cli.app import app

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "checkpoint_driver.py"
NON_TENSOR = "received a non-tensor auxiliary PP output"
ENV = {
    "NO_COLOR": "1",
    "COLUMNS": "1000",  # wide: a finding's location on one line, as the tests read it
    "PPAUX_CAPTURE_DIR": None,
    "SGLANG_PLUGINS": None,
    "PPAUX_CAPTURE_STRICT": None,
}


def cli(*args: str, **env: str):
    return CliRunner().invoke(app, list(args), env={**ENV, **env})


def line_of(fragment: str) -> int:
    """The 1-based line of the driver holding ``fragment`` (which must be on one line only)."""
    found = [n for n, text in enumerate(DRIVER.read_text().splitlines(), 1) if fragment in text]
    assert len(found) == 1, (fragment, found)
    return found[0]


# scenario -> (trail of its first capture, culprit function, its def line, the line that writes)
EXPECTED = {
    "subclass": (
        ["add:clean", "prepare:clean", "send_dict:dirty"],
        "__main__.SubclassScheduler._pp_prepare_tensor_dict",
        "    def _pp_prepare_tensor_dict(self, result, batch):",
        'tensor_dict[PREFIX + "scores"] = tensor_dict[PREFIX + "scores"].tolist()',
    ),
    "queue": (
        ["add:clean", "prepare:clean", "send_dict:dirty"],
        "__main__.edit_queue",
        "def edit_queue(scheduler):",
        'message.tensors[PREFIX + "scores"] = [0.5, 0.5]',
    ),
    "transport": (
        ["add:clean", "prepare:clean", "send_dict:clean", "send:dirty"],
        "__main__.custom_send_tensor_dict",
        "def custom_send_tensor_dict(self, tensor_dict, *args, **kwargs):",
        "tensor_dict[key] = value.tolist()",
    ),
    "add_patch": (
        ["prepare:dirty"],  # the patched add bypasses ppaux's look at add
        "__main__.lax_add",
        "def lax_add(tensors, output):",
        None,  # no clean hop before it: nothing to trace from
    ),
    "other": (
        ["add:clean", "prepare:dirty"],
        "__main__.inject",
        "def inject(original_fn, tensors, output):",
        'tensors[PREFIX + "extra"] = "injected"',
    ),
}
WAYS = ("subclass", "queue", "transport", "add_patch")
RUNS = {  # mode[@release, 0.5.23 when not given] -> scenarios, each run in one process
    "install": ("healthy", *WAYS, "strict-subclass", "strict-queue", "strict-transport"),
    "plugin": ("healthy", *WAYS, "strict-subclass", "strict-transport"),
    "plugin+other": ("other",),
    # The older parameter list of _pp_send_dict_to_next_stage (no ready_event).
    "install@0.5.19": ("healthy", *WAYS, "strict-transport"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    """Run every mode's driver (in parallel) once; mode -> (captures root, errors raised)."""
    root = tmp_path_factory.mktemp("checkpoints")
    started = {}
    for mode, scenarios in RUNS.items():
        driver_mode, _, version = mode.partition("@")
        runtime = sglang_runtime.sglang_runtime(version or "0.5.23")
        directory = root / mode
        args = [str(DRIVER), driver_mode, str(directory), "2", *scenarios]
        started[mode] = (directory, runtime_zygote.start(runtime.version, args, runtime.env()))
    out = {}
    for mode, (directory, process) in started.items():
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr[-3000:]
        out[mode] = (directory, json.loads(stdout.strip().splitlines()[-1]))
    return out


def _cases() -> list[tuple[str, str]]:
    return [(mode, s) for mode, scenarios in RUNS.items() for s in scenarios if s in EXPECTED]


@pytest.mark.sglang_runtime
@pytest.mark.parametrize(("mode", "scenario"), _cases())
def test_each_way_in_names_the_hop_and_the_function(runs, mode: str, scenario: str):
    directory, raised = runs[mode]
    assert raised[scenario] == []  # capture on and not strict: the host runs as before
    trail, function, definition, write = EXPECTED[scenario]
    listed = cli("capture", "list", "--dir", str(directory / scenario), "--format", "json")
    assert listed.exit_code == 0, listed.output
    captures = json.loads(listed.stdout)["captures"]
    assert len(captures) == 2  # two dirty messages, each captured on the last stage
    for entry in captures:
        assert [f"{h['hop']}:{h['state']}" for h in entry["trail"]] == trail
        assert entry["meta"]["exception_type"] is None
    first, second = (c["culprit"] for c in captures)
    if scenario == "queue":
        # The editing code was not on the call path: bounded, not named, then traced.
        assert first["function"] is None
    else:
        assert (first["function"], first["file"], first["line"]) == (
            function,
            str(DRIVER),
            line_of(definition),
        )
        assert first["code"] == "outside"
    assert (second["function"], second["file"], second["line"]) == (
        function,
        str(DRIVER),
        line_of(definition),
    )
    if write is None:
        assert second["write_line"] is None
    else:
        assert (second["write_file"], second["write_line"]) == (str(DRIVER), line_of(write))


@pytest.mark.sglang_runtime
@pytest.mark.parametrize(("mode", "scenario"), _cases())
def test_inspect_reports_the_culprit_with_its_location(runs, mode: str, scenario: str):
    directory, _ = runs[mode]
    _, function, definition, write = EXPECTED[scenario]
    line = line_of(write) if write is not None else line_of(definition)
    sarif = cli("inspect", str(directory / scenario), "--format", "sarif")
    results = [r for r in json.loads(sarif.stdout)["runs"][0]["results"] if r["ruleId"] == "PP506"]
    assert results, sarif.stdout[:2000]
    last = results[-1]["locations"][0]
    # Code hosts place an annotation on a path relative to the repository root: the culprit's
    # file is rebased as the finding's own path is (the text view keeps it as recorded).
    shared = "tests/checkpoint_driver.py"
    assert last["physicalLocation"]["artifactLocation"]["uri"] == shared
    assert last["physicalLocation"]["region"]["startLine"] == line
    assert last["logicalLocations"][0]["fullyQualifiedName"] == function
    github = cli("inspect", str(directory / scenario), "--format", "github").stdout
    assert f"::error file={shared},line={line},title=PP506 capture-culprit::" in github
    gitlab = json.loads(cli("inspect", str(directory / scenario), "--format", "gitlab").stdout)
    located = [i["location"] for i in gitlab if i["check_name"] == "PP506"]
    assert located[-1] == {"path": shared, "lines": {"begin": line}}
    text = cli("inspect", str(directory / scenario)).stdout
    assert f"    at: {DRIVER}:{line} in {function}" in text
    assert "trail: " in text and "culprit: " in text


@pytest.mark.sglang_runtime
@pytest.mark.parametrize("mode", ["install", "plugin", "install@0.5.19"])
def test_a_healthy_run_writes_nothing(runs, mode: str):
    directory, raised = runs[mode]
    assert raised["healthy"] == []
    assert not (directory / "healthy").exists()


@pytest.mark.sglang_runtime
@pytest.mark.parametrize("mode", ["install", "install@0.5.19"])
def test_install_wraps_each_method_with_its_own_parameters(runs, mode: str):
    # At the end of its run the driver uninstalls, then calls install() with sglang imported.
    found = runs[mode][1]["signatures"]
    assert found["unmarked"] == []
    assert found["marked"] == ["prepare", "send_dict", "send", "recv"]
    assert found["after"] == found["before"]
    assert ("ready_event" in found["before"]["send_dict"]) == (mode == "install")


#: Strict runs: (mode, scenario, the function of the first dirty hop, where it raises).
STRICT = [
    ("install", "strict-subclass", "_pp_send_dict_to_next_stage"),
    ("install", "strict-queue", "_pp_send_dict_to_next_stage"),
    ("install", "strict-transport", "send_tensor_dict"),
    ("plugin", "strict-subclass", "_pp_send_dict_to_next_stage"),
    ("plugin", "strict-transport", "send_tensor_dict"),
    ("install@0.5.19", "strict-transport", "send_tensor_dict"),
]


@pytest.mark.sglang_runtime
@pytest.mark.parametrize(("mode", "scenario", "function"), STRICT)
def test_strict_mode_raises_sglangs_sender_message_at_the_first_dirty_hop(
    runs, mode: str, scenario: str, function: str
):
    # The send hops ask the PP group whether this is the last stage only when a message is
    # dirty; a one-process group is the last stage.
    directory, raised = runs[mode]
    assert raised[scenario] == ["auxiliary PP output 'scores' is not a tensor"] * 2
    listed = json.loads(
        cli("capture", "list", "--dir", str(directory / scenario), "--format", "json").stdout
    )["captures"]
    assert [c["meta"]["exception_message"] for c in listed] == [
        "auxiliary PP output 'scores' is not a tensor"
    ] * 2
    assert [c["meta"]["function"] for c in listed] == [function] * 2


# ----------------------------------------------------------------------------------------------
# Without sglang


def test_a_look_leaves_a_healthy_message_alone_and_forgets_it():
    import torch

    from ppaux.capture.checkpoints import look
    from ppaux.capture.settings import MAX_FOLLOWED_MESSAGES, CaptureConfig
    from ppaux.capture.state import STATE

    STATE.activate(CaptureConfig(Path("/nonexistent/never-written")))
    try:
        scores = torch.ones(2)
        messages = [
            {"next_token_ids": torch.arange(2), "__sampling_observer_output__.scores": scores}
            for _ in range(MAX_FOLLOWED_MESSAGES + 5)
        ]
        for message in messages:
            assert look("add", message, print, True) is None
            assert look("prepare", message, print, True) is None
        assert len(STATE.messages) == MAX_FOLLOWED_MESSAGES  # bounded
        for message in messages:
            assert list(message) == ["next_token_ids", "__sampling_observer_output__.scores"]
            assert message["__sampling_observer_output__.scores"] is scores
            look("send", message, print, True)
            look("sent", message, print, True)
        assert len(STATE.messages) == 0  # a sent message is forgotten
        # With sglang's own send inside the hook, the send hop is the last one.
        for message in messages[:3]:
            look("prepare", message, print, True)
        assert len(STATE.messages) == 3
        for message in messages[:3]:
            look("send", message, print, True, last=True)
        assert len(STATE.messages) == 0
        # Rank 0 keeps no record of a message received clean (pop and a failing pop's
        # capture use only a trail found dirty).
        for message in messages:
            assert look("recv", message, print, False, forget=True) is None
        assert len(STATE.messages) == 0
        assert STATE.stats().written == 0
    finally:
        STATE.activate(None)


def test_strict_setting_from_the_environment():
    from ppaux.capture.settings import config_from_env

    config = config_from_env({"PPAUX_CAPTURE_DIR": "/tmp/x", "PPAUX_CAPTURE_STRICT": "1"})
    assert config is not None and config.strict is True
    config = config_from_env({"PPAUX_CAPTURE_DIR": "/tmp/x"})
    assert config is not None and config.strict is False
    with pytest.raises(ValueError) as caught:
        config_from_env({"PPAUX_CAPTURE_DIR": "/tmp/x", "PPAUX_CAPTURE_STRICT": "yes"})
    assert str(caught.value) == "PPAUX_CAPTURE_STRICT='yes': must be 0 or 1"


@pytest.mark.parametrize(
    "trail",
    [
        "not a list",
        [],
        [{"hop": 1, "at": "x", "state": "dirty"}],
        ["a string"],
        [{"hop": "send", "at": "x"}],
    ],
)
def test_a_malformed_trail_is_ignored(trail):
    from ppaux.dump.trail import read_trail, trail_findings

    record = {"meta": {}, "trail": trail, "culprit": {"function": 3}}
    assert read_trail(record) is None
    assert trail_findings("f.pt", record) == []


def test_a_trail_from_a_file_is_escaped_and_its_line_checked():
    from ppaux.dump.trail import read_culprit, trail_findings

    record = {
        "trail": [
            {"hop": "prepare", "at": "p", "state": "clean", "keys": []},
            {
                "hop": "send_dict",
                "at": "s\n::error ::forged",
                "state": "dirty",
                "keys": ["scores (list)"],
            },
        ],
        "culprit": {
            "function": "m.f",
            "file": "/a.py",
            "line": True,
            "code": "outside",
            "between": ["prepare", "send_dict"],
        },
    }
    culprit = read_culprit(record)
    assert culprit is not None and culprit["line"] is None  # a bool is not a line
    [found] = trail_findings("f.pt", record)
    assert found.code == "PP506" and found.location is None
    # The finding keeps the trail's text as the file wrote it; its str() and every format show
    # it escaped, so the forged line stays on the finding's own.
    assert found.message.startswith(
        "scores (list) entered between p and s\n::error ::forged, in m.f at /a.py:None"
    )
    assert "\n" not in str(found)
    assert "between p and s\\n::error ::forged, in m.f" in str(found)


def test_rank_zero_receiving_a_dirty_message_says_so():
    from ppaux.dump.trail import trail_findings

    record = {
        "trail": [
            {
                "hop": "recv",
                "at": "recv_tensor_dict returned",
                "state": "dirty",
                "keys": ["scores (list)"],
            },
            {"hop": "pop", "at": "pop called", "state": "dirty", "keys": ["scores (list)"]},
        ]
    }
    [found] = trail_findings("f.pt", record)
    assert (found.code, found.message) == (
        "PP508",
        "scores (list) already in the message when recv_tensor_dict returned",
    )


@pytest.mark.parametrize("first", [True, False])
def test_a_middle_stage_keeps_what_it_received_for_the_trail(tmp_path: Path, first: bool):
    # sglang's middle stages pass on the output messages they receive (recv, then
    # _pp_send_dict_to_next_stage); a message received clean there and dirty when passed on
    # was changed on that stage, and its trail says so. Rank 0 keeps nothing.
    import torch

    from ppaux.capture.hop_hooks import method_wrapper
    from ppaux.capture.settings import CaptureConfig
    from ppaux.capture.state import STATE

    class Group:  # what the hooks ask a PP group
        def __init__(self) -> None:
            self.is_first_rank = first
            self.is_last_rank = False

    def recv_tensor_dict(self, src=None, all_gather_group=None):
        return {"__msg_type__": "output", "__sampling_observer_output__.scores": torch.ones(2)}

    def send_dict(self, tensor_dict, async_send=True, msg_type="default"):
        return []

    recv = method_wrapper("recv", recv_tensor_dict)
    send = method_wrapper("send_dict", send_dict)
    STATE.activate(CaptureConfig(tmp_path / "captures"))
    try:
        group = Group()
        message = recv(group)
        assert len(STATE.messages) == (0 if first else 1)
        message["__sampling_observer_output__.scores"] = [0.5, 0.5]  # this stage's code
        send(SimpleNamespace(pp_group=group), message, True, "output")
    finally:
        STATE.activate(None)
    listed = json.loads(
        cli("capture", "list", "--dir", str(tmp_path / "captures"), "--format", "json").stdout
    )["captures"]
    assert [[f"{h['hop']}:{h['state']}" for h in c["trail"]] for c in listed] == [
        ["send_dict:dirty"] if first else ["recv:clean", "send_dict:dirty"]
    ]


LOCATED = Finding(
    code="PP506",
    severity=Severity.ERROR,
    message="m",
    path="cap.pt",
    sglang_error=NON_TENSOR,
    hint="h",
    location=Location("src/app.py", 42, "app.f"),
)


def test_a_location_reaches_every_format():
    from ppaux.report.formats import github, gitlab, junit, sarif, text

    report = Report(command="inspect", findings=[LOCATED])
    assert LOCATED.to_json()["location"] == {"file": "src/app.py", "line": 42, "function": "app.f"}
    result = sarif.document(report)["runs"][0]["results"][0]
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "src/app.py"},
        "region": {"startLine": 42},
    }
    assert result["relatedLocations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "cap.pt"}
    }
    assert github.annotation(LOCATED).startswith(
        "::error file=src/app.py,line=42,title=PP506 capture-culprit::m%0A"
    )
    assert gitlab.issues(report)[0]["location"] == {"path": "src/app.py", "lines": {"begin": 42}}
    assert "    at: src/app.py:42 in app.f" in text.render(report)
    assert "at: src/app.py:42 in app.f" in junit.render(report)


def test_a_finding_without_location_keeps_its_json_shape():
    plain = Finding(code="PP101", severity=Severity.ERROR, message="m", path="p")
    assert "location" not in plain.to_json()


def test_status_names_the_hops_this_sglang_lacks(tmp_path: Path):
    import sglang_shaped

    root = sglang_shaped.build(tmp_path / "site")
    result = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "capture", "status", "--format", "json"],
        env={**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    hops = json.loads(result.stdout)["plugin"]["hops"]
    mixin = "sglang.srt.managers.scheduler_pp_mixin.SchedulerPPMixin"
    assert hops == {
        "add": None,
        "pop": None,
        "prepare": f"this sglang has no {mixin}._pp_prepare_tensor_dict",
        "send_dict": f"this sglang has no {mixin}._pp_send_dict_to_next_stage",
        "send": "this sglang has no srt/distributed/parallel_state.py",
        "sent": "this sglang has no srt/distributed/parallel_state.py",
        "recv": "this sglang has no srt/distributed/parallel_state.py",
    }


# ----------------------------------------------------------------------------------------------
# Two processes on a real gloo wire: sglang's own scheduler methods and GroupCoordinator, run by
# the runtime tier's driver, with capture switched on by tests/capture_autostart/sitecustomize.py.

WIRE_DRIVER = HERE / "sglang_runtime_driver.py"


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The capture directory of one run of the driver's 'tensor' (healthy) case, then its 'list'
    (dirty) case: the healthy one first, so that any capture of its own would be there too."""
    runtime = sglang_runtime.sglang_runtime("0.5.23")
    root = tmp_path_factory.mktemp("wire")
    env = runtime.env()
    env["PYTHONPATH"] = os.pathsep.join([*runtime.pythonpath, str(HERE / "capture_autostart")])
    env["PPAUX_CAPTURE_DIR"] = str(root / "captures")
    done = subprocess.run(
        [sys.executable, str(WIRE_DRIVER), "scheduler", "tensor", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["ranks"]["0"]["rc"] == 0
    return root / "captures"


@pytest.mark.sglang_runtime
def test_both_stages_capture_with_their_own_trail_on_a_real_wire(wire):
    listed = json.loads(cli("capture", "list", "--dir", str(wire), "--format", "json").stdout)[
        "captures"
    ]
    by_function = {c["meta"]["function"]: c for c in listed}
    assert sorted(c["meta"]["function"] for c in listed) == [
        "_pp_send_dict_to_next_stage",
        "pop_auxiliary_output_from_pp_tensors",
    ]
    sender = by_function["_pp_send_dict_to_next_stage"]
    receiver = by_function["pop_auxiliary_output_from_pp_tensors"]
    assert [f"{h['hop']}:{h['state']}" for h in sender["trail"]] == [
        "add:clean",
        "prepare:clean",
        "send_dict:dirty",
    ]
    definition = [
        n
        for n, text in enumerate(WIRE_DRIVER.read_text().splitlines(), 1)
        if "def _pp_prepare_tensor_dict(self, result, batch):" in text
    ]
    assert len(definition) == 1
    culprit = sender["culprit"]
    assert (culprit["file"], culprit["line"], culprit["code"]) == (
        str(WIRE_DRIVER),
        definition[0],
        "outside",
    )
    assert culprit["function"].endswith("StandInScheduler._pp_prepare_tensor_dict")
    # Rank 0: dirty on arrival, and sglang's own pop failed as it always did.
    assert [f"{h['hop']}:{h['state']}" for h in receiver["trail"]] == ["recv:dirty", "pop:dirty"]
    assert receiver["meta"]["exception_message"] == NON_TENSOR
    assert receiver["culprit"] is None
    report = json.loads(cli("inspect", str(wire), "--format", "json").stdout)
    codes = sorted(f["code"] for f in report["findings"] if f["code"].startswith("PP50"))
    assert codes == ["PP506", "PP508"]


@pytest.mark.sglang_runtime
def test_a_healthy_run_on_a_real_wire_writes_nothing(wire):
    # The healthy case ran first, in the same processes: the directory holds the dirty case's
    # two captures (test_both_stages_capture_with_their_own_trail_on_a_real_wire reads them) and
    # nothing else.
    listed = json.loads(cli("capture", "list", "--dir", str(wire), "--format", "json").stdout)[
        "captures"
    ]
    assert len(listed) == 2
    assert all(any(hop["state"] == "dirty" for hop in c["trail"]) for c in listed)
    written = sorted(str(path) for path in wire.rglob("*") if path.name != ".ppaux-capture.lock")
    assert written == sorted(c["path"] for c in listed)


@pytest.mark.parametrize(("is_last_rank", "raises"), [(True, True), (False, False), (None, False)])
def test_strict_mode_raises_only_on_the_last_stage(tmp_path, is_last_rank, raises):
    # At the send hops the look is given the PP group, and asks it only for a dirty message;
    # a group that cannot say (None: no such attribute) is not taken for the last stage.
    from types import SimpleNamespace

    import torch

    from ppaux.capture.checkpoints import look
    from ppaux.capture.settings import CaptureConfig
    from ppaux.capture.state import STATE

    group = (
        SimpleNamespace() if is_last_rank is None else SimpleNamespace(is_last_rank=is_last_rank)
    )
    STATE.activate(CaptureConfig(tmp_path, strict=True))
    try:
        clean = {"next_token_ids": torch.arange(2), "__sampling_observer_output__.s": torch.ones(2)}
        assert look("send", clean, print, group) is None
        dirty = {"next_token_ids": torch.arange(2), "__sampling_observer_output__.s": [1.0]}
        error = look("send", dirty, print, group)
        if raises:
            assert isinstance(error, RuntimeError)
            assert str(error) == "auxiliary PP output 's' is not a tensor"
        else:
            assert error is None
        assert STATE.stats().written == 1  # captured either way
    finally:
        STATE.activate(None)
