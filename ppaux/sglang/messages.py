"""The nine messages of sglang's PP auxiliary transport, the one spelling of them in ppaux: each
is a :class:`SglangMessage` with a stable identifier (``POP_NON_TENSOR.id`` is
``"pop-non-tensor"``), and its text or its ``{name!r}`` template
(:meth:`SglangMessage.format`). Recognising one pasted from a log is
:mod:`ppaux.sglang.message_search`'s.

From ``srt/sampling/sampling_observer_pp.py``, sglang 0.5.19 - 0.5.23. Torch-free, and it
imports nothing outside the standard library but :mod:`ppaux.sglang.names`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ppaux.sglang.names import ADD, POP

__all__ = [
    "ADD_BAD_NAME",
    "ADD_DUPLICATE",
    "ADD_EMPTY",
    "ADD_NOT_TENSOR",
    "ADD_UNSUPPORTED",
    "MESSAGES",
    "NAME_FIELD",
    "POP_NON_TENSOR",
    "POP_NOT_RECONSTRUCTED",
    "POP_NO_OBSERVER",
    "POP_UNSUPPORTED",
    "SglangMessage",
    "message_by_id",
]


# The nine messages of sampling_observer_pp.py (0.5.19 - 0.5.23, all RuntimeError), in the order
# add and then pop check them.

#: Where a message's template puts the tensor's name, as sglang writes it.
NAME_FIELD = "{name!r}"


@dataclass(frozen=True)
class SglangMessage:
    """One message of sglang's PP auxiliary transport.

    ``id`` is ppaux's stable identifier for it (used by error pages and ``explain``);
    ``template`` is sglang's text, with ``{name!r}`` where sglang puts the tensor's name;
    ``function`` is :data:`ADD` or :data:`POP`, the function that raises it.

    ``rule`` is ppaux's rule for the message seen in a log (what ``triage`` and ``explain``
    say of its causes); ``observer_rule`` the rule of ``check-observer`` that reports the
    observer raising it on its own side, None where no observer's output can make it.
    """

    id: str
    template: str
    function: str
    rule: str
    observer_rule: str | None = None

    @property
    def side(self) -> str:
        """``"add"`` (the last stage, sending) or ``"pop"`` (the first stage, receiving)."""
        return "add" if self.function == ADD else "pop"

    @property
    def takes_name(self) -> bool:
        """Whether the message carries an auxiliary tensor's name."""
        return NAME_FIELD in self.template

    @property
    def text(self) -> str:
        """The message as sglang raises it; a message that takes a name shows ``{name!r}``."""
        return self.template

    def format(self, name: str, quote: Callable[[str], str] = repr) -> str:
        """The message sglang raises for the tensor ``name``.

        ``quote`` spells the name; the default, :func:`repr`, is sglang's own ``{name!r}``. A
        report that shows a name from an untrusted file passes its bounded quoting instead.
        """
        if not self.takes_name:
            raise ValueError(f"sglang's message {self.id!r} carries no name")
        return self.template.replace(NAME_FIELD, quote(name))


ADD_UNSUPPORTED = SglangMessage(
    "add-unsupported",
    "auxiliary output does not support pipeline-parallel transport",
    ADD,
    "PP115",
    "PP701",
)
ADD_EMPTY = SglangMessage(
    "add-empty", "auxiliary PP output must contain at least one tensor", ADD, "PP115", "PP703"
)
ADD_BAD_NAME = SglangMessage(
    "add-bad-name", "auxiliary PP tensor names must be non-empty strings", ADD, "PP115", "PP704"
)
ADD_NOT_TENSOR = SglangMessage(
    "add-not-tensor", "auxiliary PP output {name!r} is not a tensor", ADD, "PP115", "PP705"
)
ADD_DUPLICATE = SglangMessage(
    "add-duplicate", "duplicate auxiliary PP tensor {name!r}", ADD, "PP115"
)
POP_NO_OBSERVER = SglangMessage(
    "pop-no-observer",
    "received auxiliary PP output without a sampling observer",
    POP,
    "PP401",
)
POP_UNSUPPORTED = SglangMessage(
    "pop-unsupported",
    "sampling observer does not support pipeline-parallel transport",
    POP,
    "PP401",
    "PP702",
)
POP_NON_TENSOR = SglangMessage(
    "pop-non-tensor", "received a non-tensor auxiliary PP output", POP, "PP101", "PP706"
)
POP_NOT_RECONSTRUCTED = SglangMessage(
    "pop-not-reconstructed",
    "sampling observer did not reconstruct its PP output",
    POP,
    "PP401",
    "PP707",
)

#: The nine, in the order add and then pop check them.
MESSAGES: tuple[SglangMessage, ...] = (
    ADD_UNSUPPORTED,
    ADD_EMPTY,
    ADD_BAD_NAME,
    ADD_NOT_TENSOR,
    ADD_DUPLICATE,
    POP_NO_OBSERVER,
    POP_UNSUPPORTED,
    POP_NON_TENSOR,
    POP_NOT_RECONSTRUCTED,
)


def message_by_id(message_id: str) -> SglangMessage:
    """The message whose stable identifier is ``message_id``; KeyError if there is none."""
    for message in MESSAGES:
        if message.id == message_id:
            return message
    raise KeyError(message_id)
