"""A container runtime's lines (``<time> <stream> F <text>``) kept whole inside another
collector's record read as the plain CRI log reads: the runtime's prefix off, its time the
line's."""

from __future__ import annotations

import json

import pytest

from ppaux.triage import triage_paths
from ppaux.triage.crilines import cri_lines

_LINES = [
    "[rank7]: Traceback (most recent call last):",
    '[rank7]:   File "/srv/train.py", line 9, in step',
    "[rank7]:     loss.backward()",
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.",
    "[rank7]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.",
]
# rank 7's traceback starts at 10:00:05, after rank 1's line at 10:00:03: rank 1 is first
_SECONDS = [5, 5, 5, 3, 9]
_CRI = [
    f"2024-12-01T10:00:{s:02d}.000000000Z stderr F {line}"
    for s, line in zip(_SECONDS, _LINES, strict=True)
]


def _docs() -> dict[str, str]:
    return {
        "cloud.json": json.dumps(
            [{"textPayload": c, "timestamp": "2024-12-01T10:01:00Z", "resource": {}} for c in _CRI]
        ),
        "loki.json": json.dumps(
            {
                "data": {
                    "resultType": "streams",
                    "result": [
                        {
                            "stream": {"pod": "tt-0"},
                            "values": [["1733047260000000000", c] for c in _CRI],
                        }
                    ],
                }
            }
        ),
        "journald.json": "\n".join(
            json.dumps({"MESSAGE": c, "__REALTIME_TIMESTAMP": "1733047260000000"}) for c in _CRI
        ),
        "docker.log": "\n".join(
            json.dumps({"log": c + "\n", "stream": "stderr", "time": "2024-12-01T10:01:00Z"})
            for c in _CRI
        ),
        "cloud-docker.json": json.dumps(
            [
                {
                    "textPayload": json.dumps({"log": c + "\n", "stream": "stderr"}),
                    "timestamp": "2024-12-01T10:01:00Z",
                }
                for c in _CRI
            ]
        ),
    }


@pytest.mark.parametrize("name", sorted(_docs()))
def test_a_runtimes_lines_inside_a_record_give_the_plain_cri_logs_root(tmp_path, name):
    path = tmp_path / name
    path.write_text(_docs()[name] + "\n", encoding="utf-8")
    report = triage_paths([str(path)])
    roots = [f for f in report.findings if f.code in ("PP801", "PP802")]
    assert [(f.key or "").rsplit(", ", 1)[-1] for f in roots] == ["rank 1"]
    assert roots[0].extra["kind"] == "memory"
    assert "2024-12-01T10:00:03.000000000Z" in " ".join(roots[0].message.split())


def test_a_message_that_only_quotes_a_runtimes_line_keeps_it():
    assert cri_lines(["see this:", _CRI[3]]) is None
    lines = cri_lines(["", _CRI[3]])
    assert lines is not None
    assert lines.texts == ["", _LINES[3]]
    assert (lines.time_text, lines.stream) == ("2024-12-01T10:00:03.000000000Z", "stderr")
