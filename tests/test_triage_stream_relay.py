"""A child's output relayed behind the name of its stream (``stdout: <line>``, ``stderr:
<line>``, as a test harness prints a subprocess's): the name is taken off each line, and an
empty relayed line is no exception."""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths
from ppaux.triage.peeled import Peeled
from ppaux.triage.prefixes import layers


def _roots(tmp_path: Path, text: str) -> list[tuple[str, str | None, str, str]]:
    path = tmp_path / "x.log"
    path.write_text(text, encoding="utf-8")
    return [
        (f.code, f.key, str((f.extra or {}).get("kind")), " ".join(f.message.split()))
        for f in triage_paths([str(path)]).findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def test_a_relayed_traceback_is_read_without_the_streams_name(tmp_path):
    text = (
        "stdout: loading shards\n"
        "stderr: Traceback (most recent call last):\n"
        'stderr:   File "/srv/train.py", line 9, in step\n'
        "stderr:     out = layer(x)\n"
        "stderr: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    ((code, key, kind, message),) = _roots(tmp_path, text)
    assert (code, key, kind) == ("PP802", None, "shape-kernel")
    assert "x.log:2): RuntimeError: CUDA error: an illegal memory access" in message
    assert "stderr:" not in message


def test_a_relayed_ranks_exception_is_that_ranks_and_an_empty_relayed_line_is_none(tmp_path):
    text = (
        "stderr: [rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "stderr: [rank7]: Traceback (most recent call last):\n"
        'stderr: [rank7]:   File "/srv/train.py", line 9, in train\n'
        "stderr: [rank7]:     logits = self._model(**batch)\n"
        "stderr: [rank7]:\n"
    )
    ((code, key, kind, message),) = _roots(tmp_path, text)
    assert (code, key, kind) == ("PP802", "rank 1", "memory")
    assert "x.log:1): torch.OutOfMemoryError: CUDA out of memory." in message


def test_the_relays_stream_name_is_a_layer_and_names_the_stream():
    peeled = Peeled(["stderr: [rank7]:   File x"])
    assert layers("stderr: [rank7]:   File x", peeled) == "[rank7]:   File x"
    assert peeled.stream == "stderr"
    empty = Peeled(["stdout:"])
    assert layers("stdout:", empty) == ""
    assert empty.stream == "stdout"
    assert layers("stdoutput: x", Peeled(["stdoutput: x"])) == "stdoutput: x"
