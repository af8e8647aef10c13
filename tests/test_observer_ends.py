"""The target's acts that end or disturb a check are findings about the target, and never reach
another check or the caller: lines traced per thread, a BaseException from a hook, an alarm
left pending, a child that exits while its processes hold its pipes, a patched ``json``, forks
and threads of other threads than the check's."""

from __future__ import annotations

import threading

import pytest

pytestmark = pytest.mark.torch


def _hook_a() -> dict[str, int]:
    made_by_a = 1
    return {"a": made_by_a}


def _hook_b() -> dict[str, int]:
    made_by_b = 2
    return {"b": made_by_b}


def test_each_thread_names_its_own_hooks_lines():
    from ppaux.observer.lines import last_run, run_traced

    a_ran, b_ran = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def first() -> None:
        run_traced("to_pp_tensors", _hook_a)
        a_ran.set()
        b_ran.wait(10)  # the other thread's run of the same hook came after this one's
        seen["a"] = last_run("to_pp_tensors")

    def second() -> None:
        a_ran.wait(10)
        run_traced("to_pp_tensors", _hook_b)
        seen["b"] = last_run("to_pp_tensors")
        b_ran.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    functions = {
        name: {place[2] for place in ran.lines}  # type: ignore[attr-defined]
        for name, ran in seen.items()
    }
    assert functions == {"a": {"_hook_a"}, "b": {"_hook_b"}}
