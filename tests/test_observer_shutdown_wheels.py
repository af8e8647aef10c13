"""What docs/observers.md says of how sglang's scheduler ends, read in the release wheels.

The check's child runs none of the target's exit handlers (it ends with ``os._exit``); the page
says that sglang's PP scheduler runs none either on a shutdown, because its PP loop never reads
the flag a ``ShutdownReq`` sets, so the tokenizer manager kills it. Each fact is read from the
release's own source with :mod:`ast` (nothing of sglang runs).
"""

from __future__ import annotations

import ast
import zipfile

import pytest
import wheels
from helpers import REPO

pytestmark = pytest.mark.wheels

RELEASES = ("0.5.19", "0.5.23")


def _functions(version: str, path: str) -> dict[str, ast.AST]:
    with zipfile.ZipFile(wheels.sglang_wheel(version)) as wheel:
        tree = ast.parse(wheel.read(path).decode("utf-8"))
    return {
        node.name: node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def _attributes(function: ast.AST) -> set[str]:
    return {node.attr for node in ast.walk(function) if isinstance(node, ast.Attribute)}


def _called(function: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


@pytest.mark.parametrize("version", RELEASES)
def test_the_pp_loop_never_leaves_on_a_shutdown_request(version):
    pp = _functions(version, "sglang/srt/managers/scheduler_pp_mixin.py")
    scheduler = _functions(version, "sglang/srt/managers/scheduler.py")
    assert "gracefully_exit" not in _attributes(pp["event_loop_pp"])
    assert not any(isinstance(node, ast.Return) for node in ast.walk(pp["event_loop_pp"]))
    # The loops without PP do read it, and the shutdown request sets it.
    assert "gracefully_exit" in _attributes(scheduler["event_loop_normal"])
    assert "gracefully_exit" in _attributes(scheduler["handle_shutdown"])
    # A scheduler that fails tells its parent (SIGQUIT) and returns.
    assert {"send_signal", "killpg"} <= _called(scheduler["run_scheduler_process"])


@pytest.mark.parametrize("version", RELEASES)
def test_a_shutdown_kills_the_schedulers_that_are_left(version):
    tokenizer = _functions(version, "sglang/srt/managers/tokenizer_manager.py")
    engine = _functions(version, "sglang/srt/entrypoints/engine.py")
    assert {"ShutdownReq", "kill_process_tree"} <= _called(tokenizer["sigterm_watchdog"])
    assert "kill_process_tree" in _called(engine["shutdown"])
    with zipfile.ZipFile(wheels.sglang_wheel(version)) as wheel:
        source = wheel.read("sglang/srt/entrypoints/engine.py").decode("utf-8")
    assert 'mp.set_start_method("spawn", force=True)' in source


def test_the_page_cites_what_the_wheels_hold():
    page = " ".join((REPO / "docs" / "observers.md").read_text(encoding="utf-8").split())
    for said in (
        "`event_loop_pp` in `sglang/srt/managers/scheduler_pp_mixin.py`, sglang 0.5.19 and 0.5.23",
        "`sigterm_watchdog` in `sglang/srt/managers/tokenizer_manager.py`",
        "`kill_process_tree` (SIGKILL, `sglang/srt/utils/common.py`)",
        "the scheduler, a `spawn` process, leaves as Python does and its handlers may run",
    ):
        assert said in page
