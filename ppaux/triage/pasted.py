"""What ``triage`` reads in a pasted line or traceback, read as a log of its own: the kind of
its root or why it holds none, and the next steps triage gives it. ``ppaux explain`` says this
of a line it holds no other word for, so that the two never disagree on the same line."""

from __future__ import annotations

import io
import shlex
from dataclasses import dataclass

from ppaux.triage.job import triage_paths
from ppaux.triage.kinds import UNKNOWN, local_note
from ppaux.triage.kindwords import DESCRIPTIONS

__all__ = ["NO_ROOTS", "PastedReading", "read_pasted"]

#: Why a text holds no root (PP809's ``extra.no_root``), in words.
NO_ROOTS = {
    "network-or-other-node": "a communication failure and nothing else (NCCL's watchdog, a "
    "collective that failed, timed out or hung): no root in it, the cause is on the network or "
    "another node",
    "process-died": "a record that a process died, not of what: no root in it",
    "nccl-setup": "NCCL's warning that its communicator's set-up failed (ranks, devices or the "
    "bootstrap's connection): the job's start or its hosts' network, not a collective",
    "nccl-setup ib-verbs": "NCCL's warning that its communicator's set-up failed (a call to "
    "this host's InfiniBand verbs library): this host's InfiniBand devices or their limits, "
    "not a peer, not a collective",
    "hang": "a hang (sglang's watchdog found a process without progress, or a py-spy dump of "
    "one), no failure: no root in it, what each process waited on is in its stacks",
    "signals-only": "signals only (the parent's SIGQUIT from a failing child): no root in it",
    "not-in-these-logs": "what followed a failure the text does not hold: no root in it",
}
#: Why a text of communication failures alone holds no root, where NCCL's words most often
#: mean the host's own set-up (PP809's ``extra.host``).
_HOST_WORDS = (
    "a communication failure and nothing else, no root in it: the cause is most often this "
    "host's own set-up, else the network or another node"
)
#: Where a text holds no root: a paste is often the end of a log, and its root above it.
_PASTE_NOTE = (
    " (a paste may leave the root out: ppaux triage on the whole log finds it where the log "
    "holds it)"
)
#: The name the text is read under.
_NAME = "<pasted>"
#: Commands listed; the rest are counted.
_SHOWN_STEPS = 6


@dataclass(frozen=True)
class PastedReading:
    """``kind``: the root's kind (:data:`~ppaux.triage.kinds.KINDS`) or, where there is no
    root, PP809's reason (:data:`NO_ROOTS`); ``words``: that in words; ``steps``: triage's
    next steps, each a line to paste (commands; a comment where a step is one)."""

    kind: str
    words: str
    steps: tuple[str, ...]
    #: The root's exception line as its process wrote it (``RuntimeError: ...``), without the
    #: envelope, launcher or prefix the paste carried; None where the root shows none.
    line: str | None = None

    def said(self, then: str = "") -> str:
        """The reading: the words and ``then`` (a clause said after them) in one line, then
        the commands to run, one a line, each pasteable as it is."""
        commands = [s for s in self.steps if not s.startswith("#")]
        text = self.words + then
        # a step said in a comment alone (a command to adapt, as one per stage with its rank)
        # is no command to paste: where the steps hold one, or hold no command at all, the
        # reading points to triage's own list of them instead of passing a comment on
        to_adapt = [s for s in self.steps if s.startswith("#") and ": ppaux " in s]
        if self.steps and (to_adapt or not commands):
            return (
                f"{text}; its next steps are to adapt, not to paste as they are: "
                "ppaux triage on the same text lists them"
            )
        shown = commands
        if shown:
            # the count first, so that what follows the colon is commands alone, to paste
            first = f", the first {_SHOWN_STEPS}" if len(shown) > _SHOWN_STEPS else ""
            listed = "".join(f"\n{step}" for step in shown[:_SHOWN_STEPS])
            steps = "the next step" if len(shown) == 1 else f"the {len(shown)} next steps"
            text += f"; {steps} triage gives it{first}, one a line:{listed}"
        return text


def read_pasted(text: str) -> PastedReading | None:
    """triage's reading of ``text`` (one line or several), or None where triage finds no
    failure in it."""
    report = triage_paths([_NAME], {_NAME: io.BytesIO(text.encode("utf-8", "replace"))})
    root = next(
        (f for f in report.findings if f.code in ("PP801", "PP802", "PP809")),
        None,
    )
    if root is None:
        return None
    extra = root.extra or {}
    steps = tuple(
        shlex.join(s["argv"]) if s.get("argv") else f"# {s.get('comment', '')}"
        for s in report.data.get("steps", [])
    )
    if root.code == "PP809":
        reason = str(extra.get("no_root"))
        words = NO_ROOTS.get(f"{reason} {extra.get('nccl_setup')}") or NO_ROOTS.get(
            reason, "no root in it"
        )
        note = local_note(root.message) if extra.get("host") is True else None
        if note is not None:
            words = f"{_HOST_WORDS}: {note}"
        return PastedReading(reason, f"{words}{_PASTE_NOTE}", steps)
    kind = str(extra.get("kind", UNKNOWN))
    words = DESCRIPTIONS.get(kind, DESCRIPTIONS[UNKNOWN])
    if kind == UNKNOWN:
        words = f"the root, whose exception it does not hold: {root.message.split(': ', 1)[-1]}"
    exception, message = extra.get("exception"), extra.get("message")
    line = f"{exception}: {message}" if exception and message is not None else None
    return PastedReading(kind, words, steps, line)
