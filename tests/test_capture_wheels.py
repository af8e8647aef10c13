"""ppaux capture through sglang's own plugin framework and transport, from the release wheels.

For sglang 0.5.19 and 0.5.23, the files that the plugin framework and the transport need are
taken out of the downloaded wheel (tests/wheels.py) into the test's directory, under a stub
``sglang/__init__.py`` (the real one imports a score of heavy packages). A child process then
runs sglang's real ``load_plugins()``: it finds ppaux's ``sglang.srt.plugins`` entry point in
this environment, runs it, and applies the AROUND hooks with sglang's real ``HookRegistry``,
which also carries them to a module that imported the functions by name beforehand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
import wheels
from helpers import clean_environ

pytestmark = [pytest.mark.wheels, pytest.mark.torch]

NON_TENSOR = "received a non-tensor auxiliary PP output"
RELEASES = ["0.5.19", "0.5.23"]

# Everything the framework and the transport import, in the releases that have them.
_MEMBERS = [
    "sglang/_version.py",
    "sglang/srt/environ.py",
    "sglang/srt/plugins/__init__.py",
    "sglang/srt/plugins/hook_registry.py",
    "sglang/srt/sampling/sampling_observer.py",
    "sglang/srt/sampling/sampling_observer_pp.py",
    "sglang/srt/managers/auxiliary_output.py",  # 0.5.20+
]

# Stands in for sglang's scheduler_pp_mixin, which imports both functions by name.
_CONSUMER = """
from sglang.srt.sampling.sampling_observer_pp import (
    add_auxiliary_output_to_pp_tensors,
    pop_auxiliary_output_from_pp_tensors,
)
"""

_CHILD = r"""
import json, sys
import pp_consumer   # by-name imports, before the plugins load
import sglang.srt.sampling.sampling_observer_pp as transport
originals = (transport.add_auxiliary_output_to_pp_tensors,
             transport.pop_auxiliary_output_from_pp_tensors)
if sys.argv[1] == "plugin":
    from sglang.srt.plugins import load_plugins
    from sglang.srt.plugins.hook_registry import HookRegistry
    load_plugins()
    hooks = {target: [(t.value, h.__module__, s.plugin_name, s.dist_name) for t, h, s in entries]
             for target, entries in HookRegistry._hooks.items()}
else:
    from ppaux import capture
    capture.install(sys.argv[2])
    hooks = {}

import torch
from ppaux import capture
class Observer:
    def from_pp_tensors(self, tensors):
        return dict(tensors)
class Output:
    def to_pp_tensors(self):
        return {"good": torch.ones(2), "bad": [1, 2]}

raised = []
tensors = {"next_token_ids": torch.arange(3), "__sampling_observer_output__.scores": [0.1, 0.7]}
try:
    pp_consumer.pop_auxiliary_output_from_pp_tensors(tensors, Observer())
except RuntimeError as exc:
    raised.append(str(exc))
try:
    pp_consumer.add_auxiliary_output_to_pp_tensors({"next_token_ids": torch.arange(3)}, Output())
except RuntimeError as exc:
    raised.append(str(exc))
print(json.dumps({
    "hooks": hooks,
    "wrapped": [pp_consumer.add_auxiliary_output_to_pp_tensors.__wrapped__ is originals[0],
                pp_consumer.pop_auxiliary_output_from_pp_tensors.__wrapped__ is originals[1]],
    "raised": raised,
    "capture_original": [
        capture.capture_original(pp_consumer.add_auxiliary_output_to_pp_tensors) is originals[0],
        capture.capture_original(pp_consumer.pop_auxiliary_output_from_pp_tensors) is originals[1]],
}))
"""


def build_tree(wheel: Path, root: Path) -> Path:
    """The framework and transport files of ``wheel`` under a stub ``sglang`` package."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for member in _MEMBERS:
            if member in names:
                archive.extract(member, root)
    (root / "sglang" / "__init__.py").write_text("")
    (root / "pp_consumer.py").write_text(_CONSUMER)
    return root


def run_child(root: Path, env: dict, *args: str) -> dict:
    clean = clean_environ()
    clean.update(PYTHONPATH=str(root), PYTHONWARNINGS="ignore", **env)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def inspect_json(path: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "inspect", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


def replay_json(path: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "replay", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("version", RELEASES)
def test_plugin_through_sglangs_framework(version: str, tmp_path: Path):
    root = build_tree(wheels.sglang_wheel(version), tmp_path / "site")
    directory = tmp_path / "captures"
    result = run_child(root, {"PPAUX_CAPTURE_DIR": str(directory)}, "plugin")
    prefix = "sglang.srt.sampling.sampling_observer_pp."
    assert result["hooks"] == {
        prefix + "add_auxiliary_output_to_pp_tensors": [
            ["around", "ppaux.capture.hop_hooks", "ppaux_capture", "ppaux"]
        ],
        prefix + "pop_auxiliary_output_from_pp_tensors": [
            ["around", "ppaux.capture.hop_hooks", "ppaux_capture", "ppaux"]
        ],
    }
    assert result["wrapped"] == [True, True]
    assert result["capture_original"] == [True, True]
    assert result["raised"] == [NON_TENSOR, "auxiliary PP output 'bad' is not a tensor"]

    pop_file, add_file = sorted(directory.glob("capture-*.pt"))
    for path, function in ((pop_file, "pop"), (add_file, "add")):
        assert path.name.endswith(f"-{function}.pt")
        meta = torch.load(path, weights_only=True)["meta"]
        assert meta["sglang_version"] == version
        assert meta["torch_version"] == str(torch.__version__)
    pop = torch.load(pop_file, weights_only=True)
    assert list(pop["tensors"]) == ["next_token_ids", "__sampling_observer_output__.scores"]
    add = torch.load(add_file, weights_only=True)
    assert list(add["tensors"]) == ["next_token_ids"]  # as it was: 'good' went in after the call
    assert list(add["output"]) == ["good", "bad"]

    findings = inspect_json(pop_file)["findings"]
    assert [(f["code"], f["key"]) for f in findings] == [
        ("PP101", "__sampling_observer_output__.scores")
    ]

    # Replayed with no --sender: the pop capture as rank 0 received it (its own error back, and
    # PP410 on what a validating sender would have done); the add capture with the validating
    # sender it had.
    pop_replay = replay_json(pop_file)
    [result] = pop_replay["results"]
    assert (result["stage"], result["error"], result["reproduced"]) == ("pop", NON_TENSOR, True)
    assert result["sender"] == "legacy"
    assert [f["code"] for f in pop_replay["findings"]] == ["PP401", "PP410"]
    assert "would have refused it at add" in pop_replay["findings"][1]["message"]
    assert "ppaux check-skew" in pop_replay["findings"][1]["message"]
    add_replay = replay_json(add_file)
    [result] = add_replay["results"]
    assert (result["stage"], result["reproduced"]) == ("add", True)
    assert "sender" not in result
    assert "PP410" not in [f["code"] for f in add_replay["findings"]]


@pytest.mark.parametrize("version", RELEASES)
def test_plugin_without_the_directory_registers_nothing(version: str, tmp_path: Path):
    root = build_tree(wheels.sglang_wheel(version), tmp_path / "site")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from sglang.srt.plugins import load_plugins\n"
            "from sglang.srt.plugins.hook_registry import HookRegistry\n"
            "load_plugins()\n"
            "import sys\n"
            "print(dict(HookRegistry._hooks), 'ppaux.capture.hooks' in sys.modules)\n",
        ],
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("PPAUX_CAPTURE")},
            "PYTHONPATH": str(root),
            "PYTHONWARNINGS": "ignore",
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{} False"


@pytest.mark.parametrize("version", RELEASES)
def test_install_on_the_real_transport(version: str, tmp_path: Path):
    root = build_tree(wheels.sglang_wheel(version), tmp_path / "site")
    directory = tmp_path / "captures"
    result = run_child(root, {}, "install", str(directory))
    assert result["wrapped"] == [True, True]
    assert result["capture_original"] == [True, True]
    assert result["raised"] == [NON_TENSOR, "auxiliary PP output 'bad' is not a tensor"]
    assert len(list(directory.glob("capture-*.pt"))) == 2
