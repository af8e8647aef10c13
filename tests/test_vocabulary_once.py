"""The words of the transport, implementation and sender vocabularies are said once, in the
enums of ppaux.replay.vocabulary: no module keeps them again as a table of strings."""

from __future__ import annotations

import ast
from pathlib import Path

from ppaux.replay import Impl, Sender, Transport

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = ROOT / "ppaux" / "replay" / "vocabulary.py"
ENUMS = {"Impl": Impl, "Sender": Sender, "Transport": Transport}


def tables(source: str) -> list[str]:
    """Each module-level name bound to the words of one vocabulary: a tuple, list or set of two
    or more of its values and nothing else, or the values read off its enum."""
    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        value = node.value
        names = [n.id for n in ast.walk(value) if isinstance(n, ast.Name)]
        literals = [
            {e.value for e in n.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            for n in ast.walk(value)
            if isinstance(n, ast.Tuple | ast.List | ast.Set)
        ]
        for name, enum in ENUMS.items():
            values = {member.value for member in enum}
            spelled = any(len(words) >= 2 and words <= values for words in literals)
            read = name in names and any(
                isinstance(n, ast.Attribute) and n.attr == "value" for n in ast.walk(value)
            )
            if spelled or read:
                found.append(f"line {node.lineno}: {name}")
    return found


def test_no_module_keeps_a_vocabulary_as_strings():
    kept = []
    for path in sorted([*(ROOT / "ppaux").rglob("*.py"), *(ROOT / "ppaux_cli").rglob("*.py")]):
        if path != VOCABULARY:
            kept += [f"{path.relative_to(ROOT)} {t}" for t in tables(path.read_text("utf-8"))]
    assert kept == []


def test_the_check_finds_both_kinds_of_table():
    source = (
        "TRANSPORTS = tuple(t.value for t in Transport)\n"
        'IMPLS = ("reference", "sglang")\n'
        'NAMES = ("wire", "reference")\n'
        "ALL = tuple(Transport)\n"
    )
    assert tables(source) == ["line 1: Transport", "line 2: Impl"]
