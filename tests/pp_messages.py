"""Random PP messages for the differential tests: output and proxy dicts as sglang sends them.

:func:`messages` returns ``count`` dicts, the same for the same seed: tensors of every dtype
sglang's PP messages carry (0-d, empty and several shapes), the logprob-style Python values the
last stage puts beside them (lists, None, numbers), auxiliary entries that are mostly tensors and
sometimes not (a list, a float, None, a string, a tuple, a dict, a list of tensors), now and then
a bare prefix key, and proxy messages (``hidden_states``/``residual``). Every message can be sent
by gloo: the few tensors gloo refuses are added by the tests themselves, on purpose.
"""

from __future__ import annotations

import random
from typing import Any

import torch

__all__ = ["AUX", "DTYPES", "messages"]

AUX = "__sampling_observer_output__."

#: What sglang's PP messages carry: token ids, logprobs and hidden states, masks.
DTYPES = (
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float64,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
)

_SHAPES = ((), (0,), (1,), (3,), (2, 4), (4, 1, 3), (0, 5))
_LOGPROB_KEYS = (
    "next_token_logprobs",
    "next_token_top_logprobs_val",
    "next_token_top_logprobs_idx",
    "input_token_logprobs",
    "sampling_mask_token_ids",
)


def _tensor(rng: random.Random) -> torch.Tensor:
    dtype = rng.choice(DTYPES)
    shape = rng.choice(_SHAPES)
    numel = 1
    for size in shape:
        numel *= size
    if dtype is torch.bool:
        values = [rng.random() < 0.5 for _ in range(numel)]
    elif dtype.is_floating_point:
        values = [rng.choice((0.0, -0.0, 1.5, -2.25, 1e-3, 65504.0)) for _ in range(numel)]
    else:
        high = {torch.uint8: 255, torch.int8: 127, torch.int16: 32767}.get(dtype, 2**31 - 1)
        values = [rng.randint(0, high) for _ in range(numel)]
    return torch.tensor(values, dtype=dtype).reshape(shape)


def _python_value(rng: random.Random) -> Any:
    kind = rng.randrange(8)
    if kind == 0:
        return None
    if kind == 1:
        return [rng.random() for _ in range(rng.randrange(4))]
    if kind == 2:
        return rng.randint(-5, 5)
    if kind == 3:
        return rng.random()
    if kind == 4:
        return "text"
    if kind == 5:
        return (1, 2.5, None)
    if kind == 6:
        return {"a": [1, 2]}
    return [[rng.randint(0, 9) for _ in range(2)] for _ in range(2)]


def _output_message(rng: random.Random) -> dict[str, Any]:
    message: dict[str, Any] = {
        "next_token_ids": torch.tensor(
            [rng.randint(0, 50000) for _ in range(rng.randrange(1, 5))], dtype=torch.int64
        )
    }
    for key in rng.sample(_LOGPROB_KEYS, rng.randrange(len(_LOGPROB_KEYS) + 1)):
        message[key] = _tensor(rng) if rng.random() < 0.5 else _python_value(rng)
    for index in range(rng.randrange(4)):
        name = f"{AUX}aux{index}"
        roll = rng.random()
        if roll < 0.75:
            message[name] = _tensor(rng)
        elif roll < 0.9:
            message[name] = _python_value(rng)
        else:
            message[name] = [_tensor(rng), _tensor(rng)]
    if rng.random() < 0.05:
        message[AUX] = _tensor(rng)  # a bare prefix: pop accepts it under the name ''
    message["__msg_type__"] = "output"
    return message


def _proxy_message(rng: random.Random) -> dict[str, Any]:
    message: dict[str, Any] = {"hidden_states": _tensor(rng), "residual": _tensor(rng)}
    if rng.random() < 0.2:
        message[f"{AUX}stray"] = _tensor(rng)
    return message


def messages(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` messages, nine output messages to one proxy message, fixed by ``seed``."""
    rng = random.Random(seed)
    return [
        _proxy_message(rng) if rng.random() < 0.1 else _output_message(rng) for _ in range(count)
    ]
