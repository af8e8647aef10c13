"""Strings from files are shown escaped, by one function, in every format: no raw control
character, bidi mark, other format character or lone surrogate reaches any output."""

from __future__ import annotations

import dataclasses
import json
import unicodedata

import pytest
from helpers import REPO, cli
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rendered_reading import github_read, html_read, markdown_skeleton, read_json, xml_strings

from ppaux.errors import DumpError
from ppaux.report.document import InputProblem, Report, Table
from ppaux.report.findings import Finding, Location, Severity
from ppaux.report.formats import Format, render
from ppaux.suggestions import RaiseLimit, Setting
from ppaux.text import cut, shown

#: Every C0 control, DEL and every C1 control.
CONTROLS = [chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
#: Bidi embeddings and overrides, isolates, the marks (LRM, RLM, ALM).
BIDI = [chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)]
BIDI += ["\u200e", "\u200f", "\u061c"]
#: Other format characters, separators and non-ASCII spaces, noncharacters, private use, tags.
OTHER = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u2028", "\u2029"]
OTHER += ["\u00a0", "\u3000", "\ufffe", "\uffff", "\ue000", "\U000e0001", "\U000e007f"]
#: Lone surrogates: what an undecodable file name or a pickled string can hold.
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "\udc80"]
HOSTILE = CONTROLS + BIDI + OTHER + SURROGATES

hostile_text = st.lists(
    st.one_of(
        st.sampled_from(HOSTILE),
        st.sampled_from(list("ab|<>&\"'`*_[]\\%:,; ")),
        st.characters(codec=None),  # anything at all, surrogates included
    ),
    max_size=12,
).map("".join)


def test_every_hostile_character_is_unprintable_to_python():
    # The lists above are what the escaping must cover: each is one Python does not print.
    assert not any(c.isprintable() for c in HOSTILE)
    assert {unicodedata.category(c) for c in BIDI} == {"Cf"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain name", "plain name"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("a\nb\tc\rd\x00", "a\\nb\\tc\\rd\\x00"),
        ("\x7f\x85\x9f", "\\x7f\\x85\\x9f"),
        ("abc\u202edcba", "abc\\u202edcba"),
        ("\u2066x\u2069\u200e\u200f\u061c", "\\u2066x\\u2069\\u200e\\u200f\\u061c"),
        ("\ud800\udfff", "\\ud800\\udfff"),
        ("tag\U000e0001", "tag\\U000e0001"),
        ("\u00a0\u2028", "\\xa0\\u2028"),
        ("écran 日本 \U0001f600", "écran 日本 \U0001f600"),  # printable stays as it is
    ],
)
def test_shown_escapes_as_written(text, expected):
    assert shown(text, None) == expected


def test_shown_cuts_before_escaping_and_says_how_long():
    assert shown("\x00" * 1000, 3) == "\\x00\\x00\\x00... (1000 characters)"
    assert shown("abcdef", 6) == "abcdef"
    assert shown("x" * 201) == "x" * 200 + "... (201 characters)"  # the default cut
    assert shown(b"bytes") == "<bytes>"  # a wrong type from a file does not raise


@given(hostile_text)
@settings(max_examples=200, deadline=None)
def test_shown_is_printable_and_stable(text):
    once = shown(text, None)
    assert once.isprintable()
    assert shown(once, None) == once
    if text.isprintable():
        assert once == text


@given(hostile_text, st.integers(0, 20) | st.none())
@settings(max_examples=40, deadline=None)
def test_cut_bounds_without_escaping(text, limit):
    # A message is built with the text cut, never escaped: escaping is the rendering's.
    out = cut(text, limit)
    if limit is None or len(text) <= limit:
        assert out == text
    else:
        assert out == f"{text[:limit]}... ({len(text)} characters)"
    assert shown(text, limit) == shown(out, None)


def test_the_library_str_shows_escaped():
    # str() is the library's rendering: a message built with raw text is shown escaped there.
    finding = Finding("PP101", Severity.ERROR, "key \x1b[2J\u202e", "a\nb.pt", key="k\x00")
    assert str(finding) == "PP101 error a\\nb.pt [k\\x00]: key \\x1b[2J\\u202e"
    error = DumpError("a.pt", "record \u2066x\ud800 is missing")
    assert str(error) == "a.pt: record \\u2066x\\ud800 is missing"
    assert error.reason == "record \u2066x\ud800 is missing"  # the data keeps what was built
    problem = InputProblem("a.pt", "bad \x07", (Setting("sender", "legacy\x1b"),))
    assert str(problem) == 'a.pt: bad \\x07; try sender="legacy\\x1b"'


def _hostile_report(text: str) -> Report:
    """A report holding ``text`` in every string field a command fills: a finding's message,
    path, key, predicted error, fix, extra (keys and values), location, message id and
    suggestions; a problem's path, message and suggestions; the data, a table, and a note of
    each kind (one line, and a heading with lines of its own, as the target's output)."""
    suggestions = (Setting(f"s{text}", text, f"what {text}"), RaiseLimit(f"max_{text}", 3))
    finding = Finding(
        code="PP101",
        severity=Severity.ERROR,
        message=f"message {text}",
        path=f"dir/{text}.pt",
        key=text,
        sglang_error=f"error {text}",
        hint=f"hint {text}",
        extra={text: [text, {"nested": text}], "n": 2**300},
        location=Location(f"{text}.py", 3, text),
        suggestions=suggestions,
        message_id=f"PP101/{text}",
    )
    warning = Finding("PP104", Severity.WARNING, text, text, key=None)
    return Report(
        command="inspect",
        findings=[finding, warning],
        problems=[InputProblem(f"{text}.pt", f"cannot read {text}", suggestions)],
        data={"files": [{"path": f"dir/{text}.pt", text: text}], text: {text: [text]}},
        tables=[
            Table(f"table {text}", ("key", text), ((text, text), ("k", "v")), frozenset({(0, 1)}))
        ],
        notes=[f"note: {text}", f"the target printed:\n{text}\nlast {text}"],
    )


def _allowed(char: str) -> bool:
    return char == "\n" or char.isprintable()


def _shown_to_reader(strings: list[str]) -> list[str]:
    """The strings a format's reader is shown that hold an unprintable character (a line
    break only splits them into lines)."""
    return [s for s in strings if not all(line.isprintable() for line in s.split("\n"))]


def _read(fmt: Format, out: str) -> tuple[list[str], object]:
    """What a reader of ``fmt`` is shown of ``out``, and the format's own skeleton."""
    if fmt in (Format.JSON, Format.SARIF, Format.GITLAB):
        return read_json(out), None
    if fmt is Format.JUNIT:
        return xml_strings(out)
    if fmt is Format.HTML:
        return html_read(out)
    if fmt is Format.GITHUB:
        return github_read(out)
    if fmt is Format.MARKDOWN:
        return out.split("\n"), markdown_skeleton(out)
    return out.split("\n"), None


#: Text each format's own markup would read as its own: table pipes, tags and entities, workflow
#: commands and their properties and escapes, code fences, emphasis and links.
MARKUP = [
    "a|b",
    "<script>x</script>&amp;&#124;",
    "::error::x%0A::warning file=y::z",
    ",title=t:line=1",
    "```\n````",
    "*_`[x](y)~\\",
    ']]></x><x a="',
]


@given(hostile_text)
@settings(max_examples=25, deadline=None)
@example("\x1b[2J\u202e\ud800\x00\n")
def test_no_format_writes_an_unprintable_character(text):
    _read_back_unchanged(text)


@pytest.mark.parametrize("text", MARKUP)
def test_markup_in_text_is_only_text(text):
    _read_back_unchanged(text)


def _read_back_unchanged(text: str) -> None:
    # Every format, read back by its own reader (JSON decoded, XML and HTML parsed, workflow
    # commands decoded as the runner decodes them), shows only printable text, and the text
    # changes none of the format's own structure: a report holding plain letters in its place
    # has the same skeleton (elements, commands and their properties, table cells, fences).
    report = _hostile_report(text)
    plain = _hostile_report("".join("\n" if c == "\n" else "x" for c in text))
    for fmt in Format:
        out = render(report, fmt, width=100)
        bad = sorted({f"U+{ord(c):04X}" for c in out if not _allowed(c)})
        assert not bad, (fmt.value, bad)
        out.encode("utf-8")  # strict: a lone surrogate would raise here
        strings, skeleton = _read(fmt, out)
        assert not _shown_to_reader(strings), (fmt.value, _shown_to_reader(strings))
        assert skeleton == _read(fmt, render(plain, fmt, width=100))[1], fmt.value


#: How each format writes the shown text '\x1b[2J\u202e\ud800': JSON doubles a backslash,
#: Markdown backslash-escapes a backslash and a bracket, the others write it as it is.
WRITTEN = {
    Format.JSON: r"\\x1b[2J\\u202e\\ud800",
    Format.SARIF: r"\\x1b[2J\\u202e\\ud800",
    Format.GITLAB: r"\\x1b[2J\\u202e\\ud800",
    Format.MARKDOWN: r"\\x1b\[2J\\u202e\\ud800",
}


@pytest.mark.parametrize("fmt", list(Format))
def test_every_format_shows_the_escape(fmt):
    out = render(_hostile_report("\x1b[2J\u202e\ud800"), fmt, width=300)
    assert WRITTEN.get(fmt, r"\x1b[2J\u202e\ud800") in out


def test_coloured_text_keeps_its_own_escapes_only():
    out = render(_hostile_report("\x1b]0;title\x07"), Format.TEXT, color=True)
    # rich's colour codes are the only escape sequences: each ESC starts 'ESC['.
    assert all(out[i + 1] == "[" for i, c in enumerate(out) if c == "\x1b")
    assert "\\x1b]0;title\\x07" in out


def test_a_bad_location_or_huge_number_is_no_internal_error():
    report = _hostile_report("x")
    odd = Finding(
        "PP101",
        Severity.ERROR,
        "m",
        "p.pt",
        key="k",
        extra={(1, 2): 10**5000, None: float("nan")},
        location=Location("f.py", 2**40, "g"),
    )
    report = dataclasses.replace(report, findings=(*report.findings, odd))
    # A record's location with no file name or no line number is none at all.
    assert Location.of({"file": 7, "line": "ten", "function": None}) is None
    assert Location.of({"file": "f.py", "line": True}) is None
    assert Location.of({"file": "f.py", "line": 2}) == Location("f.py", 2, "?")
    carry_extra = {Format.JSON, Format.SARIF}  # the formats that show a finding's extra
    for fmt in Format:
        out = render(report, fmt)
        assert ("<int of 16610 bits>" in out) == (fmt in carry_extra), fmt
        assert "0" * 100 not in out, fmt  # the number is never written out whole


# ---------------------------------------------------------------------------------------------
# Odd values through every command, in every format: one clear outcome, never an internal error.

P = "__sampling_observer_output__."


class Evil:
    """Pickled by reference; its name is rewritten to an escape sequence in the file."""


def _odd_message(value: float) -> dict:
    import torch

    return {
        P + "scores\x1b[31m": torch.zeros(2),
        P + "nul\x00name": [1.0, value],
        P + "\u202eabc\u2066": torch.ones(1),
        P + "lone\ud800": torch.ones(3),
        P + "obj": Evil(),
        2**20000: torch.ones(1),
        (1, "\x07"): "bell",
        "\x1b]0;title\x07": torch.arange(3),
    }


def _odd_dump(path, value: float = 2.0):
    """A torch.save file whose strings hold every kind of hostile character and whose class
    name is an escape sequence (its storage locations are torch's: a location torch cannot
    restore stops torch.load at it, which tests/test_writer_grammar_pieces.py checks)."""
    import io
    import zipfile

    import torch

    buffer = io.BytesIO()
    torch.save(_odd_message(value), buffer)
    with zipfile.ZipFile(buffer) as source:
        records = [(info.filename, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as target:
        for name, data in records:
            if name.endswith("/data.pkl"):
                assert data.count(b"Evil") == 1
                data = data.replace(b"Evil", b"\x1b[2J")
            target.writestr(name, data)
    return path


def _clean_output(result, fmt: str, code: int | None = None) -> None:
    """No internal error and no unescaped character; exit ``code`` when given, and otherwise
    one clear outcome: a report on stdout (0, 1, or 2 for an input it could not use), or
    nothing there and one error line on stderr (2)."""
    out = result.output
    if code is not None:
        assert result.exit_code == code, out
    assert result.exit_code in (0, 1, 2), out
    if not result.stdout:
        assert result.exit_code == 2, out
        assert result.stderr.startswith("ppaux: error: "), out
        assert result.stderr.count("\n") == 1, out
    assert "internal error" not in out and "Traceback" not in out, out
    bad = sorted({f"U+{ord(c):04X}" for c in out if not _allowed(c)})
    assert not bad, (fmt, bad, out[-2000:])


@pytest.fixture(scope="module")
def odd_dumps(tmp_path_factory):
    folder = tmp_path_factory.mktemp("odd")
    return _odd_dump(folder / "a.pt"), _odd_dump(folder / "b.pt", 3.0)


@pytest.mark.torch
@pytest.mark.parametrize("fmt", [f.value for f in Format])
@pytest.mark.parametrize("command", ["inspect", "diff", "replay"])
def test_odd_dumps_through_every_command(odd_dumps, tmp_path, command, fmt):
    a, b = odd_dumps
    args = {"inspect": [str(a), str(b)], "diff": [str(a), str(b)], "replay": [str(a)]}[command]
    result = cli(command, *args, "--format", fmt)
    # Each finds an error: a class off the allowlist, a non-string key, two dumps that differ.
    _clean_output(result, fmt, 1)
    if command == "inspect" and fmt == "text":
        # The escapes are there, so the reader sees what the file holds.
        assert ".\\x1b[2J, which is not on the tensor allowlist" in result.output
        assert "scores\\x1b[31m" in result.output and "nul\\x00name" in result.output
    if command == "inspect" and fmt == "json":
        files = json.loads(result.stdout)["files"]
        keys = {e.get("key") for f in files for p in f["payloads"] for e in p["entries"]}
        assert P + "scores\\x1b[31m" in keys, keys  # the key, as the file spells it


@pytest.mark.torch
def test_the_report_holds_a_file_text_raw_and_each_format_escapes_it(odd_dumps):
    """Escaping happens once, when a report is rendered: the library's report holds a key, a
    class name and a path as the file and the user spell them; every format shows them escaped."""
    from ppaux.dump import inspect_paths

    a, _ = odd_dumps
    report = inspect_paths([str(a)])
    files = report.data["files"]
    keys = {e["key"] for f in files for p in f["payloads"] for e in p["entries"]}
    assert P + "scores\x1b[31m" in keys and P + "lone\ud800" in keys, keys
    assert files[0]["path"] == str(a)
    messages = [f.message for f in report.findings]
    assert any("test_escaping.\x1b[2J, which is not" in m for m in messages), messages
    shown_json = json.loads(render(report, Format.JSON))
    keys = {e["key"] for f in shown_json["files"] for p in f["payloads"] for e in p["entries"]}
    assert P + "scores\\x1b[31m" in keys and P + "lone\\ud800" in keys, keys
    for fmt in Format:
        out = render(report, fmt)
        assert "\x1b" not in out and "\ud800" not in out, fmt


@pytest.mark.torch
def test_an_odd_dump_through_tensorize(odd_dumps, tmp_path):
    """tensorize has no report format: it refuses what it cannot rebuild, names it escaped,
    writes nothing and exits 1."""
    a, _ = odd_dumps
    result = cli("tensorize", str(a), "-o", str(tmp_path / "fixed.pt"))
    _clean_output(result, "tensorize", 1)
    words = " ".join(result.stdout.split())  # wrapped at the width: the words, in order
    assert "a test_escaping.\\x1b[2J object (its class was not imported)" in words
    assert not (tmp_path / "fixed.pt").exists()


def _fingerprint(path) -> dict:
    return json.loads((REPO / "fixtures/skew/fingerprints/consistent" / path).read_text())


def _leaves(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*path, index))


def _replaced(node, path, value):
    if not path:
        return value
    if isinstance(node, dict):
        return {k: _replaced(v, path[1:], value) if k == path[0] else v for k, v in node.items()}
    return [_replaced(v, path[1:], value) if i == path[0] else v for i, v in enumerate(node)]


#: Values a fingerprint field can hold that ppaux never writes: hostile text, a huge number,
#: wrong types, an empty string.
ODD_FIELDS = ["\x1b[31m\u202e\ud800\x00", 10**30, [1, "\x07"], {"\x1b": None}, True, 1.5e308, ""]


@pytest.mark.parametrize("odd", range(len(ODD_FIELDS)))
def test_odd_fingerprint_fields_through_check_skew(tmp_path, odd):
    a, b = _fingerprint("pp0.json"), _fingerprint("pp1.json")
    (tmp_path / "pp0.json").write_text(json.dumps(a))
    paths = list(_leaves(b))
    # Every field of the document, each given one odd value (in turn, so that every value meets
    # fields of every kind over the parametrized runs).
    for index, path in enumerate(paths):
        if index % len(ODD_FIELDS) != odd:
            continue
        (tmp_path / "pp1.json").write_text(json.dumps(_replaced(b, path, ODD_FIELDS[odd])))
        fmt = Format.JSON.value if index % 2 else Format.TEXT.value
        result = cli(
            "check-skew", str(tmp_path / "pp0.json"), str(tmp_path / "pp1.json"), "-f", fmt
        )
        _clean_output(result, f"{fmt} {path}")


@pytest.mark.parametrize("fmt", [f.value for f in Format])
def test_hostile_fingerprint_text_in_every_format(tmp_path, fmt):
    a, b = _fingerprint("pp0.json"), _fingerprint("pp1.json")
    b["packages"]["torch"] = "2.14.1\x1b[31m\u202e\ud800"
    b["environment"]["NCCL_SOCKET_IFNAME"] = "eth\x00\x1b]0;x\x07"
    b["host"] = "node\u2028\x85"
    (tmp_path / "pp0.json").write_text(json.dumps(a))
    (tmp_path / "pp1.json").write_text(json.dumps(b))
    result = cli("check-skew", str(tmp_path / "pp0.json"), str(tmp_path / "pp1.json"), "-f", fmt)
    _clean_output(result, fmt, 1)


def test_a_huge_world_size_costs_nothing(tmp_path):
    a, b = _fingerprint("pp0.json"), _fingerprint("pp1.json")
    b["rank"]["world_size"] = 10**30
    (tmp_path / "pp0.json").write_text(json.dumps(a))
    (tmp_path / "pp1.json").write_text(json.dumps(b))
    result = cli("check-skew", str(tmp_path / "pp0.json"), str(tmp_path / "pp1.json"), "-f", "json")
    _clean_output(result, "json")
    absent = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "PP317"]
    # 64 ranks listed one by one, then one finding that counts the rest.
    assert len(absent) == 65
    assert absent[-1]["message"].startswith(f"world size is {10**30} but no fingerprint has ")


@pytest.mark.torch  # the guard checks tensors
def test_the_guard_shows_keys_and_classes_escaped():
    from ppaux.guard import PpTensorsError, check_pp_tensors, describe_value

    class Key:
        def __repr__(self) -> str:
            return "key\x1b[2J\u202e"

    odd = type("Odd\x07", (), {})
    with pytest.raises(PpTensorsError) as raised:
        check_pp_tensors({Key(): 1, P + "x": odd()})
    text = str(raised.value)
    assert "key\\x1b[2J\\u202e" in text and "Odd\\x07" in text
    assert all(c == "\n" or c.isprintable() for c in text)
    assert describe_value(odd()).endswith("Odd\\x07")


@pytest.mark.parametrize(
    "command",
    [
        "inspect",
        pytest.param("replay", marks=pytest.mark.torch),
        "diff",
        pytest.param("tensorize", marks=pytest.mark.torch),
        "check-skew",
    ],
)
def test_error_lines_show_a_hostile_path_escaped(command, tmp_path):
    missing = str(tmp_path / "no\x1b[2J\u202efile.pt")
    args = {"diff": [missing, missing], "tensorize": [missing, "-o", str(tmp_path / "o.pt")]}
    result = cli(command, *args.get(command, [missing]))
    assert result.exit_code == 2
    _clean_output(result, command)
    assert "no\\x1b[2J\\u202efile.pt" in result.output
