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
from ppaux.report.error_pages import ERROR_PAGES, page_for
from ppaux.sglang import MESSAGES, RELEASE_LINES, SCHEDULER_CALLS

DOCS = REPO / "docs"
RELEASES = sorted(RELEASE_LINES)


def test_one_page_per_message_in_sglangs_order():
    assert [page.message_id for page in ERROR_PAGES] == [m.id for m in MESSAGES]
    for page, message in zip(ERROR_PAGES, MESSAGES, strict=True):
        assert page.text == message.template
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


def test_explain_text_fits_the_width():
    for columns in (80, 100):
        for message in MESSAGES:
            pasted = message.format("x") if message.takes_name else message.template
            text = cli("explain", pasted, env={"COLUMNS": str(columns)})
            for line in text.stdout.splitlines():
                assert len(line) <= columns, line


def test_explain_takes_a_rule_name_and_suggests_near_misses():
    assert cli("explain", "aux-non-tensor").stdout == cli("explain", "PP101").stdout
    assert cli("explain", "AUX-NON-TENSOR").exit_code == 0
    cases = {
        "PP1O1": "unknown rule code 'PP1O1'; 'ppaux rules' lists them; did you mean 'PP101'?",
        "aux-non-tensr": "unknown rule name 'aux-non-tensr'; 'ppaux rules' lists them; "
        "did you mean 'aux-non-tensor'?",
        "received a non tensor auxiliary PP output": "'received a non tensor auxiliary PP "
        "output' is none of sglang's nine PP messages; 'ppaux rules' lists the rules that "
        "predict them; "
        "did you mean 'received a non-tensor auxiliary PP output'?",
        "RuntimeError: duplicate auxiliary PP tensors 'scores'": '"RuntimeError: duplicate '
        "auxiliary PP tensors 'scores'\" is none of sglang's nine PP messages; "
        "'ppaux rules' lists the rules that predict them; did you mean 'duplicate auxiliary PP "
        "tensor "
        "{name!r}'?",
        "hello world": "'hello world' is none of sglang's nine PP messages; "
        "'ppaux rules' lists the rules that predict them",
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


def _anchors(page):
    """The ids the docs site gives the headings of ``page`` (Python-Markdown's toc slugs)."""
    from markdown.extensions.toc import slugify

    text = (DOCS / page).read_text(encoding="utf-8")
    return {slugify(heading, "-") for heading in re.findall(r"^#+ (.+)$", text, re.M)}


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
                page, _, section = target.partition("#")
                assert (path.parent / page).exists(), (path.name, target)
                if section:
                    assert section in _anchors(path.parent / page), (path.name, target)
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
    printed = cli(
        "explain", "RuntimeError: duplicate auxiliary PP tensor 'scores'", env={"COLUMNS": "80"}
    ).stdout
    for part in shown.split("...\n"):
        assert part in printed, part
    headlines = "ppaux: error: none of sglang's nine PP messages: "
    for line in re.findall(r"^ppaux: error: .*$", text, re.M):
        if line.startswith(headlines):
            continue  # a headline, with the lines under it: below
        value = re.search(r"(?:code|name) '([^']+)'|^ppaux: error: '([^']+)' is none", line)
        assert value is not None, line
        result = cli("explain", value.group(1) or value.group(2))
        assert result.stderr == line + "\n"
    examples = re.findall(
        r'^\$ ppaux explain "([^"]+)"\n(ppaux: error: .*\n(?:  .*\n)*)', text, re.M
    )
    assert len(examples) == 2
    for pasted, said in examples:
        headline, *under = said.splitlines()
        result = cli("explain", pasted, env={"COLUMNS": "80"})  # the width the page shows
        assert result.stderr.splitlines()[0] == headline
        for part in "\n".join(under).split("(...)"):
            assert part in result.stderr, part


# -- the rules on each page, and the order of its fixes -----------------------------------------


def _pages_of(error: str) -> list[str]:
    """The ids of the messages ``error`` is (read here, not through ppaux): the template itself,
    ``RuntimeError:`` in front or not, or the message with a quoted name."""
    bare = error.strip().removeprefix("RuntimeError:").strip()
    found = []
    for message in MESSAGES:
        before, field, after = message.template.partition("{name!r}")
        if field:
            pattern = re.escape(before) + r"""(\{name!r\}|'[^']*'|"[^"]*")""" + re.escape(after)
        else:
            pattern = re.escape(message.template)
        if re.fullmatch(pattern, bare):
            found.append(message.id)
    return found


def _example(page):
    """The page's message as a log shows it: with a name where it takes one."""
    message = next(m for m in MESSAGES if m.id == page.message_id)
    return message.format("scores") if message.takes_name else message.template


def test_every_rule_predicting_a_message_is_on_its_page():
    linked = {}
    for code, rule in RULES.items():
        if rule.sglang_error is None:
            continue
        for message_id in _pages_of(rule.sglang_error):
            linked[code] = message_id
            page = page_for(message_id)
            assert code in page.rules and code in page.predicted_by, (code, message_id)
            shown = f"{code} {rule.name}"
            assert f"  - {shown}: " in cli("explain", _example(page)).stdout, (code, message_id)
            docs = (DOCS / "errors" / f"{message_id}.md").read_text(encoding="utf-8")
            assert f"[{shown}](../catalogue.md#{code.lower()})" in docs, (code, message_id)
    # The observer check's rules, as docs/observers.md lists them, are among them.
    assert {
        "PP701": "add-unsupported",
        "PP702": "pop-unsupported",
        "PP703": "add-empty",
        "PP704": "add-bad-name",
        "PP705": "add-not-tensor",
        "PP706": "pop-non-tensor",
        "PP707": "pop-not-reconstructed",
    }.items() <= linked.items()


def test_a_rule_added_to_the_catalogue_reaches_its_page(monkeypatch):
    from ppaux.report import Rule, Severity, error_page_markdown, error_page_text

    rule = Rule(
        code="PP799",
        name="made-up",
        severity=Severity.ERROR,
        summary="A rule that no page names by hand.",
        explanation="",
        causes=(),
        fix="",
        sglang_error="RuntimeError: duplicate auxiliary PP tensor 'scores'",
    )
    page = page_for("add-duplicate")
    assert "PP799" not in page.rules
    monkeypatch.setitem(RULES, "PP799", rule)
    assert "PP799" in page.rules
    assert [p.message_id for p in ERROR_PAGES if "PP799" in p.rules] == ["add-duplicate"]
    assert "  - PP799 made-up: A rule that no page names by hand.\n" in error_page_text(page)
    assert "- [PP799 made-up](../catalogue.md#pp799): " in error_page_markdown(page)


def test_fixes_start_from_the_log_and_make_a_capture_before_reading_one():
    for page in ERROR_PAGES:
        first = page.fixes[0]
        assert first.command.startswith("ppaux triage "), page.message_id
        assert [doc for doc, _ in first.see] == ["triage.md", "walkthrough.md"]
        made = False
        for number, fix in enumerate(page.fixes, 1):
            if "capture-..." in fix.command:
                assert made, f"{page.message_id}: fix {number} reads a capture not made yet"
            made = made or "PPAUX_CAPTURE_DIR=" in fix.command
        text = cli("explain", _example(page)).stdout
        assert "  1. If all you have is the log, start there" in text
        words = " ".join(text.split())
        assert "See docs/triage.md (" in words and "docs/walkthrough.md (" in words


#: The pages of messages an observer's own methods cause, and an observer that causes each.
OBSERVER_PAGES = {
    "add-unsupported": "faulty.py:NoToPPObserver",
    "add-empty": "faulty.py:EmptyObserver",
    "add-bad-name": "faulty.py:BadNameObserver",
    "add-not-tensor": "entropy_list.py:EntropyObserver",
    "pop-unsupported": "faulty.py:NoFromPPObserver",
    "pop-non-tensor": "entropy_list.py:EntropyObserver",
    "pop-not-reconstructed": "faulty.py:NotRebuiltObserver",
}


@pytest.mark.parametrize("message_id", sorted(OBSERVER_PAGES))
def test_observer_pages_lead_to_check_observer_and_it_reproduces_the_message(message_id):
    import shlex

    page = page_for(message_id)
    [step] = [fix for fix in page.fixes if "ppaux check-observer " in fix.command]
    [tests] = [fix for fix in page.fixes if "assert_pp_safe(" in fix.command]
    assert page.fixes.index(step) < page.fixes.index(tests)
    assert all(doc.startswith("observers.md#") for doc, _ in step.see + tests.see)
    docs = (DOCS / "errors" / f"{message_id}.md").read_text(encoding="utf-8")
    assert "](../observers.md#check-it-ppaux-check-observer)" in docs
    assert "](../observers.md#keep-it-fixed-in-your-own-test-suite)" in docs
    code = re.search(r"reports this message as (PP7\d\d)", step.text).group(1)
    assert code in page.predicted_by
    # The page's own command, on an observer that has the fault, finds it and predicts the
    # page's message.
    command = step.command.splitlines()[1]
    target = str(REPO / "fixtures" / "observers" / OBSERVER_PAGES[message_id])
    args = shlex.split(command.replace("path/to/observers.py:MyObserver", target))
    assert args[:2] == ["ppaux", "check-observer"]
    result = cli(*args[1:], "--format", "json")
    assert result.exit_code == 1, result.stderr
    found = [f for f in json.loads(result.stdout)["findings"] if f["code"] == code]
    assert found, (message_id, code)
    assert _pages_of(found[0]["sglang_error"]) == [message_id]


def test_pages_of_messages_the_observer_cannot_cause_do_not_send_there():
    for page in ERROR_PAGES:
        sends = any("check-observer" in fix.command for fix in page.fixes)
        assert sends == (page.message_id in OBSERVER_PAGES), page.message_id


# -- ppaux explain - -----------------------------------------------------------------------------


def test_explain_reads_a_traceback_from_stdin():
    log = (REPO / "fixtures" / "logs" / "sglang-aux-list.log").read_text(encoding="utf-8")
    start = log.index("Scheduler hit an exception: Traceback")
    traceback = log[log.rindex("\n", 0, start) + 1 :]
    traceback = traceback[: traceback.index("\n\n") + 1]
    assert traceback.count("\n") > 5
    result = cli("explain", "-", input=traceback)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == cli("explain", "received a non-tensor auxiliary PP output").stdout
    named = (
        "Traceback (most recent call last):\r\n  ...\r\n"
        "RuntimeError: duplicate auxiliary PP tensor 'scores'\r\n"
    )
    doc = json.loads(cli("explain", "-", "-f", "json", input=named).stdout)
    assert (doc["message_id"], doc["name"]) == ("add-duplicate", "scores")
    # One line from stdin is what the argument would be: a code, a name or a message.
    assert cli("explain", "-", input="pp705\n").stdout == cli("explain", "PP705").stdout
    assert cli("explain", "-", input="aux-non-tensor").stdout == cli("explain", "PP101").stdout


def test_explain_stdin_refusals():
    from ppaux_cli.commands.explain import STDIN_LIMIT

    cases = {
        "": "-: stdin is empty; pipe a message or a traceback in, as in "
        "'ppaux explain - < traceback.txt'",
        " \n\n": "-: stdin is empty; pipe a message or a traceback in, as in "
        "'ppaux explain - < traceback.txt'",
        # one headline, then the whole reading under it
        "Traceback (most recent call last):\nValueError: nope\n": "-: none of sglang's nine "
        "PP messages is in the 2 lines read from stdin: it is a failure of another kind; "
        "'ppaux triage' on the whole log names the root\n  it is a failure of another kind (not "
        "communication, memory or a shape or kernel error): 'ppaux\n    triage' on the whole log "
        "(or 'ppaux triage -' from stdin) names the root, its rank and what to\n    do next",
        "received a non-tensor auxiliary PP output\n" + "x" * STDIN_LIMIT: "-: stdin holds "
        "more than 4 MiB; explain reads one message or traceback: pipe the traceback alone, "
        "or give the whole log to 'ppaux triage -'",
        # an executable piped by mistake: said to be binary, its bytes not quoted back
        "\x7fELF\x02\x01\x01" + "\x00\x01\x02\x03\x04" * 60: "-: stdin holds binary data, not "
        "a message or a traceback",
        "hello\n": "'hello' is none of sglang's nine PP messages, nor a rule code or name; "
        "'ppaux rules' lists the rules; 'ppaux triage' on the whole log names the root",
    }
    for given, message in cases.items():
        result = cli("explain", "-", input=given)
        assert result.exit_code == 2, given[:40]
        assert result.stderr == f"ppaux: error: {message}\n"
        assert result.stdout == ""


@pytest.mark.parametrize("text", ["^^^^^^^^^^^^", "run(args)", "]", "====", "----", "hello"])
def test_explain_reads_text_of_a_log_as_no_message_not_as_a_mistyped_code(text):
    result = cli("explain", "--", text)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"ppaux: error: {text!r} is none of sglang's nine PP messages")
    assert "unknown rule" not in result.stderr


@pytest.mark.parametrize("text", ["PP999", "pp10", "QQ999", "PP1O1", "pp"])
def test_explain_reads_text_shaped_like_a_code_as_a_code(text):
    result = cli("explain", "--", text)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"ppaux: error: unknown rule code {text!r}")
