"""What ``explain`` says of a pasted failure that is none of sglang's nine messages: its kind
in a few words and in full (triage's own reading, so the two commands never disagree), and
where to look first for that kind. Torch-free."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from .buildsteps import build_words, symbol_in_text
from .portsteps import IN_USE_LOOK_FIRST, in_use
from .programsteps import (
    GPU_MEMORY_CHECK,
    HOST_MEMORY_CHECK,
    LAUNCH_BLOCKING,
    host_memory,
    resource_limit,
    shape_failure,
)

__all__ = ["PastedHint", "pasted_hint"]

#: Where the headline says to look first, by the kind triage reads (the full next steps
#: stand under it).
_LOOK_FIRST: dict[str, str] = {
    # the first command of triage's steps for a GPU's out of memory (the host's: below)
    "memory": f"check what holds the GPUs' memory ({GPU_MEMORY_CHECK[0]})",
    "hardware": "check nvidia-smi -q and the Xid records (journalctl -k)",
    "communication": "set NCCL_DEBUG=INFO",
    "communication-init": "set NCCL_DEBUG=INFO",
    "network-or-other-node": "set NCCL_DEBUG=INFO",
    "nccl-setup": "check each rank's RANK, device and NCCL_SOCKET_IFNAME",
    "host-setup": "set NCCL_DEBUG=INFO on this rank",
    # the first command of triage's steps for the kind (one datum, both front ends)
    "shape-kernel": f"set {LAUNCH_BLOCKING[1]}",
    "driver": "check nvidia-smi against torch.version.cuda",
}
#: A signal's death, and where to look for what sent it.
_SIGNAL_LOOK_FIRST = (
    ("SIGKILL", "check the OOM killer (journalctl -k)"),
    ("SIGSEGV", "look for a core dump (coredumpctl)"),
    ("SIGABRT", "look for a core dump (coredumpctl)"),
    ("SIGBUS", "look for a core dump (coredumpctl)"),
)


#: Said after triage's reading of a line with no exception, before its commands.
_ON_THE_WHOLE_LOG = (
    "; on the whole log (or 'ppaux triage -' from stdin) it names the root and what to do next"
)


@dataclass(frozen=True)
class PastedHint:
    """What explain says of a failure that is none of the nine: ``brief`` for the one-line
    headline (the kind and where to look first), ``full`` for the lines under it (triage's
    whole reading, then every command it gives, one a line)."""

    brief: str
    full: str
    look: str = ""


def _brief(words: str) -> str:
    """The first clause of ``words``: up to its first parenthesis, colon or semicolon."""
    return re.split(r" \(|: |; |, and ", words, maxsplit=1)[0]


def _look(kind: str, text: str) -> str:
    """Where to look first for ``kind`` (a signal named in ``text`` for a death), or ''."""
    for signal, where in _SIGNAL_LOOK_FIRST:
        if signal in text:
            return where
    if kind == "memory" and host_memory(text):
        # the first command of triage's steps for the host's out of memory
        return f"check the kernel's OOM killer ({shlex.join(HOST_MEMORY_CHECK)})"
    if in_use(text):  # a port this host's process holds, whatever the kind read from the words
        return IN_USE_LOOK_FIRST
    if kind == "driver" and "kernel image" in text:  # a build without the GPU's architecture
        return "check the GPU's compute capability against torch.cuda.get_arch_list()"
    if kind == "nccl-setup" and "Call to ibv_" in text:  # NCCL's InfiniBand verbs' warning
        return "check ibv_devinfo and ulimit -l on this host"
    if kind == "shape-kernel" and resource_limit(None, text.split(": ", 1)[-1]):
        return "reduce the Triton kernel's block sizes or num_stages"  # refused at launch
    if kind == "shape-kernel" and shape_failure(text):  # no kernel's fault: its shapes' settings
        return "check the model's config and batch sizes"
    return _LOOK_FIRST.get(kind, "")


def pasted_hint(text: str) -> PastedHint | None:
    """What kind of failure ``text`` shows, when it shows one, and where to go with it."""
    from .deaths import death_in_text
    from .kinds import DRIVER_MISMATCH, local_note
    from .kindwords import DESCRIPTIONS
    from .pasted import read_pasted
    from .textkinds import kind_of_text

    several = "\n" in text
    if (called := _driver_call(text)) is not None:  # in every paste that holds its record
        return called
    if not several and kind_of_text(text) in (None, "unknown"):
        # one line in an envelope or behind a prefix (a table export's row, a worker's
        # logger): said in the words of its exception line pasted plain, where triage reads one
        plain = read_pasted(text)
        line = None if plain is None else plain.line
        if line is not None and line.strip() != text.strip() and kind_of_text(line):
            return pasted_hint(line)
    # a paste of several lines: triage's reading of the whole, so the two never disagree
    # (a failure of another kind is said below in the same words, with where to go next)
    reading = read_pasted(text) if several else None
    if reading is not None and reading.kind != "other":
        return PastedHint(
            f"triage reads it as {_brief(reading.words)}",
            f"'ppaux triage -' reads it as {reading.said()}",
            _look(reading.kind, text),
        )
    death = death_in_text(text)
    if death is not None:
        # 'it reports that a process was killed by SIGKILL': the process and how
        said = _brief(death).removeprefix("it reports that ")
        return PastedHint(said, death, _look("process-died", death))
    kind = kind_of_text(text)
    note = (
        local_note(text)
        if kind in ("communication", "communication-init", "shape-kernel", "driver")
        else None
    )
    if kind == "communication":
        # in flight and nothing else: no root, said in triage's words (the host's set-up
        # first where NCCL's words point there)
        reading = reading if several else read_pasted(text)
        if reading is not None and reading.kind == "network-or-other-node":
            return PastedHint(
                f"triage reads it as {_brief(reading.words)}",
                f"'ppaux triage -' reads it as {reading.said()}",
                _look(reading.kind, text),
            )
    if note is not None and DRIVER_MISMATCH in text:
        return _driver_hint(note)
    if note is not None:
        what = (
            f"{DESCRIPTIONS[kind]}, a CUDA failure of this rank's own GPU, not the network's"
            if kind == "shape-kernel"
            else "a communication failure"
        )
        return PastedHint(
            f"it is {_brief(what)}",
            f"it is {what}: {note}; 'ppaux triage' on the whole log (or "
            "'ppaux triage -' from stdin) names the root and what to do next",
            _look("host-setup", text),
        )
    if kind is None or kind == "unknown":
        # no exception line: what triage reads in the same text, where it reads a failure
        reading = reading if several else read_pasted(text)
        if reading is None:
            return None  # the plain refusal, which points at triage already
        return PastedHint(
            f"triage reads it as {_brief(reading.words)}",
            f"'ppaux triage' reads it as {reading.said(_ON_THE_WHOLE_LOG)}",
            _look(reading.kind, text),
        )
    if kind == "other":
        return _other_kind(text)
    return PastedHint(
        f"it is {_brief(DESCRIPTIONS[kind])}",
        f"it is {DESCRIPTIONS[kind]}: 'ppaux triage' on the whole log (or 'ppaux triage -' "
        "from stdin) names the root and what to do next",
        _look(kind, text),
    )


def _driver_call(text: str) -> PastedHint | None:
    """The hint for a native library's record of a CUDA driver API call that failed (its
    ``CUresult``): no kernel ran, so a rerun with launches made synchronous tells nothing; the
    result's name, the driver and the library's build do. None for another text."""
    from .curesult import curesult_error

    found = curesult_error(text)
    if found is None or "CUDA_ERROR_OUT_OF_MEMORY" in found[1]:
        return None  # out of memory on the device: a memory failure, as triage reads it
    said = found[1]
    return PastedHint(
        "it is a CUDA driver API call that failed",
        f"it is a CUDA driver API call that failed: {said}; no kernel ran, so a rerun with "
        f"{LAUNCH_BLOCKING[1]} tells nothing: the result's name says what the driver refused "
        "(memory, an argument, a context); compare the driver (nvidia-smi) with the CUDA the "
        "library that called it was built for, and that library's version with the one its "
        "program expects; 'ppaux triage' on the whole log names the process and what followed",
        "look up the CUresult, then check the driver (nvidia-smi)",
    )


def _driver_hint(note: str) -> PastedHint:
    """The hint for a driver older than the CUDA runtime (``note``: what to know of it)."""
    return PastedHint(
        "it is a mismatch of the NVIDIA driver and the CUDA runtime",
        f"it is a mismatch of the NVIDIA driver and the CUDA runtime: {note}; 'ppaux "
        "triage' on the whole log (or 'ppaux triage -' from stdin) names the root and what "
        "to do next",
        "check nvidia-smi against torch.version.cuda",
    )


def _other_kind(text: str) -> PastedHint:
    """The hint for a failure of none of triage's kinds: a missing key of the PP message where
    the text names one, else where to go with it."""
    from .ppkeys import pp_key_in_text, pp_key_words

    key = pp_key_in_text(text)
    if key is not None:
        return PastedHint(
            "it is a KeyError on a key of the PP message",
            f"it is a KeyError on a key of the PP message: {pp_key_words(key)}; compare them "
            "(ppaux fingerprint on each stage, then ppaux check-skew), and 'ppaux triage' on "
            "the whole log names the root",
            "run ppaux check-skew across the stages",
        )
    if (built := symbol_in_text(text)) is not None:  # a build of other versions than installed
        return PastedHint(
            "it is a build for other versions than installed",
            f"it is a build for other versions than installed: {built[0][:200]} needs "
            f"{built[1][:200]}, which nothing loaded beside it defines; {build_words(built[1])}; "
            "'ppaux triage' on the whole log names the package and the versions to compare",
            "compare its build with torch and nvidia-smi",
        )
    if in_use(text):  # a bind of this host's that failed (an HTTP server's port, say)
        return PastedHint(
            "it is a port already in use on this host",
            "it is a port already in use on this host (an earlier run still alive, or another "
            "job): nothing on the network failed; 'ppaux triage' on the whole log names the "
            "port's program and the flag that gives it another",
            IN_USE_LOOK_FIRST,
        )
    return PastedHint(
        "it is a failure of another kind",
        "it is a failure of another kind (not communication, memory or a shape or kernel "
        "error): 'ppaux triage' on the whole log (or 'ppaux triage -' from stdin) names the "
        "root, its rank and what to do next",
    )
