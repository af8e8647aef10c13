"""Shared fixtures, the order of modules under pytest-xdist, and the torch gate: the
torch-free tests run where torch is absent.

The gate is the ``torch`` marker, applied here, and it is the only one (no
``importorskip("torch")``, no ``find_spec("torch")``: ``tests/test_torch_gate.py``): a test that
needs torch carries ``@pytest.mark.torch`` and is skipped without it; a module that needs it
throughout says ``pytestmark = pytest.mark.torch`` (as it must when it imports torch at the top,
directly or through a helper module of ``tests/``) and is not collected without it, which is
read from its source, so there is no list to keep. A test that checks less without torch asks
the ``have_torch`` fixture. ``PPAUX_TEST_NO_TORCH=1`` hides
an installed torch from this process, to check that split where torch is installed
(``tests/test_layout.py`` runs it).
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.util
import os
import resource
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

import pytest
import runtime_zygote
from helpers import REPO
from hypothesis import settings

# Every property draws the same examples on every run (derandomized, no example database): a gate
# neither passes nor fails by chance, and a failure reproduces with the same command. No deadline:
# a shared machine's load is not a test's fault. PPAUX_HYPOTHESIS_RANDOM=1 draws new examples,
# for a longer look (a failure found so is then kept as an ``@example``).
settings.register_profile("fixed", derandomize=True, database=None, deadline=None)
settings.register_profile("random", derandomize=False, deadline=None)
settings.load_profile("random" if os.environ.get("PPAUX_HYPOTHESIS_RANDOM") == "1" else "fixed")


class _NoTorch(importlib.abc.MetaPathFinder):
    """Makes ``import torch`` fail as it does where torch is not installed."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


_TESTS = Path(__file__).resolve().parent

# A test hook of ppaux's (ppaux.observer.fresh): check-observer forks rank 0's process from its
# child instead of starting a fresh interpreter, which would import torch a second time in each of
# the suite's hundreds of checks. tests/test_observer_rank0_fresh.py removes it and checks what
# the fresh process is for; PPAUX_TEST_RANK0_FORK=0 runs the whole suite without it.
os.environ.setdefault("PPAUX_TEST_RANK0_FORK", "1")

if os.environ.get("PPAUX_TEST_NO_TORCH") == "1":
    sys.meta_path.insert(0, _NoTorch())
    HAVE_TORCH = False
else:
    HAVE_TORCH = importlib.util.find_spec("torch") is not None


def needs_torch(path: Path, _seen: set[Path] | None = None) -> bool:
    """Whether the module at ``path`` needs torch throughout: its module-level ``pytestmark``
    holds ``pytest.mark.torch``, or it imports torch at the top (``import torch``, ``from
    torch...``), or it imports a module of ``tests/`` that does. Read from its source, so that the
    module is never imported where torch is absent."""
    seen = set() if _seen is None else _seen
    seen.add(path)
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            if "mark.torch" in ast.unparse(node.value).replace(" ", ""):
                return True
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.partition(".")[0]
            sibling = _TESTS / f"{top}.py"
            if top == "torch" or (
                sibling.is_file() and sibling not in seen and needs_torch(sibling, seen)
            ):
                return True
    return False


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    """Without torch, a test module that needs it throughout (:func:`needs_torch`) is not
    collected; no opinion on anything else (None)."""
    if HAVE_TORCH or collection_path.suffix != ".py" or not collection_path.is_file():
        return None
    return True if needs_torch(collection_path) else None


#: The modules that take longest in a cold run on 2 cores (a minute or more each: sglang's
#: processes in the runtime tier, the 500-message differential run, the virtual environments the
#: install tests build), longest first. Under pytest-xdist (``-n``, whole modules per worker) they
#: start before the rest, then the other modules with runtime or multi-process tests, so that no
#: worker is left running a long module alone at the end.
SLOW_FIRST = [
    "test_sglang_transport.py",
    "test_sglang_runtime.py",
    "test_install_docs.py",
    "test_capture_checkpoints.py",
    "test_story_real_path.py",
    "test_without_torch.py",
]
_EXPENSIVE_MARKERS = ("sglang_runtime", "distributed")


def _slow_first(items: list[pytest.Item]) -> None:
    listed = {name: rank for rank, name in enumerate(SLOW_FIRST)}
    expensive = {
        item.path.name
        for item in items
        if any(item.get_closest_marker(name) for name in _EXPENSIVE_MARKERS)
    }

    def rank(item: pytest.Item) -> int:
        name = item.path.name
        if name in listed:
            return listed[name]
        return len(listed) + (0 if name in expensive else 1)

    items.sort(key=rank)  # stable: a module's tests keep their order


#: The test tiers that no marker in the modules themselves names: the fuzzing runs (hundreds of
#: generated inputs through ppaux and torch) and the packaging checks (distributions built,
#: virtual environments made). With ``wheels`` (the network), ``sglang_runtime``,
#: ``distributed`` and ``cuda`` they are what the fast tier leaves out (pyproject.toml's markers).
TIERS = {
    "fuzz": ("test_fuzz_reader.py", "test_fuzz_differential.py", "test_fuzz_torch_differential.py"),
    "packaging": ("test_install_docs.py", "test_without_torch.py"),
}


#: The test functions that take half a second or more (``scripts/slow_tests.py`` writes the
#: file from a measured run): marker ``slow``.
SLOW_TESTS = _TESTS / "slow_tests.txt"
#: What the fast tier (marker ``fast``: ``pytest -m fast``) leaves out: the network, sglang's
#: runtime, several processes, a GPU, the fuzzing and packaging tiers, and the slow functions.
NOT_FAST = ("wheels", "sglang_runtime", "distributed", "cuda", "fuzz", "packaging", "slow")


def slow_tests() -> set[str]:
    """The ``tests/x.py::function`` lines of :data:`SLOW_TESTS`."""
    lines = SLOW_TESTS.read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tiers = {name: tier for tier, names in TIERS.items() for name in names}
    slow = slow_tests()
    for item in items:
        tier = tiers.get(item.path.name)
        if tier is not None:
            item.add_marker(tier)
        function = item.nodeid.split("[", 1)[0]
        if function in slow or f"tests/{function}" in slow:
            item.add_marker("slow")
        if not any(item.get_closest_marker(name) for name in NOT_FAST):
            item.add_marker("fast")
    # Only the workers' order decides what xdist hands out; a plain run keeps the file order.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _slow_first(items)
    if HAVE_TORCH:
        return
    skip = pytest.mark.skip(reason="needs torch")
    for item in items:
        if item.get_closest_marker("torch"):
            item.add_marker(skip)


#: Where each test's CPU time starts: :func:`pytest_runtest_setup` sets it.
_CPU_START = pytest.StashKey[float]()


def _cpu_seconds() -> float:
    """User and system CPU time of this process, of the children it has waited for and of the
    processes forked for it by the runtime tier's zygotes (``tests/runtime_zygote.py``)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    forked = runtime_zygote.cpu_seconds()
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + forked


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_CPU_START] = _cpu_seconds()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Each test's CPU time from its setup to its teardown (its own process's and its waited
    children's), property ``cpu`` of its JUnit record: what the test costs the machine, whatever
    else loads it. ``scripts/slow_tests.py --cpu`` reads it. Where ``PPAUX_TEST_CPU_LOG`` names a
    file, each test appends its line to it as it ends (:func:`_log_cpu`)."""
    if call.when == "teardown" and _CPU_START in item.stash:
        spent = _cpu_seconds() - item.stash[_CPU_START]
        item.user_properties.append(("cpu", f"{spent:.3f}"))
        log = os.environ.get(CPU_LOG_ENV)
        if log:
            _log_cpu(Path(log), item.nodeid, spent)
    return (yield)


#: A file to which each test appends, as it ends, ``SECONDS<TAB>NODEID``: its CPU time (as the
#: JUnit property ``cpu``) and its id. A run stopped early keeps every line written; every xdist
#: worker appends to the same file. ``scripts/suite_cpu.py`` sums it per module.
CPU_LOG_ENV = "PPAUX_TEST_CPU_LOG"


def _log_cpu(log: Path, nodeid: str, spent: float) -> None:
    # One write of one short line to a file opened for appending: the workers' lines never mix.
    descriptor = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, f"{spent:.3f}\t{nodeid}\n".encode())
    finally:
        os.close(descriptor)


@pytest.fixture
def have_torch() -> bool:
    """Whether torch is here as the torch gate sees it (False under ``PPAUX_TEST_NO_TORCH=1``),
    for a test that checks less without torch, not nothing; a test that needs it is marked."""
    return HAVE_TORCH


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run the test from the repository root (fixture paths are relative to it)."""
    monkeypatch.chdir(REPO)
    yield


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An sglang-shaped module tree (``tests/sglang_shaped.py``) in the test's directory, first on
    ``sys.path``; afterwards capture is uninstalled and the tree's modules are forgotten."""
    import sglang_shaped

    from ppaux import capture
    from ppaux.capture import host

    root = sglang_shaped.build(tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    sglang_shaped.forget()
    host.sglang_version.cache_clear()
    yield root
    capture.uninstall()
    sglang_shaped.forget()
    host.sglang_version.cache_clear()


# torch's own answers, from servers that import torch once and answer each file in a child
# forked from themselves (nothing one file does reaches the next): one server of each kind per
# test process, shared by the modules that ask, instead of a torch import per module.


@pytest.fixture(scope="session")
def sandbox() -> Iterator[object]:
    """``fuzz/torch_sandbox.py``: torch.load (``weights_only=False``) of a file, with what the
    file tried to do blocked and reported (``fuzz/torch_differential.py``'s ``Sandbox``)."""
    if str(REPO / "fuzz") not in sys.path:
        sys.path.insert(0, str(REPO / "fuzz"))
    import torch_differential

    with torch_differential.Sandbox() as running:
        yield running


@pytest.fixture(scope="session")
def default_loads() -> Iterator[object]:
    """torch.load of a file with its default ``weights_only=True`` (tests/weights_only_probe.py,
    ``test_weights_only.TorchAnswers``)."""
    from test_weights_only import TorchAnswers

    answers = TorchAnswers()
    yield answers
    answers.close()


@pytest.fixture(scope="session")
def pickle_loads() -> Iterator[object]:
    """pickle.load of a file (``test_dump_legacy_reading.PickleLoads``)."""
    from test_dump_legacy_reading import PickleLoads

    answers = PickleLoads()
    yield answers
    answers.close()


@pytest.fixture(scope="session")
def torch_children() -> Iterator[object]:
    """``python -c CODE ARGS`` in children forked from one process that imported torch
    (tests/torch_children.py)."""
    import torch_children as children

    server = children.Children()
    yield server
    server.close()


#: The modules whose check-observer runs take their child from the fork server
#: (tests/child_forks.py): those checked to pass with it, where it saves the child's import of
#: torch. A module that checks the child's start itself (its isolation, its hash seed, its
#: settings) is never among them; a test of such a module that checks it asks the fixture
#: ``fresh_child`` and starts its child as users' checks do.
CHILD_FORKS = (
    "test_cli_observer_output_path.py",
    "test_error_pages.py",
    "test_limit_fields.py",
    "test_observer.py",
    "test_observer_aliasing_buffers.py",
    "test_observer_aliasing_rule.py",
    "test_observer_channels.py",
    "test_observer_default_device.py",
    "test_observer_default_group.py",
    "test_observer_digest_elements.py",
    "test_observer_ends.py",
    "test_observer_github_output.py",
    "test_observer_hostile.py",
    "test_observer_in_hand_apart.py",
    "test_observer_in_hand_rank0_ends.py",
    "test_observer_inference_mode.py",
    "test_observer_isolation.py",
    "test_observer_linked_target.py",
    "test_observer_locations.py",
    "test_observer_one_module.py",
    "test_observer_processes.py",
    "test_observer_rank0_apart.py",
    "test_observer_rank0_crossing.py",
    "test_observer_rank0_lifetime.py",
    "test_observer_receiver_killed.py",
    "test_observer_receiver_process.py",
    "test_observer_sending_changes.py",
    "test_observer_stages.py",
    "test_observer_standin_defaults.py",
    "test_observer_streamed_outputs.py",
    "test_observer_testing.py",
    "test_observer_values.py",
    "test_observer_wide_requests.py",
    "test_report_notes.py",
    "test_setting_bounds.py",
    "test_text_width.py",
    "test_wire_attention_group.py",
)


@pytest.fixture(scope="session")
def child_forks() -> Iterator[object]:
    """The fork server of the check's child (tests/child_forks.py), one per test process."""
    import child_forks as forks

    server = forks.ChildForks()
    yield server
    server.close()


@pytest.fixture
def fresh_child() -> None:
    """Asked by a test of a :data:`CHILD_FORKS` module that checks the child's start itself:
    its checks start their child as users' checks do (:func:`_child_forks`)."""


@pytest.fixture(autouse=True)
def _child_forks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks of :data:`CHILD_FORKS`' modules take their child from the fork server
    (:func:`child_forks`), but where ``PPAUX_TEST_CHILD_FORKS=0`` and in the tests that ask
    :func:`fresh_child`; every other module's start it as users' checks do."""
    if os.environ.get("PPAUX_TEST_CHILD_FORKS") == "0" or not HAVE_TORCH:
        return
    if request.path.name in CHILD_FORKS and "fresh_child" not in request.fixturenames:
        request.getfixturevalue("child_forks")
    else:
        monkeypatch.delenv("PPAUX_TEST_CHILD_FORKS", raising=False)
