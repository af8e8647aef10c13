"""The live monkeypatch detector, on modules loaded from small files written by the tests."""

from __future__ import annotations

import functools
import importlib.util
import sys
import types
from pathlib import Path

from ppaux.skew.livepatch import (
    NOT_LOADED,
    ORIGINAL,
    SCHEDULER_MODULE,
    TRANSPORT_MODULE,
    live_findings,
    live_state,
)

ADD = "add_auxiliary_output_to_pp_tensors"
POP = "pop_auxiliary_output_from_pp_tensors"

SOURCE = """\
def add_auxiliary_output_to_pp_tensors(tensors, output):
    if output is None:
        return
    for name, value in output.items():
        tensors["p." + name] = value


def pop_auxiliary_output_from_pp_tensors(tensors, observer):
    return {k: tensors.pop(k) for k in list(tensors) if k.startswith("p.")}
"""


def _load(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the tests' own file, written above
    return module


def _modules(tmp_path: Path) -> dict[str, types.ModuleType]:
    path = tmp_path / "sampling_observer_pp.py"
    path.write_text(SOURCE)
    transport = _load(path, "fake_transport")
    scheduler = types.ModuleType("fake_scheduler")
    scheduler.add_auxiliary_output_to_pp_tensors = transport.add_auxiliary_output_to_pp_tensors
    scheduler.pop_auxiliary_output_from_pp_tensors = transport.pop_auxiliary_output_from_pp_tensors
    return {TRANSPORT_MODULE: transport, SCHEDULER_MODULE: scheduler}


def test_untouched_functions_are_original(tmp_path):
    state = live_state(_modules(tmp_path))
    assert state == {
        f"{m}.{f}": ORIGINAL for m in (TRANSPORT_MODULE, SCHEDULER_MODULE) for f in (ADD, POP)
    }
    assert live_findings(state, "rank 3") == []


def test_nothing_loaded():
    assert set(live_state({}).values()) == {NOT_LOADED}
    # The default looks at sys.modules and imports nothing.
    assert TRANSPORT_MODULE not in sys.modules
    assert set(live_state().values()) == {NOT_LOADED}
    assert TRANSPORT_MODULE not in sys.modules


def test_replaced_in_the_scheduler_only(tmp_path):
    modules = _modules(tmp_path)

    def lenient_add(tensors, output):
        tensors.update(output or {})

    modules[SCHEDULER_MODULE].add_auxiliary_output_to_pp_tensors = lenient_add
    state = live_state(modules)
    assert state[f"{TRANSPORT_MODULE}.{ADD}"] == ORIGINAL
    verdict = state[f"{SCHEDULER_MODULE}.{ADD}"]
    assert (
        verdict
        == f"replaced: by {__name__}.{test_replaced_in_the_scheduler_only.__name__}.<locals>."
        f"lenient_add from {__file__}"
    )
    findings = live_findings(state, "rank 3")
    assert [(f.code, f.path, f.key) for f in findings] == [
        ("PP320", "rank 3", f"{SCHEDULER_MODULE}.{ADD}")
    ]
    assert findings[0].message == f"{SCHEDULER_MODULE}.{ADD} is {verdict}"
    assert findings[0].sglang_error == "received a non-tensor auxiliary PP output"


def test_wrapped(tmp_path):
    modules = _modules(tmp_path)
    original = modules[TRANSPORT_MODULE].pop_auxiliary_output_from_pp_tensors

    @functools.wraps(original)
    def logged(*args):
        return original(*args)

    modules[TRANSPORT_MODULE].pop_auxiliary_output_from_pp_tensors = logged
    verdict = live_state(modules)[f"{TRANSPORT_MODULE}.{POP}"]
    assert verdict.startswith("wrapped: ")


def test_not_a_python_function(tmp_path):
    modules = _modules(tmp_path)
    modules[TRANSPORT_MODULE].add_auxiliary_output_to_pp_tensors = dict.update
    assert live_state(modules)[f"{TRANSPORT_MODULE}.{ADD}"] == (
        "replaced: a method_descriptor, not a Python function"
    )


def test_file_changed_after_import(tmp_path):
    modules = _modules(tmp_path)
    path = tmp_path / "sampling_observer_pp.py"
    # Same lines shifted down, then one changed constant: only the code counts, not positions.
    path.write_text("\n\n" + SOURCE)
    assert live_state(modules)[f"{TRANSPORT_MODULE}.{ADD}"] == ORIGINAL
    path.write_text(SOURCE.replace('"p." + name', '"q." + name'))
    assert live_state(modules)[f"{TRANSPORT_MODULE}.{ADD}"] == (
        f"differs from its file: the code running is not the code in {path}"
    )
    assert live_state(modules)[f"{TRANSPORT_MODULE}.{POP}"] == ORIGINAL


def test_missing_attribute_and_unreadable_file(tmp_path):
    modules = _modules(tmp_path)
    del modules[TRANSPORT_MODULE].pop_auxiliary_output_from_pp_tensors
    (tmp_path / "sampling_observer_pp.py").write_text("def broken(:\n")
    state = live_state(modules)
    assert state[f"{TRANSPORT_MODULE}.{POP}"] == "missing: the module has no such attribute"
    assert state[f"{TRANSPORT_MODULE}.{ADD}"].startswith(
        f"unknown: its file {tmp_path / 'sampling_observer_pp.py'} cannot be compiled: "
    )


def test_a_scheduler_without_the_transport_is_not_a_patch(tmp_path):
    modules = {SCHEDULER_MODULE: types.ModuleType("old_scheduler")}
    assert set(live_state(modules).values()) == {NOT_LOADED}


def test_ppaux_capture_wrapper_is_not_a_patch(tmp_path):
    from ppaux.capture import hooks as capture
    from ppaux.capture.hop_hooks import wrap

    modules = _modules(tmp_path)
    transport = modules[TRANSPORT_MODULE]
    for name, hook in ((ADD, capture.around_add), (POP, capture.around_pop)):
        setattr(transport, name, wrap(getattr(transport, name), hook))
    state = live_state(modules)
    assert state[f"{TRANSPORT_MODULE}.{ADD}"] == ORIGINAL
    assert state[f"{TRANSPORT_MODULE}.{POP}"] == ORIGINAL
