"""A next step as data: its argument vector, where to run it and a comment (:class:`Step`),
what the logs say of the deployment the steps are written for (:class:`Deployment`), and the
step shown as a line to paste (:func:`render`).

A step is shown with :func:`shlex.join`, so that the shell gives back its argument vector as it
is; text taken from the log goes after ``--`` where it is an operand, and a relative path that
begins with '-' is written ``./-...``, so that it never becomes an option (:func:`operand`).
Text that cannot be shown safely (control characters) is never put in a command: the step is a
comment naming the problem (:func:`from_log`).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from ppaux.sglang import CAPTURE_DIR

__all__ = [
    "DEFAULT_CAPTURE_DIR",
    "MAX_LISTED_STAGES",
    "Deployment",
    "Lead",
    "Step",
    "from_log",
    "operand",
    "render",
    "unsafe",
]

#: Pipeline stages up to which the fingerprint step is one command per stage (``--pp-rank 0``,
#: ``1``, ...); past it, or when the logs do not say how many, one command for rank ``N``.
MAX_LISTED_STAGES = 16

#: Where the suggested capture writes, unless the logs show the capture already on: the
#: directory of every page.
DEFAULT_CAPTURE_DIR = CAPTURE_DIR

#: Longest operand from a log put in a command.
_MAX_OPERAND = 1024


@dataclass(frozen=True)
class Step:
    """One thing to do: ``argv`` (None for a comment alone), ``where`` to run it ('any host',
    "each stage's host", "sglang's environment", ...), and ``comment``."""

    argv: tuple[str, ...] | None
    where: str
    comment: str = ""

    def as_data(self) -> dict[str, object]:
        """The step as the JSON report holds it."""
        return {
            "argv": None if self.argv is None else list(self.argv),
            "where": self.where,
            "comment": self.comment,
        }


@dataclass(frozen=True)
class Deployment:
    """What the logs say of where sglang ran: ``pp_size`` from its server arguments (None when
    no log shows them), the highest stage seen otherwise, whether one launch ran every stage
    (``single_launch``: one environment for them all), and how it was deployed
    (``kubernetes``, ``docker`` or ``shell``)."""

    pp_size: int | None = None
    highest_stage: int | None = None
    single_launch: bool = False
    runtime: str = "shell"
    model: str | None = None
    #: Where ``pp_size`` was read: "the server arguments" or "the launch command".
    pp_size_from: str = "the server arguments"
    #: The logs show sglang ran (its lines, its arguments, its frames); False for a log of
    #: another program (a training job under torchrun): its steps name no sglang setting.
    sglang: bool = True
    #: The logs show Ascend's NPUs (torch_npu, HCCL): communication is HCCL's, the devices
    #: NPUs; the steps name HCCL's settings and npu-smi, not NCCL's and nvidia-smi.
    ascend: bool = False
    #: The InfiniBand device the first of NCCL's warnings that names one says failed.
    ib_device: str | None = None


def unsafe(text: str) -> str | None:
    """Why ``text`` cannot be put in a command, or None."""
    if not text:
        return "it is empty"
    if len(text) > _MAX_OPERAND:
        return f"it is longer than {_MAX_OPERAND} characters"
    if any(ord(c) < 0x20 or ord(c) == 0x7F or 0x80 <= ord(c) < 0xA0 for c in text):
        return "it holds control characters"
    if not text.isprintable():
        # What a report escapes (ppaux.text.shown): bidi and format characters, odd spaces,
        # separators, private use. Escaped, the command would name another path.
        return "it holds invisible, bidi or other unprintable characters"
    if "\\x" in text or "\\u" in text:
        return "it holds bytes the log did not encode as text"
    return None


def operand(text: str) -> str:
    """``text`` as an operand that is never an option: a relative path beginning with '-' is
    written ``./-...``."""
    return f"./{text}" if text.startswith("-") else text


def render(step: Step) -> str:
    """The step as a line to paste into a shell: :func:`shlex.join` of its argv and the comment
    after '#'; a comment alone is a '#' line."""
    comment = step.comment.replace("\n", " ").replace("\r", " ")
    if step.argv is None:
        return f"# {comment}" if comment else "#"
    line = shlex.join(step.argv)
    return f"{line}  # {comment}" if comment else line


def from_log(argv: Sequence[str], logged: str, what: str, where: str, comment: str) -> Step:
    """``argv`` + ``logged`` (text from the log), or a comment when it cannot be shown."""
    problem = unsafe(logged)
    if problem is not None:
        return Step(None, where, f"{what} the log names is not shown: {problem}")
    return Step((*argv, operand(logged)), where, comment)


#: A root's own steps, said first, and the groups of steps they stand for ('compare',
#: 'communication'), which are then not given (:func:`ppaux.triage.rootfacts.lead_steps`).
Lead = tuple[tuple[Step, ...], frozenset[str]]
