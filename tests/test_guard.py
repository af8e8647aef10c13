"""ppaux.guard: check_pp_tensors mirrors sglang's pop on the dict; tensorize keeps dtypes."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

pytestmark = pytest.mark.torch

from ppaux.errors import PpauxError  # noqa: E402
from ppaux.guard import (  # noqa: E402
    NotTensorizable,
    PpTensorsError,
    PpTensorsProblem,
    check_pp_tensors,
    tensorize,
)

P = "__sampling_observer_output__."
NON_TENSOR = "received a non-tensor auxiliary PP output"


def test_importing_the_guard_does_not_import_torch():
    code = "import sys, ppaux.guard; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# -- tensorize: what torch.tensor would make, written down ---------------------------------------


@pytest.mark.parametrize(
    "value, dtype, shape",
    [
        (True, torch.bool, ()),
        (3, torch.int64, ()),
        (0.5, torch.float32, ()),  # torch.tensor's default for Python floats
        (1 + 2j, torch.complex64, ()),
        ([True, False], torch.bool, (2,)),
        ([1, 2, 3], torch.int64, (3,)),
        ((1, 2), torch.int64, (2,)),
        ([[1, 2], [3, 4], [5, 6]], torch.int64, (3, 2)),
        ([1, 2.5], torch.float32, (2,)),
        ([0.25, 0.75], torch.float32, (2,)),
        ([], torch.float32, (0,)),
    ],
)
def test_tensorize_keeps_dtypes_faithful(value, dtype, shape):
    tensor = tensorize(value)
    assert tensor.dtype == dtype
    assert tuple(tensor.shape) == shape
    assert tensor.tolist() == (list(value) if isinstance(value, tuple) else value)


def test_tensorize_follows_the_default_dtype_for_floats():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert tensorize(0.5).dtype == torch.float64
    finally:
        torch.set_default_dtype(old)


def test_tensorize_dtype_and_device_are_honoured():
    tensor = tensorize([1, 2], dtype=torch.int32, device="cpu")
    assert tensor.dtype == torch.int32 and tensor.device.type == "cpu"
    assert tensorize(7, dtype=torch.float16).dtype == torch.float16


def test_tensorize_returns_a_tensor_as_it_is():
    tensor = torch.arange(3)
    assert tensorize(tensor) is tensor
    assert tensorize(tensor, dtype=torch.float32).dtype == torch.float32


def test_tensorize_stacks_same_shape_tensors():
    stacked = tensorize([torch.tensor([0.25, 0.75]), torch.tensor([1.25, 1.75])])
    assert stacked.dtype == torch.float32
    assert stacked.tolist() == [[0.25, 0.75], [1.25, 1.75]]


def test_tensorize_numpy_arrays_keep_their_dtype():
    numpy = pytest.importorskip("numpy")
    assert tensorize(numpy.array([1, 2], dtype=numpy.int16)).dtype == torch.int16
    assert tensorize(numpy.array([True])).dtype == torch.bool
    with pytest.raises(NotTensorizable, match="numpy dtype object has no torch equivalent"):
        tensorize(numpy.array([1, "a"], dtype=object))


@pytest.mark.parametrize(
    "value, message",
    [
        (
            None,
            "cannot make a tensor of None: there is no value to send; leave the key out of the "
            "dict, or send an empty tensor (torch.empty(0)) if the receiver expects the name",
        ),
        (
            "0.25",
            "cannot make a tensor of str of length 4: text does not travel as a tensor; encode "
            "it (for example as token ids) or send it outside the auxiliary output",
        ),
        (
            {"a": 1},
            "cannot make a tensor of dict of length 1: a mapping is several values; give each "
            "its own auxiliary name in to_pp_tensors()",
        ),
        (
            [[1], [2, 3]],
            "cannot make a tensor of list of length 2: it is ragged: [1] is list of "
            "length 2, [0] of length 1; pad the rows to one length (and send the lengths "
            "as a tensor of their own) or send each row under its own name",
        ),
        (
            [1, [2]],
            "cannot make a tensor of list of length 2: it is ragged: [1] is list of length 1 "
            "but [0] is int 1; a tensor needs one shape",
        ),
        (
            [0.5, None],
            "cannot make a tensor of list of length 2: [1] is None, not a number or bool; "
            "a tensor holds numbers only",
        ),
        (
            [torch.ones(2), torch.ones(3)],
            "cannot make a tensor of list of length 2: item [1] has "
            "shape torch.Size([3]), item [0] torch.Size([2]); only "
            "tensors of one shape stack into one tensor",
        ),
        (
            [torch.ones(1), torch.ones(1, dtype=torch.int64)],
            "cannot make a tensor of list of length 2: item [1] has dtype torch.int64, item [0] "
            "torch.float32; only tensors of one dtype stack into one tensor",
        ),
        (
            [torch.ones(1), 2.0],
            "cannot make a tensor of list of length 2: [0] is a tensor among "
            "plain values; make every item a tensor and stack them",
        ),
        (
            2**70,
            "cannot make a tensor of int 1180591620717411303424: torch refuses it (Overflow "
            "when unpacking long long)",
        ),
    ],
)
def test_tensorize_refuses_with_a_reason(value, message):
    with pytest.raises(NotTensorizable) as caught:
        tensorize(value)
    assert str(caught.value) == message
    assert isinstance(caught.value, PpauxError) and isinstance(caught.value, TypeError)


def test_tensorize_refuses_arbitrary_objects():
    class Scores:
        pass

    with pytest.raises(NotTensorizable, match=r"cannot make a tensor of .*Scores: only numbers"):
        tensorize(Scores())


# -- check_pp_tensors ----------------------------------------------------------------------------


def test_a_good_dict_passes():
    check_pp_tensors(
        {
            "next_token_ids": torch.arange(2),
            "logprobs": [0.5, None],
            P + "scores": torch.ones(2),
            "__msg_type__": "output",
        }
    )
    check_pp_tensors({"next_token_ids": torch.arange(2)})  # no auxiliary output at all


def test_the_message_names_every_offending_key_type_shape_and_sglang_message():
    tensors = {
        "next_token_ids": torch.arange(2),
        "output_token_logprobs_val": [0.5, 0.5],  # not auxiliary: pop never looks
        P + "scores": [0.125, 0.25, 0.5, 0.0625],
        P + "ok": torch.ones(2),
        P + "mask": None,
        P + "top": torch.ones(2, 3).tolist(),
    }
    with pytest.raises(PpTensorsError) as caught:
        check_pp_tensors(tensors)
    error = caught.value
    assert error.problems == (
        PpTensorsProblem(repr(P + "scores"), "list of length 4", "RuntimeError", NON_TENSOR),
        PpTensorsProblem(repr(P + "mask"), "None", "RuntimeError", NON_TENSOR),
        PpTensorsProblem(repr(P + "top"), "list of length 2", "RuntimeError", NON_TENSOR),
    )
    assert (error.error_type, error.error) == ("RuntimeError", NON_TENSOR)
    assert str(error) == (
        f"pop on PP rank 0 would raise RuntimeError: {NON_TENSOR} (3 entries at fault: "
        f"'{P}scores': list of length 4 -> RuntimeError: {NON_TENSOR}; "
        f"'{P}mask': None -> RuntimeError: {NON_TENSOR}; "
        f"'{P}top': list of length 2 -> RuntimeError: {NON_TENSOR})"
    )
    assert isinstance(error, PpauxError) and isinstance(error, TypeError)


def test_keys_fail_first_as_in_pop():
    with pytest.raises(PpTensorsError) as caught:
        check_pp_tensors({P + "a": 0.5, 7: torch.ones(1)})
    assert [(p.key, p.error_type, p.error) for p in caught.value.problems] == [
        ("7", "AttributeError", "'int' object has no attribute 'startswith'"),
        (repr(P + "a"), "RuntimeError", NON_TENSOR),
    ]
    assert caught.value.error == "'int' object has no attribute 'startswith'"


# -- against sglang's own pop, from the release wheels -------------------------------------------


class _Observer:
    def from_pp_tensors(self, tensors):
        return dict(tensors)


_CASES = {
    "clean": {"next_token_ids": torch.arange(2), P + "scores": torch.ones(2)},
    "no aux": {"next_token_ids": torch.arange(2), "x": [1]},
    "list": {"next_token_ids": torch.arange(2), P + "scores": [0.25, 0.75]},
    "two bad": {P + "a": None, P + "b": "s", P + "c": torch.ones(1)},
    "int key": {7: torch.ones(1), P + "a": torch.ones(1)},
    "bytes key": {b"k": torch.ones(1), P + "a": [1]},
    "int key and list": {P + "a": [1], 7: torch.ones(1)},
    "numpy-like": {P + "a": 0.5},
    "bare prefix": {P: torch.ones(1)},
    "parameter": {P + "p": torch.nn.Parameter(torch.ones(1))},
}


@pytest.mark.wheels
@pytest.mark.parametrize("release", ["0.5.19", "0.5.23"])
@pytest.mark.parametrize("case", sorted(_CASES))
def test_guard_agrees_with_sglangs_pop(release, case):
    from wheels import sglang_wheel

    from ppaux.sglang_source.loader import load_transport_module

    module = load_transport_module(str(sglang_wheel(release)))
    tensors = _CASES[case]
    try:
        module.pop_auxiliary_output_from_pp_tensors(dict(tensors), _Observer())
        real = None
    except Exception as exc:  # whatever pop raises, the guard must predict it
        real = (type(exc).__name__, str(exc))
    try:
        check_pp_tensors(tensors)
        guarded = None
    except PpTensorsError as exc:
        guarded = (exc.error_type, exc.error)
    assert guarded == real
