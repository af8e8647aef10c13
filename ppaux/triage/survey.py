"""What a log's head (its first bytes, its layers off) says of the whole log: its envelope and
launcher, sglang's pipeline ranks and server arguments, whether it has a log's shape at all, and
whether it is source code rather than a log.
"""

from __future__ import annotations

import bisect
import re

from ppaux.patterns import lazy
from ppaux.triage.flattened import quoted_spans
from ppaux.triage.lineformat import detect
from ppaux.triage.lineshapes import VLLM_STAGE, Envelope, Launcher
from ppaux.triage.logreading import LogReading

__all__ = ["source_code", "survey"]

#: sglang's prefix with a pipeline rank, as it appears inside any envelope (``[time ... PPn ...]``).
_PP_PREFIX = lazy(
    rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?"
    rb"(?: (?:DP|ATTN_CP|MOE_DP|TP|EP)\d{1,6})* PP(\d{1,6})\b"
)
#: vLLM's workers named by their stage (:data:`~ppaux.triage.lineshapes.VLLM_STAGE`).
_VLLM_STAGE = re.compile(VLLM_STAGE.pattern.encode())
#: sglang's ``server_args=ServerArgs(...)`` line, and the settings of it triage uses; and the
#: launch command's own flags, where a launcher logs it.
_SERVER_ARGS = lazy(rb"ServerArgs\([^\n]{0,60000}")
_SETTING = {
    "pp_size": lazy(rb"\bpp_size=(\d{1,4})\b"),
    "nnodes": lazy(rb"\bnnodes=(\d{1,4})\b"),
    "model_path": lazy(rb"\bmodel_path='([^'\n]{1,512})'"),
    "dist_init_addr": lazy(rb"\bdist_init_addr='([^'\n]{1,256})'"),
}
#: What only a log of sglang's or of a launcher around it holds, looked for in a log's head:
#: sglang's prefix (or a cut one), a traceback, torch's ``[rankN]:``, sglang's server arguments,
#: NCCL's own prefix.
_LOG_SHAPE = lazy(
    rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|(?:DP|PP|TP|EP)\d{1,6}\] |Traceback \(m|"
    rb"\[rank\d{1,6}\]:|hit an exception|ServerArgs\(|Watchdog caught|"
    rb'File \\?"[^"\n]{1,4096}", line \d|'
    # NCCL's own lines (NCCL_DEBUG=INFO), '<host>:<pid>:<thread> [<device>] NCCL INFO ...': a
    # log of NCCL's set-up and nothing else is a log ppaux reads (it may hold no failure)
    rb"(?:^|\n)[\w.-]{1,253}:\d{1,9}:\d{1,9} \[\d{1,6}\] NCCL (?:INFO|WARN) "
)
#: sglang's own lines: its prefix with a rank's tags (``[<time> TP0] ``, ``[<time> PP1 TP0] ``)
#: or its arguments.
_SGLANG_LINE = lazy(
    rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?(?: (?:DP|ATTN_CP|MOE_DP|TP|EP|PP)\d{1,6})+\] "
    rb"|ServerArgs\("
    rb"|(?:^|\n)Scheduler hit an exception"  # its scheduler's record of its failure, unprefixed
)
#: The prefix with no rank's tag (``[<time>] ``): sglang's main process writes it, and so do
#: other programs (DeepSpeed, a training script's own logger). It is sglang's only beside
#: sglang's own records: a traceback's frame in sglang's package, its batches' and weights'
#: records, its readiness line, each right after its prefix. The word anywhere else (a prompt
#: the log echoes, a path in a launch command: ``--data /data/sglang/x.jsonl``) is text, no
#: record of sglang's.
_BARE_STAMP = lazy(rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?\] ")
_SGLANG_RECORDS = lazy(
    rb'(?:^|\n)[ \t]{0,64}File "[^"\n]{0,4096}/sglang/(?:srt/)?[\w/]{1,200}\.py", line \d|'
    rb"\] (?:Decode batch|Prefill batch|Load weight (?:begin|end)|"
    rb"The server is fired up and ready to roll)"
)
#: Lines of Ascend's NPU stack: torch_npu's process group and sources, HCCL's own records, CANN's
#: ``[ERROR] ... ERR02005`` and ``EE9999`` codes, vLLM's Ascend plugin.
_ASCEND = lazy(
    rb"ProcessGroupHCCL|torch_npu[/.]|\bHCCL (?:watchdog|error|WARN|ERROR)|"
    rb"\) ERR0\d{4} |\bEE\d{4}: |vllm[-_]ascend"
)
_FLAG_PP = lazy(rb"--(?:pp-size|pipeline-parallel-size)[= ](\d{1,4})\b")
_FLAG_NNODES = lazy(rb"--nnodes[= ](\d{1,4})\b")


def _server_args(head: bytes) -> dict[str, str]:
    """The settings triage uses from sglang's server arguments line in ``head``."""
    found: dict[str, str] = {}
    unquoted = _Unquoted(head)
    line = next((m for m in _SERVER_ARGS.finditer(head) if unquoted.holds(m.start())), None)
    if line is not None:
        for name, pattern in _SETTING.items():
            match = pattern.search(line.group(0))
            if match is not None:
                found[name] = match.group(1).decode("utf-8", "backslashreplace")
    if "pp_size" not in found:
        flag = next((m for m in _FLAG_PP.finditer(head) if unquoted.holds(m.start())), None)
        if flag is not None:
            # The launch command: its stages run on --nnodes hosts, one (sglang's default)
            # when it does not say.
            found["pp_size"] = flag.group(1).decode()
            found["pp_size_from"] = "the launch command"
            nodes = next(
                (m for m in _FLAG_NNODES.finditer(head) if unquoted.holds(m.start())), None
            )
            found.setdefault("nnodes", nodes.group(1).decode() if nodes is not None else "1")
    return found


class _Unquoted:
    """Tells whether a place in a log's head stands outside every string literal of its line
    (:func:`quoted_spans`): a prompt's ``--pp-size 12`` that a request's echo carries is text,
    no setting. Each line's literals are found once."""

    def __init__(self, head: bytes) -> None:
        self._head = head
        self._spans: dict[int, list[tuple[int, int]]] = {}

    def holds(self, at: int) -> bool:
        start = self._head.rfind(b"\n", 0, at) + 1
        spans = self._spans.get(start)
        if spans is None:
            end = self._head.find(b"\n", at)
            line = self._head[start : len(self._head) if end < 0 else end]
            # latin-1 keeps each byte's place; quotes and backslashes are ASCII in UTF-8
            spans = self._spans[start] = quoted_spans(line.decode("latin-1"))
        place = bisect.bisect_right(spans, (at - start, len(self._head)))  # spans are in order
        return place == 0 or spans[place - 1][1] <= at - start


#: Lines that begin a definition or an import: what Python source is made of. A traceback
#: shows such a line only as a frame's code, right after its 'File "...", line N' line.
_DEFINITION = lazy(rb"^[ \t]*(?:def |class |import |from [\w.]+ import |@[\w.]+)")
_FRAME_LINE = lazy(rb'^[ \t]*File "')
#: A line that begins with a time in brackets, as sglang's prefix does: '[2026-12-03 14:56:07'
#: (another program's too: DeepSpeed's '[2023-04-16 21:36:09,031]'), which source code never
#: begins a line with.
_STAMPED_LINE = lazy(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", re.M)


def source_code(head: bytes) -> bool:
    """Whether ``head`` is source code rather than a log: at least 10 of its lines, and a
    twentieth of them, define or import outside any traceback frame, and no line begins with
    sglang's prefix. torch's own source holds tracebacks, and 'Traceback (most recent call
    last)' in its docstrings and tests; a log holds such lines only as a frame's code."""
    if _STAMPED_LINE.search(head):
        return False
    definitions = lines = 0
    after_frame = False
    for line in head.splitlines():
        if not line.strip():
            continue
        lines += 1
        if _DEFINITION.match(line) and not after_frame:
            definitions += 1
        after_frame = _FRAME_LINE.match(line) is not None
    return definitions >= 10 and definitions * 20 >= lines


#: sglang's time alone in brackets at a line's start, and before a frame: sglang writes its prefix
#: before a record's first line only, never before a traceback's frame; a tool that stamps every
#: line (a CI runner's log) does.
_STAMP_START = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?\] ", re.M)
_STAMPED_FRAME = re.compile(rb'^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?\] +File "', re.M)


def stamped_lines(head: bytes) -> bool:
    """Whether a tool put ``[<time>] `` (sglang's time alone in brackets) before every line of
    ``head``: half its lines or more begin with it, a frame among them."""
    if _STAMPED_FRAME.search(head) is None:
        return False
    lines = sum(1 for line in head.split(b"\n") if line.strip())
    return len(_STAMP_START.findall(head)) * 2 >= lines


def survey(reading: LogReading, head: bytes) -> None:
    """What ``head`` (a log's first bytes, its layers off) says of the whole log."""
    reading.empty = not head
    reading.envelope, reading.launcher = detect(head)
    reading.pp_ranks.update(int(n) for n in _PP_PREFIX.findall(head))
    reading.pp_ranks.update(int(n) for n in _VLLM_STAGE.findall(head))
    reading.server_args = _server_args(head)
    reading.ascend = _ASCEND.search(head) is not None
    reading.stamped = stamped_lines(head)
    reading.sglang_seen = _SGLANG_LINE.search(head) is not None or (
        _BARE_STAMP.search(head) is not None and _SGLANG_RECORDS.search(head) is not None
    )
    detected = reading.envelope is not Envelope.PLAIN or reading.launcher is not Launcher.NONE
    code = reading.source_code = source_code(head)
    reading.shaped = (detected or _LOG_SHAPE.search(head) is not None) and not code
