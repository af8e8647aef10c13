"""The settings of one check (:class:`ObserverOptions`), the error a setting that cannot
be used raises (:class:`ObserverConfigError`) and the one a check that another process stopped
raises (:class:`CheckInterrupted`). Imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from ppaux.errors import PpauxError, SettingError
from ppaux.replay import Impl, Sender, Transport

__all__ = ["CheckInterrupted", "ObserverConfigError", "ObserverOptions", "member"]


class ObserverConfigError(SettingError):
    """A setting that cannot be used here: ``option`` (the field of :class:`ObserverOptions`
    that holds it), the ``value`` given and ``reason``."""


class CheckInterrupted(PpauxError):
    """A process other than the target's sent the checking process a signal that would have
    ended it (``signal``, by name, from ``pid``; 0: the kernel): the check stopped there and
    says nothing about the target."""

    def __init__(self, signal: str, pid: int) -> None:
        sender = "the kernel" if pid == 0 else f"pid {pid}"
        super().__init__(
            f"ppaux's process received {signal} from {sender}, which is not the target's "
            "process nor one it started: the check stopped before it was complete (run it "
            "again)"
        )
        self.signal = signal
        self.pid = pid


@dataclass(frozen=True)
class ObserverOptions:
    """Settings of one check (the CLI's flags). ``transport``, ``impl`` and ``sender`` may be
    given as members of :mod:`ppaux.replay`'s enums or as their values; they are stored as
    members. An unknown value raises :class:`ObserverConfigError`."""

    transport: Transport = Transport.WIRE
    impl: Impl = Impl.REFERENCE
    sender: Sender = Sender.VALIDATING
    batch_sizes: tuple[int, ...] = (1, 4)
    steps: int = 3
    vocab_size: int = 32
    device: str = "cpu"
    sglang_path: str | None = None
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "transport", member(Transport, "transport", self.transport))
        object.__setattr__(self, "impl", member(Impl, "impl", self.impl))
        object.__setattr__(self, "sender", member(Sender, "sender", self.sender))


_Member = TypeVar("_Member", Transport, Impl, Sender)


def member(kind: type[_Member], option: str, value: Any) -> _Member:
    """``value`` (a member of ``kind`` or its value) as the member; an unknown value raises
    :class:`ObserverConfigError` for ``option``."""
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(str(item.value) for item in kind)
        raise ObserverConfigError(option, str(value), f"not one of {choices}") from None
