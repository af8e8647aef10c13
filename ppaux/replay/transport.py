"""Reference implementation of sglang's pipeline-parallel auxiliary-output transport.

A drop-in for ``sglang.srt.sampling.sampling_observer_pp`` as shipped in sglang 0.5.19 - 0.5.23
(the functions and Protocols are the same in all five releases; only that file's imports moved in
0.5.20). It runs the same checks in the same order, raises the same ``RuntimeError`` messages
character for character, and leaves the tensor dict in the same state on every path, so ppaux can
replay a captured call without sglang installed. The tests compare it with the real module loaded
from the release wheels (:mod:`ppaux.sglang_source.loader`).

The two ends of the transport:

* the last pipeline stage calls :func:`add_auxiliary_output_to_pp_tensors` to put the sampling
  observer's tensors into the dict it sends to the first stage, each under
  ``"__sampling_observer_output__." + name``;
* the first stage calls :func:`pop_auxiliary_output_from_pp_tensors` on the dict it received, which
  hands those tensors to its observer and removes the keys.

This module is the torch side of ppaux and imports torch; :mod:`ppaux` itself does not.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Protocol, runtime_checkable

import torch

from ppaux.sglang import (
    ADD_BAD_NAME,
    ADD_DUPLICATE,
    ADD_EMPTY,
    ADD_NOT_TENSOR,
    ADD_UNSUPPORTED,
    OUTPUT_PREFIX,
    POP_NO_OBSERVER,
    POP_NON_TENSOR,
    POP_NOT_RECONSTRUCTED,
    POP_UNSUPPORTED,
)

__all__ = [
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
    "add_auxiliary_output_to_pp_tensors",
    "pop_auxiliary_output_from_pp_tensors",
]

#: Same name and value as sglang's module constant; read at call time (as sglang does), so
#: patching it here changes both functions the way patching sglang's would.
_OUTPUT_PREFIX = OUTPUT_PREFIX


@runtime_checkable
class PipelineParallelAuxiliaryOutput(Protocol):
    """An auxiliary device output that can travel between pipeline stages.

    As in sglang 0.5.19 - 0.5.23, ``isinstance`` only asks whether the object has a
    ``to_pp_tensors`` attribute (Python's runtime Protocol check), not what it returns.
    """

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        """Return the tensors to send, keyed by non-empty string names."""
        ...


@runtime_checkable
class PipelineParallelSamplingObserver(Protocol):
    """A sampling observer that can rebuild its output from tensors received from the last stage.

    As in sglang 0.5.19 - 0.5.23, ``isinstance`` only asks whether the object has a
    ``from_pp_tensors`` attribute.
    """

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Any:
        """Rebuild the auxiliary output from ``tensors`` (names without the prefix)."""
        ...


def _wire_key(name: object) -> str:
    """The key under which auxiliary tensor ``name`` travels in the PP tensor dict."""
    # An f-string (not ``+``) so that str subclasses format exactly as in sglang.
    return f"{_OUTPUT_PREFIX}{name}"


def add_auxiliary_output_to_pp_tensors(
    tensors: MutableMapping[str, Any],
    output: object | None,
) -> None:
    """Insert the tensors of ``output`` into ``tensors`` under prefixed keys (sglang 0.5.19+).

    Checks, in order: ``output`` None does nothing; no ``to_pp_tensors`` attribute raises;
    ``to_pp_tensors()`` falsy raises; then, entry by entry, a name that is not a non-empty
    ``str``, a value that is not a tensor (``torch.is_tensor``; subclasses pass) and a key already
    in ``tensors`` each raise ``RuntimeError``. Every entry is inserted as soon as it passes, so a
    failure on a later entry leaves the earlier ones in ``tensors``. A truthy value without
    ``.items()`` fails with Python's own ``AttributeError``.
    """
    if output is None:
        return
    if not isinstance(output, PipelineParallelAuxiliaryOutput):
        raise RuntimeError(ADD_UNSUPPORTED.text)

    produced = output.to_pp_tensors()
    # Truthiness, not a type check: an empty mapping, None, [] or 0 all end here.
    if not produced:
        raise RuntimeError(ADD_EMPTY.text)

    for name, value in produced.items():
        if not isinstance(name, str) or not name:
            raise RuntimeError(ADD_BAD_NAME.text)
        if not torch.is_tensor(value):
            raise RuntimeError(ADD_NOT_TENSOR.format(name))
        key = _wire_key(name)
        if key in tensors:
            raise RuntimeError(ADD_DUPLICATE.format(name))
        tensors[key] = value


def _received_aux_tensors(tensors: Mapping[Any, Any]) -> dict[Any, Any]:
    """Map name -> value for every prefixed key of ``tensors``, in the dict's order.

    Every key is asked ``key.startswith(prefix)``, as in sglang, so a key without that method
    (an int, None, a tuple) raises ``AttributeError`` and a bytes key raises ``TypeError``.
    """
    received: dict[Any, Any] = {}
    for key, value in tensors.items():
        if key.startswith(_OUTPUT_PREFIX):
            received[key.removeprefix(_OUTPUT_PREFIX)] = value
    return received


def pop_auxiliary_output_from_pp_tensors(
    tensors: MutableMapping[str, Any],
    observer: object | None,
) -> Any | None:
    """Hand the prefixed entries of ``tensors`` to ``observer`` and remove them (sglang 0.5.19+).

    Returns None, touching nothing, when no key carries the prefix. Otherwise checks, in order:
    ``observer`` None, no ``from_pp_tensors`` attribute, any received value not a tensor, and
    ``from_pp_tensors`` returning None; each raises ``RuntimeError`` and leaves ``tensors`` as it
    was. A bare prefix key reaches the observer under the name ``''``. The observer gets the very
    dict of received tensors that the keys to delete are read from afterwards, so an observer that
    edits that dict changes what is deleted, exactly as in sglang.
    """
    received = _received_aux_tensors(tensors)
    if not received:
        return None
    if observer is None:
        raise RuntimeError(POP_NO_OBSERVER.text)
    if not isinstance(observer, PipelineParallelSamplingObserver):
        raise RuntimeError(POP_UNSUPPORTED.text)
    # Checked only now: without a PP-capable observer the earlier errors win.
    for value in received.values():
        if not torch.is_tensor(value):
            raise RuntimeError(POP_NON_TENSOR.text)

    output = observer.from_pp_tensors(received)
    if output is None:
        raise RuntimeError(POP_NOT_RECONSTRUCTED.text)
    for name in received:
        del tensors[_wire_key(name)]
    return output
