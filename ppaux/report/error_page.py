"""What an error page holds (:class:`ErrorPage`, its steps :class:`Fix`) and what it reads
from elsewhere: the rules that predict its message, from the catalogue, and where each release
raises it, from :mod:`ppaux.sglang.raise_sites`. The pages themselves are
:mod:`ppaux.report.error_pages`. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from ppaux.report.error_examples import EXAMPLES, Example
from ppaux.sglang import RAISE_RELEASES, RELEASE_LINES, SCHEDULER_CALLS

__all__ = ["ErrorPage", "Fix", "rules_predicting"]


@dataclass(frozen=True)
class Fix:
    """One step of the way out: what to do, the command or code that does it (may be empty),
    and the docs pages that tell more, as ``(page, what it holds)`` with the page relative to
    ``docs/`` (``#section`` after it for the docs site)."""

    text: str
    command: str = ""
    see: tuple[tuple[str, str], ...] = ()


def rules_predicting(message_id: str) -> tuple[str, ...]:
    """The codes of every catalogue rule whose ``sglang_error`` is the message ``message_id``
    (its template, ``RuntimeError:`` in front or not, or the message with a name, as
    :mod:`ppaux.sglang.message_search` recognises it), in code order: read from the catalogue
    each time, so a new rule is never left off a page."""
    from ppaux.report.catalogue import RULES
    from ppaux.sglang.message_search import search_message
    from ppaux.sglang.messages import message_by_id

    template = message_by_id(message_id).template
    codes = []
    for code, rule in RULES.items():
        error = rule.sglang_error
        if error is None:
            continue
        bare = error.strip().removeprefix("RuntimeError:").strip()
        found = search_message(error)
        if bare == template or (found is not None and found.message.id == message_id):
            codes.append(code)
    return tuple(codes)


@dataclass(frozen=True)
class ErrorPage:
    """The page for one of sglang's messages, ``message_id`` as in :mod:`ppaux.sglang.names`.

    ``related`` are other message ids. The fixes are in the order a user holding
    only the traceback can follow them: the log first, a step that makes a capture before any
    step that reads one. ``extra_rules`` are the codes that flag the same fault without the
    catalogue naming this message as theirs (rules whose message is set per finding, such as
    PP115 or PP402); :attr:`rules` adds every rule the catalogue links to the message.
    """

    message_id: str
    meaning: str
    when: str
    causes: tuple[str, ...]
    fixes: tuple[Fix, ...]
    related: tuple[str, ...]
    extra_rules: tuple[str, ...] = ()

    @property
    def predicted_by(self) -> tuple[str, ...]:
        """The catalogue's rules whose predicted sglang error is this message, in code order."""
        return rules_predicting(self.message_id)

    @property
    def example(self) -> Example:
        """Code that raises the message, next to the code fixed."""
        return EXAMPLES[self.message_id]

    @property
    def rules(self) -> tuple[str, ...]:
        """Every ppaux rule that predicts the message: :attr:`predicted_by` and
        :attr:`extra_rules`, in code order."""
        return tuple(sorted({*self.predicted_by, *self.extra_rules}))

    @property
    def text(self) -> str:
        """sglang's message, as it spells it (``{name!r}`` where it puts the tensor's name)."""
        from ppaux.sglang.messages import message_by_id

        return message_by_id(self.message_id).template

    @property
    def side(self) -> str:
        """``"add"`` (the last stage, sending) or ``"pop"`` (the first stage, rank 0,
        receiving): the message's side, as :mod:`ppaux.sglang.messages` has it."""
        from ppaux.sglang.messages import message_by_id

        return message_by_id(self.message_id).side

    @property
    def function(self) -> str:
        """The transport function that raises the message."""
        from ppaux.sglang.messages import message_by_id

        return message_by_id(self.message_id).function

    @property
    def stage(self) -> str:
        """Which pipeline stage raises it, in words."""
        if self.side == "add":
            return "the last pipeline stage, sending its output to rank 0"
        return "the first pipeline stage (rank 0), receiving the last stage's output"

    def locations(self) -> list[tuple[str, str, int, str, int]]:
        """(release, transport file, line of the raise, scheduler method, line of its call),
        oldest release first."""
        from ppaux.sglang.names import SCHEDULER_FILE, TRANSPORT_FILE

        rows = []
        for release in RAISE_RELEASES:
            method, call = SCHEDULER_CALLS[release][self.side]
            rows.append(
                (
                    release,
                    f"sglang/{TRANSPORT_FILE}",
                    RELEASE_LINES[release][self.message_id],
                    f"sglang/{SCHEDULER_FILE}:{method}",
                    call,
                )
            )
        return rows
