"""The settings of a replay: :class:`ReplayOptions` and the error for a setting that cannot be
used.

Its three choices are the ``str`` enums of :mod:`ppaux.replay.vocabulary`. :class:`ReplayOptions`
turns whatever it is given for them (a member, its value, or a ``str`` subclass with that value,
as command-line libraries hand over) into the member.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

from ppaux.errors import SettingError
from ppaux.limits import Limits
from ppaux.replay.vocabulary import Impl, Sender, Transport

__all__ = [
    "MAX_TIMEOUT_S",
    "REPLAY_LIMITS",
    "ReplayConfigError",
    "ReplayOptions",
    "timeout_fault",
]


#: The limits a replay reads its files under by default: the reader's (:class:`Limits`), three
#: of them tighter. Reading a dump holds its values as plain Python objects; a replay holds them
#: again as torch rebuilds them, pickles the auxiliary output to send it and keeps what came
#: back, all beside torch's own ~210 MB. So that a file under 1 MB cannot take a replay past
#: about 250 MB, a replay reads at most 16 MiB of pickle (a real PP message's is a few KB),
#: 200,000 values (a few hundred) and 256 tensor dicts per file (one to three). A file past one
#: is refused, naming the limit; a larger one can be given, as for any limit.
REPLAY_LIMITS = Limits(max_pickle_bytes=16 * 1024 * 1024, max_items=200_000, max_payloads=256)


class ReplayConfigError(SettingError):
    """A replay setting that cannot be used here: ``option`` names the setting as
    :class:`ReplayOptions` does (``sglang_path``), ``value`` what was given, ``reason`` why;
    ``str()`` is '<value>: <reason>'. A front end spells ``option`` its own way (the command
    line's ``--sglang-path``)."""


#: The longest a wire waits for the other process, in seconds (a day).
MAX_TIMEOUT_S = 86_400.0


def timeout_fault(timeout_s: float) -> str | None:
    """Why ``timeout_s`` cannot be a wire's timeout (not a number of seconds above 0 and at
    most :data:`MAX_TIMEOUT_S`: NaN, infinity, 0 or a negative), or None when it can."""
    if math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIMEOUT_S:
        return None
    return f"must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:.0f}"


def _member(kind: type[enum.Enum], option: str, value: object) -> Any:
    """The member of ``kind`` that ``value`` is or names (a member, a str, a str subclass)."""
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(str(member.value) for member in kind)
        raise ReplayConfigError(option, str(value), f"not one of {choices}") from None


@dataclass(frozen=True)
class ReplayOptions:
    """Settings of one replay run (the CLI's flags).

    ``sender``, ``transport`` and ``impl`` may be given as members or as their values; they are
    stored as members. An unknown value raises :class:`ReplayConfigError`.
    """

    device: str = "cpu"
    sender: Sender = Sender.VALIDATING
    #: Replay a ppaux capture of rank 0's failing pop as rank 0 received it (the legacy sender,
    #: which reproduces the recorded error); other captures and plain dumps use ``sender``.
    sender_as_recorded: bool = False
    transport: Transport = Transport.NONE
    impl: Impl = Impl.REFERENCE
    #: Where sglang's transport is read from (a directory or a wheel); None: the installed one.
    #: With the ``sglang`` transport, a directory put first on the import path.
    sglang_path: str | None = None
    #: Size of the attention-TP group the last stage passes to ``send_tensor_dict`` (0: none).
    #: 1, sglang's default in every release (:func:`ppaux.sglang.releases.output_group`), still
    #: slices: ``reshape(1, -1)[0]`` copies a tensor it cannot view.
    all_gather: int = 1
    #: Seconds the torch-distributed transport waits for its peer.
    timeout_s: float = 60.0
    #: The reader's limits for the replayed files (default :data:`REPLAY_LIMITS`).
    limits: Limits = REPLAY_LIMITS

    def __post_init__(self) -> None:
        object.__setattr__(self, "sender", _member(Sender, "sender", self.sender))
        object.__setattr__(self, "transport", _member(Transport, "transport", self.transport))
        object.__setattr__(self, "impl", _member(Impl, "impl", self.impl))
