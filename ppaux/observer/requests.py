"""The requests a check's ``consume`` sees: sglang's own ``Req`` and ``ScheduleBatch`` with
the sglang transport where sglang is importable, the stand-ins of :mod:`.standins` otherwise.

sglang 0.5.19 - 0.5.23 build a request as ``Req(rid, origin_input_text, origin_input_ids,
sampling_params)`` (every other argument has a default) and a batch as the dataclass
``ScheduleBatch(reqs=..., device=...)`` (its pools and caches default to None, which
``consume`` never reaches). A real ``Req`` carries some 150 attributes (timings, caches, the
sampling parameters); what the check compares of it after ``consume`` is what ``consume`` can
have changed: the committed output (``output_ids``, ``finished_len``), ``customized_info``,
``finished_reason``, ``is_retracted``, and every attribute that ``consume`` added or assigned
anew. The stand-in request is compared whole.

Imports sglang (and so torch) only when :func:`request_kit` finds it.
"""

from __future__ import annotations

import functools
import importlib.util
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ppaux.observer.standins import (
    ASKED_NEW_TOKENS,
    StandInBatch,
    StandInRequest,
    decoding_mode,
)

__all__ = ["RequestKit", "request_kit", "sglang_kit", "standin_kit"]

#: The prompt every request of a check carries (``origin_input_ids``).
PROMPT = (1, 2, 3)
#: The attributes of a real ``Req`` always compared after ``consume``.
ALWAYS = ("output_ids", "finished_len", "customized_info", "finished_reason", "is_retracted")


@dataclass(frozen=True)
class RequestKit:
    """How a check makes its requests and batches: ``origin`` ('sglang' or 'stand-in'),
    ``version`` (sglang's, for 'sglang'), ``make(batch_size)`` (fresh requests ``req-0`` ...),
    ``make_batch(reqs, device, sampling_info=None)``, and ``view(req)``: what of a request is
    described."""

    origin: str
    version: str | None
    make: Callable[[int], list[Any]]
    make_batch: Callable[..., Any]
    view: Callable[[Any], Any]

    @property
    def label(self) -> str:
        """'sglang 0.5.23 Req/ScheduleBatch' or 'ppaux stand-ins'."""
        if self.origin == "sglang":
            return f"sglang {self.version or '?'} Req/ScheduleBatch"
        return "ppaux stand-ins"


def standin_kit() -> RequestKit:
    """The stand-ins of :mod:`.standins`, compared whole. Their ``ForwardMode`` is made now,
    before the target is loaded (the child asks for its kit first): its release data is read
    with the ``json`` module, which a target may replace."""
    decoding_mode()

    def make(batch_size: int) -> list[Any]:
        return [
            StandInRequest(f"req-{i}", origin_input_ids=list(PROMPT)) for i in range(batch_size)
        ]

    return RequestKit(
        "stand-in",
        None,
        make,
        lambda reqs, device, info=None: StandInBatch(reqs, device=device, sampling_info=info),
        lambda req: req,
    )


def _version() -> str | None:
    try:
        from importlib.metadata import version

        return version("sglang")
    except Exception:  # a tree without its metadata
        try:
            from sglang.version import __version__

            return str(__version__)
        except Exception:
            return None


def sglang_kit() -> RequestKit | None:
    """sglang's own ``Req`` and ``ScheduleBatch``, or None where sglang cannot be imported."""
    try:
        if importlib.util.find_spec("sglang") is None:
            return None
    except (ImportError, ValueError):
        return None
    import warnings

    try:
        with warnings.catch_warnings():
            # sglang's imports warn about missing GPUs and kernels; they are not findings.
            warnings.simplefilter("ignore")
            from sglang.srt.managers.schedule_batch import (
                Req,
                ScheduleBatch,
            )
            from sglang.srt.model_executor.forward_batch_info import ForwardMode
            from sglang.srt.sampling.sampling_params import (
                SamplingParams,
            )
    except Exception:  # an sglang without its dependencies: the stand-ins are used
        return None
    # What each request held when it was made: an attribute consume assigns anew is compared.
    made: dict[int, tuple[Any, dict[str, Any]]] = {}

    def make(batch_size: int) -> list[Any]:
        reqs = []
        for i in range(batch_size):
            req = Req(
                rid=f"req-{i}",
                origin_input_text="",
                origin_input_ids=list(PROMPT),
                sampling_params=SamplingParams(max_new_tokens=ASKED_NEW_TOKENS),
            )
            made[id(req)] = (req, dict(vars(req)))
            reqs.append(req)
        return reqs

    def view(req: object) -> Any:
        _, then = made.get(id(req), (req, {}))
        now = vars(req)
        shown = {name: now[name] for name in ALWAYS if name in now}
        for name, value in now.items():
            if name not in then or value is not then[name]:
                shown[name] = value
        return types.SimpleNamespace(**dict(sorted(shown.items())))

    return RequestKit(
        "sglang",
        _version(),
        make,
        # In the decode step a check drives, as the scheduler's prepare_for_decode sets it.
        lambda reqs, device, info=None: ScheduleBatch(
            reqs=reqs, device=device, forward_mode=ForwardMode.DECODE, sampling_info=info
        ),
        view,
    )


@functools.cache
def request_kit(sglang: bool) -> RequestKit:
    """With ``sglang`` (the sglang transport, which imports sglang's runtime in any case),
    sglang's own classes where sglang is importable, else the stand-ins; found once per process
    (the check's child looks before it loads the target). Other transports use the stand-ins,
    which carry the public fields of 0.5.23's ``Req`` that a ``consume`` reads: importing
    sglang's scheduler costs some 10 s and 300 MB, over the check's own budget."""
    return (sglang_kit() if sglang else None) or standin_kit()
