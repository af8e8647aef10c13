"""Each finding says which of its rule's messages it is (``message_id``), apart from the words:
the code itself for a rule's one message, ``code/name`` where the rule has several. The JSON
document carries it on every finding, SARIF in each result's properties (``ruleId`` stays the
code)."""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.limits import Limits
from ppaux.report import RULES, FindingsBudget, Format, Report, finding, render

_SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs" / "report.schema.json").read_text("utf-8")
)
_ID = re.compile(r"^PP[0-9]{3}(/[a-z0-9-]+)?$")
_CODES = st.sampled_from(sorted(RULES))
_NAMES = st.from_regex(r"[a-z0-9]+(-[a-z0-9]+)*", fullmatch=True).filter(lambda s: len(s) < 30)


@settings(max_examples=20)
@given(_CODES, st.text(max_size=40), st.text(max_size=40))
def test_a_rules_one_message_is_its_code_whatever_its_words(code, words, other):
    first, second = finding(code, "a.pt", words), finding(code, "a.pt", other)
    assert first.message_id == second.message_id == code
    assert first.to_json()["message_id"] == code
    report = Report("inspect", findings=(first,), data={"files": []})
    sarif = json.loads(render(report, Format.SARIF))
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == code and result["properties"]["message_id"] == code


@settings(max_examples=12)
@given(_CODES, _NAMES, st.text(max_size=40), st.text(max_size=40))
def test_a_named_message_keeps_its_id_whatever_its_words(code, name, words, other):
    first = finding(f"{code}/{name}", "a.pt", words)
    second = finding(f"{code}/{name}", "b.pt", other)
    assert first.message_id == second.message_id == f"{code}/{name}"
    assert first.code == code and first.severity is RULES[code].severity
    assert first.to_json()["message_id"] == f"{code}/{name}"
    report = Report("inspect", findings=(first,), data={"files": []})
    document = json.loads(render(report, Format.JSON))
    assert document["findings"][0]["message_id"] == f"{code}/{name}"
    sarif = json.loads(render(report, Format.SARIF))
    assert sarif["runs"][0]["results"][0]["properties"]["message_id"] == f"{code}/{name}"


def test_the_schema_takes_a_message_id_and_refuses_one_of_another_shape():
    named = finding("PP319/not-found", "stage", "sglang was not found")
    report = Report("inspect", findings=(named,), data={"files": []})
    document = json.loads(render(report, Format.JSON))
    jsonschema.validate(document, _SCHEMA)
    document["findings"][0]["message_id"] = "sglang was not found"
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        jsonschema.validate(document, _SCHEMA)


def test_the_finding_that_counts_those_not_listed_is_named_omitted():
    found = [finding("PP101", "a.pt", f"key {n}") for n in range(5)]
    kept = FindingsBudget(Limits(max_findings_per_code=2)).cap(found)
    assert [f.message_id for f in kept] == ["PP101", "PP101", "PP101/omitted"]
    assert kept[-1].extra == {"omitted": 3}
    # a dump's budget counts its findings past the bound the same way, before the report's cut
    budget = FindingsBudget(Limits(max_findings_per_code=1))
    assert [budget.take("PP602") for _ in range(4)] == [True, False, False, False]
    (counted,) = budget.counted("a.pt")
    assert counted.message_id == "PP602/omitted" and counted.extra == {"omitted": 3}


ROOT = Path(__file__).resolve().parent.parent
#: The calls that build a finding from a message id given as their first argument.
BUILDERS = {"finding", "Finding"}
#: An id made of any code and a name (``f"{code}/omitted"``) stands for that name's message of
#: every code, held under this mark: each such name is one message, built in one place.
FAMILY = "*"


def _literals(node: ast.expr) -> list[str] | None:
    """The strings ``node`` may be, where it is a literal, a choice of literals or a code
    joined to a literal name (``f"{code}/name"``: ``*/name``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = _literals(node.body), _literals(node.orelse)
        return None if body is None or orelse is None else body + orelse
    if isinstance(node, ast.JoinedStr) and len(node.values) == 2:
        code, name = node.values
        if isinstance(code, ast.FormattedValue) and isinstance(name, ast.Constant):
            if re.fullmatch(r"/[a-z0-9-]+", str(name.value)):
                return [f"{FAMILY}{name.value}"]
    return None


def _table(tree: ast.Module, node: ast.expr) -> list[str] | None:
    """The ids ``node`` may be, where it reads a table of the module: ``TABLE.get(key,
    default)`` or ``TABLE[key]``, TABLE a dict whose values are literals."""
    default: list[ast.expr] = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr != "get" or len(node.args) != 2:
            return None
        table, default = node.func.value, [node.args[1]]
    elif isinstance(node, ast.Subscript):
        table = node.value
    else:
        return None
    if not isinstance(table, ast.Name):
        return None
    values = _assigned(tree, table.id) or []
    tables = [v for v in values if isinstance(v, ast.Dict)]
    if not tables or len(tables) != len(values):
        return None
    options = [_literals(v) for d in tables for v in [*d.values, *default]]
    return None if any(o is None for o in options) else [i for o in options for i in o]


#: The fields of sglang's messages (``SglangMessage``) that hold a rule's id, and where each
#: stands among the constructor's arguments.
_MESSAGE_RULES = {"rule": 3, "observer_rule": 4}


def _message_rules(node: ast.expr) -> list[str] | None:
    """The ids ``node`` may be, where it reads a rule of one of sglang's messages
    (``x.message.observer_rule``), or failing that a literal (``... or "PP708"``): every
    literal the messages of ``ppaux/sglang/messages.py`` give that field."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        options = [_message_rules(v) or _literals(v) for v in node.values]
        return None if any(o is None for o in options) else [i for o in options for i in o]
    if not (isinstance(node, ast.Attribute) and node.attr in _MESSAGE_RULES):
        return None
    index = _MESSAGE_RULES[node.attr]
    source = (ROOT / "ppaux" / "sglang" / "messages.py").read_text(encoding="utf-8")
    return [
        call.args[index].value
        for call in ast.walk(ast.parse(source))
        if isinstance(call, ast.Call) and ast.unparse(call.func) == "SglangMessage"
        if len(call.args) > index and isinstance(call.args[index], ast.Constant)
    ]


def _returned(tree: ast.Module, node: ast.expr) -> list[str] | None:
    """The ids ``node`` may be, where it calls a function of the module each of whose returns
    is a literal or reads a table of literals (:func:`_table`)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    functions = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == node.func.id]
    if len(functions) != 1:
        return None
    returns = [r.value for r in ast.walk(functions[0]) if isinstance(r, ast.Return)]
    if not returns or any(r is None for r in returns):
        return None
    options = [
        _literals(r) or _table(tree, r) or _message_rules(r) for r in returns if r is not None
    ]
    return None if any(o is None for o in options) else [i for o in options for i in o]


def _error_codes(
    texts: dict[str, str], function: ast.FunctionDef, call: ast.Call
) -> list[str] | None:
    """The ids the first argument of ``call`` may be, where it is ``error.code`` of the error
    caught by the handler the call is in (``except SomeError as error``): the ``code`` of
    SomeError and of each of its subclasses in the library, class attributes given as
    literals."""
    node = call.args[0]
    if not (
        isinstance(node, ast.Attribute) and node.attr == "code" and isinstance(node.value, ast.Name)
    ):
        return None
    caught = {
        h.type.id
        for h in ast.walk(function)
        if isinstance(h, ast.ExceptHandler) and h.name == node.value.id
        if isinstance(h.type, ast.Name) and any(n is call for n in ast.walk(h))
    }
    if len(caught) != 1:
        return None
    classes = _classes(tuple(sorted(texts.items())))
    family, grown = set(caught), True
    while grown:
        more = {name for name, (bases, _) in classes.items() if set(bases) & family}
        grown = not more <= family
        family |= more
    (name,) = caught
    if name not in classes or classes[name][1] is None:
        return None
    return [code for n in sorted(family) if n in classes and (code := classes[n][1])]


@functools.cache
def _classes(texts: tuple[tuple[str, str], ...]) -> dict[str, tuple[list[str], str | None]]:
    """Each class of the library: the names of its bases and its ``code``, where it gives
    one as a literal class attribute (None where not)."""
    out: dict[str, tuple[list[str], str | None]] = {}
    for _, text in texts:
        if "class " not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
                code = next(
                    (
                        s.value.value
                        for s in node.body
                        if isinstance(s, ast.Assign)
                        and [ast.unparse(t) for t in s.targets] == ["code"]
                        and isinstance(s.value, ast.Constant)
                    ),
                    None,
                )
                out[node.name] = (bases, code)
    return out


def _assigned(scope: ast.AST, name: str) -> list[ast.expr] | None:
    """The values assigned to ``name`` in ``scope`` (tuple unpacking and loops over literal
    tuples followed), or None where one cannot be told."""
    values: list[ast.expr] = []
    for node in ast.walk(scope):
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs = [(node.target, node.value)]
        elif isinstance(node, ast.For):
            if isinstance(node.iter, (ast.Tuple, ast.List)):
                pairs = [(node.target, item) for item in node.iter.elts]
            else:
                pairs = [(node.target, node.iter)]
        for target, value in pairs:
            if isinstance(target, ast.Name) and target.id == name:
                values.append(value)
            elif isinstance(target, ast.Tuple) and name in [
                e.id for e in target.elts if isinstance(e, ast.Name)
            ]:
                at = [e.id if isinstance(e, ast.Name) else "" for e in target.elts].index(name)
                if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts):
                    return None
                values.append(value.elts[at])
    return values


def _parameters(function: ast.FunctionDef) -> list[str]:
    names = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def _imports(tree: ast.Module) -> dict[str, str]:
    """The module file each name imported by ``from ppaux... import name`` comes from."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ppaux"):
            base = (node.module or "").replace(".", "/")
            for alias in node.names:
                out[alias.asname or alias.name] = base
    return out


def _callee(call: ast.Call, name: str, imports: dict[str, str]) -> tuple[str, str] | None:
    """(module, function) of what ``call`` in the module ``name`` calls, as far as the scan
    tells: a builder by its name, a function of its own module or imported from another, or a
    method of its own class (``self.f``)."""
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in BUILDERS:
            return ("*", func.id)
        base = imports.get(func.id)
        if base is None:
            return (name, func.id)
        return (f"{base}.py", func.id) if (ROOT / f"{base}.py").exists() else ("*", func.id)
    if isinstance(func, ast.Attribute):
        if func.attr in BUILDERS:
            return ("*", func.attr)
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            return (name, func.attr)
    return None


def _calls_by_name(text: str, name: str) -> bool:
    """Whether ``text`` calls something named ``name`` (not only a name ending so)."""
    return f"{name}(" in text and re.search(rf"(?<![\w]){name}\(", text) is not None


def _calls(tree: ast.Module) -> list[tuple[ast.Call, ast.FunctionDef | None]]:
    """Each call in ``tree`` with the innermost function it is made in (None: the module)."""
    out = []
    stack: list[tuple[ast.AST, ast.FunctionDef | None]] = [(tree, None)]
    while stack:
        node, function = stack.pop()
        if isinstance(node, ast.Call):
            out.append((node, function))
        inner = node if isinstance(node, ast.FunctionDef) else function
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _LEAVES):  # no call is made inside these
                stack.append((child, inner))
    return out


_LEAVES = (ast.Constant, ast.Name, ast.JoinedStr, ast.expr_context, ast.operator, ast.alias)


def _library() -> dict[str, str]:
    """The text of each module of the library, by its path."""
    return {
        path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted((ROOT / "ppaux").rglob("*.py"))
    }


@functools.cache
def _scan(
    planted: tuple[tuple[str, str], ...] = (),
) -> tuple[list[tuple[str, str, str]], frozenset[tuple[str, str]]]:
    """Every build site in the library whose id the scan follows to a literal, as (where, the
    message's source text, the id), and the (module, function) of those it cannot follow.

    A site's id is followed through the names assigned in its function or module; an id that
    is a parameter makes the function a builder too, whose callers' ids are followed in turn
    (its message: the argument passed through, else its own text and the caller's literals).
    Only the modules that call a builder by its name are read. An id is also followed into
    a call of a function of its module returning literals or a table's (:func:`_returned`)
    and to the codes of an error caught (:func:`_error_codes`).
    """
    texts = {**_library(), **dict(planted)}  # ``planted``: modules added, for the tests
    # (module, name) -> (index of the id, index of the message or None, the message's text)
    builders: dict[tuple[str, str], tuple[int, int | None, str]] = {
        ("*", b): (0, 2, "") for b in BUILDERS
    }
    calls: dict[str, list[tuple[ast.Module, ast.FunctionDef | None, ast.Call, tuple]]] = {}
    sites: dict[tuple[str, int, str], tuple[str, str]] = {}
    unfollowed: set[tuple[str, str]] = set()
    while True:
        before = (len(builders), len(calls))
        names = {name for _, name in builders}
        for module, text in texts.items():
            if module not in calls and any(_calls_by_name(text, name) for name in names):
                tree = ast.parse(text)
                imports = _imports(tree)
                calls[module] = [
                    (tree, function, call, callee)
                    for call, function in _calls(tree)
                    if (callee := _callee(call, module, imports)) is not None
                ]
        for module, found in calls.items():
            for tree, function, call, callee in found:
                if callee in builders:
                    builder = builders[callee]
                    _site(module, tree, function, call, builder, builders, sites, unfollowed, texts)
        if (len(builders), len(calls)) == before:
            break
    found = [(where, message, mid) for (where, _, mid), (message, _) in sorted(sites.items())]
    return found, frozenset(unfollowed)


def _site(name, tree, function, call, builder, builders, sites, unfollowed, texts):
    """Record the build site ``call`` of ``builder`` (in ``function`` of the module ``name``),
    if it is one."""
    if len(call.args) <= builder[0]:
        return
    index, passed, text = builder
    if passed is not None and len(call.args) <= passed:
        return
    first = call.args[index]
    if passed is not None:
        message = ast.unparse(call.args[passed])
    else:
        given = [a.value for a in call.args if isinstance(a, ast.Constant)]
        message = f"{text} {given}"
    ids = _literals(first)
    if ids is None and isinstance(first, ast.Name) and function is not None:
        if first.id in _parameters(function):
            params = _parameters(function)
            inner = call.args[passed] if passed is not None else None
            through = (
                params.index(inner.id)
                if isinstance(inner, ast.Name) and inner.id in params
                else None
            )
            builders.setdefault((name, function.name), (params.index(first.id), through, message))
            return
        values = _assigned(function, first.id) or _assigned(tree, first.id)
        if values:
            options = [_literals(v) or _returned(tree, v) for v in values]
            ids = None if any(o is None for o in options) else [i for o in options for i in o]
    if ids is None and function is not None:
        ids = _error_codes(texts, function, call)
    if ids is None:
        unfollowed.add((name, function.name if function is not None else "<module>"))
        return
    for mid in ids:
        if mid[:5] in RULES or mid[:2] == "PP" or mid[:1] == FAMILY:
            sites[(f"{name}:{call.lineno}", call.col_offset, mid)] = (message, mid)


def _build_sites(
    planted: tuple[tuple[str, str], ...] = (),
) -> dict[str, list[tuple[str, str, str]]]:
    """Each code's build sites in the library (with the modules ``planted``) whose message id
    the scan follows to a literal: (where, the message's source text, the id)."""
    sites: dict[str, list[tuple[str, str, str]]] = {}
    for where, message, message_id in _scan(planted)[0]:
        sites.setdefault(message_id.partition("/")[0], []).append((where, message, message_id))
    return sites


def _shared_ids(planted: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """What is wrong with the ids of the build sites: an id not of its code's shape, or one
    that two sites give to messages worded differently."""
    problems = []
    for code, found in _build_sites(planted).items():
        by_id: dict[str, set[str]] = {}
        for where, message, message_id in found:
            by_id.setdefault(message_id, set()).add(message)
            shape = _ID.match(message_id) or re.fullmatch(r"\*/[a-z0-9-]+", message_id)
            if not shape or not message_id.startswith(code):
                problems.append(f"{where}: {message_id!r} is not {code} or {code}/lower-kebab")
        problems += [
            f"{code}: {len(messages)} different messages share the id {message_id}"
            for message_id, messages in by_id.items()
            if len(messages) > 1
        ]
    return problems


def test_the_scan_finds_the_build_sites_it_must():
    # The scan below is only as good as what it sees: these sites are known to build findings.
    sites = _build_sites()
    assert {"PP101", "PP115", "PP319", "PP710", "PP803"} <= set(sites)
    assert [message_id for _, _, message_id in sites["PP115"]] == [
        "PP115/bad-name",
        "PP115/not-tensor",
        "PP115/duplicate",
    ]
    # ids held in a name (a choice of two), passed to a function of its own, or unpacked
    assert {"PP801", "PP802"} <= {m for _, _, m in sites["PP801"] + sites["PP802"]}
    assert "PP324" in sites and "PP711" in sites and "PP113" in sites
    # an error's code (each subclass's), a function's table of codes, each code's omitted
    caught = {m for _, message, m in _scan()[0] if message == "exc.reason"}
    assert caught == {"PP117", "PP118", "PP202", "PP203"}
    assert {"PP701", "PP704", "PP707", "PP708", "PP709"} <= {
        m for where, _, m in _scan()[0] if where.startswith("ppaux/observer/findings.py")
    }
    assert [m for _, _, m in sites[FAMILY]] == ["*/omitted"]


def test_every_build_site_is_followed():
    assert _scan()[1] == set()


def test_each_message_of_a_rule_has_its_own_id():
    # Two build sites of one code that word different messages give them different ids.
    problems = _shared_ids()
    assert not problems, "\n".join(problems)


_PLANTED = """
from ppaux.report import finding

def planted(code):
    return finding({id}, "a.pt", "worded another way")
"""


@pytest.mark.parametrize(
    "planted",
    [
        '"PP118"',  # a code of an error caught (NotAsWritten)
        '"PP704"',  # a code of sglang's messages' table
        '"PP708"',  # the table's default
        'f"{code}/omitted"',  # each code's omitted, worded again
        '"PP115/duplicate"',  # a literal id
    ],
)
def test_a_planted_site_that_gives_an_id_to_another_message_fails_the_scan(planted):
    module = ("ppaux/planted.py", _PLANTED.format(id=planted))
    problems = _shared_ids((module,))
    assert any("different messages share the id" in p for p in problems), problems
    assert not _shared_ids()


def test_a_planted_site_the_scan_cannot_follow_fails_it():
    module = ("ppaux/planted.py", _PLANTED.format(id="code.upper()"))
    assert _scan((module,))[1] == {("ppaux/planted.py", "planted")}


def _golden_findings() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for path in sorted((ROOT / "tests" / "golden").rglob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(document, dict):
            out += [f for f in document.get("findings", []) if isinstance(f, dict)]
    return out


def test_every_finding_in_the_golden_reports_carries_its_id():
    findings = _golden_findings()
    assert len(findings) > 50
    for item in findings:
        message_id = item["message_id"]
        assert isinstance(message_id, str) and _ID.match(message_id), item
        assert message_id.split("/")[0] == item["code"], item


def test_the_schema_requires_the_id():
    schema = json.loads((ROOT / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    definition = schema["$defs"]["finding"]
    assert "message_id" in definition["required"]
    assert re.compile(definition["properties"]["message_id"]["pattern"]).pattern == _ID.pattern
