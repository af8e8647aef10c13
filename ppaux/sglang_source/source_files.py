"""The files an analysis of an sglang tree reads: each read and parsed once, whole, with the
status and reason CPython's parser gives it, and refused where its syntax nests deeper than
the analysis can walk.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field

from ppaux.limits import Limits
from ppaux.sglang_source.bounded_parse import StatementTooLarge, parse_source
from ppaux.sglang_source.capability import SourceFile
from ppaux.sglang_source.node_fields import node_fields
from ppaux.sglang_source.tree import SglangTree, UnreadableFile
from ppaux.suggestions import RaiseLimit, limit_note

__all__ = [
    "INVALID_PYTHON",
    "MAX_SYNTAX_DEPTH",
    "WALKABLE_DEPTH",
    "Parsed",
    "ParsedFiles",
    "checked_depth",
    "depth_within",
    "parse_file",
]


@dataclass
class Parsed:
    """A file read and parsed, or the reason it could not be."""

    file: SourceFile
    module: ast.Module | None
    data: bytes | None = None
    relative: str = ""

    @property
    def why(self) -> str:
        return f"{self.file.path}: {self.file.reason}"


def parse_file(
    tree: SglangTree, role: str, relative: str, limits: Limits, parsed_before: int = 0
) -> Parsed:
    """Read and parse one file, whole: its status and reason are what ``ast.parse`` of the file
    says (a syntax error anywhere in it makes it unparsable, as CPython would refuse to import
    it), its syntax tree the one ``ast.parse`` gives. A file whose bytes, with the
    ``parsed_before`` bytes of the files parsed before it, come to more than
    ``limits.max_analysed_source_bytes`` is not parsed (status unreadable, naming the limit)."""
    where = tree.describe(relative)
    try:
        data = tree.read(relative)
    except UnreadableFile as exc:
        unreadable = SourceFile(
            role, where, "unreadable", reason=exc.reason, suggestions=exc.suggestions
        )
        return Parsed(unreadable, None)
    if data is None:
        return Parsed(SourceFile(role, where, "absent", reason="no such file"), None)
    digest = hashlib.sha256(data).hexdigest()
    budget = limits.max_analysed_source_bytes
    if parsed_before + len(data) > budget:
        before = ""
        if parsed_before:
            before = f", with the {parsed_before} bytes of sglang source parsed before it,"
        reason = (
            f"not parsed: {len(data)} bytes{before} more than the {budget} bytes of source"
            f" one analysis parses {limit_note('max_analysed_source_bytes', budget)}"
        )
        over = SourceFile(
            role,
            where,
            "unreadable",
            digest,
            reason,
            suggestions=(RaiseLimit("max_analysed_source_bytes", budget),),
        )
        return Parsed(over, None, data)
    try:
        module = parse_source(data, where, limits.max_statement_tokens)
    except StatementTooLarge as exc:
        reason = f"not analysable: {exc}"
        too_large = SourceFile(
            role,
            where,
            "unparsable",
            digest,
            reason,
            suggestions=(RaiseLimit("max_statement_tokens", exc.limit),),
        )
        return Parsed(too_large, None, data)
    except SyntaxError as exc:
        reason = f"{INVALID_PYTHON}: {exc.msg} (line {exc.lineno})"
        return Parsed(SourceFile(role, where, "unparsable", digest, reason), None, data)
    except (ValueError, RecursionError, MemoryError) as exc:
        # ValueError: NUL bytes or a bad coding cookie; RecursionError: absurd nesting.
        reason = f"{INVALID_PYTHON}: {type(exc).__name__}: {exc}"
        return Parsed(SourceFile(role, where, "unparsable", digest, reason), None, data)
    parsed = Parsed(SourceFile(role, where, "ok", digest), module, data)
    return checked_depth(parsed, limits.max_syntax_depth)


#: How a file's reason starts when CPython's parser refuses it (CPython cannot import it).
INVALID_PYTHON = "not valid Python"


#: Deepest syntax tree analysed by default (``Limits.max_syntax_depth``).
MAX_SYNTAX_DEPTH = Limits().max_syntax_depth
#: Deepest syntax tree analysed whatever ``max_syntax_depth`` says: the analysis (and ast.dump,
#: behind the digests) recurses once a level, and Python's recursion limit (1000 frames) stops
#: it a little past 900 levels; a deeper tree is refused here rather than crashing later.
WALKABLE_DEPTH = 800


def checked_depth(parsed: Parsed, limit: int) -> Parsed:
    if parsed.module is None or depth_within(parsed.module, min(limit, WALKABLE_DEPTH)):
        return parsed
    file = parsed.file
    if limit > WALKABLE_DEPTH:
        reason = (
            f"not analysable: its syntax nests deeper than {WALKABLE_DEPTH} levels,"
            " the most the analysis can walk within Python's recursion limit"
        )
        suggestions: tuple[RaiseLimit, ...] = ()
    else:
        reason = (
            f"not analysable: its syntax nests deeper than {limit} levels"
            f" {limit_note('max_syntax_depth', limit)}"
        )
        suggestions = (RaiseLimit("max_syntax_depth", limit),)
    deep = SourceFile(
        file.role, file.path, "unparsable", file.sha256, reason, suggestions=suggestions
    )
    return Parsed(deep, None, parsed.data)


def depth_within(module: ast.Module, limit: int) -> bool:
    """Whether no node lies deeper than ``limit`` below ``module``: one level at a time, reading
    only the fields of each node type that can hold nodes (:func:`node_fields`, looked up once
    a type here), about a third of what :func:`ast.iter_child_nodes` costs."""
    level: list[ast.AST] = [module]
    depth = 0
    fields_of: dict[type, tuple[str, ...]] = {}
    while level:
        if depth > limit:
            return False
        below: list[ast.AST] = []
        contexts = False  # a name's or attribute's load/store context: a leaf one level down
        for node in level:
            kind = type(node)
            names = fields_of.get(kind)
            if names is None:
                names = fields_of[kind] = node_fields(kind)
            for name in names:
                if name == "ctx":
                    contexts = True
                    continue
                value = getattr(node, name, None)
                if isinstance(value, list):
                    below += [item for item in value if isinstance(item, ast.AST)]
                elif isinstance(value, ast.AST):
                    below.append(value)
        if not below and contexts:
            return depth + 1 <= limit
        level = below
        depth += 1
    return True


@dataclass
class ParsedFiles:
    """The files of one tree parsed so far, each parsed once whatever asks for it again (a
    module that re-exports add and pop from itself is one file, read once)."""

    tree: SglangTree
    limits: Limits
    _seen: dict[tuple[str, str], Parsed] = field(default_factory=dict)
    #: Bytes of the files parsed so far (within ``limits.max_analysed_source_bytes``).
    parsed_bytes: int = 0

    def parse(self, role: str, relative: str) -> Parsed:
        """:func:`parse_file` of ``relative`` in the ``role``, from the memo after the first."""
        key = (role, relative)
        if key not in self._seen:
            parsed = parse_file(self.tree, role, relative, self.limits, self.parsed_bytes)
            parsed.relative = relative
            if parsed.file.status in ("ok", "unparsable") and parsed.data is not None:
                self.parsed_bytes += len(parsed.data)
            self._seen[key] = parsed
        return self._seen[key]
