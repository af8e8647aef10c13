"""From the error to the fix, end to end, with ppaux's own wire between the stages (the same
story on sglang's own scheduler methods, as docs/walkthrough.md tells it, is
tests/test_story_real_path.py).

Two pipeline stages run sglang 0.5.23's own files (from the release wheel, under a stub
``sglang/__init__.py``) in two processes joined by torch.distributed over gloo on 127.0.0.1:

* the last stage (PP rank 1) runs a copy of sglang whose ``_pp_prepare_tensor_dict`` was changed
  out of tree: instead of ``add_auxiliary_output_to_pp_tensors`` it writes the observer's scores
  as a Python list straight under ``__sampling_observer_output__.scores``; it sends the output
  message the way sglang's ``send_tensor_dict`` does (:mod:`ppaux.replay.wire`: a pickled metadata
  list,
  then each tensor);
* the first stage (PP rank 0) runs stock files, with ``PPAUX_CAPTURE_DIR`` set: sglang's own
  ``load_plugins()`` loads ppaux's capture plugin; the received message goes to the real
  ``pop_auxiliary_output_from_pp_tensors``, which raises.

Then, as a user would, through the CLI: ``ppaux capture list`` shows the capture,
``ppaux inspect`` names the key, the type and the likely cause, ``ppaux replay`` (sglang's own
pop, an unchecked sender, the wire) reproduces the exact message, and ``ppaux check-skew`` over
both stages' fingerprints flags the sender: its scheduler never calls add.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import wheels
from helpers import clean_environ, free_port, ppaux_process

pytestmark = [pytest.mark.wheels, pytest.mark.torch]

P = "__sampling_observer_output__."
NON_TENSOR = "received a non-tensor auxiliary PP output"
RELEASE = "0.5.23"

# What the stages import (the plugin framework and the transport) and what a fingerprint reads.
_MEMBERS = [
    "sglang/_version.py",
    "sglang/srt/environ.py",
    "sglang/srt/plugins/__init__.py",
    "sglang/srt/plugins/hook_registry.py",
    "sglang/srt/sampling/sampling_observer.py",
    "sglang/srt/sampling/sampling_observer_pp.py",
    "sglang/srt/managers/auxiliary_output.py",
    "sglang/srt/managers/scheduler_pp_mixin.py",
    "sglang/srt/managers/utils.py",
    "sglang/srt/distributed/parallel_state.py",
]
MIXIN = "sglang/srt/managers/scheduler_pp_mixin.py"
# The one line of the last stage's sglang that the out-of-tree change replaces (0.5.23, L848).
_STOCK_ADD = "        add_auxiliary_output_to_pp_tensors(tensor_dict, auxiliary_output)\n"
_OUT_OF_TREE = (
    "        # out of tree: the observer's scores as a list, straight into the message\n"
    f"        tensor_dict[{P + 'scores'!r}] = auxiliary_output.scores.tolist()\n"
)

# Both stages: join the group, then run one side. sglang's send_tensor_dict sends the pickled
# metadata as a size tensor and a uint8 tensor, then each non-empty tensor.
_STAGE = r"""
import datetime, json, os, sys
import torch
import torch.distributed as dist
from ppaux.replay.wire import allocate, outgoing, pack_metadata, split_tensor_dict, unpack_metadata
from ppaux.replay.wire import TensorMetadata

role, port = sys.argv[1], sys.argv[2]
rank = 0 if role == "first" else 1
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                        timeout=datetime.timedelta(seconds=120))
BATCH = 4

if role == "last":
    scores = torch.tensor([0.125, 0.25, 0.5, 0.0625])
    class Auxiliary:                      # what the last stage's observer produced
        pass
    auxiliary_output = Auxiliary()
    auxiliary_output.scores = scores
    tensor_dict = {"next_token_ids": torch.arange(BATCH)}
    for key in ("output_token_logprobs_val", "output_token_logprobs_idx"):
        tensor_dict[key] = [0.5] * BATCH  # logprob entries are lists in sglang too
    # the changed line of this stage's scheduler_pp_mixin.py, as it runs:
    tensor_dict["__sampling_observer_output__.scores"] = auxiliary_output.scores.tolist()
    tensor_dict["__msg_type__"] = "output"
    metadata, tensors = split_tensor_dict(tensor_dict)
    data = torch.frombuffer(bytearray(pack_metadata(metadata)), dtype=torch.uint8)
    dist.send(torch.tensor([data.numel()]), dst=0)
    dist.send(data, dst=0)
    for (key, _), tensor in zip([m for m in metadata if isinstance(m[1], TensorMetadata)], tensors):
        wire = outgoing(key, tensor)
        if wire is not None:
            dist.send(wire, dst=0)
    dist.barrier()
    print(json.dumps({"sent": list(tensor_dict)}))
else:
    import pp_scheduler                   # takes pop by name, as scheduler_pp_mixin does
    from sglang.srt.plugins import load_plugins
    load_plugins()                        # sglang's own plugin loading: ppaux_capture
    size = torch.empty(1, dtype=torch.long)
    dist.recv(size, src=1)
    data = torch.empty(int(size), dtype=torch.uint8)
    dist.recv(data, src=1)
    received = {}
    for key, value in unpack_metadata(bytes(data.tolist())):  # (numpy is optional)
        if isinstance(value, TensorMetadata):
            tensor = allocate(value)
            if tensor.numel():
                dist.recv(tensor, src=1)
            value = tensor
        received[key] = value
    dist.barrier()

    class Observer:                       # a PP-capable sampling observer on rank 0
        def from_pp_tensors(self, tensors):
            return dict(tensors)

    try:
        pp_scheduler.pop_auxiliary_output_from_pp_tensors(received, Observer())
        error = None
    except RuntimeError as exc:
        error = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"received": list(received), "error": error}))
dist.destroy_process_group()
"""

_SCHEDULER = """
from sglang.srt.sampling.sampling_observer_pp import pop_auxiliary_output_from_pp_tensors
"""


def build_stage(wheel: Path, root: Path, *, out_of_tree: bool) -> Path:
    """sglang's files for one stage under a stub package; the last stage's mixin changed."""
    with zipfile.ZipFile(wheel) as archive:
        for member in _MEMBERS:
            archive.extract(member, root)
    (root / "sglang" / "__init__.py").write_text("")
    (root / "pp_scheduler.py").write_text(_SCHEDULER)
    if out_of_tree:
        mixin = root / MIXIN
        source = mixin.read_text(encoding="utf-8")
        assert source.count(_STOCK_ADD) == 1
        mixin.write_text(source.replace(_STOCK_ADD, _OUT_OF_TREE), encoding="utf-8")
    return root


def ppaux(*args: str) -> subprocess.CompletedProcess:
    # wide: each finding and line of tensorize on one line, as the tests read them
    return ppaux_process(*args, cwd=Path.cwd(), env={"COLUMNS": "1000"})


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("story")
    wheel = wheels.sglang_wheel(RELEASE)
    first = build_stage(wheel, base / "stage0", out_of_tree=False)
    last = build_stage(wheel, base / "stage1", out_of_tree=True)
    captures = base / "captures"
    port = str(free_port())
    clean = clean_environ()
    clean["PYTHONWARNINGS"] = "ignore"
    stages = {
        "first": subprocess.Popen(
            [sys.executable, "-c", _STAGE, "first", port],
            env={**clean, "PYTHONPATH": str(first), "PPAUX_CAPTURE_DIR": str(captures)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ),
        "last": subprocess.Popen(
            [sys.executable, "-c", _STAGE, "last", port],
            env={**clean, "PYTHONPATH": str(last)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ),
    }
    outputs = {}
    try:
        for name, child in stages.items():
            outputs[name] = child.communicate(timeout=300)
    finally:
        for child in stages.values():  # one stage failing leaves the other waiting for it
            if child.poll() is None:
                child.kill()
                child.communicate()
    results = {}
    for name, child in stages.items():
        out, err = outputs[name]
        assert child.returncode == 0, f"{name} stage failed:\n{err}"
        results[name] = json.loads(out.splitlines()[-1])
    return {"base": base, "trees": {0: first, 1: last}, "captures": captures, **results}


def test_the_first_stage_fails_as_sglang_does_and_leaves_one_capture(story: dict):
    assert story["first"]["error"] == f"RuntimeError: {NON_TENSOR}"
    assert story["first"]["received"] == story["last"]["sent"]
    [capture] = sorted(story["captures"].glob("capture-*.pt"))
    listed = ppaux("capture", "list", "--dir", str(story["captures"]), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)["captures"]
    assert Path(entry["path"]) == capture
    assert entry["meta"]["exception_message"] == NON_TENSOR
    assert entry["meta"]["function"] == "pop_auxiliary_output_from_pp_tensors"
    assert entry["meta"]["sglang_version"] == RELEASE
    assert entry["meta"]["rank"] == 0 and entry["meta"]["world_size"] == 2  # torch.distributed


def test_inspect_names_the_key_the_type_and_the_cause(story: dict):
    [capture] = sorted(story["captures"].glob("capture-*.pt"))
    done = ppaux("inspect", str(capture))
    assert done.returncode == 1, done.stderr
    assert (
        f"PP101 error {capture} [{P}scores]: auxiliary entry 'scores' holds a list of 4 "
        "floats, not a tensor"
    ) in done.stdout
    assert f"predicts: {NON_TENSOR}" in done.stdout
    assert (
        "Out-of-tree code writes '__sampling_observer_output__.*' keys straight into the "
        "tensor dict"
    ) in done.stdout


def test_replay_reproduces_the_exact_message(story: dict):
    [capture] = sorted(story["captures"].glob("capture-*.pt"))
    # sglang's own pop from the first stage's files, behind the emulated wire; the sender
    # writes the keys unchecked, as the out-of-tree last stage did
    done = ppaux(
        "replay",
        "--sender",
        "legacy",
        "--transport",
        "wire",
        "--impl",
        "sglang",
        "--sglang-path",
        str(story["trees"][0]),
        "--format",
        "json",
        str(capture),
    )
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert [(f["code"], f["message"], f["sglang_error"]) for f in findings] == [
        ("PP401", f"pop on rank 0 raises RuntimeError: {NON_TENSOR}", NON_TENSOR)
    ]


def test_check_skew_flags_the_sender(story: dict):
    base = story["base"]
    for rank, tree in story["trees"].items():
        done = ppaux(
            "fingerprint",
            "--sglang-path",
            str(tree),
            "--pp-rank",
            str(rank),
            "--pp-size",
            "2",
            "--output",
            str(base / f"pp{rank}.json"),
        )
        assert done.returncode == 0, done.stderr
    done = ppaux(
        "check-skew",
        str(base / "pp0.json"),
        str(base / "pp1.json"),
        "--format",
        "json",
        "--fail-on",
        "warning",
    )
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert [(f["code"], Path(f["path"]).name, f["message"]) for f in findings] == [
        ("PP323", "pp1.json", "scheduler_pp_mixin.py never calls add")
    ]


def test_the_tensorized_capture_pops_with_sglangs_own_functions(story: dict, tmp_path: Path):
    [capture] = sorted(story["captures"].glob("capture-*.pt"))
    fixed = tmp_path / "fixed.pt"
    done = ppaux("tensorize", str(capture), "-o", str(fixed))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"converted ['tensors']['{P}scores']: a list of 4 floats -> float32 tensor of shape (4,) "
        "on cpu",
        f"wrote {fixed} (1 value converted)",
    ]
    # The default, validating sender and sglang's own add and pop from the first stage's files,
    # through the emulated wire: the observer's output comes back, and no PP408.
    done = ppaux(
        "replay",
        "--transport",
        "wire",
        "--impl",
        "sglang",
        "--sglang-path",
        str(story["trees"][0]),
        "--format",
        "json",
        str(fixed),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads(done.stdout)
    assert document["findings"] == []
    [result] = document["results"]
    assert (result["outcome"], result["reproduced"]) == ("ok", True)
    # Judged on its own tensors: the original's trail is history, not a finding of the rewrite.
    done = ppaux("inspect", str(fixed), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["findings"] == []
    done = ppaux("diff", str(capture), str(fixed), "--format", "json")
    assert done.returncode == 1
    assert {f["key"] for f in json.loads(done.stdout)["findings"]} == {P + "scores", None}
