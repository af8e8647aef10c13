"""A large file that is not Python never reaches CPython's parser whole; valid files parse as
``ast.parse`` parses them."""

from __future__ import annotations

import ast
import glob
import os
import shutil
import sysconfig
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppaux.sglang_source.bounded_parse as bounded_parse
from ppaux.limits import Limits
from ppaux.sglang_source import analyse, logical_lines
from ppaux.sglang_source.bounded_parse import CHUNK_BYTES, parse_source

TREE = Path(__file__).resolve().parent.parent / "fixtures" / "skew" / "trees" / "v0523"
MIXIN = Path("sglang") / "srt" / "managers" / "scheduler_pp_mixin.py"

CORPUS = '''\
# -*- coding: utf-8 -*-
"""Module docstring."""
import os
from x import (a,
    b)

LIMIT = [1, 2,
    3]  # trailing


@decorator(
    1,
)
class Group(Base, metaclass=Meta):
    """A class."""

    size = 3

    def send(self, value: int = 1) -> None:
        text = """a
b"""
        if value:
            return call_me(value)
        elif value is None:
            pass
        else:
            raise ValueError("no")

    @staticmethod
    async def recv():
        try:
            async with lock:
                await thing()
        except* OSError:
            pass
        finally:
            done = \\
                1
        match value:
            case [1, *rest]:
                return rest
            case _:
                return None


def other(*args, **kw):
    for item in args:
        yield item
    else:
        return {k: v for k, v in kw.items()}


while True:
    break
'''

EDITS = st.sampled_from(
    ["", "(", ")", "]", "}", " = = ", "\n  x\n", '"""', "'", "\n@\n", "else:\n", ":", "\n", "\t"]
)


def _outcome(parse: object, text: str) -> tuple[str, ...]:
    try:
        module = parse(text)  # type: ignore[operator]
    except SyntaxError:  # IndentationError included: which of the two may differ
        return ("syntax error",)
    except ValueError as exc:
        return ("error", type(exc).__name__)
    return ("ok", ast.dump(module, include_attributes=True))


@settings(max_examples=300, deadline=None)
@given(
    edits=st.lists(
        st.tuples(st.integers(0, len(CORPUS)), st.integers(0, 3), EDITS), min_size=0, max_size=3
    ),
    chunk=st.sampled_from([1, 40, 200]),
)
def test_any_edit_parses_as_cpython_parses_it(edits, chunk):
    """Over arbitrary edits of a file using most of the grammar, cut into parts as small as the
    chunk allows: valid exactly when ast.parse says so, and then the same tree, positions
    included; never another exception. (Which error an invalid text gives may differ.)"""
    text = CORPUS
    for at, cut, insert in edits:
        text = text[:at] + insert + text[at + cut :]
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
        assert _outcome(parse_source, text) == _outcome(ast.parse, text)


def test_the_standard_library_parses_as_cpython_parses_it():
    files = sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))[:40]
    assert len(files) == 40
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", 512):
        for path in files:
            data = Path(path).read_bytes()
            assert ast.dump(parse_source(data), include_attributes=True) == ast.dump(
                ast.parse(data), include_attributes=True
            ), path


def _cut_mixin(root: Path) -> int:
    """The fixture tree with 17,000 methods added to the mixin's class, cut in the middle of a
    method's header (about 800 KB); returns the line of the cut."""
    shutil.copytree(TREE, root)
    real = (root / MIXIN).read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(real) if line.startswith("class "))
    methods = "".join(f"    def m_{n}(self, x):\n        return x + {n}\n\n" for n in range(17_000))
    methods = methods[: methods.index("    def m_14000(") + len("    def m_14000(se")]
    head = "".join(real[: at + 1])
    (root / MIXIN).write_text(head + methods + "".join(real[at + 1 :]))
    return head.count("\n") + methods.count("\n") + 1


def test_a_large_invalid_file_never_reaches_the_parser_whole(tmp_path):
    """The parser's error pass costs about 300 MB on 800 KB: it may see a failing text only in
    parts of at most CHUNK_BYTES (plus the one-line wrapper of an indented part)."""
    line = _cut_mixin(tmp_path / "tree")
    failed: list[int] = []
    real_parse = ast.parse

    def spy(source, *args, **kwargs):
        try:
            return real_parse(source, *args, **kwargs)
        except SyntaxError:
            # Blank lines before a part give its trees the file's line numbers; the parser's
            # tokenizer skips them without work for the parser.
            failed.append(len(source.lstrip("\n") if isinstance(source, str) else source))
            raise

    # The tree is larger than one analysis parses by default: the bound on each part parsed
    # is the one asked about here.
    size = sum(p.stat().st_size for p in (tmp_path / "tree").rglob("*.py"))
    limits = Limits(max_analysed_source_bytes=2 * size)
    with mock.patch.object(ast, "parse", spy):
        capability = analyse(str(tmp_path / "tree"), limits)
    assert failed and max(failed) <= CHUNK_BYTES + len("if 1:\n")
    scheduler = capability.files[0]
    assert scheduler.status == "unparsable"
    assert scheduler.reason == f"not valid Python: invalid syntax (line {line})"
    # The other files are still analysed.
    assert capability.transport == "present"


@pytest.mark.parametrize(
    ("tail", "message", "line_from_end"),
    [
        ("x = (1,\n", "'(' was never closed", 0),
        ('x = """open\n', "unterminated triple-quoted string literal (detected at line {last})", 0),
        ("x = 1]\n", "unmatched ']'", 0),
        ("if x:\n    a\n  b\n", "unindent does not match any outer indentation level", 0),
    ],
)
def test_what_the_tokenizer_refuses_is_worded_as_cpython_words_it(tail, message, line_from_end):
    body = "".join(f"value_{n} = {n}\n" for n in range(CHUNK_BYTES // 10))
    text = body + tail
    last = text.count("\n")
    with pytest.raises(SyntaxError) as expected:
        ast.parse(text)
    with pytest.raises(SyntaxError) as got:
        parse_source(text)
    assert got.value.msg == expected.value.msg == message.format(last=last)
    assert got.value.lineno == expected.value.lineno


def test_the_quick_cut_and_the_tokenizer_cut_give_the_same_lines():
    """Where the quick scan answers, its logical lines are the tokenizer's."""
    text = CORPUS * 3
    lines = text.splitlines(keepends=True)
    quick = logical_lines.scanned(text)
    exact, failure = logical_lines.logical_lines(text, lines, "<corpus>")
    assert quick is not None and failure is None
    assert quick == exact


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from(list("ab1 \t\n\r\f\\:()[]{}'\"#@=.,;\x0c")), max_size=120
    ),
    chunk=st.sampled_from([1, 16]),
)
def test_arbitrary_text_is_valid_exactly_when_cpython_says_so(text, chunk):
    """Over arbitrary text of Python's structural characters (tabs, form feeds, carriage
    returns, backslashes, quotes, brackets): the same verdict as ast.parse, the same tree when
    valid, and no exception but SyntaxError or ValueError."""
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
        assert _outcome(parse_source, text) == _outcome(ast.parse, text)


@pytest.mark.parametrize(
    "text",
    [
        "def f():\n    with lock:\n     \\\n await thing()\n    x = 1\n",
        "def f():\n    for item in args:\n        yield item\n    else:\n\\\n      return 1\n",
        "if x:\n    pass\n\\\nelse:\n    pass\n",
    ],
)
def test_a_statement_starting_on_a_line_of_only_a_backslash(text):
    """CPython's tokenizer reads such a statement's indentation unlike tokenize: found by
    fuzzing; the file is parsed as CPython parses it."""
    for chunk in (1, 16):
        with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
            assert _outcome(parse_source, text) == _outcome(ast.parse, text)


def test_the_parts_cost_what_the_file_holds(monkeypatch):
    """A statement of thousands of clauses is parsed clause by clause: the text handed to the
    parser stays a small multiple of the file, not the file once per clause."""
    import ast as ast_module

    clauses = "".join(f"except E{i}:\n    x = {i}\n" for i in range(4000))
    text = "try:\n    pass\n" + clauses
    assert len(text) > 64 * 1024
    handed: list[int] = []
    real = ast_module.parse

    def counted(source, *args, **kwargs):
        handed.append(len(source))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast_module, "parse", counted)
    tree = parse_source(text, "clauses.py")
    monkeypatch.setattr(ast_module, "parse", real)
    assert ast.dump(tree, include_attributes=True) == ast.dump(real(text), include_attributes=True)
    # Before, each clause was parsed behind as many blank lines as rows came before it: 16 MB.
    assert sum(handed) < 8 * len(text), (len(handed), sum(handed), len(text))


@pytest.mark.parametrize(
    "text",
    ["\\\r\n", "x=1\r\n\\\r\n", "x=1\n\\\r\n", "x = 1 + \\\r\n", "if x:\\\r\n", "x=1\\\n"],
)
def test_a_backslash_and_crlf_at_the_files_end_reads_as_cpython_reads_it(text):
    """CPython takes a backslash and CRLF at the end as continued onto an empty line (valid),
    a backslash and LF as the file's end mid-statement; the parts must agree at any size."""
    for chunk in (1, 4, 16):
        with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
            assert _outcome(parse_source, text) == _outcome(ast.parse, text), chunk


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=3),
            st.sampled_from(["", "\t", " ", "\t ", " \t", "  ", "\t\t", "\f\t"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_quick_cut_reads_tabs_in_indentation_as_the_tokenizer_does(shape):
    """Indentations of tabs and spaces, consistent or not: where the scan answers, its logical
    lines are the tokenizer's, and where the tokenizer refuses the indentation, the scan does
    not answer."""
    text = "".join(f"if x:\n{pad * depth}y = {depth}\n" for depth, pad in shape)
    lines = text.splitlines(keepends=True)
    quick = logical_lines.scanned(text)
    try:
        exact, failure = logical_lines.logical_lines(text, lines, "<tabs>")
    except SyntaxError:
        assert quick is None
        return
    if failure is not None:
        assert quick is None
    elif quick is not None:
        assert quick == exact


def test_a_file_indented_with_tabs_is_cut_by_the_quick_scan():
    text = "if a:\n" + "\tx = 1\n" * 10_000 + "\tif b:\n\t\ty = 2\n"
    quick = logical_lines.scanned(text)
    assert quick is not None
    assert [(line.start, line.depth) for line in quick[-3:]] == [
        (10_001, 1),
        (10_002, 1),
        (10_003, 2),
    ]
    assert ast.dump(parse_source(text)) == ast.dump(ast.parse(text))


#: Heads that send the file to the quick scan, to the scan of tabs, and to :mod:`tokenize` (a
#: statement starting on a line of only a backslash, which leaves the file to the parser whole).
HEADS = ["import os\n", "if os:\n\tpass\n", "\\\nimport os\n"]


@pytest.mark.parametrize("head", HEADS)
def test_an_fstring_of_many_fields_is_refused_before_any_parser_sees_it(head):
    """Each brace of an f-string counts as a token: 12,000 fields (36 KB, longer than a part)
    are 24,000 braces, past a bound of 20,000 tokens, and CPython's parser, whose cost grows
    with the square of the fields, is never handed the line."""
    text = head + "x = f'" + "{a}" * 12_000 + "'\n"
    handed: list[int] = []
    real = ast.parse

    def spy(source, *args, **kwargs):
        handed.append(len(source))
        return real(source, *args, **kwargs)

    with (
        mock.patch.object(ast, "parse", spy),
        pytest.raises(bounded_parse.StatementTooLarge) as caught,
    ):
        parse_source(text, "f.py", max_tokens=20_000)
    assert caught.value.line == head.count("\n") + 1
    assert "(limit max_statement_tokens=20000 reached)" in str(caught.value)
    assert all(size <= CHUNK_BYTES + 100 for size in handed)
    # Raised past the braces, the line is the parser's again.
    tree = parse_source(text, "f.py", max_tokens=30_000)
    assert ast.dump(tree) == ast.dump(ast.parse(text))


@pytest.mark.parametrize("head", HEADS)
def test_a_long_fstring_of_few_fields_still_parses(head):
    text = head + "x = f'" + "b" * 100_000 + "{a}'\ny = 'c{}' * 3\n"
    assert ast.dump(parse_source(text)) == ast.dump(ast.parse(text))


def _cpython(source: bytes) -> tuple[str, int | None] | None:
    """CPython's verdict on ``source`` (compiled to a syntax tree, never run)."""
    try:
        compile(source, "<cpython>", "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as exc:
        return exc.msg, exc.lineno
    return None


@pytest.mark.parametrize("ending", [b"\r\n", b"\n", b"\r", b""])
@pytest.mark.parametrize("lines", [4700, 4701])
def test_a_utf16_cookie_file_is_decoded_as_cpython_decodes_it(ending, lines):
    # ASCII bytes under a UTF-16 cookie: whether they decode, and where not, depends on the
    # text CPython decodes (its line ends made LF, one more LF at some ends).
    head = b"#!/usr/bin/env python\r\n# coding: utf-16\r\n"
    source = head + b"x = 1\r\n" * lines + b"y" + ending
    assert len(source) > CHUNK_BYTES
    expected = _cpython(source)
    try:
        parse_source(source, "<cpython>")
    except SyntaxError as exc:
        assert (exc.msg, exc.lineno) == expected
    else:
        assert expected is None
