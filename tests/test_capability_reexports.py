"""The chain of modules from the scheduler's import of add and pop to their definitions: a
chain that comes back to a module it passed, or goes on past the modules followed, gives no
verdict on the transport ("unknown", with the reason), never "absent"; and each module on it is
read and parsed once, however often the chain names it."""

from __future__ import annotations

import itertools

import pytest
from skew_fixtures import copy_tree

import ppaux.sglang_source.source_files as source_files
from ppaux.sglang import ADD, POP, SCHEDULER_FILE, TRANSPORT_FILE
from ppaux.sglang_source import analyse

IMPORT = f"from sglang.srt.sampling.sampling_observer_pp import (\n    {ADD},\n    {POP},\n)\n"
SAMPLING = "sglang/srt/sampling"


def _tree(tmp_path, modules: dict[str, str]):
    """The 0.5.23 fixture with the transport file replaced and ``modules`` (names under
    ``srt/sampling``, each its text) written beside it."""
    root = copy_tree("v0523", tmp_path)
    scheduler = root / "sglang" / SCHEDULER_FILE
    assert scheduler.read_text().count(IMPORT) == 1
    for name, text in modules.items():
        (root / SAMPLING / f"{name}.py").write_text(text)
    return root


def _imports_from(module: str) -> str:
    return f"from sglang.srt.sampling.{module} import {ADD}, {POP}\n"


TRANSPORT_NAME = TRANSPORT_FILE.rpartition("/")[2].removesuffix(".py")


def _unknown_transport(cap, words: str) -> None:
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert cap.sender_checks is None and cap.receiver_checks is None
    for fact in ("transport", "prefix", "sender_checks", "receiver_checks", "match"):
        assert words in cap.unknown[fact]


def test_a_transport_that_imports_add_and_pop_from_itself_is_unknown(tmp_path):
    root = _tree(tmp_path, {TRANSPORT_NAME: _imports_from(TRANSPORT_NAME) + "x = 1\n"})
    cap = analyse(str(root))
    _unknown_transport(cap, "from itself")
    assert "the import fails when it runs" in cap.unknown["transport"]
    # The scheduler still imports and calls them: that fact does not depend on the transport.
    assert cap.scheduler_calls == {"add": True, "pop": True}


def test_two_modules_that_import_add_and_pop_from_each_other_are_unknown(tmp_path):
    root = _tree(
        tmp_path,
        {TRANSPORT_NAME: _imports_from("other"), "other": _imports_from(TRANSPORT_NAME)},
    )
    cap = analyse(str(root))
    _unknown_transport(cap, f"from {root}/{SAMPLING}/{TRANSPORT_NAME}.py, which the chain")


def _chain(length: int) -> dict[str, str]:
    """The transport re-exporting add and pop through ``length`` modules, the last defining
    them."""
    names = [TRANSPORT_NAME, *(f"hop{n}" for n in range(1, length + 1))]
    modules = {name: _imports_from(after) for name, after in itertools.pairwise(names)}
    modules[names[-1]] = f"def {ADD}(a, b):\n    return None\n\ndef {POP}(a):\n    return None\n"
    return modules


def test_a_chain_of_four_re_exports_is_followed_to_the_definitions(tmp_path):
    cap = analyse(str(_tree(tmp_path, _chain(4))))
    assert cap.transport == "present"
    transport = next(f for f in cap.files if f.role == "transport")
    assert transport.path.endswith("/hop4.py")


def test_a_chain_of_five_re_exports_goes_past_what_is_followed_and_is_unknown(tmp_path):
    cap = analyse(str(_tree(tmp_path, _chain(5))))
    _unknown_transport(cap, "hop5.py, past the 4 modules ppaux follows")


@pytest.mark.parametrize("cycle", ["itself", "pair"])
def test_each_module_of_a_cycle_is_parsed_once(tmp_path, monkeypatch, cycle):
    modules = (
        {TRANSPORT_NAME: _imports_from(TRANSPORT_NAME)}
        if cycle == "itself"
        else {TRANSPORT_NAME: _imports_from("other"), "other": _imports_from(TRANSPORT_NAME)}
    )
    root = _tree(tmp_path, modules)
    parsed: list[str] = []
    real = source_files.parse_source

    def counting(data, where, *args):
        parsed.append(str(where))
        return real(data, where, *args)

    monkeypatch.setattr(source_files, "parse_source", counting)
    analyse(str(root))
    transport_parses = [p for p in parsed if f"/{SAMPLING}/" in p]
    assert len(transport_parses) == len(set(transport_parses)) == len(modules)
