"""From the error to the fix on sglang's own PP path (docs/walkthrough.md tells this story).

sglang 0.5.23's prepared runtime (``tests/sglang_runtime.py``: the release wheel unpacked,
unmodified) runs ``tests/sglang_runtime_driver.py scheduler list``: two processes joined by
torch.distributed over gloo on 127.0.0.1, each holding a stand-in scheduler (only the
attributes the methods read; its ``pp_group`` a real ``GroupCoordinator``) bound to the real
``SchedulerPPMixin`` methods:

* the last stage runs the real ``_pp_prepare_tensor_dict`` and then the one out-of-tree line,
  ``tensor_dict["__sampling_observer_output__.scores"] = [0.25, 0.5, 0.75]``, and the real
  ``_pp_send_dict_to_next_stage(..., msg_type="output")`` (``send_tensor_dict``);
* rank 0 runs the real ``_pp_recv_dict_from_prev_stage`` (``recv_tensor_dict``) and
  ``_pp_prep_batch_result``, which pops and raises. Both processes call sglang's own
  ``load_plugins()`` after importing the mixin, as sglang's scheduler process does; only rank 0
  has ``PPAUX_CAPTURE_DIR``, so ppaux's capture plugin (found through this checkout's entry
  point) wraps pop there and writes the capture.

Then, as a user would, through the CLI: ``capture list``, ``inspect``, ``replay --transport
sglang`` (sglang's own wire and pop), ``tensorize`` and the replay of the fix. Expectations are
written out by hand; none is computed with ppaux or sglang. The driver and the replays through
sglang's wire (with ppaux's receivers) are forked from the release's zygote
(``tests/runtime_zygote.py``), after one import of torch and the release for them all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import runtime_zygote
import sglang_runtime
from helpers import ENV, REPO, clean_environ, ppaux_process
from test_docs import (
    WALKTHROUGH_CAPTURE,
    _check_blocks,
    _output_blocks,
    _section,
    _stand_in,
    _workspace,
)

pytestmark = pytest.mark.sglang_runtime

RELEASE = "0.5.23"
DRIVER = Path(__file__).with_name("sglang_runtime_driver.py")
KEY = "__sampling_observer_output__.scores"
NON_TENSOR = "received a non-tensor auxiliary PP output"
WALKTHROUGH = REPO / "docs" / "walkthrough.md"
SHOWN_DIR = "/var/tmp/ppaux"  # the capture directory of the walkthrough


def _tensor(dtype: str, values: list) -> dict:
    return {
        "kind": "tensor",
        "dtype": dtype,
        "shape": [len(values)],
        "device": "cpu",
        "contiguous": True,
        "values": values,
    }


def _object(type_name: str, value: object, representation: str) -> dict:
    return {"kind": "object", "type": type_name, "value": value, "repr": representation}


NEXT_TOKEN_IDS = ["next_token_ids", _tensor("int32", [11, 12, 13])]
SCORES = [KEY, _object("builtins.list", [0.25, 0.5, 0.75], "[0.25, 0.5, 0.75]")]
MSG_TYPE = ["__msg_type__", _object("builtins.str", "output", "'output'")]


def ppaux(*args: str, cwd: Path = REPO, columns: int = 1000) -> subprocess.CompletedProcess[str]:
    """``ppaux ARGS`` in a child process, without the capture settings of this one, its text
    wrapped at ``columns`` (wide: one line per note or finding, unless a page's width is
    wanted)."""
    return ppaux_process(
        *args,
        cwd=cwd,
        base=clean_environ(),
        env={"COLUMNS": str(columns)},
        timeout=600,
    )


def replay_sglang(
    runtime: sglang_runtime.SglangRuntime, *args: str, cwd: Path = REPO, columns: int = 1000
) -> subprocess.CompletedProcess[str]:
    """``ppaux replay --transport sglang --impl sglang --sglang-path TREE ARGS`` as :func:`ppaux`
    runs a command, with the runtime's packages and stand-ins on the path, forked from the
    release's zygote (``tests/runtime_zygote.py``) with the receivers ppaux starts, instead of
    three fresh imports of torch and the release per replay: what these tests check is the
    story's output; a fresh interpreter's receiver is test_sglang_transport.py's subject."""
    environment = runtime.packages_env(clean_environ())
    environment["PYTHONPATH"] = os.pathsep.join([str(REPO), environment["PYTHONPATH"]])
    environment.update({**ENV, "COLUMNS": str(columns)})
    command = ["replay", "--transport", "sglang", "--impl", "sglang"]
    return runtime_zygote.run(
        RELEASE,
        ["-m", "ppaux_cli", *command, "--sglang-path", str(runtime.sglang_dir), *args],
        environment,
        timeout=600,
        cwd=cwd,
        zygote_env=runtime.env(clean_environ()),
        helpers_forked=True,
    )


@pytest.fixture(scope="module")
def runtime() -> sglang_runtime.SglangRuntime:
    return sglang_runtime.sglang_runtime(RELEASE)


@pytest.fixture(scope="module")
def story(runtime: sglang_runtime.SglangRuntime, tmp_path_factory: pytest.TempPathFactory) -> dict:
    captures = tmp_path_factory.mktemp("captures")
    last = tmp_path_factory.mktemp("captures-last-stage")
    env = runtime.env(clean_environ())
    # This checkout's ppaux in the stage processes (its plugin's entry point is this
    # environment's installed distribution). The driver is forked from the release's zygote,
    # which the replays below use too, instead of its own import of torch and the release.
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(REPO)])
    done = runtime_zygote.run(
        RELEASE,
        [
            str(DRIVER),
            "scheduler",
            "list",
            "--load-plugins",
            "--rank-env",
            f"0:PPAUX_CAPTURE_DIR={captures}",
            "--rank-env",
            f"1:PPAUX_CAPTURE_DIR={last}",
        ],
        env,
        timeout=600,
        zygote_env=runtime.env(clean_environ()),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    [capture] = sorted(captures.glob("capture-*.pt"))
    return {"report": report, "captures": captures, "capture": capture, "last": last}


@pytest.mark.sglang_runtime
def test_who_sent_it_the_last_stage_names_the_subclass(story: dict) -> None:
    # Walkthrough, "who sent it": with capture on in the last stage too, the message is looked
    # at hop by hop there, and its capture names the function between the last clean hop and
    # the first dirty one: the scheduler subclass's _pp_prepare_tensor_dict (the driver's
    # stand-in plays the deployment's subclass), not sglang's code.
    listed = ppaux("capture", "list", "--dir", str(story["last"]))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].endswith("-call.pt: (no error yet: taken at a checkpoint)")
    assert lines[1] == "    trail: add clean > prepare clean > send_dict dirty (scores (list))"
    source = DRIVER.read_text().splitlines()
    [definition] = [
        n
        for n, text in enumerate(source, 1)
        if text.strip() == "def _pp_prepare_tensor_dict(self, result, batch):"
    ]
    assert lines[2] == (
        "    culprit: __main__._standin_scheduler_class.<locals>.StandInScheduler."
        f"_pp_prepare_tensor_dict at {DRIVER}:{definition} (not sglang's code)"
    )
    inspected = ppaux("inspect", str(story["last"]), "--format", "json")
    found = json.loads(inspected.stdout)["findings"]
    [culprit] = [f for f in found if f["code"] == "PP506"]
    assert culprit["location"]["file"] == str(DRIVER)
    assert culprit["location"]["line"] == definition


def test_sglangs_own_methods_carry_the_list_and_rank_0_raises(story: dict, runtime) -> None:
    report = story["report"]
    assert report["sglang_version"] == RELEASE
    # The mixin and the wire that ran are the release's files, from the unpacked wheel.
    assert report["files"] == {
        "sglang.srt.distributed.parallel_state": str(
            runtime.sglang_dir / "sglang/srt/distributed/parallel_state.py"
        ),
        "sglang.srt.managers.scheduler_pp_mixin": str(
            runtime.sglang_dir / "sglang/srt/managers/scheduler_pp_mixin.py"
        ),
    }
    assert report["standins"] == ["torchvision"]
    first, last = report["ranks"]["0"], report["ranks"]["1"]
    assert first["load_plugins"] is True and last["load_plugins"] is True
    [sent] = last["cases"]
    assert sent["prepared"] == [NEXT_TOKEN_IDS, SCORES]  # the out-of-tree line's list
    assert sent["sent"] == [NEXT_TOKEN_IDS, SCORES, MSG_TYPE]
    [received] = first["cases"]
    assert received["received"] == [NEXT_TOKEN_IDS, SCORES, MSG_TYPE]
    assert received["error"] == {"type": "RuntimeError", "message": NON_TENSOR}
    assert received["keys_after"] == ["next_token_ids", KEY, "__msg_type__"]
    assert received["observer_calls"] == []


def test_one_capture_on_rank_0(story: dict) -> None:
    # Only rank 0 had a capture directory; the plugin wrapped pop there and kept the error.
    assert [p.name for p in story["captures"].iterdir() if p.suffix == ".pt"] == [
        story["capture"].name
    ]
    listed = ppaux("capture", "list", "--dir", str(story["captures"]), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)["captures"]
    assert Path(entry["path"]) == story["capture"]
    meta = entry["meta"]
    assert meta["function"] == "pop_auxiliary_output_from_pp_tensors"
    assert (meta["exception_type"], meta["exception_message"]) == ("RuntimeError", NON_TENSOR)
    assert meta["sglang_version"] == RELEASE
    assert (meta["rank"], meta["world_size"]) == (0, 2)  # from torch.distributed
    assert meta["pid"] != os.getpid()


def test_inspect_names_the_key_the_type_and_the_cause(story: dict) -> None:
    capture = story["capture"]
    done = ppaux("inspect", str(capture))
    assert done.returncode == 1, done.stderr
    assert (
        f"PP101 error {capture} [{KEY}]: auxiliary entry 'scores' holds a list of 3 floats, "
        "not a tensor"
    ) in done.stdout
    assert f"predicts: {NON_TENSOR}" in done.stdout
    assert (
        "Out-of-tree code writes '__sampling_observer_output__.*' keys straight into the "
        "tensor dict (a plugin, or a Scheduler subclass overriding _pp_prepare_tensor_dict)"
    ) in done.stdout


def test_replay_through_sglangs_own_wire_reproduces_the_exact_message(story: dict, runtime) -> None:
    capture = story["capture"]
    done = replay_sglang(runtime, "--sender", "legacy", "--format", "json", str(capture))
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert [(f["code"], f["message"], f["sglang_error"]) for f in document["findings"]] == [
        ("PP401", f"pop on rank 0 raises RuntimeError: {NON_TENSOR}", NON_TENSOR)
    ]
    [result] = document["results"]
    assert (result["outcome"], result["stage"], result["reproduced"]) == ("error", "pop", True)
    assert document["replay"]["sglang_runtime"] == {
        "version": RELEASE,
        "file": str(runtime.sglang_dir / "sglang/srt/distributed/parallel_state.py"),
        "all_gather_emulated": False,
    }
    assert document["replay"]["implementations"]["sglang"]["origin"] == str(
        runtime.sglang_dir / "sglang/srt/sampling/sampling_observer_pp.py"
    )


def test_the_tensorized_capture_pops_through_sglangs_own_wire(
    story: dict, runtime, tmp_path: Path
) -> None:
    capture = story["capture"]
    fixed = tmp_path / "fixed.pt"
    done = ppaux("tensorize", str(capture), "-o", str(fixed))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"converted ['tensors']['{KEY}']: a list of 3 floats -> float32 tensor of shape (3,) "
        "on cpu",
        f"wrote {fixed} (1 value converted)",
    ]
    done = replay_sglang(runtime, "--format", "json", str(fixed))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert document["findings"] == []
    [result] = document["results"]
    assert (result["outcome"], result["reproduced"]) == ("ok", True)


def test_check_skew_finds_both_stages_stock(runtime, tmp_path: Path) -> None:
    # The out-of-tree line lives in a scheduler override, not in sglang's files: the stages'
    # fingerprints agree and match the release.
    for rank in (0, 1):
        done = ppaux(
            "fingerprint",
            "--sglang-path",
            str(runtime.sglang_dir),
            "--pp-rank",
            str(rank),
            "--pp-size",
            "2",
            "--output",
            str(tmp_path / f"pp{rank}.json"),
        )
        assert done.returncode == 0, done.stderr
    done = ppaux("check-skew", "pp0.json", "pp1.json", "--fail-on", "info", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith(
        "first stage (receives): pp0; last stage (sends): pp1\n\n"
        "0 error(s), 0 warning(s), 0 info, 0 input(s) not checked\n"
    )


def test_the_walkthrough_prints_what_the_real_capture_gives(
    story: dict, runtime, tmp_path: Path
) -> None:
    """Steps 2, 3 and 6 of docs/walkthrough.md, run as written on this run's capture, print
    exactly what the page shows; step 4's replay (given the runtime's sglang) prints its
    findings."""
    text = WALKTHROUGH.read_text(encoding="utf-8")
    env = _workspace(tmp_path)
    shutil.copy(story["capture"], tmp_path / WALKTHROUGH_CAPTURE)
    blocks = []
    for heading in ("## 2. ", "## 3. ", "## 6. "):
        blocks += _output_blocks(_section(text, heading))
    assert [source for _, source, _ in blocks] == [
        f"ppaux capture list --dir {SHOWN_DIR}",
        f"ppaux inspect {WALKTHROUGH_CAPTURE}",
        f"ppaux tensorize {WALKTHROUGH_CAPTURE} -o fixed.pt",
        "ppaux replay fixed.pt",
        f"ppaux diff {WALKTHROUGH_CAPTURE} fixed.pt",
    ]
    # In a directory whose path is as long as the page's, so that the text wraps as shown.
    with _stand_in(tmp_path, SHOWN_DIR) as folder:
        shutil.copy(story["capture"], folder / WALKTHROUGH_CAPTURE)
        blocks[0] = (blocks[0][0], f"ppaux capture list --dir {folder}", blocks[0][2])
        _check_blocks(blocks[:2], folder, env, SHOWN_DIR)
        # Step 6 works on a copy outside the capture directory.
        work = tmp_path / "ppaux-fix"
        work.mkdir()
        shutil.copy(story["capture"], work / WALKTHROUGH_CAPTURE)
        _check_blocks(blocks[2:], work, env, str(work))
        assert sorted(p.name for p in folder.iterdir()) == [WALKTHROUGH_CAPTURE]

    step4 = _section(text, "## 4. ")
    command = f"ppaux replay --transport sglang --impl sglang {WALKTHROUGH_CAPTURE}"
    assert f"$ {command}\n" in step4
    shown = step4.split("```text\n", 1)[1].split("```", 1)[0]
    assert shown.startswith("...\n")
    assert command.split()[1:6] == ["replay", "--transport", "sglang", "--impl", "sglang"]
    done = replay_sglang(
        runtime,
        *command.split()[6:],
        cwd=tmp_path,
        columns=80,  # as the page shows it
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert shown.removeprefix("...\n") in done.stdout
