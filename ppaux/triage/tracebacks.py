"""A traceback reassembled from the lines that follow its first one, into its
:class:`~ppaux.triage.records.Failure`.

:class:`TracebackBuilder` reads the lines as Python's ``traceback.format_exception`` writes them
(sglang logs the whole text in one record: ``Scheduler hit an exception: Traceback (most recent
call last): ...``): frames, their source lines and carets, the exception line and its
continuation, chained exceptions, an exception group's margins and sub-exceptions. Lines of
other processes may come in between; a traceback that stops before its exception line is kept,
marked ``cut``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ppaux.patterns import lazy
from ppaux.triage.groups import (
    GROUP_HEADER,
    MAX_DEPTH,
    group_rule,
    left_out,
    shortened,
    too_deep,
    unmargined,
)
from ppaux.triage.lineformat import LogLine
from ppaux.triage.records import Failure, Frame, own_record
from ppaux.triage.tracelines import EXCEPTION, FRAME, MAX_MESSAGE, WRAPPED, raised, unfolded

__all__ = ["MAX_FRAMES", "TracebackBuilder"]

#: Frames kept per traceback: the outermost few and the innermost rest (a RecursionError
#: prints a thousand).
MAX_FRAMES = 120
_OUTER_FRAMES = 10
#: Continuation lines of an exception message kept.
_MAX_MESSAGE_LINES = 40
#: Lines a traceback may take after its last frame line before its exception line (a frame's
#: source, its carets, a multi-line statement); past this it is ended, cut off.
_MAX_AFTER_FRAME = 64
#: Continuation lines of an exception message swallowed (not kept) past those kept; past this
#: the traceback is ended.
_MAX_SWALLOWED = 400
#: Exceptions of a chain kept ('During handling of the above exception ...').
_MAX_CHAIN = 8
#: Sub-exceptions of an exception group kept (Python prints 15 per group, nested groups
#: multiply them); more are counted.
_MAX_SUBS = 64
#: The deepest indentation of a whole paste taken as such (the first frame's, less two).
_MAX_INDENT = 16
#: Digits of a frame's line number read (a longer one is no line number).
_MAX_LINE_DIGITS = 9
#: What a log collector adds at the end of a line, not the traceback's text: Ray's count of
#: lines it did not repeat, a carriage return written as ``^M`` (and what follows it: the next
#: record glued on, never part of a function's name).
_TRAILER = lazy(r"(?:\s*\[repeated \d{1,9}x across cluster\])*(?:(?:\^M|\r).*)?$")
_CHAIN = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)


#: An error that Ray relays from a task or an actor: its message is the remote process's own
#: traceback (``ray::task() (pid=N, ip=...)``, then frames and the remote exception line).
_RELAYED = lazy(r"(?:^|\.)Ray(?:Task|Actor)Error\b")
#: The line torch writes after its CUDA error's first line (``Search for `cudaError...'``): a
#: marker of a record where the error's first line is not in the log, the message's own line
#: after it.
#: Ray's sentence of an actor whose worker died, which its ``ActorDiedError``'s message holds
#: (a line of its own elsewhere: a death another process reports).
_ACTOR_DEAD = lazy(r"^\s*The actor is dead because its worker process has died")
_CUDA_TAIL = lazy(r"\s{0,8}Search for `cudaError")


#: torch.multiprocessing's relay of a child's failure (``ProcessRaisedException``, then ``--
#: Process 1 terminated with the following error:`` and the child's own traceback).
_SPAWNED = lazy(r"(?:^|\.)ProcessRaisedException$")
_SPAWNED_CHILD = lazy(r"^\s{0,8}-- Process (?P<index>\d{1,6}) terminated with the following error:")


def _relayed(failure: Failure) -> bool:
    """True when ``failure``'s exception is Ray's relay of a remote failure, or
    torch.multiprocessing's of a child's (:func:`_spawned`)."""
    exception = failure.exception or ""
    return (
        _RELAYED.search(exception) is not None
        or failure.message.startswith("ray::")
        or _spawned(failure) is not None
    )


def _spawned(failure: Failure) -> str | None:
    """The child ('Process 1') whose failure torch.multiprocessing's relay ``failure`` carries
    (its message's ``-- Process 1 terminated with the following error:``), or None."""
    if _SPAWNED.search(failure.exception or "") is None:
        return None
    for line in failure.message.split("\n")[:4]:
        if (found := _SPAWNED_CHILD.match(line)) is not None:
            return f"Process {int(found['index'])}"
    return None


class TracebackBuilder:
    """Feeds the lines after a traceback's first one into its :class:`Failure`."""

    def __init__(self, failure: Failure, group: bool = False) -> None:
        self.failure = failure
        #: The traceback is an exception group's (its lines behind margins, see
        #: :mod:`ppaux.triage.groups`); the indentation of its outermost margin, once seen; and
        #: whether the rule that closes the group has been read.
        self.group = group
        self._outer: int | None = None
        self._ruled = False
        self._closed = False
        #: Where the current sub-exception's own chain begins in the failure's chain (what
        #: stands before is the group's cause), and the innermost group line read.
        self._sub_start = 0
        self._innermost: tuple[str, str] | None = None
        #: A group a chain went on from: where it stands in the chain, and its sub-exceptions.
        self._left: tuple[int, list[Failure]] | None = None
        #: The indentation of the whole paste, told by the first frame (Python indents frames
        #: by two): the exception line stands there, the frames and their source deeper.
        self.indent = 0
        self.state = "frames"  # then "after" (exception line seen), "chain" (a chain header)
        self.foreign = 0
        #: The stream's count of sglang lines when this traceback began (its reader counts the
        #: sglang lines of other ranks it let pass from it), and whether the reader has it among
        #: the tracebacks past their exception line.
        self.base = 0
        self.ended = False
        self._since_frame = 0
        #: Brackets the last frame's statement left open: its next lines are more of it.
        self._open = 0
        self._blank = 0
        self._message_lines = 0
        self._frames: list[Frame] = []
        #: Ray's relay that headed the remote traceback being read (its exception and
        #: message): the failure's, where the log cuts the remote one before its exception.
        self._relay: tuple[str, str] | None = None

    @property
    def in_group(self) -> bool:
        """True while an exception group's lines are read, up to its closing rule."""
        return self.group and not self._closed

    @property
    def wants_frames(self) -> bool:
        """True until the exception line has been seen."""
        return self.state != "after"

    def feed(self, line: LogLine, marked: bool) -> bool:
        """Take ``line`` if it continues this traceback; ``marked``: it holds a marker."""
        if line.sglang:
            return False
        text = line.text
        if self.group:
            inside = self._group_line(text, line.stream is not None)
            if isinstance(inside, bool):
                return inside
            text = inside
        if self.state == "frames":
            return self._frame_line(text)
        if (
            self.in_group
            and self.state == "after"
            and (FRAME.match(text) is not None or text.lstrip().startswith("Traceback (m"))
        ):
            # Behind the group's margin, after an exception line and before the next rule:
            # its notes (``add_note``), whatever their shape, never a traceback of its own.
            return self._message_line(text)
        if FRAME.match(text) is not None:
            if self.state == "after" and _relayed(self.failure):
                # Ray's error heads the remote traceback it carries: the remote frames and
                # exception line are the failure's, the driver's own frames only led to it.
                self._restart_remote()
                return self._frame_line(text)
            return False  # the frames of another traceback, whose header the log lost
        if text.lstrip().startswith("Traceback (m"):
            if self.state == "after" and _spawned(self.failure) is not None:
                # the child's own traceback, which torch.multiprocessing's relay carries
                self._restart_remote()
                return True
            if self.state == "chain":
                self.state = "frames"
                self._blank = 0
                return True
            return False
        if self.state == "chain":
            margined = unmargined(text)
            if margined is not None and margined[1].startswith(GROUP_HEADER):
                # The chain goes on with an exception group: its lines behind margins.
                self.group, self._outer, self._closed, self._ruled = True, None, False, False
                self._sub_start = len(self.failure.chain)
                self.state, self._blank, self._since_frame = "frames", 0, 0
                return True
            return not text.strip()
        # after the exception line
        if not text.strip():
            self._blank += 1
            return self._blank < 2
        if unfolded(text.strip()) in _CHAIN:  # Ray's fold note after it is no message
            self._push_chain()
            self.state = "chain"
            return True
        if marked and _CUDA_TAIL.match(text) is not None:
            return self._message_line(text)  # the CUDA error's own next line, not a record
        if marked and not self._blank and _ACTOR_DEAD.match(text) is not None:
            return self._message_line(text)  # Ray's ActorDiedError says why, in its message
        if _SPAWNED_CHILD.match(text) and _SPAWNED.search(self.failure.exception or ""):
            return self._message_line(text.strip())  # the child whose failure it relays
        if marked or self._blank or text.startswith(("[", "INFO:")):
            return False
        if own_record(line, self.failure):
            return False  # a record of its own (a logger's next one), not the message
        return self._message_line(text)

    def _group_line(self, text: str, named: bool = False) -> bool | str:
        """A line of an exception group's traceback: True or False when the group's rules
        decide (a rule is taken; a line outside the margin is not), else the text behind
        the margin, read as any traceback's line. A rule ends the exception line before it:
        a group's own where the rule nests (``+-+``), else a sub-exception's, kept with its
        chain and frames (:meth:`_end_sub`). Python's shortened forms are taken as such.
        ``named``: a launcher named the line's process; what it took off may have held the
        margin (docker compose's ``<service> | `` reads as k9s' ``<pod>`` and a margin), so a
        line of the group's stream without one is still the group's until its closing rule."""
        if self._closed:
            if not text.strip():
                self._blank += 1
                return self._blank < 2
            if text.strip() in _CHAIN:  # the group caused (or was handled by) a later one
                # The group's root sub-exception stands in the chain where the group does
                # (chosen at :meth:`finish`, among the group's own sub-exceptions only).
                self.group = False
                failure = self.failure
                self._left = (len(failure.chain), failure.subs)
                failure.subs = []
                self._push_chain()
                self.state = "chain"
                return True
            return False
        rule = group_rule(text)
        if rule is not None:
            if not self._ruled:
                # The group's first rule (``+-+``) stands at its outermost margin: the
                # indentation its closing rule is told by, even where the margins' own lines
                # came with the margin taken off (k9s' ``<pod>`` read as compose's service).
                self._outer, self._ruled = rule.indent, True
            self._end_sub(rule.nests)
            if rule.titled:
                self.state = "frames"
                self._since_frame = 0
            elif self._outer is None or rule.indent <= self._outer + 2:
                self._closed = True
                self._blank = 0
            return True
        inside = unmargined(text)
        if inside is None:
            if too_deep(text):  # nested past what ppaux reads: the group's, said as unseen
                self.failure.shortened = True
                self.failure.depth_cut = self.failure.depth_cut or MAX_DEPTH
                return True
            if not named or self.failure.stream is None:
                return False
            inside = (0, text)
        elif self._outer is None:
            self._outer = inside[0]
        if shortened(inside[1].strip()):
            failure = self.failure
            failure.shortened = True
            more, depth = left_out(inside[1])
            failure.left_out = min(failure.left_out + more, 10**9)
            failure.depth_cut = failure.depth_cut or depth
            return True
        return inside[1]

    def _end_sub(self, nests: bool) -> None:
        """End the exception line read last, at a rule: a group's own line where the rule
        nests, else a sub-exception, kept in the failure's ``subs``."""
        failure = self.failure
        if self.state != "after" or failure.exception is None:
            return  # nothing read since the last rule, or a sub-exception cut short
        own = failure.chain[self._sub_start :]
        del failure.chain[self._sub_start :]
        if nests:
            line = failure.message.split("\n", 1)[0]
            said = f"{failure.exception}: {line}" if line else failure.exception
            failure.nested = failure.nested or failure.group is not None
            failure.group = failure.group or said
            self._innermost = (failure.exception, failure.message)
        elif len(failure.subs) < _MAX_SUBS:
            failure.subs.append(
                dataclasses.replace(
                    failure,
                    chain=own,
                    frames=self._frames,
                    subs=[],
                    group=None,
                    exception=failure.exception,
                )
            )
        else:
            failure.shortened = True
            failure.left_out += 1
        failure.exception = None
        failure.message = ""
        failure.dropped_frames = 0
        self._frames = []
        self.state = "frames"

    def _message_line(self, text: str) -> bool:
        """One more line of the exception's message (bounded: past the cap, swallowed)."""
        if self._message_lines >= _MAX_MESSAGE_LINES:
            self._message_lines += 1
            return self._message_lines < _MAX_MESSAGE_LINES + _MAX_SWALLOWED  # swallowed
        self._message_lines += 1
        failure = self.failure
        if len(failure.message) < MAX_MESSAGE:
            failure.message = (failure.message + "\n" + text)[:MAX_MESSAGE]
        return True

    def _frame_line(self, text: str) -> bool:
        """A frame, its source line, a caret line or the exception line, told by their shape
        (indentation may be lost, or added to the whole paste): never a frame as the
        exception."""
        frame = FRAME.match(text)
        if frame is not None:
            digits = frame.group("line")
            number = int(digits) if len(digits) <= _MAX_LINE_DIGITS else 0
            if not self._frames:
                self.indent = min(max(0, len(text) - len(text.lstrip(" ")) - 2), _MAX_INDENT)
            function = _TRAILER.sub("", frame.group("function") or "")
            self._add_frame(Frame(frame.group("file"), number, function))
            self._since_frame = self._open = 0
            return True
        self._since_frame += 1
        if self._since_frame > _MAX_AFTER_FRAME:
            self.state = "after"  # no exception line came where one should: cut off
            return False
        code = text.strip()
        if (
            code.startswith("Traceback (m")
            and self._frames
            and not self.group
            and not self.failure.fragment
        ):
            # another traceback's header after this one's own header and frames: this one was
            # cut before its exception (frames without a header may be a traceback pasted
            # newest line first, whose header comes after its frames)
            return False
        if not code or set(code) <= set("^~ ") or code.startswith(("Traceback (m", GROUP_HEADER)):
            return True
        failure = self.failure
        shaped = raised(code)
        if shaped is not None:
            failure.exception, failure.message = shaped
            self.state = "after"
            self._blank = 0
            self._message_lines = 0
            return True
        last = self._frames[-1] if self._frames else None
        if last is not None and not last.code:
            self._frames[-1] = Frame(last.file, last.line, last.function, code[:200])
            self._open = _opened(code)
            return True
        if self._open > 0:  # a statement on several lines, its indentation stripped
            self._open += _opened(code)
            return True
        if (
            self.indent
            and text[: self.indent].isspace()
            and not text[self.indent : self.indent + 1].isspace()
        ):
            text = text[self.indent :]  # at the paste's indentation: the exception line's place
        if text.startswith(" ") or (text.startswith("\t")):
            return True
        exception = EXCEPTION.match(text) or WRAPPED.match(text)
        if exception is None:
            return True  # more of a frame's source (a statement on several lines)
        failure.exception = exception.group("type")
        failure.message = unfolded(exception.group("message") or "")
        self.state = "after"
        self._blank = 0
        self._message_lines = 0
        return True

    def said_before(self, exception: str, message: str) -> None:
        """The exception a line just before the header said (a logger's ``AssertionError()``
        before the traceback it logs): the failure's, where the log cuts the traceback before
        its exception line."""
        self._relay = (exception, message)

    def _restart_remote(self) -> None:
        """Drop Ray's relay and the driver's frames before it: what follows is the remote
        process's traceback."""
        failure = self.failure
        child = _spawned(failure)
        if child is not None:
            # torch.multiprocessing's relay: the child's failure, named as the relay names it;
            # its type not in the relay's words, so where the child's is cut it stays cut
            failure.ranks = failure.ranks or child
            failure.said = f"{child}'s error, which {failure.exception} relays"
            self._relay = None
        else:
            self._relay = (failure.exception or "", failure.message)
        failure.relayed_by = failure.exception
        failure.exception = None
        failure.message = ""
        failure.dropped_frames = 0
        self._frames = []
        self.state = "frames"
        self._since_frame = 0
        self._blank = 0

    def _add_frame(self, frame: Frame) -> None:
        self._frames.append(frame)
        if len(self._frames) > MAX_FRAMES:
            del self._frames[_OUTER_FRAMES]
            self.failure.dropped_frames += 1

    def _push_chain(self) -> None:
        failure = self.failure
        if failure.exception is not None and len(failure.chain) < _MAX_CHAIN:
            failure.chain.append((failure.exception, failure.message))
        failure.exception = None
        failure.message = ""
        self._frames = []
        failure.dropped_frames = 0

    def finish(self, choose: Callable[[list[Failure]], int] | None = None) -> Failure | None:
        """The failure, its frames in order; ``cut`` when no exception line came. A fragment
        (no header) with neither a frame nor an exception line is no failure: None.

        An exception group's failure is its root sub-exception, the one ``choose`` picks
        among them (the first when none is given): its exception, chain (after the group's
        own cause) and frames; a group Python shortened to its group lines alone stands as
        the innermost of them."""
        failure = self.failure
        if self.group:
            self._end_sub(False)  # a sub-exception whose group's closing rule the log lost
        subs = failure.subs
        if subs:
            index = choose(subs) if choose is not None and len(subs) > 1 else 0
            root = subs[index]
            failure.exception, failure.message = root.exception, root.message
            failure.chain = [*failure.chain, *root.chain][-_MAX_CHAIN:]
            self._frames, failure.dropped_frames = root.frames, root.dropped_frames
            failure.sub_index = index + 1
        elif self._innermost is not None and failure.exception is None:
            failure.exception, failure.message = self._innermost
        if self._left is not None and self._left[1]:
            at, left = self._left
            index = choose(left) if choose is not None and len(left) > 1 else 0
            kept = [*left[index].chain, (left[index].exception or "", left[index].message)]
            failure.chain[at:at] = kept
            del failure.chain[_MAX_CHAIN:]
        failure.frames = self._frames
        if failure.fragment and failure.exception is None and not failure.chain:
            if not self._frames:
                return None
        if failure.exception is None and self._relay is not None:
            # The remote traceback is cut before its exception: Ray's relay names its type.
            failure.exception, failure.message = self._relay
            failure.relayed_by = None
        if failure.exception is None:
            failure.cut = True
            failure.relayed_by = None
            if failure.chain and self.state == "chain":
                # A chain header with nothing after it: the last complete exception stands.
                failure.exception, failure.message = failure.chain.pop()
        return failure


def _opened(code: str) -> int:
    """Brackets ``code`` opens and leaves open (less those it closes)."""
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
