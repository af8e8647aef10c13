"""One self-contained HTML page, to attach to an incident or open on a phone.

The page leads with what matters: the verdict, for several files a one-line verdict per file,
the findings and the inputs not checked; the notes and tables follow as detail. It needs nothing
from the network: the style sheet is inline, there is no script, no font, no image. It lays out
at the device's width (viewport meta); wide tables scroll inside their own box with the first
column kept in view, and on a phone the cells are narrower so that two stages of check-skew's
matrix show side by side. Cells that a finding is about
(``Table.marked``, for check-skew the values that differ between stages) have the ``marked``
class: a red background and bold text. Every piece of text from the report is HTML-escaped, and
unprintable characters (controls, bidi marks, lone surrogates) are shown as escapes by
:func:`ppaux.text.shown`, so a hostile dump name or key can neither inject markup nor garble or
reorder the page.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ppaux.report.document import FailOn, Report, Table, exit_code
from ppaux.report.findings import Finding, Severity
from ppaux.report.formats.markdown import counts, file_verdicts, note_blocks, title, verdict
from ppaux.text import shown

__all__ = ["MARKED_BACKGROUND", "STYLE", "render"]

#: Background of a marked cell (tests look for this colour in screenshots of the page).
MARKED_BACKGROUND = "#ffc2bd"

STYLE = """
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0;
  --head: #f6f8fa; --error: #cf222e; --warning: #9a6700; --info: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", sans-serif; }
main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: .25rem 0 .5rem; }
h2 { font-size: 1.2rem; margin: 1.75rem 0 .5rem; }
h3 { font-size: 1rem; margin: 1.25rem 0 .4rem; overflow-wrap: anywhere; }
p, li { overflow-wrap: anywhere; }
code { font: .875em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  overflow-wrap: anywhere; }
.verdict { padding: .5rem .75rem; border-radius: 6px; font-weight: 600; }
.verdict.pass { background: #dafbe1; }
.verdict.fail { background: #ffebe9; }
.verdict.unread { background: #fff8c5; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; }
table { border-collapse: collapse; width: max-content; min-width: 100%; font-size: .875rem; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
td { max-width: 30ch; overflow-wrap: anywhere; }
th { background: var(--head); white-space: nowrap; }
th:first-child, td:first-child { position: sticky; left: 0; background: var(--head);
  max-width: 22ch; }
td.marked { background: MARKED; font-weight: 700; }
.legend { color: var(--muted); font-size: .875rem; margin: .25rem 0 0; }
.finding { border-left: 4px solid var(--line); padding: .1rem .75rem; margin: .9rem 0; }
.finding.error { border-color: var(--error); }
.finding.warning { border-color: var(--warning); }
.finding.info { border-color: var(--info); }
.finding h3 { margin: .2rem 0; }
.finding p { margin: .2rem 0; }
.severity { display: inline-block; padding: 0 .45rem; border-radius: 1em; color: #fff;
  font-size: .75rem; text-transform: uppercase; vertical-align: .1em; }
.severity.error { background: var(--error); }
.severity.warning { background: var(--warning); }
.severity.info { background: var(--info); }
.where, footer { color: var(--muted); }
footer { margin-top: 2rem; font-size: .875rem; }
@media (max-width: 40rem) { main { padding: .6rem; } h1 { font-size: 1.25rem; }
  table { font-size: .8rem; } th, td { padding: .25rem .4rem; } td { max-width: 16ch; }
  th:first-child, td:first-child { max-width: 12ch; } }
""".replace("MARKED", MARKED_BACKGROUND)

_VERDICT_CLASS = {0: "pass", 1: "fail", 2: "unread"}


def _text(value: str) -> str:
    # Control characters, bidi marks and lone surrogates (undecodable file names) would garble
    # the page or fail to encode: they are shown as escapes instead.
    return html.escape(shown(value, None), quote=True)


def _code(value: str) -> str:
    return f"<code>{_text(value)}</code>"


def _table(table: Table) -> list[str]:
    out = [f"<h3>{_text(table.title)}</h3>", '<div class="scroll"><table>', "<thead><tr>"]
    out += [f'<th scope="col">{_text(c)}</th>' for c in table.columns]
    out += ["</tr></thead>", "<tbody>"]
    for r, row in enumerate(table.rows):
        cells = list(row) + [""] * (len(table.columns) - len(row))
        out.append(
            "<tr>"
            + "".join(
                f'<td class="marked">{_text(v)}</td>'
                if (r, c) in table.marked
                else f"<td>{_text(v)}</td>"
                for c, v in enumerate(cells)
            )
            + "</tr>"
        )
    out.append("</tbody></table></div>")
    if table.marked:
        out.append('<p class="legend">Highlighted cells are the ones a finding is about.</p>')
    return out


def _finding(finding: Finding) -> list[str]:
    severity = finding.severity.value
    where = _code(finding.path) + (f" {_code(finding.key)}" if finding.key is not None else "")
    out = [
        f'<article class="finding {severity}">',
        f'<h3><span class="severity {severity}">{severity}</span> {_text(title(finding))}</h3>',
        f'<p class="where">{where}</p>',
        f"<p>{_text(finding.message)}</p>",
    ]
    if finding.sglang_error:
        out.append(f"<p>predicts: {_code(finding.sglang_error)}</p>")
    if finding.hint:
        out.append(f"<p>fix: {_text(finding.hint)}</p>")
    out.append("</article>")
    return out


def _causes(findings: Sequence[Finding]) -> list[str]:
    from ppaux.report import catalogue

    out: list[str] = []
    seen: set[str] = set()
    for f in findings:
        rule = catalogue.RULES.get(f.code)  # looked up per call: tests swap the catalogue
        if f.severity is not Severity.ERROR or rule is None or f.code in seen:
            continue
        seen.add(f.code)
        out.append(f"<h3>Likely causes of {_text(f.code)} ({_text(rule.name)})</h3>")
        out += ["<ul>", *(f"<li>{_text(c)}</li>" for c in f.causes(rule)), "</ul>"]
    return out


def render(report: Report, fail_on: FailOn = FailOn.ERROR) -> str:
    """The report as one HTML document (UTF-8, no external resources)."""
    from ppaux._version import __version__

    said = verdict(report, fail_on)
    heading = f"ppaux {report.command}"
    body = [
        f"<h1>{_text(heading)}</h1>",
        f'<p class="verdict {_VERDICT_CLASS[exit_code(report, fail_on)]}">'
        f"{_text(said)} (fail-on {_text(fail_on.value)}): {_text(counts(report))}</p>",
    ]
    verdicts = file_verdicts(report, fail_on)
    if len(verdicts) > 1:
        body.append('<ul class="files">')
        body += [f"<li>{_code(path)}: {_text(said)}</li>" for path, said in verdicts]
        body.append("</ul>")
    if report.findings:
        body.append(f"<h2>Findings ({len(report.findings)})</h2>")
        for f in report.findings:
            body += _finding(f)
        body += _causes(report.findings)
    if report.problems:
        body += [f"<h2>Inputs not checked ({len(report.problems)})</h2>", "<ul>"]
        body += [f"<li>{_code(p.path)}: {_text(p.message)}</li>" for p in report.problems]
        body.append("</ul>")
    # The detail comes after what a reader needs first: the verdicts and the findings.
    if report.notes or report.tables:
        body.append("<h2>Details</h2>")
    listed: list[str] = []
    for note, block in note_blocks(report.notes):
        if not block:
            listed.append(f"<li>{_text(note)}</li>")
            continue
        # Commands: a paragraph and a <pre> block, copyable as they are.
        body += ["<ul>", *listed, "</ul>"] if listed else []
        listed = []
        body += [
            f"<p>{_text(note)}</p>",
            # Scrolls in its own box, as a wide table does (the style is inline: the sheet of
            # every other page stays as it was).
            '<pre class="scroll" style="padding: .5rem .75rem; margin: 0 0 1rem"><code>'
            + "\n".join(_text(line) for line in block)
            + "</code></pre>",
        ]
    body += ["<ul>", *listed, "</ul>"] if listed else []
    for table in report.tables:
        body += _table(table)
    body.append(
        f"<footer>ppaux {_text(__version__)}. Explain a code with "
        "<code>ppaux explain CODE</code>.</footer>"
    )
    head = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_text(heading)}: {_text(said)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        "<main>",
    ]
    return "\n".join([*head, *body, "</main>", "</body>", "</html>"]) + "\n"
