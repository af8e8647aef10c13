"""``assert_pp_safe`` with an object in hand fails a test only by ``AssertionError`` carrying a
finding, or passes: a ``__class__`` property or a metaclass that raises, a builtin the observer
patches in this process, a class with no source file (``python -c``, a notebook)."""

from __future__ import annotations

import builtins
import sys
import types
from typing import Any

import pytest

from ppaux.testing import assert_pp_safe

pytestmark = pytest.mark.torch

ONE: dict[str, Any] = {"steps": 1, "batch_sizes": (1,)}


class Host:
    def __init__(self, t: Any) -> None:
        self.t = t

    def consume(self, batch: Any, commits: Any) -> None:
        for req, commit, value in zip(batch.reqs, commits, self.t.tolist(), strict=False):
            if commit is not None:
                req.customized_info = {"v": [value]}


class Out:
    def __init__(self, t: Any) -> None:
        self.t = t

    def copy_to_host(self, copy: Any) -> Host:
        return Host(copy(self.t))

    def to_pp_tensors(self) -> dict[str, Any]:
        return {"t": self.t}


class Fine:
    def is_active(self, info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, info: Any) -> Any:
        return logits.float().sum(-1)

    def after_sample(self, state: Any, tokens: Any) -> Out:
        return Out(state)

    def from_pp_tensors(self, tensors: dict[str, Any]) -> Out:
        return Out(tensors["t"])


class ClassProperty(Fine):
    @property  # type: ignore[misc]
    def __class__(self) -> Any:
        raise RuntimeError("no class here")


class NoNames(type):
    def __getattribute__(cls, name: str) -> Any:
        if name in ("__module__", "__qualname__", "__name__"):
            raise RuntimeError(f"no {name} here")
        return super().__getattribute__(name)


class Nameless(Fine, metaclass=NoNames):
    pass


class PatchesSorted(Fine):
    def from_pp_tensors(self, tensors: dict[str, Any]) -> Out:
        return Out(tensors["t"] + 1)

    def after_sample(self, state: Any, tokens: Any) -> Out:
        builtins.sorted = lambda *args, **kwargs: []  # type: ignore[assignment]
        return Out(state)


class PatchesPpaux(PatchesSorted):
    def after_sample(self, state: Any, tokens: Any) -> Out:
        import ppaux.observer.judge as judge
        import ppaux.report as report

        judge.uncompared = lambda *args, **kwargs: []  # type: ignore[assignment]
        report.finding = lambda *args, **kwargs: []  # type: ignore[assignment]
        return Out(state)


def _failure(target: object) -> str:
    """The text of the AssertionError that ``assert_pp_safe`` fails ``target`` with."""
    with pytest.raises(AssertionError) as info:
        assert_pp_safe(target, **ONE)
    return str(info.value)


@pytest.mark.parametrize(
    ("make", "raised"),
    [(ClassProperty, "RuntimeError: no class here"), (lambda: Nameless, "RuntimeError: no __")],
    ids=["class-property", "metaclass"],
)
def test_an_observer_that_raises_as_it_is_read_is_pp710_at_its_line(make, raised):
    message = _failure(make())
    assert f"PP710 error: its code raised {raised}" in message
    assert f"at: {__file__}:" in message


def test_a_builtin_patched_in_this_process_is_a_finding_not_ppauxs_exception(monkeypatch):
    monkeypatch.setattr(builtins, "sorted", sorted)  # put back after the test
    message = _failure(PatchesSorted)
    assert "is not PP-safe" in message
    assert "PP715 error: ppaux's check raised" in message
    assert "give it by name ('module:attr')" in message


def test_a_class_of_main_with_no_source_file_is_checked(monkeypatch):
    # As under python -c or in a notebook: __main__ has no __file__.
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    cell = type("Cell", (Fine,), {"__module__": "__main__"})
    report = assert_pp_safe(cell, **ONE)
    assert report.findings == ()
    assert report.data["observer"]["origin"] is None


def test_ppauxs_own_functions_patched_in_this_process_still_fail_the_assertion(monkeypatch):
    import ppaux.observer.judge as judge
    import ppaux.report as report

    # put back after the test
    monkeypatch.setattr(judge, "uncompared", judge.uncompared)
    monkeypatch.setattr(report, "finding", report.finding)
    message = _failure(PatchesPpaux)
    assert "is not PP-safe" in message
    assert "ppaux's check raised AttributeError" in message
    assert "changed ppaux's own functions" in message
