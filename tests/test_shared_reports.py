"""--format markdown and --format html from every command that writes a report.

The Markdown is read back with a Markdown renderer (Python-Markdown, as mkdocs uses it): the
text of keys and messages must come out as written, with no emphasis made of their
underscores and no markup of their own. The HTML is checked for self-containment here, and as
a rendered page in tests/test_html_browser.py.
"""

from __future__ import annotations

import re
import shutil

import markdown as python_markdown
import pytest
from helpers import REPO, ppaux_process

from ppaux.report.document import Report, Table
from ppaux.report.findings import Finding, Severity
from ppaux.report.formats import Format, render

DUMPS = REPO / "fixtures" / "dumps"
SKEW = REPO / "fixtures" / "skew" / "fingerprints"


def _markdown_html(text: str) -> str:
    return python_markdown.markdown(text, extensions=["tables"])


def test_inspect_markdown_renders_the_key_and_the_finding_literally():
    done = ppaux_process("inspect", "fixtures/dumps/aux_list.pt", "--format", "markdown")
    assert done.returncode == 1
    assert done.stdout.startswith(
        "## ppaux inspect\n\n**fails the gate** (fail-on error): 1 error(s), 0 warning(s), "
        "0 info, 0 input(s) not checked.\n"
    )
    page = _markdown_html(done.stdout)
    # The key table and the findings table are tables once rendered.
    assert page.count("<table>") == 2
    assert (
        "<td><code>fixtures/dumps/aux_list.pt</code> "
        "<code>__sampling_observer_output__.scores</code></td>" in page
    )
    # The key table marks the entry the finding is about.
    assert "<td><strong>__sampling_observer_output__.scores</strong></td>" in page
    # Bold only where ppaux asked for it: the verdict and the marked cell.
    assert re.findall(r"<strong>(.*?)</strong>", page) == [
        "fails the gate",
        "__sampling_observer_output__.scores",
    ]


def test_check_skew_markdown_marks_the_cells_that_differ():
    done = ppaux_process(
        "check-skew", "fixtures/skew/fingerprints/releases", "--format", "markdown"
    )
    assert done.returncode == 1
    assert "| sglang | 0.5.23 | **0.5.18** | **0.5.19** | 0.5.23 |" in done.stdout
    assert (
        "| torch | 2.14.1+cu128 | **2.13.0+cu128** | **2.13.0+cu128** | 2.14.1+cu128 |"
        in done.stdout
    )
    page = _markdown_html(done.stdout)
    assert "<td><strong>0.5.18</strong></td>" in page
    assert "<td>0.5.23</td>" in page


def test_capture_list_markdown_and_html(tmp_path):
    shutil.copy(DUMPS / "capture_add_error.pt", tmp_path / "capture-a.pt")
    done = ppaux_process("capture", "list", "--dir", str(tmp_path), "--format", "markdown")
    assert done.returncode == 0, done.stderr
    assert (
        "- capture-a.pt: RuntimeError: auxiliary PP output 'scores' is not a tensor\n"
        in done.stdout
    )
    done = ppaux_process("capture", "list", "--dir", str(tmp_path), "--format", "html")
    assert (
        "<li>capture-a.pt: RuntimeError: auxiliary PP output &#x27;scores&#x27; is not a "
        "tensor</li>" in done.stdout
    )


@pytest.mark.torch
@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_replay_writes_markdown_and_html(fmt):
    done = ppaux_process("replay", "fixtures/dumps/clean_output.pt", "--format", fmt)
    assert done.returncode == 0, done.stderr
    page = _markdown_html(done.stdout) if fmt == "markdown" else done.stdout
    assert "ppaux replay" in page
    assert "<td>fixtures/dumps/clean_output.pt</td>" in page
    assert "bit-identical" in page


def _hostile() -> Report:
    evil = '<script>alert(1)</script><img src=x onerror=alert(2)> & "q" **bold** __u__ |'
    return Report(
        command="inspect",
        findings=[Finding("PP101", Severity.ERROR, evil, f"dumps/{evil}.pt", evil, evil, evil)],
        tables=[Table(evil, ("key", evil), ((evil, evil),), frozenset({(0, 1)}))],
        notes=[evil],
    )


def test_markdown_escapes_hostile_text():
    page = _markdown_html(render(_hostile(), Format.MARKDOWN))
    assert "<script" not in page and "<img" not in page
    assert page.count("<strong>") == 2  # the verdict and the marked cell, nothing from the text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "**bold** __u__" in page


def test_html_is_self_contained_and_escapes_hostile_text():
    text = render(_hostile(), Format.HTML)
    assert text.startswith('<!DOCTYPE html>\n<html lang="en">\n')
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    # Nothing is fetched: no script, no external style sheet, font, image or URL at all.
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", text)
    assert not re.search(r"(https?:)?//[\w.-]+\.\w", text)
    assert "url(" not in text and "@import" not in text and "@font-face" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in text
    assert '<td class="marked">' in text


def test_html_shows_control_characters_as_escapes():
    report = Report(
        command="inspect",
        findings=[Finding("PP101", Severity.ERROR, "bell\x07 nul\x00 \udcff", "a\x1b[31m.pt")],
    )
    text = render(report, Format.HTML)
    assert "bell\\x07 nul\\x00 \\udcff" in text
    assert "a\\x1b[31m.pt" in text
    text.encode("utf-8")  # a lone surrogate would not encode


def test_html_output_file_and_exit_code(tmp_path):
    out = tmp_path / "report.html"
    done = ppaux_process(
        "check-skew",
        "fixtures/skew/fingerprints/consistent",
        "--format",
        "html",
        "--output",
        str(out),
    )
    assert done.returncode == 0 and done.stdout == ""
    page = out.read_text(encoding="utf-8")
    assert "<title>ppaux check-skew: passes the gate</title>" in page
    assert 'class="marked"' not in page  # consistent stages: nothing differs


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_shared_reports_lead_with_the_verdicts_and_findings(fmt):
    dumps = ("aux_list.pt", "clean_output.pt", "near_miss_whitespace.pt")
    done = ppaux_process("inspect", *(f"fixtures/dumps/{d}" for d in dumps), "--format", fmt)
    assert done.returncode == 1
    text = done.stdout
    under = "\\_" if fmt == "markdown" else "_"
    verdicts = [
        f"<code>fixtures/dumps/aux{under}list.pt</code>: fails (1 error)",
        f"<code>fixtures/dumps/clean{under}output.pt</code>: passes",
        f"<code>fixtures/dumps/near{under}miss{under}whitespace.pt</code>: passes (1 warning)",
    ]
    # One verdict per file, before any finding; every finding before the first key table.
    places = [text.index(v) for v in verdicts]
    assert places == sorted(places)
    first_finding = text.index("PP101 aux-non-tensor")
    first_keys = text.index("| key |" if fmt == "markdown" else '<th scope="col">key</th>')
    assert places[-1] < first_finding < first_keys
    assert text.count("next\\_token\\_ids" if fmt == "markdown" else "next_token_ids") >= 2


def test_one_file_gets_no_per_file_list():
    done = ppaux_process("inspect", "fixtures/dumps/aux_list.pt", "--format", "markdown")
    assert "</code>: fails" not in done.stdout


def test_html_matrix_cells_are_narrower_on_a_phone():
    """On a phone the cells get narrower, so that two stages of check-skew's matrix show side
    by side (tests/test_html_browser.py looks at the page in Chromium at 390 px)."""
    from ppaux.report.formats.html import STYLE

    phone = STYLE[STYLE.index("@media (max-width: 40rem)") :]
    assert "td { max-width: 16ch; }" in phone
    assert "th:first-child, td:first-child { max-width: 12ch; }" in phone
