"""Count where the bounded parse's verdict differs from CPython's on texts of broken lines.

Run::

    python benchmarks/bench_bounded_parse_verdicts.py [--texts 4000] [--seed 1]
    PYTHONPATH=DIR python benchmarks/bench_bounded_parse_verdicts.py   # another ppaux

(``DIR`` from ``git archive REV ppaux | tar -x -C DIR``.) Each text joins one to five lines
drawn from headers, statements and lines left unfinished (LF or CRLF, ending in a backslash or
not), and is parsed by ``parse_source`` cut into parts of 1 and 4 bytes and by ``ast.parse``.
It prints how many verdicts differ: in status (valid against invalid), in message or line only,
and how many raised anything but ``SyntaxError`` or ``ValueError``.
"""

from __future__ import annotations

import argparse
import ast
import random
from unittest import mock

from ppaux.sglang_source import bounded_parse

LINES = ["if x:", "x=1", "x = 1 + ", "def f():", "  y=2", "x=(1,", '"""a', "", "#c", "  "]
LINES += ["else:", "try:", "\\"]
ENDS = ["\\\r\n", "\\\n", "\r\n", "\n", ""]


def _verdict(parse: object, source: bytes) -> tuple[object, ...]:
    try:
        parse(source)  # type: ignore[operator]
    except (SyntaxError, ValueError) as exc:
        return (getattr(exc, "msg", str(exc)), getattr(exc, "lineno", None))
    return ("ok",)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    draw = random.Random(args.seed)
    counts = {"compared": 0, "status": 0, "message or line": 0, "crash": 0}
    for _ in range(args.texts):
        lines = [draw.choice(LINES) for _ in range(draw.randint(1, 5))]
        source = (draw.choice(["\n", "\r\n"]).join(lines) + draw.choice(ENDS)).encode()
        expected = _verdict(ast.parse, source)
        for chunk in (1, 4):
            counts["compared"] += 1
            with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
                try:
                    got = _verdict(bounded_parse.parse_source, source)
                except Exception:  # the count is of these
                    counts["crash"] += 1
                    continue
            if (got == ("ok",)) != (expected == ("ok",)):
                counts["status"] += 1
            elif got != expected:
                counts["message or line"] += 1
    print(", ".join(f"{name}: {count}" for name, count in counts.items()))


if __name__ == "__main__":
    main()
