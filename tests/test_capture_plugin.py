"""ppaux capture as an sglang plugin, in child processes, on a module tree shaped like sglang's.

Each child (forked from one that imported torch: tests/torch_children.py) puts the tree
(tests/sglang_shaped.py) first on its path, imports the scheduler-like module (which takes both
transport functions by name), then calls ``load_plugins()``, which finds ppaux's
``sglang.srt.plugins`` entry point in this environment's metadata, exactly as sglang does.
The tree's framework stands in for sglang's; test_capture_wheels.py runs sglang's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import sglang_shaped
from torch_children import Children

# The child processes make tensors.
pytestmark = pytest.mark.torch

NON_TENSOR = "received a non-tensor auxiliary PP output"

_CHILD = r"""
import json, logging, sys
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append((record.name, record.levelname, record.getMessage()))
logging.getLogger().addHandler(Keep())
logging.getLogger().setLevel(logging.INFO)

from sglang.srt.managers import scheduler_pp_mixin as mixin   # by-name import, before plugins
import sglang.srt.sampling.sampling_observer_pp as transport
originals = (transport.add_auxiliary_output_to_pp_tensors,
             transport.pop_auxiliary_output_from_pp_tensors)
from sglang.srt.plugins import load_plugins
load_plugins()
if len(sys.argv) > 1:
    from ppaux import capture
    capture.install(sys.argv[1])   # a launcher that also calls install()

import torch
class Observer:
    def from_pp_tensors(self, tensors):
        return dict(tensors)

raised = []
healthy = mixin.receive_output_message({"next_token_ids": torch.arange(2)}, Observer())
for _ in range(2):
    leaked = {"next_token_ids": torch.arange(2), "__sampling_observer_output__.s": [1.0]}
    try:
        mixin.receive_output_message(leaked, Observer())
    except RuntimeError as exc:
        raised.append(str(exc))
print(json.dumps({
    "wrapped": [
        getattr(mixin.add_auxiliary_output_to_pp_tensors, "__wrapped__", None) is originals[0],
        getattr(mixin.pop_auxiliary_output_from_pp_tensors, "__wrapped__", None) is originals[1],
    ],
    "module_wrapped": transport.pop_auxiliary_output_from_pp_tensors is not originals[1],
    "healthy": healthy,
    "raised": raised,
    "capture_imported": "ppaux.capture.hooks" in sys.modules,
    "records": [r for r in records if r[0].startswith("ppaux")],
}))
"""


@pytest.fixture
def run_child(torch_children: Children) -> Callable[..., dict]:
    """``run_child(root, env, *args)``: what :data:`_CHILD` printed, run with the tree ``root``
    first on its path, in this environment without capture settings and sglang's plugin list,
    with ``env``."""

    def run(root: Path, env: dict, *args: str) -> dict:
        clean = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("PPAUX_CAPTURE") and k != "SGLANG_PLUGINS"
        }
        clean["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), clean.get("PYTHONPATH")) if p)
        clean["PYTHONWARNINGS"] = "ignore"
        done = torch_children.run(_CHILD, *args, env={**clean, **env})
        assert done.returncode == 0, done.stderr
        result: dict = json.loads(done.stdout)
        return result

    return run


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sglang_shaped.build(tmp_path_factory.mktemp("site"))


def test_plugin_wraps_both_functions_and_captures(run_child, root: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    result = run_child(root, {"PPAUX_CAPTURE_DIR": str(directory)})
    assert result["wrapped"] == [True, True]  # the by-name imports were carried along
    assert result["module_wrapped"] is True
    assert result["healthy"] is None
    assert result["raised"] == [NON_TENSOR, NON_TENSOR]
    assert len(list(directory.glob("capture-*.pt"))) == 2
    assert result["records"] == [
        [
            "ppaux.capture",
            "INFO",
            f"ppaux capture: capturing failing PP auxiliary transport "
            f"calls into {directory} (when=error)",
        ]
    ]


def test_plugin_is_a_no_op_without_the_directory(run_child, root: Path, tmp_path: Path):
    result = run_child(root, {})
    assert result["wrapped"] == [False, False]
    assert result["module_wrapped"] is False
    assert result["raised"] == [NON_TENSOR, NON_TENSOR]
    assert result["capture_imported"] is False  # register() returned before importing it
    assert result["records"] == []


def test_sglang_plugins_can_leave_it_out(run_child, root: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    result = run_child(root, {"PPAUX_CAPTURE_DIR": str(directory), "SGLANG_PLUGINS": "other"})
    assert result["wrapped"] == [False, False]
    assert result["raised"] == [NON_TENSOR, NON_TENSOR]
    assert not directory.exists()


def test_sglang_plugins_naming_it_loads_it(run_child, root: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    result = run_child(
        root, {"PPAUX_CAPTURE_DIR": str(directory), "SGLANG_PLUGINS": "other, ppaux_capture"}
    )
    assert result["wrapped"] == [True, True]
    assert len(list(directory.glob("capture-*.pt"))) == 2


def test_a_bad_setting_logs_and_leaves_sglang_alone(run_child, root: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    result = run_child(
        root, {"PPAUX_CAPTURE_DIR": str(directory), "PPAUX_CAPTURE_MAX_FILES": "many"}
    )
    assert result["wrapped"] == [False, False]
    assert result["raised"] == [NON_TENSOR, NON_TENSOR]
    assert result["records"] == [
        [
            "ppaux.capture",
            "WARNING",
            "ppaux capture: not enabled: PPAUX_CAPTURE_MAX_FILES='many': not a whole number",
        ]
    ]
    assert not directory.exists()


def test_install_after_the_plugin_does_not_capture_twice(run_child, root: Path, tmp_path: Path):
    plugin_dir = tmp_path / "plugin"
    install_dir = tmp_path / "install"
    result = run_child(root, {"PPAUX_CAPTURE_DIR": str(plugin_dir)}, str(install_dir))
    assert result["raised"] == [NON_TENSOR, NON_TENSOR]
    # install() only changed the settings of the hooks the plugin had registered
    assert not plugin_dir.exists()
    assert len(list(install_dir.glob("capture-*.pt"))) == 2


_OLD_SGLANG = r"""
import logging, sys
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append((record.name, record.levelname, record.getMessage()))
logging.getLogger().addHandler(Keep())
logging.getLogger().setLevel(logging.INFO)
from sglang.srt.plugins import load_plugins
load_plugins()
print(records)
"""


def test_an_sglang_without_the_transport_gets_no_hooks(tmp_path: Path):
    # 0.5.15 - 0.5.18 had the plugin framework but no PP auxiliary transport
    root = sglang_shaped.build(tmp_path / "site", version="0.5.18")
    (root / "sglang" / "srt" / "sampling" / "sampling_observer_pp.py").unlink()
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "PPAUX_CAPTURE_DIR": str(tmp_path / "c"),
        "PYTHONWARNINGS": "ignore",
    }
    done = subprocess.run(
        [sys.executable, "-c", _OLD_SGLANG],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(
        [
            (
                "ppaux.capture",
                "INFO",
                "ppaux capture: not enabled: this sglang has no "
                "sglang.srt.sampling.sampling_observer_pp",
            ),
        ]
    )
