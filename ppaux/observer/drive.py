"""Driving a sampling observer as sglang's model runner does, on synthetic logits.

Per forward, sglang 0.5.19 - 0.5.23 (``ModelRunner.sample``) asks ``is_active(sampling_info)``;
if active, ``SamplingBatchInfo.apply_logits_bias_with_observer`` calls
``before_grammar(logits, sampling_info)`` before the grammar mask; the sampler picks the next
tokens (greedy: ``argmax``, int64); and when ``before_grammar`` returned something other than
None, ``after_sample(state, token_ids)`` returns the ``DeviceAuxiliaryOutput`` (or None).

Imports torch when used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ppaux.errors import PpauxError

if TYPE_CHECKING:
    import torch

__all__ = [
    "MAX_MESSAGE",
    "DrivenObserver",
    "HookFailure",
    "SamplingInfoFactory",
    "Step",
    "drive_step",
    "message_line",
    "shown_path",
    "synthetic_logits",
    "where_raised",
]

_PPAUX = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SamplingInfoFactory = Callable[[int, int, Any], Any]


class DrivenObserver(Protocol):
    """The target's sampling observer as a forward calls it (the module's docstring says
    when); each method is read where it is called, so a missing one fails there."""

    def is_active(self, sampling_info: object, /) -> object: ...

    def before_grammar(self, logits: torch.Tensor, sampling_info: object, /) -> object: ...

    def after_sample(self, state: object, token_ids: torch.Tensor, /) -> object: ...


class HookFailure(PpauxError):
    """One of the target's own methods raised: ``method`` ('after_sample', 'to_pp_tensors',
    ...) and the exception it raised. Carried through sglang's add and pop unchanged."""

    def __init__(self, method: str, error: BaseException) -> None:
        super().__init__(f"{method} raised {type(error).__name__}: {message_line(error)}")
        self.method = method
        self.error = error

    @property
    def text(self) -> str:
        """'<Type>: <first line of the message>' (see :func:`message_line`)."""
        line = message_line(self.error)
        return f"{type(self.error).__name__}: {line}" if line else type(self.error).__name__


#: Characters of the first line of a message the target's code raised that the check keeps
#: (its length follows where it is longer).
MAX_MESSAGE = 500

#: Characters read from the start of such a message to find its first line: a message of
#: megabytes costs what these do, not what it does.
_MESSAGE_WINDOW = 4 * MAX_MESSAGE


def message_line(error: BaseException) -> str:
    """The first line of ``error``'s message, stripped and cut at :data:`MAX_MESSAGE`
    characters (then ``...`` and the message's length); "" for none, or where its own
    ``__str__`` raises. Only the message's start is read: never split, copied or kept whole."""
    try:
        text = str(error)
    except Exception:  # an exception whose own __str__ raises
        return ""
    lines = text[:_MESSAGE_WINDOW].strip().splitlines()
    line = lines[0] if lines else ""
    if len(line) > MAX_MESSAGE or (len(lines) == 1 and len(text) > _MESSAGE_WINDOW):
        return f"{line[:MAX_MESSAGE]}... ({len(text):,} characters in all)"
    return line


@dataclass
class Step:
    """One forward: its batch size and index, the logits and token ids the observer saw, and
    the output ``after_sample`` returned (None when inactive or when it returned None);
    ``active`` and ``state_none`` say why there is no output."""

    batch_size: int
    index: int
    logits: Any
    token_ids: Any
    output: Any
    active: bool
    state_none: bool


def synthetic_logits(
    batch_size: int, vocab_size: int, step: int, device: torch.device | str
) -> torch.Tensor:
    """Logits ``(batch_size, vocab_size)`` float32, the same for the same arguments on any run."""
    import torch

    # Made on the CPU by name: the target may have set torch's default device (meta, cuda).
    generator = torch.Generator(device="cpu").manual_seed(1000 * batch_size + step)
    logits = torch.randn(
        batch_size, vocab_size, generator=generator, dtype=torch.float32, device="cpu"
    )
    return logits.to(device)


class _Interrupts:
    """Whose a ``KeyboardInterrupt`` raised while the target's code runs is: a person's,
    stopping ppaux (it passes through), but in the check's child the target's
    (:func:`interrupts_are_the_targets`). ``failures``: what the target's code raises that is
    its own failure, where its module loads and its objects are made."""

    theirs = False
    failures: tuple[type[BaseException], ...] = (Exception, SystemExit)


INTERRUPTS = _Interrupts()


def interrupts_are_the_targets() -> None:
    """Take a ``KeyboardInterrupt`` as the target's own failure from now on, reported as any
    other exception of its code is (its type, its first line, its file and line). For the
    check's child: no person can interrupt it (it runs in a session of its own, and its parent
    ends it on Ctrl-C), so one it sees is the target's doing (``raise KeyboardInterrupt``,
    ``signal.raise_signal(signal.SIGINT)``)."""
    INTERRUPTS.theirs = True
    INTERRUPTS.failures = (Exception, SystemExit, KeyboardInterrupt)


def release_grad_mode() -> Any:
    """The grad mode sglang 0.5.19 - 0.5.23 run every hook in: their ``event_loop_pp`` is
    decorated with ``DynamicGradMode()`` (``scheduler_pp_mixin.py``), which is
    ``torch.inference_mode()`` where ``SGLANG_ENABLE_TORCH_INFERENCE_MODE`` is "true" or "1"
    (``utils/common.py``'s ``get_bool_env_var``, default "false"), and grad turned off
    otherwise."""
    import torch

    flag = os.environ.get("SGLANG_ENABLE_TORCH_INFERENCE_MODE", "false").lower()
    return torch.inference_mode() if flag in ("true", "1") else torch.no_grad()


def call_hook(method: str, function: Callable[..., Any], *args: object) -> Any:
    """``function(*args)``, any exception it raises wrapped as :class:`HookFailure`.

    ``SystemExit`` (``sys.exit()`` in the target's code), and any other ``BaseException``
    (``GeneratorExit``, ``asyncio.CancelledError``, a class of the target's own), is the
    target's failure like any other exception: it must not end the check with the target's
    status and no report. ``KeyboardInterrupt`` is a person stopping ppaux, and passes through
    (but in the check's child: see :func:`interrupts_are_the_targets`).
    """
    from ppaux.observer.lines import run_traced

    try:
        with release_grad_mode():
            return run_traced(method, function, *args)
    except KeyboardInterrupt as exc:
        if not INTERRUPTS.theirs:
            raise
        raise HookFailure(method, exc) from exc
    except BaseException as exc:  # the target's own failure, named by its method
        raise HookFailure(method, exc) from exc


class _Before:
    """The observer as sglang's ``apply_logits_bias_with_observer`` calls it: its own
    ``before_grammar``, any exception wrapped as :class:`HookFailure`."""

    def __init__(self, observer: DrivenObserver) -> None:
        self.observer = observer

    def before_grammar(self, logits: torch.Tensor, sampling_info: object) -> Any:
        return call_hook("before_grammar", self.observer.before_grammar, logits, sampling_info)


def drive_step(
    observer: DrivenObserver,
    batch_size: int,
    index: int,
    *,
    vocab_size: int,
    device: torch.device | str,
    sampling_info: SamplingInfoFactory,
) -> Step:
    """One forward of ``observer``; raises :class:`HookFailure` where its own code raises.

    The logits, the sampling info and the token ids are made in sglang's grad mode
    (:func:`release_grad_mode`), as its model forward and sampler make them inside
    ``event_loop_pp``: inference tensors under ``SGLANG_ENABLE_TORCH_INFERENCE_MODE``."""
    import torch

    with release_grad_mode():
        logits = synthetic_logits(batch_size, vocab_size, index, device)
        info = sampling_info(batch_size, vocab_size, device)
    answer = call_hook("is_active", observer.is_active, info)
    try:  # sglang tests the answer where it calls is_active: a failure there is is_active's
        active = bool(answer)
    except Exception as exc:
        raise HookFailure("is_active", exc) from exc
    state = None
    if active:
        apply = getattr(info, "apply_logits_bias_with_observer", None)
        if apply is not None:
            # sglang's own SamplingBatchInfo: its method runs the pre-grammar transforms, calls
            # before_grammar and applies the grammar mask and logit bias, as in a real forward.
            state = apply(logits, _Before(observer))
        else:
            state = call_hook("before_grammar", observer.before_grammar, logits, info)
    # What the greedy sampler returns (sglang's Sampler: torch.argmax, int64).
    with release_grad_mode():
        token_ids = torch.argmax(logits, -1)
    output = None
    if state is not None:
        output = call_hook("after_sample", observer.after_sample, state, token_ids)
    return Step(batch_size, index, logits, token_ids, output, active, active and state is None)


def where_raised(error: BaseException) -> dict[str, Any] | None:
    """``{"file", "line", "function"}`` of the innermost frame outside ppaux and torch. Read
    from the traceback's frames as they are: no source line is read."""
    found = None
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        file = code.co_filename
        if (
            not os.path.abspath(file).startswith(_PPAUX)
            and "/torch/" not in file
            and not file.startswith("<frozen")
        ):
            found = (file, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    if found is None:
        return None
    return {"file": shown_path(found[0]), "line": found[1] or 1, "function": found[2]}


def shown_path(file: str) -> str:
    """``file`` relative to the current directory where it is below it, else as it is."""
    relative = os.path.relpath(file)
    return relative if not relative.startswith("..") else file
