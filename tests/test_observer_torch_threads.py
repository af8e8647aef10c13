"""Threads torch's own code starts (a compile pool) are torch's, never named as threads the
target left running; the target's own threads, through a stdlib executor too, still are."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer
from ppaux.observer.torch_threads import is_torchs, starter, torchs_module
from ppaux.testing import LeftRunningWarning, assert_pp_safe

pytestmark = pytest.mark.torch

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
ONE = ObserverOptions(batch_sizes=(2,), steps=2)

#: A module that torch's code would be: loaded under a name of torch's, it starts a pool's
#: worker (non-daemon) and leaves it waiting, as inductor's compile pool does.
POOL = """
import concurrent.futures
POOL = concurrent.futures.ThreadPoolExecutor(1)
POOL.submit(lambda: None).result()
"""


def observer(tmp_path: Path, head: str) -> str:
    (tmp_path / "obs.py").write_text(
        GOOD.replace("import torch\n", "import torch\n" + head, 1), encoding="utf-8"
    )
    return f"{tmp_path / 'obs.py'}:EntropyObserver"


def test_module_names_of_torchs():
    assert torchs_module("torch")
    assert torchs_module("torch._inductor.async_compile")
    assert not torchs_module("torchvision")
    assert not torchs_module("mytorch.x")
    assert not torchs_module(None)


def test_the_starter_skips_the_thread_machinery():
    seen: list[object] = []

    def note() -> None:
        import sys

        seen.append(starter(sys._getframe(0)))

    note()
    assert seen == [__name__]


def test_a_pool_started_by_torchs_code_is_not_the_targets(tmp_path):
    (tmp_path / "pool.py").write_text(POOL, encoding="utf-8")
    pool = str(tmp_path / "pool.py")
    head = (
        "import importlib.util as _u\n"
        f"_s = _u.spec_from_file_location('torch._pool_of_the_test', {pool!r})\n"
        "_s.loader.exec_module(_u.module_from_spec(_s))\n"
    )
    report = check_observer(observer(tmp_path, head), ONE)
    assert [f.code for f in report.findings] == []


def test_a_pool_the_target_starts_itself_is_still_named(tmp_path):
    report = check_observer(observer(tmp_path, POOL), ONE)
    [ended] = [f for f in report.findings if f.code == "PP718"]
    assert ended.extra["end"] == "threads"
    assert "ThreadPoolExecutor" in ended.message


def test_a_thread_running_a_function_of_torchs_is_torchs():
    thread = threading.Thread(target=time.sleep, args=(0,))
    assert not is_torchs(thread)
    import torch

    assert is_torchs(threading.Thread(target=torch.manual_seed, args=(0,)))


def _in_hand(tmp_path: Path, name: str, started: str) -> object:
    """The worked example's observer, in hand (its module loaded under ``name``), whose
    ``after_sample`` calls ``start()`` of a module loaded under the name ``started``."""
    import importlib.util

    (tmp_path / "pool.py").write_text(
        "import concurrent.futures\n"
        "POOLS = []\n"
        "def start():\n"
        "    pool = concurrent.futures.ThreadPoolExecutor(1)\n"
        "    pool.submit(lambda: None).result()\n"
        "    POOLS.append(pool)\n",
        encoding="utf-8",
    )
    spec = importlib.util.spec_from_file_location(started, tmp_path / "pool.py")
    assert spec is not None and spec.loader is not None
    pool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pool)
    text = GOOD.replace(
        "        return EntropyOutput(state)",
        "        POOL.start()\n        return EntropyOutput(state)",
    )
    assert text != GOOD
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, tmp_path / "obs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.POOL = pool  # type: ignore[attr-defined]
    spec.loader.exec_module(module)
    return module.EntropyObserver()


def test_in_hand_a_pool_started_by_torchs_code_is_not_the_targets(tmp_path):
    observer = _in_hand(tmp_path, "obs_in_hand_a", "torch._pool_in_hand_of_the_test")
    report = assert_pp_safe(observer, batch_sizes=(2,), steps=2)
    assert [f.code for f in report.findings] == []


def test_in_hand_a_pool_the_target_starts_itself_is_still_named(tmp_path):
    observer = _in_hand(tmp_path, "obs_in_hand_b", "pool_in_hand_of_the_test")
    # A warning (PP718): it passes the default gate, with the warning check-observer prints,
    # and fails one at warnings.
    with pytest.warns(LeftRunningWarning, match="ThreadPoolExecutor"):
        report = assert_pp_safe(observer, batch_sizes=(2,), steps=2)
    [found] = report.findings
    assert found.code == "PP718" and "ThreadPoolExecutor" in found.message
    observer = _in_hand(tmp_path, "obs_in_hand_c", "pool_in_hand_of_the_test_c")
    with pytest.raises(AssertionError) as info:
        assert_pp_safe(observer, batch_sizes=(2,), steps=2, fail_on="warning")
    assert "PP718" in str(info.value)
    assert "ThreadPoolExecutor" in str(info.value)
