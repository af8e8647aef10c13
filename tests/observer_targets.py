"""Pieces of targets that several observer test modules build theirs from: an output that is
its own host copy (:class:`KeptOutput`), the ``Host`` and ``Out`` classes of a target that packs
values in a set's order (:data:`SET_ORDER_OUTPUT`, source for a target file or a module made in
a test), the observer ``O`` of a target file (:data:`MAX_OBSERVER`), and the mark of a module
whose checks need Linux (:func:`linux_only`)."""

from __future__ import annotations

import sys
from typing import Any

import pytest


class KeptOutput:
    """An output whose host copy is itself and whose ``values`` are sent whole."""

    def __init__(self, values: Any) -> None:
        self.values = values

    def copy_to_host(self, copy: Any) -> Any:
        return self

    def consume(self, batch: Any, commits: Any) -> None:
        pass

    def to_pp_tensors(self) -> dict[str, Any]:
        return {"values": self.values}


#: ``Host`` (writes each request's values into its ``customized_info``) and ``Out`` (its values
#: by name, packed in the order of the set ``NAMES``), as the source of a target: the source
#: before it imports torch and defines ``NAMES``.
SET_ORDER_OUTPUT = """
class Host:
    def __init__(self, values):
        self.values = values

    def consume(self, batch, commits):
        for i, (req, commit) in enumerate(zip(batch.reqs, commits)):
            if commit is not None:
                req.customized_info = {k: float(v[i]) for k, v in self.values.items()}


class Out:
    def __init__(self, values):
        self.values = values

    def copy_to_host(self, copy_tensor):
        return Host({k: copy_tensor(v) for k, v in self.values.items()})

    def to_pp_tensors(self):
        return {"packed": torch.stack([self.values[k] for k in NAMES], -1)}
"""


#: ``O``, an observer of each row's largest logit, as the source of a target: the rest of the
#: source defines ``Out`` (made from the last stage's values) and ``rebuild(tensors)`` (rank 0's
#: output from what it received).
MAX_OBSERVER = """
class O:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits.float().max(dim=-1).values

    def after_sample(self, state, token_ids):
        return Out(state)

    def from_pp_tensors(self, tensors):
        return rebuild(tensors)
"""


def linux_only(reason: str) -> pytest.MarkDecorator:
    """Skip the module's tests outside Linux, for ``reason``."""
    return pytest.mark.skipif(not sys.platform.startswith("linux"), reason=reason)
