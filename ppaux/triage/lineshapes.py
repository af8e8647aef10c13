"""The shapes a log line comes in, as a table of patterns: the collector's envelope
(:class:`Envelope`), a launcher's prefix (:class:`Launcher`), sglang's own prefix, torch's rank
prefixes. :mod:`ppaux.triage.lineformat` tells a log's envelope and launcher with them, and
peels each line.

Envelopes (:class:`Envelope`), detected per file from its first lines:

- ``cri``: Kubernetes/CRI pod logs, ``<RFC3339Nano> stdout|stderr F|P <line>``;
- ``docker-json``: Docker's json-file driver, ``{"log": "<line>\\n", "stream": ..., "time": ...}``;
- ``timestamps``: ``<RFC3339Nano> <line>``, what ``kubectl logs --timestamps`` (the kubelet's
  ``RFC3339NanoFixed`` and a space, ``pkg/kubelet/kuberuntime/logs/logs.go``), ``docker logs
  -t`` (moby's ``api/server/httputils/write_log_stream.go``, the same form) and ``docker
  compose logs -t`` (behind its service prefix, ``cmd/formatter/logs.go``) write; the time is
  found at the start of the line or right behind the launcher's prefix;
- ``plain``: anything else (a file written by sglang itself, or by ``tee``).

Launcher prefixes, also detected per file: docker compose's ``<service>  | `` (often in ANSI
colours), Ray's ``(pid=123, ip=10.0.0.1)`` / ``(SchedulerActor pid=123)``, ``kubectl logs
--prefix``'s ``[pod/<pod>/<container>] `` (``staging/src/k8s.io/kubectl/pkg/cmd/logs/logs.go``),
and a pod's name before each line (k9s' ``<pod> ``, stern's ``<pod> <container> ``).
Each names the process a line comes from (its *stream*), which keeps interleaved tracebacks
apart.

sglang's prefix is what its ``configure_logger`` writes (``sglang/srt/utils/common.py``,
0.5.19 - 0.5.23): ``[%(asctime)s{.%(msecs)03d}{prefix}] %(message)s`` with the date format
``%Y-%m-%d %H:%M:%S``, milliseconds only with ``SGLANG_LOG_MS``, and the prefix built by the
scheduler from the ranks in use, in this order: `` DP{n} PP{n} ATTN_CP{n} MOE_DP{n} TP{n}
EP{n}`` (``scheduler.py``, ``configure_scheduler_process``).
"""

from __future__ import annotations

import enum
import re

from ppaux.patterns import lazy

__all__ = [
    "ANSI",
    "ANSI_OPENERS",
    "COMPOSE",
    "CRI",
    "CUT_TOKEN",
    "DOCKER_LOG",
    "KUBECTL",
    "LAUNCHER_PREFIX",
    "LEFT_TIME",
    "NUMBER_COLUMN",
    "POD",
    "PREFIX_REACH",
    "RAY",
    "SGLANG",
    "SGLANG_ANY",
    "STAMP",
    "STERN",
    "TORCH_PYTHON_RANK",
    "TORCH_RANK",
    "VLLM_PROCESS",
    "VLLM_STAGE",
    "WRAPPER",
    "Envelope",
    "Launcher",
]


class Envelope(str, enum.Enum):
    """The collector's wrapping of each line."""

    PLAIN = "plain"
    CRI = "cri"
    DOCKER_JSON = "docker-json"
    #: ``<RFC3339Nano> <line>`` (kubectl --timestamps, docker logs -t, docker compose logs -t),
    #: at the start of the line or behind the launcher's prefix.
    TIMESTAMPS = "timestamps"
    #: A line-number column a paste or a viewer put before each line (``cat -n``'s
    #: ``   23<TAB>``, ``23 | ``, ``[23] ``).
    NUMBERED = "numbered"


class Launcher(str, enum.Enum):
    """A prefix a launcher puts before each line, naming the process."""

    NONE = "none"
    COMPOSE = "compose"
    RAY = "ray"
    #: vLLM's own worker processes, in Ray's shape: ``(VllmWorkerProcess pid=N) ``,
    #: ``(Worker_TP4_EP4 pid=N) ``, ``(EngineCore pid=N) ``.
    VLLM = "vllm"
    KUBECTL = "kubectl"
    #: A wrapper that logs each line of the process it runs with its own time and name:
    #: ``[<time>] [/bin/sh]: <line>``.
    WRAPPER = "wrapper"
    #: A pod's name and a space before each line (k9s' log view, ``kubectl logs`` piped
    #: through a per-pod tagger): ``sglang-pp-0 <line>``.
    POD = "pod"
    #: stern's ``<pod> <container> <line>``.
    STERN = "stern"


#: ANSI colours (SGR, ``ESC [ ... m``, as docker compose writes its prefixes), and the erase of a
#: line (``ESC [ 2K``, ``ESC [ K``) or move to a column (``ESC [ 1G``) that progress bars write
#: before a line: removed before a line is parsed. Every other escape sequence (a cursor move
#: up or down, a clear screen, a window title)
#: stays in the text, so a finding shows it escaped rather than hiding that the log held it.
#: A paste may carry the colours in caret notation (``^[[36m``: the escape written as ``^[``, as
#: a terminal or ``cat -v`` shows it), read the same; so may syslog's octal spelling of the
#: escape (``#033[2m``, rsyslog's escape of a control character).
#: A terminal's hyperlink (OSC 8: ``ESC ] 8 ; params ; URI`` ended by ``ESC \\`` or BEL) around
#: a file's name or a word, and the colours written with the one-character CSI (``\x9b``, the
#: 8-bit form of ``ESC [``) are taken off the same way: the text they mark stays.
#: A paste may also spell the escape out (``ESC[36m``, as an editor or a web page shows the
#: byte) or lose it (``[36m(RayWorkerWrapper pid=123)[0m``): a colour whose escape was lost is
#: taken off only around Ray's process tags (before a ``(... pid=N ...)`` or ``(raylet)``, and
#: its reset right after such a tag's closing parenthesis), where no log's own text has that
#: shape.
ANSI = lazy(
    r"(?:(?:\x1b|\^\[|#033|ESC)\[|\x9b)(?:[0-9;:]*m|[0-2]?K|[0-9]{0,4}G)"
    r"|(?:\x1b|\^\[)\]8;[^\x07\x1b^]{0,2048}(?:\x07|\x1b\\|\^\[\\)"
    r"|\[[0-9;]{1,8}m(?=\((?:raylet|[^()]{0,200}\bpid=\w+[^()]{0,200})\))"
    r"|(?<=\d\))\[0?m|(?<=\(raylet\))\[0?m"
)
#: What opens an ANSI colour or a hyperlink, as a byte, in caret notation or spelled out, and
#: what is left of a colour around Ray's tag whose escape was lost.
ANSI_OPENERS = ("\x1b", "^[[", "^[]", "\x9b", "#033[", "ESC[", "m(", ")[")
CRI = lazy(
    r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) "
    r"(?P<stream>stdout|stderr) (?P<tag>[FP])(?: (?P<text>.*))?$"
)
#: The time ``kubectl logs --timestamps``, ``docker logs -t`` and ``docker compose logs -t`` put
#: before each line: RFC 3339 with nanoseconds (Go's ``RFC3339NanoFixed``) and one space.
#: Docker's json-file record holds its line as a string under ``log`` (Elastic Common
#: Schema's ``"log": {...}`` object is another record).
DOCKER_LOG = lazy(r'"log"\s*:\s*"')
STAMP = lazy(
    r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))(?: (?P<text>.*))?$"
)
#: An application's own time at the start of its line (Python logging's, torch's launchers'),
#: inside a collector's envelope whose time is the one kept: taken off so that the line's
#: prefix (``[rank3]:``) or exception begins it, as it does in a plain paste.
APP_TIME = lazy(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)? (?=\S)")
#: ``kubectl logs --prefix``: ``[pod/<pod>/<container>] `` (the container is empty when kubectl
#: cannot name it).
KUBECTL = lazy(r"^\[(?P<who>pod/[^/\]\s]+/[^/\]\s]*)\] (?P<text>.*)$")
COMPOSE = lazy(r"^(?P<service>[A-Za-z0-9][\w.-]*) *\| ?(?P<text>.*)$")
RAY = lazy(r"^\((?P<who>[^()]*\bpid=\d+[^()]*)\) ?(?P<text>.*)$")
#: The processes vLLM names in that shape (its multiprocess executor, its engine core).
VLLM_PROCESS = lazy(r"^(?:VllmWorker(?:Process)?|Worker(?:_\w+)?|EngineCore(?:_\w+)?|APIServer)\b")
#: The pipeline stage vLLM's multiprocess executor names in a worker's process name
#: (``VllmWorker PP1``, ``VllmWorker TP0 PP1``, ``Worker_PP3``, ``Worker_PP0_TP1``).
VLLM_STAGE = lazy(r"\b(?:VllmWorker|Worker)(?:[ _](?:DP|TP|EP)\d{1,6})*[ _]PP(\d{1,6})(?!\d)")
WRAPPER = lazy(
    r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[^\]]{0,16}\] \[(?P<who>[^\]\s]{1,64})\]: "
    r"(?P<text>.*)$"
)
#: A Kubernetes pod's name as k9s and stern print it before a line: lower case, from a
#: letter, with a dash and a digit (``sglang-pp-0``, ``sglang-7d9f8-x2k4p``); a date is none.
_POD_NAME = r"[a-z][a-z0-9]*(?:[-.][a-z0-9]+)+"
POD = lazy(rf"^(?P<who>{_POD_NAME}) (?P<text>.*)$")
STERN = lazy(rf"^(?P<who>{_POD_NAME} [a-z][a-z0-9-]{{0,62}}) (?P<text>.*)$")
SGLANG = lazy(
    r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(?P<ms>\d{3}))?"
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d{1,6})*)\] (?P<text>.*)$"
)
#: sglang's prefix wherever it stands in a line (behind a pasted backtick, a store's columns,
#: or with its first characters lost): the whole ``[time ranks] `` form, the ranks alone in
#: brackets (``[PP1 TP0] ``: a paste or a logger that dropped the time), or the ranks and the
#: closing bracket behind what is left of the time. Rank numbers are bounded (six digits).
_RANK_TOKENS = r"(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d{1,6}"
SGLANG_ANY = lazy(
    r"\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(?P<ms>\d{3}))?"
    rf"(?P<ranks>(?: {_RANK_TOKENS})*)\] "
    rf"|\[(?P<bare>(?:{_RANK_TOKENS} )*{_RANK_TOKENS})\] "
    rf"|(?:^|(?<=[\s\d:.`'\"|>-]))(?P<cut>(?:{_RANK_TOKENS} )*{_RANK_TOKENS})\] "
)
#: What is left of a rank token cut at its start, the whole of what stands before a cut prefix
#: (``P1 TP4] ``: ``PP1`` or ``DP1`` lost its first letter): the letters left of a token's name
#: (never digits alone, which are a cut time's as well) and its number.
CUT_TOKEN = lazy(r"^[^\w\s]{0,3}(?P<part>(?:P|CP|_CP|N_CP|TN_CP|TTN_CP|_DP|E_DP|OE_DP)\d{1,6}) $")
#: sglang's time whole just before its ranks, where the prefix lost its opening bracket behind
#: a paste's marks (``> `2025-11-03 11:53:19 TP1 PP0] ``): a time cut at its start is none.
LEFT_TIME = lazy(r"(?<!\d)(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(?P<ms>\d{3}))? $")
#: How far into a line sglang's prefix is looked for.
PREFIX_REACH = 400
#: torch's C++ (glog) lines name the global rank: ``[rank1]:[E1203 14:22:01.123 ...]``.
TORCH_RANK = lazy(r"^\[rank(?P<rank>\d+)\]:")
#: torch's elastic launcher (torchrun ``--tee``/``--log-dir``, and the Python side of a rank)
#: writes ``[rank2]: `` before each line a rank's Python prints: its traceback among them.
#: A paste may put a stray mark or two before the first (a backtick that opened a code span).
#: torchrun may write the tag twice (``[rank3]:[rank3]: ``, its own and the process's). A paste
#: may lose the space after it where a name follows (``[rank1]:RuntimeError: ...``); torch's
#: C++ lines (``[rank1]:[E1203 ...]``) follow it with a bracket, and are not these.
TORCH_PYTHON_RANK = lazy(
    r"^[^\w\s]{0,3}?\[rank(?P<rank>\d{1,6})\]:(?:\[rank(?P=rank)\]:){0,2}(?: |(?=[A-Za-z_]))"
)

#: A line-number column: up to 7 digits (bare or in brackets), then a tab, a bar or a colon.
NUMBER_COLUMN = lazy(r"^\s{0,8}(?:\d{1,7}(?:\t| ?\| ?|: )|\[\d{1,7}\] )")

#: The prefix each launcher puts before a line: its first group names the process.
LAUNCHER_PREFIX: dict[Launcher, re.Pattern[str]] = {
    Launcher.COMPOSE: COMPOSE,
    Launcher.RAY: RAY,
    Launcher.VLLM: RAY,
    Launcher.KUBECTL: KUBECTL,
    Launcher.WRAPPER: WRAPPER,
    Launcher.POD: POD,
    Launcher.STERN: STERN,
}
