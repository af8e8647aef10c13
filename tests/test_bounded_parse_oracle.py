"""The bounded parse judges a file as CPython's parser does, with CPython as the oracle: over
sources generated from a grammar of statements and cut into parts far smaller than the file,
``parse_source`` accepts exactly what ``ast.parse`` accepts, gives the same tree, and refuses
with the same message on the same line. Then the cases where it once did not, at the real part
size."""

from __future__ import annotations

import ast
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ppaux.sglang_source.bounded_parse as bounded_parse
from ppaux.sglang_source.bounded_parse import CHUNK_BYTES, MAX_STATEMENT_TOKENS, parse_source

#: Statements valid wherever they stand.
SOUND = st.sampled_from(
    [
        b"x = 1",
        b"pass",
        b"y = f(a, b=2)",
        b"s = '\xc3\xa9t\xc3\xa9'",
        b"t = b'a'",
        b"u = rb'\\d'",
        b"# a comment \xff\xfe",
        b"v = (1,\n    2)",
        b"w = 1 + \\\n    2",
        b'd = """one\ntwo"""',
        b"return x",
        b"z = 2;",
        b"a = 1; b = 2 ;",
    ]
)
#: Lines CPython refuses, alone or where they stand (a coding cookie after the first lines is
#: a comment; on them, the file's other bytes may not decode; a form feed at a body's start
#: leaves the body empty).
FAULTS = st.sampled_from(
    [
        b"s = 'a\xffb'",
        b"\xff = 1",
        b"x = = 1",
        b"x = (",
        b"x = 1)",
        b"x = 'open",
        b'x = """open',
        b"del f()",
        b"else:",
        b"\x0cz = 3",
        b"# coding: latin-1",
        b"# coding: ascii",
        b"  x = 1",
        b"\tx = 1",
    ]
)
SIMPLE = st.one_of(SOUND, FAULTS)
INDENTS = st.sampled_from([b"    ", b"\t", b"  ", b"\t    ", b"        ", b" \t"])


def _block(children: st.SearchStrategy[list[bytes]]) -> st.SearchStrategy[list[bytes]]:
    """A compound statement: its header lines, each body indented by a unit of its own."""

    def build(kind: str, indent: bytes, bodies: list[list[bytes]]) -> list[bytes]:
        headers = {
            "if": [b"if x:", b"elif y:", b"else:"],
            "try": [b"try:", b"except E:", b"else:", b"finally:"],
            "def": [b"@decorator", b"def f(a):"],
            "class": [b"class C(Base):"],
            "for": [b"for a in b:", b"else:"],
            "with": [b"with a as b, c:"],
        }[kind]
        out: list[bytes] = []
        for k, header in enumerate(headers):
            out.append(header)
            if header.startswith(b"@"):
                continue
            body = [b"pass", *bodies[k % len(bodies)]]  # never only comments
            out.extend(indent + line.replace(b"\n", b"\n" + indent) for line in body)
        return out

    return st.builds(
        build,
        st.sampled_from(["if", "try", "def", "class", "for", "with"]),
        INDENTS,
        st.lists(children, min_size=1, max_size=3),
    )


def _statements(simple: st.SearchStrategy[bytes]) -> st.SearchStrategy[list[bytes]]:
    return st.recursive(
        st.lists(simple.map(lambda line: [line]), min_size=1, max_size=4).map(
            lambda groups: [line for group in groups for line in group]
        ),
        lambda children: st.lists(
            st.one_of(children, _block(children)), min_size=1, max_size=4
        ).map(lambda groups: [line for group in groups for line in group]),
        max_leaves=12,
    )


def _with_fault(lines: list[bytes], fault: bytes | None, at: int) -> list[bytes]:
    """``lines`` with the statement at ``at`` (or the first after it that is no header nor
    decorator) replaced by ``fault``, indented as it was: the file's one fault."""
    simple = [
        k for k, line in enumerate(lines) if not line.rstrip().endswith((b":", b"@decorator"))
    ]
    if fault is None or not simple:
        return lines
    k = next((k for k in simple if k >= at), simple[-1])
    indent = lines[k][: len(lines[k]) - len(lines[k].lstrip(b" \t"))]
    return [*lines[:k], indent + fault, *lines[k + 1 :]]


#: Files of sound statements with at most one fault put in.
ONE_FAULT = st.builds(_with_fault, _statements(SOUND), st.none() | FAULTS, st.integers(0, 40))
#: Files of any statements: any number of faults.
ANY = _statements(SIMPLE)


def _outcome(parse: object, source: bytes) -> tuple[object, ...]:
    try:
        module = parse(source)  # type: ignore[operator]
    except SyntaxError as exc:  # IndentationError and TabError included, told apart
        return (type(exc).__name__, exc.msg, exc.lineno)
    except (ValueError, MemoryError, RecursionError) as exc:
        return (type(exc).__name__,)
    return ("ok", ast.dump(module, include_attributes=True))


def _source(lines: list[bytes], good_prefix: int, crlf: bool) -> bytes:
    pad = b"".join(b"value_%d = %d\n" % (n, n) for n in range(good_prefix))
    source = pad + b"\n".join(lines) + b"\n"
    return source.replace(b"\n", b"\r\n") if crlf else source


@settings(max_examples=400, deadline=None)
@example(  # the string's close and a tab-indented line: CPython's look stops at the TabError
    lines=[
        b"if x:",
        b'    x = """open',
        b"    x = 1",
        b"if x:",
        b"\tpass",
        b'\td = """one\n\ttwo"""',
        b"else:",
        b'\td = """one\n\ttwo"""',
    ],
    good_prefix=0,
    chunk=1,
    crlf=False,
)
@example(  # a declared encoding refuses a byte: the position CPython names is after CRLF -> LF
    lines=[b"# coding: ascii", b"s = '\xc3\xa9t\xc3\xa9'"], good_prefix=0, chunk=1, crlf=True
)
@given(
    lines=ONE_FAULT,
    good_prefix=st.integers(0, 30),
    chunk=st.sampled_from([1, 24, 64]),
    crlf=st.booleans(),
)
def test_the_verdict_message_and_line_are_cpythons(lines, good_prefix, chunk, crlf):
    """A file with at most one fault, cut in parts as small as the chunk allows: accepted iff
    ast.parse accepts it, with the same tree; refused with the same exception, message and
    line."""
    source = _source(lines, good_prefix, crlf)
    expected = _outcome(ast.parse, source)
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
        assert _outcome(parse_source, source) == expected


@settings(max_examples=300, deadline=None)
@given(lines=ANY, good_prefix=st.integers(0, 30), chunk=st.sampled_from([1, 24, 64]))
def test_the_verdict_is_cpythons_whatever_the_faults(lines, good_prefix, chunk):
    """Any number of faults: accepted iff ast.parse accepts, with the same tree. (Where a file
    holds several faults, CPython's choice of the one it names is not followed in every case:
    see docs/benchmarks.md, fingerprint.)"""
    source = _source(lines, good_prefix, False)
    expected = _outcome(ast.parse, source)
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
        got = _outcome(parse_source, source)
    assert (got[0] == "ok") == (expected[0] == "ok")
    if expected[0] == "ok":
        assert got == expected


PAD = "".join(f"value_{n} = {n}\n" for n in range(CHUNK_BYTES // 12))


def _body(prefix: str, lines: list[str]) -> str:
    return prefix + "".join(lines)


def _tabs_across_parts() -> str:
    """A body indented by a tab and eight spaces, then by two tabs (the same column, not the
    same indentation to CPython): lines of 20 bytes, so that the change falls where a part
    of CHUNK_BYTES ends."""
    n = CHUNK_BYTES // 20
    text = "if x:\n" + "".join(f"\t        a{k:05} = 1\n" for k in range(n))
    return text + "".join(f"\t\tb{k:05} = 2\n" for k in range(3000))


def _nested(header: str, depth: int, inner: list[str]) -> str:
    heads = "".join(" " * i + header + "\n" for i in range(depth))
    return heads + "".join(" " * depth + line + "\n" for line in inner)


CASES = {
    "tabs and spaces mixed across two parts": _tabs_across_parts,
    "101 levels of indentation": lambda: _nested("if x:", 101, ["a = 1"] * 3000),
    "100 levels of indentation": lambda: _nested("with x:", 100, ["a = 1"] * 3000),
    "the parser's stack, inside functions": lambda: _nested(
        "def f():", 99, ["a = 1"] * 2500 + ["b = " + "(" * 190 + "1" + ")" * 190]
    ),
    "the parser's stack, inside ifs": lambda: _nested(
        "if x:", 99, ["a = 1"] * 2500 + ["b = " + "(" * 193 + "1" + ")" * 193]
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_what_cpython_refuses_only_as_a_whole_is_refused(name):
    text = CASES[name]()
    assert len(text) > 2 * CHUNK_BYTES
    expected = _outcome(ast.parse, text.encode())
    assert expected[0] != "ok"
    assert _outcome(parse_source, text) == expected
    assert _outcome(parse_source, text.encode()) == expected


BYTE_CASES = {
    "invalid UTF-8 in a comment past the first part": PAD.encode() + b"# \xff\xfe here\n",
    "invalid UTF-8 in a string past the first part": PAD.encode() + b"x = 'ab\xffc'\n",
    "invalid UTF-8 in a name": PAD.encode() + b"a\xffb = 1\n",
    "a cookie naming ASCII, UTF-8 far on": b"# coding: ascii\n" + PAD.encode() + "é\n".encode(),
    "a cookie naming no encoding": b"# coding: nonsense\n" + PAD.encode(),
    "a byte-order mark and a Latin-1 cookie": b"\xef\xbb\xbf# coding: latin-1\n" + PAD.encode(),
    "a cookie-like comment starting a part": PAD.encode() + b"# coding: latin-1\nx = '\xc3\xa9'\n",
    "a Latin-1 file": b"# coding: latin-1\n" + PAD.encode() + b"x = '\xe9'\n",
}


@pytest.mark.parametrize("name", sorted(BYTE_CASES))
def test_a_files_bytes_are_read_as_cpython_reads_them(name):
    data = BYTE_CASES[name]
    assert len(data) > CHUNK_BYTES
    assert _outcome(parse_source, data) == _outcome(ast.parse, data)


#: Texts that run on to their end inside a string or a bracket, far more than a part past
#: where it opens, and statements put back together from parts.
FAR_CASES = {
    "a triple-quoted string left open": lambda end: PAD + 'x = """open\n' + PAD + end,
    "one left open in an indented body": lambda end: "if x:\n    y = '''a\n" + PAD * 2 + end,
    "a bracket left open before a statement": lambda end: "x = (\n" + PAD * 2 + end,
    "a bracket left open, brackets inside": lambda end: (
        "x = [\n" + "(1000000,\n2000000),\n" * 4000 + end
    ),
    "a body ending with a semicolon": lambda end: (
        "def f():\n" + "    a = 1\n" * 8000 + "    b = 2;" + end
    ),
    "a body ending with a semicolon after a backslash": lambda end: (
        "class C:\n" + "    a = 1\n" * 8000 + "    b = 2 \\\n;" + end
    ),
}


@pytest.mark.parametrize("end", ["\n", "", "\n\n# last\n", "\r\n"])
@pytest.mark.parametrize("name", sorted(FAR_CASES))
def test_what_runs_on_past_a_part_is_told_as_cpython_tells_it(name, end):
    """The message (an unterminated string is "detected at" the file's last line), its line,
    and a statement's end column (a trailing ``;`` is its last token) are CPython's."""
    text = FAR_CASES[name](end)
    if end == "\r\n":
        text = text.replace("\n", "\r\n")
    assert len(text) > 2 * CHUNK_BYTES
    expected = _outcome(ast.parse, text.encode())
    assert _outcome(parse_source, text) == expected
    assert _outcome(parse_source, text.encode()) == expected


def _clauses(head: str, clause: str, n: int, tail: str) -> str:
    return head + "".join(clause.format(k=k) for k in range(n)) + tail


#: Statements of thousands of clauses, split into parts of whole clauses.
CLAUSE_CASES = {
    "try, except": lambda: _clauses("try:\n    a = 1\n", "except E{k}:\n    b = {k}\n", 4000, ""),
    "try, bare except first, else, finally": lambda: _clauses(
        "try:\n    a = 1\nexcept:\n    pass\n",
        "except E{k}:\n    b = {k};\n",
        4000,
        "else:\n    c = 1\nfinally:\n    d = 2\n",
    ),
    "try, except and except*": lambda: _clauses(
        "try:\n    a = 1\n", "except E{k}:\n    b = {k}\n", 4000, "except* F:\n    pass\n"
    ),
    "except*": lambda: _clauses("try:\n    a = 1\n", "except* E{k}:\n    b = {k}\n", 4000, ""),
    "if, elif, else with an if": lambda: _clauses(  # a chain of elifs nests: 150 of them
        "if a:\n    pass\n",
        "elif b == {k}:\n" + "    c = {k}\n" * 40,
        150,
        "else:\n    if d:\n        pass\n    else:\n        e = 1\n",
    ),
    "for, else": lambda: "for a in b:\n" + "    c = 1\n" * 8000 + "else:\n" + "    d = 2\n" * 8000,
    "while, else": lambda: "while a:\n" + "    c = 1\n" * 8000 + "else:\n    d = 2;\n",
    "a class's method of many clauses": lambda: (
        "class C:\n    def f(self):\n"
        + _clauses(
            "        try:\n            a = 1\n",
            "        except E{k}:\n            b = {k}\n",
            3000,
            "",
        )
        + "        else:\n            pass\n"
    ),
}


@pytest.mark.parametrize("name", sorted(CLAUSE_CASES))
def test_a_statement_of_many_clauses_is_put_back_together(name):
    """The tree, with every position, or the error, is CPython's."""
    text = CLAUSE_CASES[name]()
    assert len(text) > 2 * CHUNK_BYTES
    assert _outcome(parse_source, text) == _outcome(ast.parse, text)


def test_an_unfinished_text_with_bytes_not_utf8_names_the_bad_name():
    """A name of bytes that are not UTF-8 inside a bracket left open: CPython stops at it."""
    data = b"x = [\n" + b"1,\n" * 5000 + b"a\xcf,\n" + b"2,\n" * 12000
    expected = _outcome(ast.parse, data)
    assert str(expected[1]).startswith("(unicode error)")
    assert _outcome(parse_source, data) == expected


def test_the_comment_case_is_valid_and_the_string_case_names_the_strings_line():
    """The oracle's answers, stated: the two cases differ only in where the byte is."""
    ok = parse_source(BYTE_CASES["invalid UTF-8 in a comment past the first part"])
    assert len(ok.body) == CHUNK_BYTES // 12
    with pytest.raises(SyntaxError) as caught:
        parse_source(BYTE_CASES["invalid UTF-8 in a string past the first part"])
    assert caught.value.lineno == CHUNK_BYTES // 12 + 1
    assert "can't decode byte 0xff in position 2" in str(caught.value.msg)


ONE_LINE = {
    "list": "values = [" + "1, " * 330_000 + "]\n",
    "call": "register(" + "a," * 490_000 + ")\n",
    "dict": "table = {" + "1: 2, " * 160_000 + "}\n",
    "sum of strings": "key = " + "+".join(["'a'"] * 240_000) + "\n",
}


@pytest.mark.parametrize("name", sorted(ONE_LINE))
@pytest.mark.parametrize("tabbed", [False, True])
def test_a_statement_of_too_many_tokens_is_refused_before_its_tree(name, tabbed):
    """A logical line of about 1 MB that the parser would turn into 300 MB - 1.1 GB of tree
    is refused, naming its line, before any parser sees it (the scan and, with a tab in an
    indentation before it, the tokenizer count its tokens)."""
    head = "import os\nif os:\n\tpass\n" if tabbed else "import os\n"
    text = head + ONE_LINE[name]
    assert len(text) < 1_000_000
    handed: list[int] = []
    real = ast.parse

    def spy(source, *args, **kwargs):
        handed.append(len(source))
        return real(source, *args, **kwargs)

    with (
        mock.patch.object(ast, "parse", spy),
        pytest.raises(bounded_parse.StatementTooLarge) as caught,
    ):
        parse_source(text, "big.py")
    assert caught.value.line == head.count("\n") + 1
    assert f"more than {MAX_STATEMENT_TOKENS:,} tokens" in str(caught.value)
    assert all(size <= CHUNK_BYTES + 100 for size in handed)


def test_a_long_statement_of_few_tokens_still_parses():
    """The bound is on tokens, not bytes: a 100 KB string on one line is one token."""
    text = PAD + "x = '" + "a" * 100_000 + "'\n"
    assert ast.dump(parse_source(text)) == ast.dump(ast.parse(text))


def test_fingerprint_names_the_file_and_line_of_a_statement_too_large(tmp_path):
    """Through the analysis: the file is unparsable, its reason names the line and the bound,
    and the other files are still read."""
    from skew_fixtures import copy_tree

    from ppaux.limits import Limits
    from ppaux.sglang import SCHEDULER_FILE
    from ppaux.sglang_source import analyse

    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    path.write_text("import os\n" + ONE_LINE["list"])
    # The file is larger than one analysis parses by default: the bound on tokens is the one
    # asked about here.
    limits = Limits(max_analysed_source_bytes=2 * path.stat().st_size)
    capability = analyse(str(root), limits)
    scheduler = capability.files[0]
    assert scheduler.status == "unparsable"
    assert scheduler.reason == (
        f"not analysable: line 2: one statement of more than {MAX_STATEMENT_TOKENS:,} tokens,"
        " more than sglang's sources ever hold, not parsed"
        f" (limit max_statement_tokens={MAX_STATEMENT_TOKENS} reached)"
    )
    assert capability.unknown["output_keys"] == f"{scheduler.path}: {scheduler.reason}"
    assert capability.transport == "present"


#: Texts whose last logical line is continued by a backslash onto a line the file does not
#: have, after a body left empty (CPython names the empty body), and texts ending with an
#: indented line of only a backslash (valid where a line follows it, which a CRLF gives), and
#: a text of one CRLF line among LF lines whose last line is continued (CPython meets the end).
CONTINUED_AT_THE_END = [
    "if x:\nx=1\\\n",
    "def f():\r\nx=1\r\nelse:\\\n",
    "def f():\r\ntry:\r\nx=1\\\n",
    "def f():\ndef f():\nx=1\\\n",
    "x=1\nx=1\\\n",
    "x=1\nx=1\\\r\n",
    "x=1\r\nx=1\nx=1 \\\n",
    "def g():\n    return 1\n  \\\r\n",
    "def g():\n    return 1\n  \\\n\n",
    "def g():\n    return 1\n  \\\n",
]


@pytest.mark.parametrize("chunk", [1, 4, CHUNK_BYTES])
@pytest.mark.parametrize("text", CONTINUED_AT_THE_END)
def test_a_backslash_at_the_files_end_is_judged_as_cpython_judges_it(text, chunk):
    source = (PAD + text).encode() if chunk == CHUNK_BYTES else text.encode()
    expected = _outcome(ast.parse, source)
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
        assert _outcome(parse_source, source) == expected


#: Texts of two faults where CPython names the first: an empty body before the statement the
#: tokenizer stops in (named on that statement's line), an unexpected indent (CPython looks no
#: further), a statement after which a backslash is followed by a character (no error of
#: the tokenizer's own); and line ends that differ at the file's end.
TWO_FAULTS = [
    "def f():\r\nx=(1,\r\n",
    "def f():\nx=(1,",
    "x=1\ntry:\nx=(1,",
    "if x:\r\nx=(1,",
    '  y=2\r\n"""a',
    "  y=2\nx=(1,",
    "else:\n\\\\\n",
    "def f():\r\nx=1\r\n\\\\\n",
    "x=1\r\ntry:",
    "#c\r\nif x:\n",
    "try:\r\n  y=2\n",
    '  \n"""a\ndef f():\n\ntry:\r\n',
    "  y=2\\\n",
    "  \\\n",
    # Indentation errors that tokenize passes: CPython's tokenizer stops at them, in the
    # parser's first pass (a TabError) and in its look past a parser's error.
    "if x:\n    pass\n\tx = 1\ny = '''open\n",
    "if x:\n    x = = 1\n\ty = 1\nz = '''open\n",
    "if x:\n    x = = 1\n\ty = 1\nz = )\n",
    "if x:\n    x = = 1\n  y = 1\nz = '''open\n",
    "if x:\n        pass\n\t        x = 1\n",
]


@pytest.mark.parametrize("chunk", [1, 4])
@pytest.mark.parametrize("text", TWO_FAULTS)
def test_of_two_faults_the_one_cpython_names_is_named(text, chunk):
    expected = _outcome(ast.parse, text.encode())
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
        assert _outcome(parse_source, text.encode()) == expected


#: Lines of a fuzzed text: headers, statements, and lines left unfinished.
FUZZ_LINES = st.sampled_from(
    [
        "if x:",
        "x=1",
        "x = 1 + ",
        "def f():",
        "  y=2",
        "x=(1,",
        '"""a',
        "",
        "#c",
        "  ",
        "else:",
        "try:",
        "\\",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(FUZZ_LINES, min_size=1, max_size=5),
    separator=st.sampled_from(["\n", "\r\n"]),
    end=st.sampled_from(["\\\r\n", "\\\n", "\r\n", "\n", ""]),
    chunk=st.sampled_from([1, 4, 16]),
)
def test_any_text_of_broken_lines_gets_cpythons_verdict(lines, separator, end, chunk):
    """Texts of lines that are mostly faults: nothing but SyntaxError or ValueError escapes,
    the text is accepted iff ast.parse accepts it, and refused with CPython's error, message
    and line. Where a backslash continues a line of a text with several faults, the error
    named may be another of them than CPython's (see docs/benchmarks.md, fingerprint)."""
    source = (separator.join(lines) + end).encode()
    expected = _outcome(ast.parse, source)
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
        try:
            got = _outcome(parse_source, source)
        except Exception as exc:
            pytest.fail(f"{type(exc).__name__}: {exc}")
    assert (got[0] == "ok") == (expected[0] == "ok")
    if expected[0] == "ok" or b"\\" not in source:
        assert got == expected


@pytest.mark.parametrize(
    "source",
    [
        # A coding cookie in a file of CR line ends: its first line is the cookie's.
        b"# coding: latin-1\r" + b"x = 1\r" * 6000 + b'y = "\xe9"\r',
        b"#!/usr/bin/env python\r# -*- coding: cp1251 -*-\r" + b"x = 1\r" * 6000 + b'y = "\xe9"\r',
        b"# coding: bogus\r" + b"x = 1\r" * 6000,
        # A BOM is taken off once; a second is a character CPython refuses.
        b"\xef\xbb\xbf" * 2 + b"x = 1\n" * 6000,
        b"\xef\xbb\xbf" + b"x = 1\n" * 6000,
    ],
    ids=["cr-latin1", "cr-cp1251-second-line", "cr-bogus", "two-boms", "one-bom"],
)
@pytest.mark.parametrize("chunk", [64, CHUNK_BYTES])
def test_a_files_encoding_is_read_as_cpython_reads_it(source, chunk):
    expected = _outcome(ast.parse, source)
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
        assert _outcome(parse_source, source) == expected
