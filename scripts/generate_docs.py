"""Write the generated documentation pages: the rule catalogue, the CLI reference, the capture
format.

    python scripts/generate_docs.py          # rewrite both pages
    python scripts/generate_docs.py --check  # exit 1 naming each page that is out of date

tests/test_docs.py runs the same comparison, so a rule or option changed without regenerating
the pages fails the tests.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def rst_to_markdown(text: str) -> str:
    """The reStructuredText that ppaux's docstrings use (``code``, :role:`x`, '::' literal
    blocks) as Markdown."""
    import re
    import textwrap

    out: list[str] = []
    lines = textwrap.dedent(text).strip("\n").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            out.append(_inline(line.rstrip()[:-1]))
            block: list[str] = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                block.append(lines[i])
                i += 1
            out += ["", "```python", textwrap.dedent("\n".join(block)).strip("\n"), "```", ""]
            continue
        out.append(_inline(line))
        i += 1
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n") + "\n"


def _inline(line: str) -> str:
    import re

    line = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", line)
    return line.replace("``", "`")


def capture_format_markdown() -> str:
    """docs/capture-format.md: the docstring of ppaux.dump.capture_format, and its constants."""
    from ppaux.dump import capture_format

    fields = ", ".join(f"`{name}`" for name in capture_format.META_FIELDS)
    return (
        "<!-- Generated from the docstring of ppaux/dump/capture_format.py by "
        "scripts/generate_docs.py; do not edit. -->\n\n"
        "# Capture file format\n\n"
        + rst_to_markdown(capture_format.__doc__ or "")
        + f"\nThe marker key is `{capture_format.CAPTURE_MARKER}` and the current format version "
        f"is {capture_format.CAPTURE_VERSION}. The metadata record has exactly these keys, in "
        f"this order: {fields}.\n\n"
        "`ppaux inspect` on a capture shows this metadata and checks `tensors` (and, for a "
        "failing add, `output`) as the payload; see [inspect](inspect.md) and "
        "[capture](capture.md).\n"
    )


def pages() -> dict[pathlib.Path, str]:
    """Each generated page's path and its current text."""
    from ppaux.report.catalogue import RULES
    from ppaux.report.formats.rules import catalogue_markdown
    from ppaux_cli.reference import cli_reference_markdown

    return {
        ROOT / "docs" / "catalogue.md": catalogue_markdown(RULES.values()),
        ROOT / "docs" / "cli.md": cli_reference_markdown(),
        ROOT / "docs" / "capture-format.md": capture_format_markdown(),
        **error_pages(),
    }


def error_pages() -> dict[pathlib.Path, str]:
    """docs/errors/: one page per sglang PP message, and their index."""
    from ppaux.report.error_pages import ERROR_PAGES
    from ppaux.report.formats.error_page import (
        error_index_markdown,
        error_page_markdown,
        page_file,
    )

    folder = ROOT / "docs" / "errors"
    note = (
        "<!-- Generated from ppaux/report/error_pages.py by scripts/generate_docs.py; "
        "do not edit. -->\n\n"
    )
    found = {folder / page_file(page): note + error_page_markdown(page) for page in ERROR_PAGES}
    return {folder / "index.md": error_index_markdown(), **found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale pages")
    args = parser.parse_args(argv)
    stale = []
    for path, text in pages().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    for path in stale:
        print(
            f"{path.relative_to(ROOT)} is out of date: run python scripts/generate_docs.py",
            file=sys.stderr,
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
