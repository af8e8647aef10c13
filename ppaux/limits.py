"""Hard limits for reading untrusted dumps and logs, with defaults that fit any real PP
payload and any real server log.

Every bound on the work or memory an untrusted input may cost belongs here, as a field of
:class:`Limits`; the numbers elsewhere that look like bounds (rows shown, option ranges, facts of
a format) are listed, each with why it is not a limit, in ``docs/architecture.md`` ("Bounds, and
the numbers that are not").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["LARGEST", "Limits", "parse_limit", "parse_limits", "refuse_unused"]

#: The largest value of any limit: the largest size a read or an allocation takes (``ssize_t``).
LARGEST = (1 << 63) - 1
#: A limit's value as ``--limit`` takes it: ASCII digits only (no sign, space, underscore or
#: other script's digits, all of which ``int()`` would take).
_DIGITS = re.compile(r"[0-9]+")
#: Characters of a refused value shown in the message (its length follows).
_SHOWN = 40


def _shown(text: str) -> str:
    """``text`` as a message shows it: quoted, and cut past :data:`_SHOWN` characters."""
    if len(text) <= _SHOWN:
        return repr(text)
    return f"{text[:_SHOWN]!r}... ({len(text):,} characters)"


@dataclass(frozen=True)
class Limits:
    """Bounds on the work and memory one file may cost; a file past one is refused, not read
    (except the two ``max_report_*``/``max_findings_*`` bounds, ``max_table_rows``,
    ``max_incidents`` and ``max_collateral``, which cut the report instead, and
    ``max_log_line``, ``max_failures`` and ``max_events``, which cut what a log gives; past
    ``max_deflated_bytes`` a dump is finding PP202).

    The defaults are generous for pipeline-parallel tensor dicts (whose ``data.pkl`` is a few
    kilobytes) and small enough that a hostile file costs well under a second and 100 MB.

    Every field takes a whole number from 1 to :data:`LARGEST` (2**63 - 1), written in ASCII
    digits (``--limit NAME=N``): the sizes and counts they bound are handed to the system and
    to C code that takes at most that.
    """

    # -- reading a file: bytes, records, files ---------------------------------------------------
    #: Bytes of pickle (``data.pkl`` uncompressed, or a plain pickle file).
    max_pickle_bytes: int = 64 * 1024 * 1024
    # -- running the pickle ------------------------------------------------------------------------
    #: Nesting depth of containers and objects, in the pickle and in the result.
    max_depth: int = 100
    #: Values the pickle may create, and values a description may visit; also the values an
    #: auxiliary value ``tensorize`` converts may hold once the lists it repeats are written
    #: out (a list stored once and referred to twice, forty levels deep, is 2**40 numbers).
    max_items: int = 1_000_000
    #: Opcodes the pickle may run, whether they create a value or not (PROTO, FRAME, MARK and
    #: POP_MARK, a memo store to a slot already taken...): each costs time, about 0.5 to 1 s
    #: per million. A real payload runs a few thousand; a pickle file under 1 MB at most a
    #: million, so this bites only on a data.pkl inflated from a small record.
    max_ops: int = 2_000_000
    #: Memo entries the pickle may store.
    max_memo: int = 1_000_000
    #: Dimensions a tensor or an array may declare. torch sets no hard bound, but nothing real
    #: comes near this, and it keeps element counts small enough to print (64 sizes below 2**63).
    max_dims: int = 64
    #: Distinct keys of one dict or set that may share a hash value. More means keys chosen to
    #: collide (ints and tuples of ints hash predictably), which makes insertion quadratic.
    max_hash_collisions: int = 8
    #: Records in a zip file.
    max_zip_records: int = 100_000
    #: Files walked in directories.
    max_files: int = 1_000_000
    #: Bytes of a zip dump read from a stream (stdin), which is held in memory whole; also of
    #: a file in torch.save's legacy format (its storages follow its pickles), which is read
    #: whole into memory, file or stream: reading one costs memory as large as the file, up to
    #: this bound (4 GiB; its pickles alone are bounded by max_pickle_bytes). A zip file is
    #: read a record at a time and is not bounded by this.
    max_stream_bytes: int = 4 * 1024 * 1024 * 1024
    #: Bytes of deflated storage records inflated (and discarded) to check that each inflates
    #: to its declared size, as torch.load does not. torch.save never deflates a storage; a
    #: file declaring more is refused as one torch may read otherwise (PP202), unchecked.
    max_deflated_bytes: int = 64 << 20
    #: Bytes of stored records read (a block at a time, then discarded) to check each record's
    #: CRC against its data, as torch.save writes it; a record past them keeps its CRC
    #: unchecked. torch.load checks no CRC, so a wrong one changes nothing torch reads: it is
    #: only a sign of an edit (PP118). Bounded so that a multi-gigabyte dump is not read whole.
    max_crc_bytes: int = 64 << 20
    # -- the tensor dicts found, and the report ----------------------------------------------------
    #: Tensor dicts found in one file (each is checked and described); a real dump has one to
    #: three.
    max_payloads: int = 10_000
    #: Entries holding a tensor, over all the tensor dicts of one file (each costs several
    #: checks); a real message holds a few dozen.
    max_tensor_entries: int = 100_000
    #: Entries listed in a report (``entries``) over all the tensor dicts of one file; the rest
    #: are counted in each dict's ``entries_omitted``. Every entry is still read and checked:
    #: this bounds the report only.
    max_report_entries: int = 10_000
    #: Findings of one code listed for one file; past it, one more finding of that code counts
    #: the rest (``extra.omitted``). Every value is still checked: this bounds the report only.
    max_findings_per_code: int = 100
    #: Rows of one table the text view shows; the rest are counted (every other format lists
    #: all). rich lays a table out cell by cell (about a millisecond a row); past this the view
    #: would take seconds, and no one reads it on a terminal. This bounds the view only.
    max_table_rows: int = 1000
    # -- reading logs (triage) ---------------------------------------------------------------------
    #: Log files taken from the directories of one run.
    max_log_files: int = 10_000
    #: Bytes a compressed log may inflate to before its ratio is judged ...
    max_inflated_bytes: int = 64 << 20
    #: ... and the ratio of inflated to compressed bytes past them (logs compress 5 to 50
    #: times; a bomb far more): a log past both is refused.
    max_inflation_ratio: int = 200
    #: Bytes of one JSON document (an array of records, a query API's response), read whole to
    #: parse it: a larger one is refused (give it one record per line).
    max_log_document: int = 4 << 20
    #: Bytes kept of one log line; a longer line is cut there (counted in the report).
    max_log_line: int = 64 << 10
    #: Failures (tracebacks, exception lines) kept from one log; the rest are counted.
    max_failures: int = 200
    #: Events (watchdog timeouts, signals, captures ...) kept from one log; the rest are counted.
    max_events: int = 2000
    #: Incidents listed in a triage report; one finding counts the rest and names the next.
    #: Every log is still read: this bounds the report only.
    max_incidents: int = 20
    #: Collateral records listed for one incident; one finding counts the rest.
    max_collateral: int = 40

    # -- reading fingerprints (check-skew) ---------------------------------------------------------
    #: Bytes of one fingerprint file, read whole to parse it; a real one is a few kilobytes.
    max_fingerprint_bytes: int = 16 * 1024 * 1024
    #: Arrays and objects within one another in a fingerprint; a real one nests four deep
    #: (``sglang.files[i]``). Deeper is refused, naming this limit.
    max_fingerprint_nesting: int = 64

    # -- what a check of an observer drives (check-observer, assert_pp_safe) ----------------------
    #: The largest batch a check drives (``batch_sizes``), enough for any real deployment.
    max_batch_size: int = 4096
    #: The most steps a check drives (``steps``).
    max_steps: int = 1000
    #: The largest vocabulary a check's logits take (``vocab_size``); one step's logits, batch
    #: times vocabulary, are bounded by ``max_logits_elements`` too.
    max_vocab_size: int = 1 << 22
    #: The most auxiliary outputs a check takes from its outputs callable (``outputs``), one a
    #: step: an iterable that yields more (an endless generator?) is refused there, naming
    #: this limit.
    max_outputs: int = 1000

    # -- describing a checked observer's values (check-observer, assert_pp_safe) -------------------
    #: Items one description of a target's value digests whole (each distinct container once);
    #: past it, the value is listed as not compared, naming this limit. A value the check
    #: digests is one the target built, in the target's own process.
    max_digested_items: int = 250_000
    #: Containers within containers one description of a target's value digests; a value
    #: nested deeper is listed as not compared, naming this limit.
    max_value_nesting: int = 64
    #: Elements of one tensor or array a description reads for its digest (64 Mi: 256 MiB of
    #: float32, as many as the logits the check makes, ``max_logits_elements``: an output of
    #: logits' size, 256 x 152,064, is compared). It is read a piece at a time in the target's
    #: process, its memory bounded whatever the size, and only its digest and first values
    #: reach the judge. A larger one (an expanded view of one element among them, whose
    #: reading costs time its memory does not bound) is listed as not compared, naming this
    #: limit.
    max_digested_elements: int = 1 << 26
    #: Bytes of one record the check's child sends its parent, at any batch size (a record
    #: describes at most 256 requests of each path, about 10 KB each at most in a real check:
    #: a larger batch's requests come in further records). A larger record is refused by its
    #: length, before it is read: the run ends there (PP715 ``flooded``). Raised past 256 MiB
    #: it stays 256 MiB: no record of the check's is that long.
    max_record_bytes: int = 16 << 20
    #: Records the child may send in one part of a run (one step, the requests or the
    #: re-described outputs of a batch size): a real step sends at most seven, and one more per
    #: 256 requests of its batch past the first 256. Past it the run ends there (PP715
    #: ``flooded``).
    max_step_records: int = 256
    #: Bytes of records the child may send in one run, per 256 requests of the largest batch
    #: size checked (a real check of 1,000 steps at a batch of 256 sends about 100 MB). Past
    #: it the run ends there (PP715 ``flooded``).
    max_run_record_bytes: int = 1 << 30
    #: Elements of the logits one step of a check makes (its largest batch size times the
    #: vocabulary). They are one float32 tensor, 4 bytes an element (what the target does with
    #: them comes on top), so the default, 2**26, is 256 MiB: a batch of 256 at Gemma 3's
    #: vocabulary of 262,144, of 441 at Qwen2's 151,936, of 523 at Llama 3's 128,256. A larger
    #: shape is refused before the check runs, naming this limit.
    max_logits_elements: int = 1 << 26

    # -- reading sglang's source (fingerprint, check-skew's analysis) ------------------------------
    #: Bytes of one sglang source file read (the largest one ppaux reads is about 90 KB); a
    #: larger one is said to be unreadable, naming this limit.
    max_source_bytes: int = 4 * 1024 * 1024
    #: Bytes of sglang source one analysis parses, its files together (the four files a release
    #: has read hold about 245 KB): the parse's tree of dense code costs about 400 MB and 2.5 s
    #: of CPU a megabyte. A file that would take the total past it is not parsed, the facts
    #: read from it are unknown, and its reason names this limit.
    max_analysed_source_bytes: int = 512 * 1024
    #: Tokens of one logical line of a source file longer than 32 KB (which cannot be cut into
    #: smaller parts for the parser): the parser's tree of a 1 MB literal of 600,000 tokens
    #: takes it past 1 GB; sglang's longest statements hold a few thousand. A file holding
    #: a longer one is said to be not analysable, naming this limit.
    max_statement_tokens: int = 50_000
    #: Nesting depth of a source file's syntax tree analysed (real sglang files stay under 40
    #: levels); a deeper file is said to be not analysable, naming this limit. Raised past 800
    #: it stays 800: the analysis recurses once a level, within Python's recursion limit.
    max_syntax_depth: int = 300

    def replace(self, **changes: int) -> Limits:
        """A copy with some limits changed."""
        return dataclasses.replace(self, **changes)


def parse_limit(text: str) -> tuple[str, int]:
    """Parse 'NAME=N' (for example 'max_depth=500': a field of :class:`Limits`, ``-`` or
    ``_`` between its words; N in ASCII digits, from 1 to :data:`LARGEST`); raise ValueError
    naming what is wrong (the value cut to :data:`_SHOWN` characters)."""
    name, sep, value = text.partition("=")
    name = name.replace("-", "_")
    names = [f.name for f in dataclasses.fields(Limits)]
    if not sep:
        raise ValueError(f"limit {_shown(text)} is not of the form NAME=N")
    if name not in names:
        raise ValueError(f"unknown limit {_shown(name)}; known limits: {', '.join(names)}")
    if value.startswith("-") and _DIGITS.fullmatch(value[1:]):  # a negative number
        raise ValueError(f"limit {name} must be from 1 to {LARGEST}, not {_shown(value)}")
    if not _DIGITS.fullmatch(value):
        raise ValueError(
            f"limit {name} must be a whole number in ASCII digits (0-9, nothing else), "
            f"not {_shown(value)}"
        )
    digits = value.lstrip("0") or "0"  # int() refuses more than 4,300 digits
    if len(digits) > len(str(LARGEST)) or not 1 <= int(digits) <= LARGEST:
        raise ValueError(f"limit {name} must be from 1 to {LARGEST}, not {_shown(value)}")
    return name, int(digits)


def refuse_unused(limits: Iterable[str], used: Iterable[str], command: str) -> None:
    """Raise ValueError for the first of ``limits`` (names, or NAME=N) that ``command`` does
    not use, naming those it does: a limit it does not read would be silently ignored."""
    wanted = tuple(used)
    for text in limits:
        name = text.partition("=")[0].strip().replace("-", "_")
        if name not in wanted:
            raise ValueError(
                f"{command} does not use limit {_shown(name)}; it uses {', '.join(wanted)}"
            )


def parse_limits(texts: Iterable[str], base: Limits = Limits()) -> Limits:
    """``base`` with every 'NAME=N' of ``texts`` applied; raise ValueError on the first bad one."""
    limits = base
    for text in texts:
        name, value = parse_limit(text)
        limits = limits.replace(**{name: value})
    return limits
