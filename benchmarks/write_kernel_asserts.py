"""Write a log of CUDA kernel assertions, one per thread, as a kernel that indexes out of range
prints them (400 blocks of 128 threads: 51,200 lines), then the traceback torch raised, cut
after its first frame, as a paste often ends:

    python benchmarks/write_kernel_asserts.py OUT.log [--blocks 400]

Every line holds a marker (``] Assertion ``), so each is a stop of triage's scan and is read
whole: the cost of a line read is what this log measures (docs/benchmarks.md, triage).
"""

from __future__ import annotations

import argparse
from pathlib import Path

LINE = (
    "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1290: indexSelectLargeIndex: "
    "block: [{block},0,0], thread: [{thread},0,0] Assertion `srcIndex < srcSelectDimSize` "
    "failed.\n"
)
TAIL = (
    'Traceback (most recent call last):\n  File "/app/train.py", line 10, in <module>\n    main()\n'
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--blocks", type=int, default=400)
    args = parser.parse_args()
    with args.out.open("w", encoding="utf-8") as out:
        for block in range(args.blocks):
            out.writelines(LINE.format(block=block, thread=t) for t in range(128))
        out.write(TAIL)


if __name__ == "__main__":
    main()
