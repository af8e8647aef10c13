"""The human view of check-skew: a matrix of stages (columns) against facts (rows).

Cells that differ from the row's reference (the baseline's value, else the most common one) are
marked. Past :data:`MAX_COLUMNS` stages, stages whose facts are all the same share one column,
so a thousand identical ranks make one column and the odd ones stand out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ppaux.report import Table
from ppaux.skew.fingerprint import Fingerprint
from ppaux.skew.stage import (
    FACTS,
    PACKAGE_FACTS,
    Fact,
    Stage,
    env_reader,
    package_reader,
    reference_value,
    span,
)

__all__ = ["MAX_COLUMNS", "matrix"]

#: Most stage columns shown one per stage; beyond, identical stages share a column.
MAX_COLUMNS = 8
# Most columns after grouping; the remaining groups share one last column.
_MAX_GROUPS = 12
_UNKNOWN = "?"


def _rows(
    stages: Sequence[Stage], baseline: Fingerprint | None, env_names: Sequence[str]
) -> list[Fact]:
    everyone = [s.fingerprint for s in stages] + ([baseline] if baseline is not None else [])
    rows = list(FACTS)
    for name in PACKAGE_FACTS:
        if any(fp.packages.get(name) for fp in everyone):
            rows.append(Fact(name, package_reader(name)))
    for name in env_names:
        rows.append(Fact(f"${name}", env_reader(name)))
    if any(fp.sglang.live for fp in everyone):
        rows.append(Fact("live add/pop", _live))
    return rows


def _live(fp: Fingerprint) -> str | None:
    if not fp.sglang.live:
        return None
    odd = sorted(
        {v.split(":")[0] for v in fp.sglang.live.values() if v not in ("original", "not loaded")}
    )
    return ", ".join(odd) if odd else "original"


def _group(stages: Sequence[Stage], rows: Sequence[Fact]) -> list[list[Stage]]:
    groups: dict[tuple[Any, ...], list[Stage]] = {}
    for stage in stages:
        signature = tuple(row.value(stage.fingerprint) for row in rows if not row.identity)
        groups.setdefault(signature, []).append(stage)
    ordered = list(groups.values())
    if len(ordered) > _MAX_GROUPS:
        rest = [s for group in ordered[_MAX_GROUPS - 1 :] for s in group]
        ordered = [*ordered[: _MAX_GROUPS - 1], rest]
    return ordered


def _cell(
    group: Sequence[Stage], value: Callable[[Fingerprint], str | None], identity: bool, name: str
) -> str | None:
    values = [value(s.fingerprint) for s in group]
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return distinct[0]
    if identity:
        return f"{len([v for v in distinct if v is not None])} {name}s"
    return "various"


def matrix(
    stages: Sequence[Stage], baseline: Fingerprint | None, env_names: Sequence[str]
) -> Table:
    """The stages-by-facts table, differing cells in ``marked``."""
    rows = _rows(stages, baseline, env_names)
    if len(stages) > MAX_COLUMNS:
        groups = _group(stages, rows)
        headers = [
            g[0].label if len(g) == 1 else f"{span([s.label for s in g], 2)} ({len(g)})"
            for g in groups
        ]
    else:
        groups = [[s] for s in stages]
        headers = [s.label for s in stages]
    columns = ["fact"] + (["baseline"] if baseline is not None else []) + headers
    offset = 2 if baseline is not None else 1
    table_rows: list[tuple[str, ...]] = []
    marked: set[tuple[int, int]] = set()
    for r, row in enumerate(rows):
        ref = None if row.identity else reference_value(stages, row.value, baseline)
        cells = [row.name]
        if baseline is not None:
            cells.append(row.value(baseline) or _UNKNOWN)
        for c, group in enumerate(groups):
            value = _cell(group, row.value, row.identity, row.name)
            cells.append(value if value is not None else _UNKNOWN)
            if ref is not None and value is not None and value != ref:
                marked.add((r, c + offset))
        table_rows.append(tuple(cells))
    title = f"{len(stages)} stage(s)" + (" against the baseline" if baseline is not None else "")
    return Table(
        title=title, columns=tuple(columns), rows=tuple(table_rows), marked=frozenset(marked)
    )
