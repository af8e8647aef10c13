"""sglang's messages are spelled, and mapped to their rules and sides, only in ppaux.sglang."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SGLANG = ROOT / "ppaux" / "sglang"

# sglang's nine messages as sglang 0.5.19 - 0.5.23 raise them (srt/sampling/
# sampling_observer_pp.py), written out here so the test does not read them from the code.
_MESSAGES = (
    "auxiliary output does not support pipeline-parallel transport",
    "auxiliary PP output must contain at least one tensor",
    "auxiliary PP tensor names must be non-empty strings",
    "auxiliary PP output {} is not a tensor",
    "duplicate auxiliary PP tensor {}",
    "received auxiliary PP output without a sampling observer",
    "sampling observer does not support pipeline-parallel transport",
    "received a non-tensor auxiliary PP output",
    "sampling observer did not reconstruct its PP output",
)
_PATTERNS = tuple(
    re.compile(".+".join(re.escape(part) for part in message.split("{}"))) for message in _MESSAGES
)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string the module spells outside its docstrings (an f-string's holes as ``{}``)."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            found.append((node.lineno, text))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            found.append((node.lineno, node.value))
    return found


def _sources() -> list[Path]:
    files = [*(ROOT / "ppaux").rglob("*.py"), *(ROOT / "ppaux_cli").rglob("*.py")]
    return [path for path in files if SGLANG not in path.parents]


def test_no_sglang_message_is_spelled_outside_ppaux_sglang():
    spelled = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, text in _strings(tree):
            if any(pattern.search(text) for pattern in _PATTERNS):
                spelled.append(f"{path.relative_to(ROOT)}:{line}: {text[:70]!r}")
    assert spelled == []


def test_the_test_finds_a_message_spelled_in_a_module():
    tree = ast.parse('x = f"duplicate auxiliary PP tensor {name!r}"\ny = "a is not a tensor"\n')
    texts = [text for _, text in _strings(tree)]
    assert [t for t in texts if any(p.search(t) for p in _PATTERNS)] == [
        "duplicate auxiliary PP tensor {}"
    ]


_MAPS = (
    ("ppaux/triage/roots.py", "RULE_OF_MESSAGE"),
    ("ppaux/observer/findings.py", "_SGLANG_RULES"),
)


@pytest.mark.parametrize(("module", "name"), _MAPS)
def test_no_module_outside_ppaux_sglang_maps_messages_to_rules(module, name):
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    assigned = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    assert name not in assigned
    # Neither does any other: no dict outside ppaux.sglang maps messages' ids to rules.
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                pairs = [
                    (k.value, v.value)
                    for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                ]
                rules = [k for k, v in pairs if k in _IDS and re.fullmatch(r"PP\d{3}", str(v))]
                assert rules == [], path


_IDS = {
    "add-unsupported",
    "add-empty",
    "add-bad-name",
    "add-not-tensor",
    "add-duplicate",
    "pop-no-observer",
    "pop-unsupported",
    "pop-non-tensor",
    "pop-not-reconstructed",
}


def test_each_message_has_one_rule_and_side_and_the_catalogue_agrees():
    from ppaux.report.catalogue import RULES
    from ppaux.sglang.messages import MESSAGES

    assert {m.id for m in MESSAGES} == _IDS
    for message in MESSAGES:
        assert message.side == message.function.split("_", 1)[0]
        assert message.rule in RULES
        if message.observer_rule is not None:
            assert RULES[message.observer_rule].sglang_error == message.text
    # What check-observer says of each message is the catalogue's PP7xx rule predicting it.
    predicted = {
        rule.sglang_error: code
        for code, rule in RULES.items()
        if code.startswith("PP7") and rule.sglang_error is not None
    }
    assert {m.text: m.observer_rule for m in MESSAGES if m.observer_rule} == predicted


def test_ppaux_sglang_is_forbidden_every_other_module_of_ppaux():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [alone] = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "sglang-alone"]
    assert alone["type"] == "forbidden" and alone["source_modules"] == ["ppaux.sglang"]
    assert not alone.get("allow_indirect_imports", False)
    top = {
        f"ppaux.{p.stem if p.suffix == '.py' else p.name}"
        for p in (ROOT / "ppaux").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    # Only the two helpers that import nothing of ppaux themselves are left to it.
    assert set(alone["forbidden_modules"]) == top - {
        "ppaux.sglang",
        "ppaux._lazy",
        "ppaux.patterns",
    }
    for helper in ("_lazy.py", "patterns.py"):
        tree = ast.parse((ROOT / "ppaux" / helper).read_text(encoding="utf-8"))
        imported = [
            name
            for node in ast.walk(tree)
            for name in (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
        ]
        assert not [name for name in imported if name.split(".")[0] == "ppaux"], helper
