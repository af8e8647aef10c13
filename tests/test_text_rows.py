"""The lines that may spell a word hold every node that names it: the analysis's walks look only
at those lines, so a line left out would hide a call or a binding."""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from ppaux.sglang_source.text_rows import rows_naming

WORDS = ("add", "pop")
STATEMENTS = st.sampled_from(
    [
        "add(1)",
        "x = pop",
        "y = (1,\n add)",
        "z = '''\nadd\n'''",
        "if q:\n    pop()",
        "w = 'ｐop'",
        "ａdd = 1",
        "# add",
        "pass",
        "v = [\n1,\n2]",
    ]
)
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])


@given(st.lists(st.tuples(STATEMENTS, ENDINGS), max_size=12))
def test_every_name_of_a_word_lies_on_a_row_found(parts):
    source = "".join(text.replace("\n", ending) + ending for text, ending in parts)
    data = source.encode("utf-8")
    rows = rows_naming(data, WORDS)
    assert rows is not None and rows == sorted(set(rows))
    for node in ast.walk(ast.parse(data)):
        if isinstance(node, ast.Name) and node.id in WORDS:
            assert node.lineno in rows


def test_a_coding_declaration_gives_no_rows():
    assert rows_naming(b"# -*- coding: latin-1 -*-\nadd()\n", WORDS) is None
    assert rows_naming(b"x = 1\n# coding: utf-8\nadd()\n", WORDS) is None
    assert rows_naming(b"x = 1\ny = 2\n# coding: latin-1\nadd()\n", WORDS) == [4]


def test_rows_count_cr_and_crlf_as_line_ends():
    assert rows_naming(b"x = 1\r\ny = 2\rz = add\n", WORDS) == [3]
    assert rows_naming(b"# \xc3\xa9\nadd()\n", WORDS) == [1, 2]
