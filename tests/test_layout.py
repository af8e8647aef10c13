"""The layout keeps its promises: every public name resolves, the torch-free faces import no
torch, docs/architecture.md names exactly the subpackages, and the torch-free tests run without
torch."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys

import pytest
from helpers import REPO

import ppaux

#: The subpackages, written out: a new one must be added here and to docs/architecture.md.
SUBPACKAGES = [
    "capture",
    "dump",
    "fix",
    "observer",
    "replay",
    "report",
    "sglang",
    "sglang_source",
    "skew",
    "testing",
    "triage",
]
#: Faces whose every public name can be used without importing torch.
TORCH_FREE = [
    "ppaux",
    "ppaux.capture",
    "ppaux.dump",
    "ppaux.fix",
    "ppaux.observer",
    "ppaux.report",
    "ppaux.sglang",
    "ppaux.sglang_source",
    "ppaux.skew",
    "ppaux.triage",
    "ppaux.guard",
]


def test_the_subpackages_are_these():
    found = sorted(info.name for info in pkgutil.iter_modules(ppaux.__path__) if info.ispkg)
    assert found == SUBPACKAGES


def test_architecture_names_every_subpackage_and_only_those():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = sorted(set(re.findall(r"`ppaux/(\w+)/`", text)))
    assert named == SUBPACKAGES


@pytest.mark.parametrize(
    "face",
    [
        # the replay wing's modules import torch
        pytest.param(face, marks=pytest.mark.torch) if face == "ppaux.replay" else face
        for face in ["ppaux", *(f"ppaux.{name}" for name in SUBPACKAGES)]
    ],
)
def test_every_public_name_of_a_face_resolves(face):
    module = importlib.import_module(face)
    assert module.__all__, face
    assert sorted(module.__all__) == sorted(set(module.__all__)), f"{face}: a name twice"
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{face}.{name}"
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.torch  # the replay wing's modules import torch
def test_every_module_declares_all_and_its_names_exist():
    for info in pkgutil.walk_packages(ppaux.__path__, "ppaux."):
        module = importlib.import_module(info.name)
        names = getattr(module, "__all__", None)
        assert names is not None, f"{info.name} has no __all__"
        missing = [name for name in names if not hasattr(module, name)]
        assert not missing, f"{info.name}: {missing}"


_PROBE = """
import importlib, json, sys
faces = json.loads(sys.argv[1])
for face in faces:
    module = importlib.import_module(face)
    for name in module.__all__:
        getattr(module, name)
print(json.dumps(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))))
"""


def test_torch_free_faces_import_no_torch():
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(TORCH_FREE)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_torch_free_tests_run_without_torch():
    """With torch hidden (tests/conftest.py), a module of the torch wing is left out at
    collection and a module of the reader runs: its torch-free tests pass, its marked ones are
    skipped. (A real torch-free environment runs the reader's modules in test_without_torch.py.)"""
    env = {**os.environ, "PPAUX_TEST_NO_TORCH": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
    # The folder is collected (a file named on the command line is never left out), with every
    # module but two set aside, so that only those two are imported.
    kept = {"test_pickle_vm.py", "test_transport.py"}
    others = [
        f"--ignore={p}" for p in sorted((REPO / "tests").glob("test_*.py")) if p.name not in kept
    ]
    collected = subprocess.run(
        [*command, "--collect-only", *others, "tests"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout[-3000:]
    assert "tests/test_pickle_vm.py::" in collected.stdout
    assert "tests/test_transport.py::" not in collected.stdout
    ran = subprocess.run(
        [*command, "tests/test_dumpfile.py"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout[-3000:]
    summary = ran.stdout.strip().splitlines()[-1]
    # Both kinds ran: the torch-free tests passed, the marked ones were skipped for want of torch.
    assert re.match(r"\d+ passed, \d+ skipped in ", summary), summary
    needs_torch = r"^SKIPPED \[\d+\] tests/test_dumpfile\.py:\d+: needs torch$"
    assert re.search(needs_torch, ran.stdout, re.M), ran.stdout[-3000:]
