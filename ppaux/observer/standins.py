"""Stand-ins for sglang's objects where sglang is not importable, and sglang's own where it is.

``ppaux check-observer`` hands an observer what sglang's model runner hands it. With the
``sglang`` transport (sglang importable) ``sampling_info`` is sglang's own ``SamplingBatchInfo``
and the host output is consumed through sglang's own ``SchedulerBatchResultProcessor``; otherwise
these stand-ins carry the same fields with the same dtypes and shapes as sglang 0.5.19 - 0.5.23
builds them for a batch of greedy requests.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import enum

    import torch

__all__ = [
    "CommittedTokens",
    "StandInBatch",
    "StandInRequest",
    "StandInSamplingInfo",
    "build_commits",
    "copy_tensor",
    "decoding_mode",
    "forward_modes",
    "sampling_info_fields",
]


@dataclass
class StandInSamplingInfo:
    """The fields of sglang's ``SamplingBatchInfo`` an observer may read, for a greedy batch.

    ``temperatures`` float32 ``(B, 1)``, ``top_ps`` float32 ``(B,)``, ``top_ks`` int32 ``(B,)``
    (1: greedy), ``min_ps`` float32 ``(B,)``, the ``is_all_greedy`` / ``is_any_greedy`` /
    ``need_*_sampling`` flags, ``vocab_size``, ``device`` (a string, as in sglang), and the
    optional fields sglang leaves None for such a batch (grammars, custom parameters, logit
    bias, penalties, sampling seed, ``rids_int``), and ``return_sampling_masks`` (each request's
    ``return_sampling_mask``, False).
    """

    temperatures: Any
    top_ps: Any
    top_ks: Any
    min_ps: Any
    is_all_greedy: bool
    is_any_greedy: bool
    need_top_p_sampling: bool
    need_top_k_sampling: bool
    need_min_p_sampling: bool
    vocab_size: int
    grammars: list[Any] | None = None
    grammar_mask: Any = None
    penalizer_orchestrator: Any = None
    acc_additive_penalties: Any = None
    acc_scaling_penalties: Any = None
    has_custom_logit_processor: bool = False
    custom_params: list[dict[str, Any] | None] | None = None
    custom_logit_processor: Any = None
    sampling_seed: Any = None
    logit_bias: Any = None
    device: str = "cpu"
    rids_int: Any = None
    return_sampling_masks: list[bool] | None = None
    # The fields with a default that 0.5.19 or 0.5.23 has besides (the union of the two: where
    # sglang is not importable, the release is not known): bootstrap_room_ids_int in both
    # (sampling_batch_info.py 0.5.19 l.55, 0.5.23 l.76), sampling_mask_max_top_k in 0.5.19
    # (l.79), the sampling-support, watermark and top-k fields in 0.5.23 (l.99 - l.124).
    bootstrap_room_ids_int: Any = None
    sampling_mask_max_top_k: int = 0
    return_sampling_support_logprobs: list[bool] | None = None
    sampling_mask_batch_indices: Any = None
    sampling_support_logprobs_capture_indices: Any = None
    sampling_mask_top_ks: list[int] | None = None
    watermark_keys: Any = None
    watermark_context_windows: Any = None
    watermark_enabled: Any = None
    watermark_candidates_host: list[bool] | None = None
    has_watermark_candidates: bool = False
    npu_top_k_top_p_eligible: bool = False
    max_top_k: int | None = None


def sampling_info_fields(
    batch_size: int, vocab_size: int, device: torch.device | str
) -> dict[str, Any]:
    """The required fields of ``SamplingBatchInfo`` for ``batch_size`` greedy requests, built
    as ``SamplingBatchInfo.from_schedule_batch`` builds them (dtypes, shapes)."""
    import torch

    return {
        "temperatures": torch.ones(batch_size, dtype=torch.float, device=device).view(-1, 1),
        "top_ps": torch.ones(batch_size, dtype=torch.float, device=device),
        "top_ks": torch.ones(batch_size, dtype=torch.int32, device=device),
        "min_ps": torch.zeros(batch_size, dtype=torch.float, device=device),
        "is_all_greedy": True,
        "is_any_greedy": True,
        "need_top_p_sampling": False,
        "need_top_k_sampling": True,
        "need_min_p_sampling": False,
        "vocab_size": vocab_size,
        "device": str(device),
        # Each request's return_sampling_mask (False for a plain request).
        "return_sampling_masks": [False] * batch_size,
    }


@dataclass(frozen=True)
class CommittedTokens:
    """sglang's ``CommittedTokens``: where a request's newly visible tokens start, and them."""

    output_index: int
    token_ids: tuple[int, ...]


#: The ``max_new_tokens`` a check's requests ask for: more than any check produces, so that no
#: request is cut short by its own length (sglang's own requests in a check ask the same).
ASKED_NEW_TOKENS = 1 << 20


@dataclass
class StandInSamplingParams:
    """A request's ``sampling_params`` as sglang 0.5.19 - 0.5.23 hold them for a plain request
    (``SamplingParams(max_new_tokens=...)`` after its ``__post_init__``): the caller's fields
    and the stop fields derived from them. Both releases declare every field here (0.5.23 adds
    ``watermark`` and ``ebnf_full_assistant``, left out); the runtime tier's tests compare each
    value with the release's own. A ``consume`` commonly reads ``custom_params`` (the request's
    own options) and ``max_new_tokens``."""

    max_new_tokens: int | None = ASKED_NEW_TOKENS
    stop: str | list[str] | None = None
    stop_token_ids: set[int] | None = None
    stop_regex: str | list[str] | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 1 << 30
    min_p: float = 0.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    repetition_penalty: float = 1.0
    min_new_tokens: int = 0
    n: int = 1
    beam_width: int | None = None
    json_schema: str | None = None
    regex: str | None = None
    ebnf: str | None = None
    structural_tag: str | None = None
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True
    no_stop_trim: bool = False
    stream_interval: int | None = None
    logit_bias: dict[str, float] | None = None
    sampling_seed: int | None = None
    custom_params: dict[str, Any] | None = None
    stop_strs: str | list[str] | None = None
    stop_regex_strs: str | list[str] | None = None
    stop_str_max_len: int = 0
    stop_regex_max_len: int = 0
    is_normalized: bool = False


@dataclass
class StandInRequest:
    """The parts of sglang's ``Req`` that result processing and a ``consume`` touch: ``rid``,
    ``output_ids``, ``finished_len`` and ``customized_info`` (None until something sets it),
    and what a ``consume`` commonly reads: ``origin_input_ids`` (the prompt's token ids),
    ``sampling_params`` (:class:`StandInSamplingParams`), ``finished_reason`` (None while the
    request runs), ``to_finish`` (None), ``is_retracted``, ``stream`` and ``return_logprob``
    (False), ``return_sampling_mask`` (False), ``lora_id``, ``grammar`` and
    ``multimodal_inputs`` (None) and ``finished()``, as sglang 0.5.19 - 0.5.23's
    ``Req.__init__`` sets them for a plain request (the runtime tier's tests compare each
    with the release's own ``Req``).
    ``consume`` may set any other attribute; the check compares them all.

    Every other public attribute that ``Req.__init__`` of 0.5.19 or 0.5.23 sets to a plain
    value (``return_hidden_states`` False, ``spec_verify_ct`` 0, ``finished_output`` None,
    ...: ``ppaux/data/request_defaults.json``) reads the same here, as a class attribute: a
    ``consume`` that reads one is not a false PP710, and only what it assigns is an
    attribute of the request's own (described and compared). Those set to a new empty list
    or dict (``hidden_states``, ``spec_correct_drafts_histogram``, ...) are each request's
    own, made with it."""

    rid: str
    output_ids: list[int] = field(default_factory=list)
    finished_len: int | None = None
    customized_info: dict[str, list[Any]] | None = None
    origin_input_ids: list[int] = field(default_factory=lambda: [1, 2, 3])
    sampling_params: StandInSamplingParams = field(default_factory=StandInSamplingParams)
    finished_reason: Any = None
    to_finish: Any = None
    is_retracted: bool = False
    stream: bool = False
    return_logprob: bool = False
    return_sampling_mask: bool = False
    lora_id: str | None = None
    grammar: Any = None
    multimodal_inputs: Any = None

    def __post_init__(self) -> None:
        lists, dicts = _request_defaults()[1:]
        for name in lists:
            setattr(self, name, [])
        for name in dicts:
            setattr(self, name, {})

    def finished(self) -> bool:
        """Whether the request has finished (``Req.finished()``: a finish reason is set)."""
        return self.finished_reason is not None


@functools.cache
def _request_defaults() -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]:
    """The plain values, and the names of the new empty lists and dicts, that a fresh
    ``Req`` of sglang 0.5.19 or 0.5.23 holds beside :class:`StandInRequest`'s fields."""
    import json
    from importlib import resources

    text = resources.files("ppaux").joinpath("data/request_defaults.json").read_text("utf-8")
    data = json.loads(text)
    return dict(data["values"]), tuple(data["empty_lists"]), tuple(data["empty_dicts"])


for _name, _value in _request_defaults()[0].items():
    setattr(StandInRequest, _name, _value)


@functools.cache
def _forward_mode_data() -> dict[str, Any]:
    import json
    from importlib import resources

    text = resources.files("ppaux").joinpath("data/forward_mode.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@functools.cache
def forward_modes() -> Any:
    """sglang's ``ForwardMode`` as the release data lists it (``ppaux/data/forward_mode.json``,
    read from sglang 0.5.23): an ``IntEnum`` of the release's members, whose ``is_*`` methods
    answer as the release's do (taking ``include_draft_extend_v2`` where the release's do).
    One class per process, so that a mode is the same object at every step."""
    import enum

    data = _forward_mode_data()
    modes: Any = enum.IntEnum("ForwardMode", data["members"])  # type: ignore[misc]
    modes.__module__ = __name__
    drafts = data["predicates_with_draft_extend_v2"]
    for name, members in data["predicates"].items():
        setattr(modes, name, _predicate(name, frozenset(members), drafts.get(name)))
    return modes


def _predicate(name: str, members: frozenset[str], with_draft: list[str] | None) -> Any:
    if with_draft is None:

        def plain(self: enum.Enum) -> bool:
            return self.name in members

        plain.__name__ = plain.__qualname__ = name
        return plain
    drafted = frozenset(with_draft)

    def predicate(self: enum.Enum, include_draft_extend_v2: bool = False) -> bool:
        return self.name in (drafted if include_draft_extend_v2 else members)

    predicate.__name__ = predicate.__qualname__ = name
    return predicate


def decoding_mode() -> Any:
    """The mode of the batch ``consume`` sees in a decode step, as the release sets it."""
    return forward_modes()[_forward_mode_data()["during_consume"]]


@dataclass
class StandInBatch:
    """The part of sglang's ``ScheduleBatch`` that ``consume`` sees: ``reqs``, ``device`` and
    ``forward_mode`` (``ForwardMode.DECODE``, as in the decode step a check drives:
    :func:`forward_modes`), ``sampling_info`` (the step's), and ``return_logprob`` (False) and
    ``top_logprobs_nums`` (None) as sglang 0.5.19 - 0.5.23 set them for plain requests."""

    reqs: list[Any]
    device: str = "cpu"
    forward_mode: Any = field(default_factory=decoding_mode)
    sampling_info: Any = None
    return_logprob: bool = False
    top_logprobs_nums: list[int] | None = None

    def batch_size(self) -> int:
        """Number of requests, as ``ScheduleBatch.batch_size()``."""
        return len(self.reqs)


class _Committing(Protocol):
    """A request as the commits read it (sglang's ``Req`` or :class:`StandInRequest`)."""

    @property
    def finished_len(self) -> int | None: ...

    @property
    def output_ids(self) -> Sequence[int]: ...


def _visible_output_len(req: _Committing) -> int:
    return req.finished_len if req.finished_len is not None else len(req.output_ids)


def build_commits(
    reqs: Sequence[Any], output_starts: Sequence[int], make: Callable[..., Any] = CommittedTokens
) -> list[Any]:
    """``commits`` as sglang's ``_build_auxiliary_commits`` makes them (0.5.19 - 0.5.23):
    aligned with ``reqs``; None where a request has no new visible token."""
    commits: list[Any] = []
    for req, start in zip(reqs, output_starts, strict=True):
        end = _visible_output_len(req)
        if end < start:
            raise RuntimeError("committed output length moved backwards")
        if end == start:
            commits.append(None)
            continue
        commits.append(make(output_index=start, token_ids=tuple(req.output_ids[start:end])))
    return commits


def copy_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """sglang's ``async_d2h`` (what the scheduler hands ``copy_to_host``): a CPU tensor is
    returned as it is, not copied; a device tensor is copied to the host."""
    if tensor.device.type == "cpu":
        return tensor
    return tensor.to("cpu")
