"""ppaux capture's start line names its directory, then its mode at the line's end: a
directory whose name holds `` (when=`` is read whole, and the mode is the last one's."""

from __future__ import annotations

from helpers import cli

_LINE = (
    "[2026-12-03 10:00:00 PP1] ppaux capture: capturing failing PP auxiliary transport calls "
    "into {dir} (when={how})\n"
)
_FAILURE = (
    "[2026-12-03 10:00:05 PP1] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/srv/app/run.py", line 9, in step\n'
    "    send(x)\n"
    "RuntimeError: auxiliary PP output 'scores' is not a tensor\n"
)


def test_a_directory_that_holds_the_modes_words_is_read_whole(tmp_path):
    log = tmp_path / "x.log"
    log.write_text(_LINE.format(dir="/tmp/a (when=never) b", how="error") + _FAILURE)
    out = cli("triage", str(log)).output
    assert "ppaux capture list --dir '/tmp/a (when=never) b'" in out
    assert "--dir /tmp/a\n" not in out


def test_the_plain_directory_is_read_as_before(tmp_path):
    log = tmp_path / "x.log"
    log.write_text(_LINE.format(dir="/data/caps", how="error, strict") + _FAILURE)
    out = cli("triage", str(log)).output
    assert "ppaux capture list --dir /data/caps\n" in out
