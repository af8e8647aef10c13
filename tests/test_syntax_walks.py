"""The walks over a syntax tree that the capability analysis uses: :func:`walk` gives every node
in source order (depth first, as a recursive walk over ``ast.iter_child_nodes`` would), and
:func:`statements` exactly the statements among them."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.sglang_source.syntax import statements, walk

SAMPLES = [
    "import os\nfrom a import b\n",
    "def f(x=lambda: 1):\n    class C:\n        def g(self):\n            from . import h\n",
    "try:\n    import a\nexcept E:\n    from b import c\nelse:\n    x = 1\nfinally:\n    y = 2\n",
    "match v:\n    case 1:\n        from m import n\n    case _:\n        pass\n",
    "async def f():\n    async with a:\n        async for i in b:\n            await c(i)\n",
    "while x:\n    if y:\n        z = [i for i in w]\n    else:\n        del q\n",
]


def _recursive(node: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    for child in ast.iter_child_nodes(node):
        out.append(child)
        out.extend(_recursive(child))
    return out


@pytest.mark.parametrize("source", SAMPLES)
def test_walk_is_the_recursive_walk_and_statements_its_statements(source):
    tree = ast.parse(source)
    every = _recursive(tree)
    assert list(walk(tree)) == every
    assert list(statements(tree)) == [n for n in every if isinstance(n, ast.stmt)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(SAMPLES), min_size=1, max_size=6), st.integers(0, 3))
def test_statements_finds_every_statement_at_any_depth(parts, depth):
    """Samples nested in functions to ``depth`` levels: the same statements in the same order
    as the recursive walk."""
    source = "".join(parts)
    for level in range(depth):
        source = f"def wrapper_{level}():\n" + "".join(
            "    " + line + "\n" for line in source.splitlines()
        )
    tree = ast.parse(source)
    every = _recursive(tree)
    assert list(statements(tree)) == [n for n in every if isinstance(n, ast.stmt)]
    assert list(walk(tree)) == every
