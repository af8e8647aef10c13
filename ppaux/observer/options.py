"""The settings of one check (:class:`ObserverOptions`) and the error a setting that cannot
be used raises (:class:`ObserverConfigError`). Imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from ppaux.errors import SettingError
from ppaux.replay import Impl, Sender, Transport

__all__ = ["ObserverConfigError", "ObserverOptions", "member"]


class ObserverConfigError(SettingError):
    """A setting that cannot be used here: ``option`` (the field of :class:`ObserverOptions`
    that holds it), the ``value`` given and ``reason``."""


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

    def to_json(self) -> dict[str, object]:
        """The settings as JSON values (what another process rebuilds them from:
        ``ObserverOptions(**settings)``, ``batch_sizes`` made a tuple again)."""
        from dataclasses import asdict

        settings = asdict(self)
        settings.update(
            transport=self.transport.value,
            impl=self.impl.value,
            sender=self.sender.value,
            batch_sizes=list(self.batch_sizes),
        )
        return settings


_Member = TypeVar("_Member", Transport, Impl, Sender)


def member(kind: type[_Member], option: str, value: object) -> _Member:
    """``value`` (a member of ``kind`` or its value) as the member; an unknown value raises
    :class:`ObserverConfigError` for ``option``."""
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(str(item.value) for item in kind)
        raise ObserverConfigError(option, str(value), f"not one of {choices}") from None
