"""explain shows a message's placeholders readably, never as raw format fields."""

from __future__ import annotations

from helpers import ppaux_process
from hypothesis import given
from hypothesis import strategies as st

from ppaux.report.formats.error_page import readable_template


def test_known_templates():
    assert readable_template("duplicate auxiliary PP tensor {name!r}") == (
        "duplicate auxiliary PP tensor '<name>'"
    )
    assert readable_template("got {count} values") == "got <count> values"
    assert readable_template("no placeholder") == "no placeholder"


@given(st.text(alphabet="abc ' .{}!", max_size=40), st.from_regex(r"[a-z_]{1,8}", fullmatch=True))
def test_no_placeholder_survives(text: str, name: str):
    shown = readable_template(f"{text} {{{name}!r}} {{{name}}}")
    assert f"{{{name}!r}}" not in shown and f"{{{name}}}" not in shown
    assert shown.endswith(f" '<{name}>' <{name}>")


def test_explain_shows_no_raw_placeholder():
    done = ppaux_process("explain", "auxiliary PP output 'scores' is not a tensor")
    assert done.returncode == 0, done.stderr
    assert "{name!r}" not in done.stdout
    assert "  - duplicate auxiliary PP tensor '<name>'" in done.stdout.splitlines()
