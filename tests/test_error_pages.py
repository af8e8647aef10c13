"""The error pages of sglang's nine PP messages: their file:line facts against the real release
wheels, ``ppaux explain`` with a message pasted from a log (name and quotes included), near-miss
suggestions, and the docs pages in ``docs/errors/``."""

from __future__ import annotations

import ast
import json
import re
import zipfile

import pytest
from helpers import REPO, cli

from ppaux.report.catalogue import RULES
from ppaux.report.error_pages import ERROR_PAGES, RELEASE_LINES, SCHEDULER_CALLS, page_for
from ppaux.sglang import MESSAGES

DOCS = REPO / "docs"
RELEASES = sorted(RELEASE_LINES)


def test_one_page_per_message_in_sglangs_order():
    assert [page.message_id for page in ERROR_PAGES] == [m.id for m in MESSAGES]
    for page, message in zip(ERROR_PAGES, MESSAGES, strict=True):
        assert page.text == message.template
        assert page.title == message.template
        assert page.function == message.function
        assert page.causes and page.fixes and page.related and page.rules
        for code in page.rules:
            assert code in RULES, (page.message_id, code)
        for other in page.related:
            assert page_for(other).message_id == other != page.message_id


# -- facts from the wheels ---------------------------------------------------------------------


def _raise_text(node: ast.Raise) -> tuple[str, str]:
    """(exception class, message template) of ``raise RuntimeError("...")`` or an f-string."""
    call = node.exc
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    [arg] = call.args
    if isinstance(arg, ast.Constant):
        return call.func.id, arg.value
    assert isinstance(arg, ast.JoinedStr)
    parts = []
    for part in arg.values:
        if isinstance(part, ast.Constant):
            parts.append(part.value)
        else:
            assert isinstance(part, ast.FormattedValue) and part.conversion == ord("r")
            parts.append("{" + ast.unparse(part.value) + "!r}")
    return call.func.id, "".join(parts)


@pytest.mark.wheels
@pytest.mark.parametrize("release", RELEASES)
def test_file_and_line_of_every_raise_and_call_match_the_wheel(release):
    from wheels import sglang_wheel

    with zipfile.ZipFile(sglang_wheel(release)) as wheel:
        transport = wheel.read("sglang/srt/sampling/sampling_observer_pp.py").decode()
        scheduler = wheel.read("sglang/srt/managers/scheduler_pp_mixin.py").decode()
    raises = {
        node.lineno: _raise_text(node)
        for node in ast.walk(ast.parse(transport))
        if isinstance(node, ast.Raise)
    }
    for page in ERROR_PAGES:
        line = RELEASE_LINES[release][page.message_id]
        assert raises[line] == ("RuntimeError", page.text), (release, page.message_id)
        # The raise is inside the function the page names.
        owner = [
            f.name
            for f in ast.walk(ast.parse(transport))
            if isinstance(f, ast.FunctionDef) and f.lineno <= line <= (f.end_lineno or 0)
        ]
        assert owner == [page.function]
    assert len(raises) == len(ERROR_PAGES)
    calls = {}
    for function in ast.walk(ast.parse(scheduler)):
        if not isinstance(function, ast.FunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id.endswith("_auxiliary_output_to_pp_tensors"):
                    calls.setdefault("add", []).append((function.name, node.lineno))
                if node.func.id.endswith("_auxiliary_output_from_pp_tensors"):
                    calls.setdefault("pop", []).append((function.name, node.lineno))
    assert calls == {side: [where] for side, where in SCHEDULER_CALLS[release].items()}


# -- ppaux explain ------------------------------------------------------------------------------


def _pasted(message) -> list[str]:
    text = message.format("scores") if message.takes_name else message.template
    return [
        text,
        f"RuntimeError: {text}",
        f"  RuntimeError: {text}.  ",
        f"[2026-12-02 10:23:24 PP0] Scheduler hit an exception: RuntimeError: {text}",
    ]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.id)
def test_explain_takes_the_message_as_pasted(message):
    page = page_for(message.id)
    for pasted in _pasted(message):
        result = cli("explain", pasted)
        assert result.exit_code == 0, (pasted, result.stderr)
        shown = message.format("scores") if message.takes_name else message.template
        assert result.stdout.startswith(f"RuntimeError: {shown}\n")
        assert f"Raised by {message.function}() on" in result.stdout
        line = RELEASE_LINES["0.5.23"][message.id]
        assert f"sglang/srt/sampling/sampling_observer_pp.py:{line} in 0.5.20-0.5.23" in (
            result.stdout
        )
        for code in page.rules:
            assert f"  - {code} {RULES[code].name}: " in result.stdout
    doc = json.loads(cli("explain", _pasted(message)[1], "-f", "json").stdout)
    assert doc["message_id"] == message.id
    assert doc["message"] == message.template
    assert doc["name"] == ("scores" if message.takes_name else None)
    assert [row["release"] for row in doc["raised_at"]] == RELEASES
    assert doc["rules"] == list(page.rules)


def test_a_name_with_quotes_is_taken_as_repr_writes_it():
    result = cli("explain", """duplicate auxiliary PP tensor "it's" """)
    assert result.exit_code == 0
    assert result.stdout.startswith("""RuntimeError: duplicate auxiliary PP tensor "it's"\n""")


def test_explain_text_fits_80_columns():
    for message in MESSAGES:
        text = cli("explain", message.format("x") if message.takes_name else message.template)
        for line in text.stdout.splitlines():
            assert len(line) <= 80, line


def test_explain_takes_a_rule_name_and_suggests_near_misses():
    assert cli("explain", "aux-non-tensor").stdout == cli("explain", "PP101").stdout
    assert cli("explain", "AUX-NON-TENSOR").exit_code == 0
    cases = {
        "PP1O1": "unknown rule code 'PP1O1'; 'ppaux rules' lists them; did you mean 'PP101'?",
        "aux-non-tensr": "unknown rule name 'aux-non-tensr'; 'ppaux rules' lists them; "
        "did you mean 'aux-non-tensor'?",
        "received a non tensor auxiliary PP output": "'received a non tensor auxiliary PP "
        "output' is none of sglang's nine PP messages; docs/errors/index.md lists them; "
        "did you mean 'received a non-tensor auxiliary PP output'?",
        "RuntimeError: duplicate auxiliary PP tensors 'scores'": '"RuntimeError: duplicate '
        "auxiliary PP tensors 'scores'\" is none of sglang's nine PP messages; "
        "docs/errors/index.md lists them; did you mean 'duplicate auxiliary PP tensor "
        "{name!r}'?",
        "hello world": "'hello world' is none of sglang's nine PP messages; "
        "docs/errors/index.md lists them",
    }
    for value, message in cases.items():
        result = cli("explain", value)
        assert result.exit_code == 2
        assert result.stderr == f"ppaux: error: {message}\n"


def test_explain_markdown_renders_outside_the_docs_site():
    rule = cli("explain", "PP101", "-f", "markdown").stdout
    assert rule.startswith("## PP101 aux-non-tensor\n")
    assert "{ #" not in rule
    page = cli("explain", "received a non-tensor auxiliary PP output", "-f", "markdown").stdout
    assert page.startswith("# `received a non-tensor auxiliary PP output`\n")
    assert "{ #" not in page
    assert "](" not in page  # no link to a page that only the docs site has
    assert "| 0.5.19 | `sglang/srt/sampling/sampling_observer_pp.py:79` |" in page


# -- the docs pages ----------------------------------------------------------------------------


def _generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "generate_docs", REPO / "scripts" / "generate_docs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_error_pages_are_current_in_the_nav_and_linked():
    pages = _generator().error_pages()
    assert len(pages) == len(ERROR_PAGES) + 1
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    anchors = {f"../catalogue.md#{code.lower()}" for code in RULES}
    for path, text in pages.items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is out of date: run python scripts/generate_docs.py"
        )
        assert f"errors/{path.name}" in nav
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith("../catalogue.md#"):
                assert target in anchors
            else:
                assert (path.parent / target).exists(), (path.name, target)
    assert sorted(p.name for p in (DOCS / "errors").glob("*.md")) == sorted(p.name for p in pages)


def test_pages_say_where_each_release_raises():
    text = (DOCS / "errors" / "pop-non-tensor.md").read_text(encoding="utf-8")
    assert "# `received a non-tensor auxiliary PP output`" in text
    assert (
        "| 0.5.23 | `sglang/srt/sampling/sampling_observer_pp.py:77` | "
        "`_pp_prep_batch_result()` at `sglang/srt/managers/scheduler_pp_mixin.py:991` |"
    ) in text
    assert "[PP101 aux-non-tensor](../catalogue.md#pp101)" in text


def test_explain_page_shows_what_explain_prints():
    text = (DOCS / "explain.md").read_text(encoding="utf-8")
    shown = text.split(
        "$ ppaux explain \"RuntimeError: duplicate auxiliary PP tensor 'scores'\"\n"
    )[1]
    shown = shown.split("```", 1)[0]
    printed = cli("explain", "RuntimeError: duplicate auxiliary PP tensor 'scores'").stdout
    for part in shown.split("...\n"):
        assert part in printed, part
    for line in re.findall(r"^ppaux: error: .*$", text, re.M):
        value = re.search(r"(?:code|name) '([^']+)'|^ppaux: error: '([^']+)' is none", line)
        assert value is not None, line
        result = cli("explain", value.group(1) or value.group(2))
        assert result.stderr == line + "\n"
