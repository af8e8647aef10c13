"""A ``KeyError`` on a key of the tensors one pipeline stage sends the next (sglang's
``PPProxyTensors``, read as ``pp_proxy_tensors["hidden_states"]``): the stage that read it got a
message without that key, so the stages run different code or models. Told from the key the
exception names (``hidden_states``, ``residual``), or from a frame that reads the proxy tensors.
"""

from __future__ import annotations

import re

from ppaux.patterns import lazy
from ppaux.triage.records import Failure
from ppaux.triage.stepdata import Step

__all__ = ["pp_key_error", "pp_key_in_text", "pp_key_steps", "pp_key_words"]

#: The keys sglang's models put in what a stage sends the next.
_PP_KEYS = frozenset({"hidden_states", "residual"})
#: A KeyError's line and the key it names.
_KEY_ERROR = lazy(r"(?:^|[\s.])KeyError: ['\"](?P<key>\w{1,80})['\"]")
#: What a frame's code or function holds where it reads the proxy tensors.
_PROXY_READ = lazy(r"pp_proxy_tensors\s*\[|proxy_tensors\[")


def pp_key_in_text(text: str) -> str | None:
    """The key of a PP message that a ``KeyError`` line in ``text`` names, or None."""
    found = _KEY_ERROR.search(text)
    if found is None or found.group("key") not in _PP_KEYS:
        return None
    return found.group("key")


def pp_key_error(failure: Failure) -> str | None:
    """The key of the PP message whose absence ``failure`` (a ``KeyError``) is, where its key
    is one of a PP message's or one of its frames reads the proxy tensors; else None."""
    exception = failure.exception or ""
    if exception != "KeyError" and not exception.endswith(".KeyError"):
        return None
    key = failure.message.strip().strip("'\"")
    read = any(
        _PROXY_READ.search(frame.code) or frame.file.endswith("forward_batch_info.py")
        for frame in failure.frames
    )
    if key in _PP_KEYS or (read and re.fullmatch(r"\w{1,80}", key)):
        return key
    return None


def pp_key_words(key: str) -> str:
    """What such a KeyError means, in a sentence."""
    return (
        f"{key!r} is a key of the tensors one pipeline stage sends the next "
        "(pp_proxy_tensors): the stage that read it got a message without it, so the "
        "stages run different code or models"
    )


def pp_key_steps(key: str) -> list[Step]:
    """The comment that leads to comparing the stages."""
    return [Step(None, "any host", f"{pp_key_words(key)}: compare the stages")]
