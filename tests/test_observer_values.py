"""check-observer compares every value by what it holds: a tensor by the values torch gives for
it (conjugate and negative views resolved, every NaN alike), a numpy array and a buffer by their
bytes, a container too large or too deep to walk by a digest of everything inside it, and says
so where a value is not compared; and a walk's cost is bounded by the leaves it gives.

The comparisons are tested on the judge's own functions, or through whole checks of the
observers in ``CASES``. Those checks run in this process (the ``in_hand`` fixture, the path
``assert_pp_safe`` takes for an observer in hand, all sending through one wire): their subject
is how values are judged, and the records are the same whichever process makes them, so a child
(torch imported afresh, about 1.6 s of CPU each) would add nothing but its cost. The child of
check-observer still runs where the crossing is the subject (a 5 MB key's bytes on the way), for
``assert_pp_safe`` with a target by name, and in test_the_child_judges_as_the_check_in_hand_does,
which checks that it judges a tensor's values and reordered containers as the check in hand
does."""

from __future__ import annotations

import hashlib
import marshal
import textwrap
import warnings
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ppaux.limits import Limits
from ppaux.observer import ObserverOptions, check_observer
from ppaux.observer.compare import differences, record, records, uncompared
from ppaux.observer.walk import MAX_DEPTH, MAX_ITEMS, MAX_KEY, MAX_LEAVES, leaves, shown_name
from ppaux.suggestions import RaiseLimit

pytestmark = pytest.mark.torch

ONE = ObserverOptions(batch_sizes=(2,), steps=2)


def _expected_digest(tensor) -> str:
    """sha256 of the tensor's values as torch and numpy give them, built apart: resolved,
    contiguous, every NaN replaced by Python's NaN."""
    import torch

    values = tensor.resolve_conj().resolve_neg().contiguous().clone()
    real = torch.view_as_real(values) if values.is_complex() else values
    real.copy_(torch.where(torch.isnan(real), torch.tensor(float("nan"), dtype=real.dtype), real))
    return hashlib.sha256(values.numpy().tobytes()).hexdigest()


def _with_nan_payloads(tensor, where: list[int], payloads: list[int]):
    """``tensor`` (float32, contiguous) with NaNs of the given bit patterns at ``where``."""
    import torch

    bits = tensor.clone().view(torch.int32).reshape(-1)
    for index, payload in zip(where, payloads, strict=False):
        bits[index % bits.numel()] = payload
    return bits.view(torch.float32).reshape(tensor.shape)


_NANS = st.sampled_from([0x7FC00000, -0x400000, 0x7F800001, 0x7FFFFFFF, -1])


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 5),
    cols=st.integers(1, 6),
    form=st.sampled_from(["plain", "conj", "neg", "transposed", "sliced", "conj-transposed"]),
    where=st.lists(st.integers(0, 40), max_size=4),
    payloads=st.lists(_NANS, min_size=4, max_size=4),
    chunk=st.sampled_from([1, 3, 1 << 20]),
    seed=st.integers(0, 1000),
)
def test_a_tensors_digest_is_that_of_its_resolved_values_every_nan_alike(
    rows, cols, form, where, payloads, chunk, seed
):
    import torch

    generator = torch.Generator().manual_seed(seed)
    real = _with_nan_payloads(torch.randn(rows, cols, generator=generator), where, payloads)
    imag = _with_nan_payloads(torch.randn(rows, cols, generator=generator), where[1:], payloads)
    tensor = torch.complex(real, imag) if "conj" in form else real
    if form.startswith("conj"):
        tensor = tensor.conj()
    if form == "neg":
        tensor = torch._neg_view(tensor)
    if form.endswith("transposed"):
        tensor = tensor.transpose(0, 1)
    if form == "sliced":
        tensor = tensor[:, ::2]
    with mock.patch("ppaux.observer.array_digests._CHUNK", chunk):
        assert record(tensor)["sha256"] == _expected_digest(tensor)


def test_a_conjugate_or_negative_view_compares_by_its_values():
    import torch

    values = torch.complex(torch.arange(4.0), torch.arange(4.0) + 1)
    # The same values, one side lazily conjugated: equal.
    assert differences(records({"t": values.conj()}), records({"t": values.conj_physical()})) == []
    # The values and their conjugate: the bits differ, though the memory is the same.
    [item] = differences(records({"t": values}), records({"t": values.conj()}))
    assert item.what == "bits"
    plain = torch.arange(4.0) + 1
    [item] = differences(records({"t": plain}), records({"t": torch._neg_view(plain)}))
    assert item.what == "bits"
    assert "-1" in records({"t": torch._neg_view(plain)})["['t']"]["values"]


def test_nans_of_any_sign_or_payload_are_alike_and_signed_zeros_are_not():
    import torch

    zeros = torch.zeros(3)
    quiet = torch.full((3,), float("nan"))
    assert differences(records({"t": zeros / zeros}), records({"t": quiet})) == []
    negative = torch.tensor([-0.0, 1.0], dtype=torch.float64)
    [item] = differences(records({"t": negative}), records({"t": negative.abs()}))
    assert item.what == "bits"


def test_numpy_arrays_compare_by_their_bytes_not_their_text():
    import numpy as np

    left = np.arange(2048, dtype=np.float64)
    right = left.copy()
    right[1024] = 0.0
    assert repr(left) == repr(right)  # numpy's text leaves the middle out
    [item] = differences(records({"hist": left}), records({"hist": right}))
    assert (item.path, item.what) == ("['hist']", "bits")
    made = record(left[::-2])
    # Its bytes in C order, whatever its strides.
    expected = hashlib.sha256(np.ascontiguousarray(left[::-2]).tobytes()).hexdigest()
    assert made["sha256"] == expected and made["dtype"] == "float64"
    assert made["shape"] == [1024] and made["values"].startswith("[2047, 2045")


def test_a_numpy_array_against_a_tensor_is_a_type_difference():
    import numpy as np
    import torch

    [item] = differences(records({"v": np.zeros(3)}), records({"v": torch.zeros(3)}))
    assert item.what == "type"


def test_buffers_compare_by_their_bytes():
    for kind in (memoryview, bytearray):
        [item] = differences(records({"raw": kind(b"AAAA")}), records({"raw": kind(b"BBBB")}))
        assert item.what == "value" and "AAAA" in item.left
        assert differences(records({"raw": kind(b"AB")}), records({"raw": kind(b"AB")})) == []


def test_a_tensor_in_a_long_list_is_compared_by_its_values():
    import torch

    tensor = torch.arange(2000.0)
    changed = tensor.clone()
    changed[1000] = 0.0
    left = [tensor] + [torch.zeros(1)] * (MAX_ITEMS + 43)
    right = [changed] + [torch.zeros(1)] * (MAX_ITEMS + 43)
    assert differences(records({"parts": left}), records({"parts": right}))
    assert differences(records({"parts": left}), records({"parts": list(left)})) == []


def test_a_tensor_deeper_than_the_walk_is_compared_by_its_values():
    import torch

    def nested(value):
        for key in "fedcba":
            value = {key: value}
        return value

    tensor = torch.full((3,), 1 / 3)
    found = records(nested(tensor))
    assert len(MAX_DEPTH * "[x]") < len(next(iter(found)))  # the walk stopped above it
    assert differences(found, records(nested(tensor + 1e-5)))
    assert differences(found, records(nested(tensor.clone()))) == []


_LEAF = st.one_of(
    st.integers(-5, 5),
    st.floats(-1e6, 1e6),
    st.text(max_size=3),
    st.builds(lambda n, v: ("tensor", n, v), st.integers(1, 5), st.integers(-3, 3)),
)


def _tree():
    return st.recursive(
        _LEAF,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(st.text("abc", max_size=2), inner, max_size=4),
            st.builds(lambda item, n: [item] * n, inner, st.integers(MAX_ITEMS, MAX_ITEMS + 40)),
        ),
        max_leaves=12,
    )


def _built(node, change: list[int], sizes: dict[int, tuple[int, bool]] | None = None):
    """The value ``node`` describes; the leaf numbered ``change[0]`` (counted as built, a
    shared item counted once per place) made different. Every place gets containers of its
    own (a node shared by several places is built once per place)."""
    import torch

    sizes = {} if sizes is None else sizes
    count, has_tensor = _sized(node, sizes)
    if not has_tensor and not 0 <= change[0] < count:
        # Nothing in it changes and it holds no tensor: the same value, built at C speed
        # (marshal's version 2 writes a shared container once per place, as built here).
        change[0] -= count
        return marshal.loads(marshal.dumps(node, 2))
    if isinstance(node, list):
        return [_built(item, change, sizes) for item in node]
    if isinstance(node, dict):
        return {key: _built(item, change, sizes) for key, item in node.items()}
    change[0] -= 1
    differs = change[0] == -1
    if isinstance(node, tuple):
        tensor = torch.full((node[1],), float(node[2]))
        if differs:
            tensor[-1] += 1e-3
        return tensor
    if differs:
        return f"{node}!" if isinstance(node, str) else node + 1
    return node


def _sized(node, sizes: dict[int, tuple[int, bool]]) -> tuple[int, bool]:
    """How many leaves ``node`` has, counted once per place, and whether one is a tensor
    (remembered by node, as the trees share their nodes)."""
    known = sizes.get(id(node))
    if known is None:
        if isinstance(node, (list, dict)):
            parts = [_sized(item, sizes) for item in _items(node)]
            known = (sum(n for n, _ in parts), any(t for _, t in parts))
        else:
            known = (1, isinstance(node, tuple))
        sizes[id(node)] = known
    return known


def _items(node) -> list:
    return list(node.values()) if isinstance(node, dict) else list(node)


def _count(node) -> int:
    return _sized(node, {})[0]


@settings(max_examples=80, deadline=None)
@given(tree=_tree(), pick=st.integers(0, 10_000), depth=st.integers(0, MAX_DEPTH + 2))
def test_two_values_that_differ_anywhere_differ_or_are_marked_not_compared(tree, pick, depth):
    # Whatever the nesting (above or below the walk's depth) or the size (above or below its
    # length bound): a value changed in one place gives a difference, or a record that says
    # it was not compared; never a silent "equal".
    for _ in range(depth):
        tree = [tree]
    assume(_count(tree) > 0)
    left = records({"v": _built(tree, [-1])})
    right = records({"v": _built(tree, [pick % _count(tree)])})
    assert differences(left, right) or uncompared(left) or uncompared(right)
    assert differences(left, records({"v": _built(tree, [-1])})) == []


def test_shared_lists_are_walked_in_bounded_leaves_and_still_compared():
    row = [0.0] * 64
    table = [[[row] * 64] * 64] * 64  # 16 M floats by their paths, 4 distinct lists
    found = records({"table": table})
    assert len(found) <= MAX_LEAVES + MAX_ITEMS
    other = [0.0] * 64
    other[63] = 1.0
    changed = records({"table": [[[row] * 64] * 64] * 63 + [[[other] * 64] * 64]})
    assert differences(found, changed)
    assert not uncompared(found)


def test_past_the_digest_budget_a_value_is_marked_not_compared_naming_the_limit():
    budget = Limits().max_digested_items
    wide = [[float(i)] * 1000 for i in range(budget // 900)]  # distinct, over MAX_ITEMS
    found = records({"v": wide})
    [(path, why)] = uncompared(found).items()
    assert path == "['v']"
    assert why == (
        f"not compared: more than {budget:,} items to digest "
        f"(limit max_digested_items={budget} reached)"
    )
    assert found[path]["limit"] == "max_digested_items"


@pytest.mark.parametrize("kind", [list, tuple, set, dict.fromkeys])
def test_a_container_longer_than_the_budget_is_cut_before_its_items_are_read(kind):
    # An output keeping millions of values costs the check the container's length, not a pass
    # over its items (once per description, several descriptions per step).
    from ppaux.observer import digests

    budget = Limits().max_digested_items
    value = kind(range(3_000_000))
    with mock.patch.object(digests, "_quick", side_effect=AssertionError("items read")):
        found = records({"v": value})
    assert uncompared(found) == {
        "['v']": f"not compared: more than {budget:,} items to digest "
        f"(limit max_digested_items={budget} reached)"
    }


@settings(max_examples=40, deadline=None)
@given(budget=st.integers(500, 620), rows=st.integers(MAX_ITEMS + 1, MAX_ITEMS + 40))
def test_a_value_is_compared_exactly_when_its_items_fit_the_budget(budget, rows):
    from ppaux.observer.digests import digest_budget

    value = [[float(i)] for i in range(rows)]  # distinct lists: the list, rows lists, rows floats
    items = 1 + 2 * rows
    with digest_budget(budget):
        found = records({"v": value})
    assert (uncompared(found) == {}) == (items <= budget)


class _Slotted:
    __slots__ = ("pair",)


#: The value of each :class:`_FreshPair`, by its id: held nowhere a walk looks.
_PAIRED: dict[int, float] = {}


class _FreshPair(_Slotted):
    """An item whose only field is a slot-named property that gives a new list at every read:
    each list is freed once read, and the next may be given its address."""

    __slots__ = ()

    def __init__(self, value: float) -> None:
        _PAIRED[id(self)] = value

    @property  # type: ignore[override]
    def pair(self) -> list[float]:
        return [_PAIRED[id(self)], 1.0]


def _fresh_records(values: list[float]):
    items = [_FreshPair(v) for v in values]
    try:
        return records({"items": items})
    finally:
        for item in items:
            del _PAIRED[id(item)]


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(
        st.sampled_from([0.0, 1.0, 2.5]), min_size=MAX_ITEMS + 1, max_size=MAX_ITEMS + 40
    ),
    where=st.integers(0, 10_000),
)
def test_values_made_afresh_at_each_read_are_each_digested(values, where):
    # Digested whole (past MAX_ITEMS): every item's fresh list is its own, however the
    # addresses of freed lists are reused; one item changed is a difference.
    changed = list(values)
    changed[where % len(values)] += 1.0
    left = _fresh_records(values)
    assert list(left) == ["['items']"]
    assert differences(left, _fresh_records(changed))
    assert differences(left, _fresh_records(values)) == []


@settings(max_examples=40, deadline=None)
@given(
    size=st.sampled_from([3, MAX_ITEMS + 1, MAX_ITEMS + 30]),
    depth=st.integers(0, MAX_DEPTH + 2),
    seed=st.randoms(use_true_random=False),
    where=st.integers(0, 10_000),
)
def test_a_dict_is_compared_as_python_compares_it_whatever_its_size_or_depth(
    size, depth, seed, where
):
    # Walked (small, shallow) or digested whole (long, or deep): equal dicts built in other
    # orders are equal, one value changed is a difference; a list's order still counts.
    pairs = [(f"k{i}", float(i)) for i in range(size)]
    shuffled = list(pairs)
    seed.shuffle(shuffled)
    changed = list(shuffled)
    key, value = changed[where % size]
    changed[where % size] = (key, value + 0.5)

    def nested(value):
        for _ in range(depth):
            value = [value]
        return value

    left = records({"v": nested(dict(pairs))})
    assert differences(left, records({"v": nested(dict(shuffled))})) == []
    assert differences(left, records({"v": nested(dict(changed))}))
    values = [v for _, v in pairs]
    assume(values != values[::-1])
    assert differences(records({"v": nested(values)}), records({"v": nested(values[::-1])}))


@pytest.mark.parametrize("whole", [False, True])
def test_a_complex_compares_as_its_parts_do_as_floats(whole):
    # -0.0 equals 0.0 in each part, as in a float and as Python's == has it; NaN equals NaN.
    def held(value):
        return {"v": [value] * (MAX_ITEMS + 1) if whole else value}

    nan = float("nan")
    for a, b in [
        (complex(-0.0, 0.0), 0j),
        (complex(0.0, -0.0), 0j),
        (complex(nan, 1.0), complex(nan, 1.0)),
        (complex(1.0, nan), complex(1.0, -nan)),
    ]:
        assert differences(records(held(a)), records(held(b))) == [], (a, b)
    for a, b in [(complex(1.0, 0.0), complex(1.0, 5e-324)), (complex(nan, 0.0), 0j)]:
        assert differences(records(held(a)), records(held(b))), (a, b)


def test_a_value_difference_names_the_rule_it_was_compared_by():
    from ppaux.observer.compare import Difference
    from ppaux.observer.findings import difference_finding

    item = difference_finding("PP711", "t", "the output", Difference(".x", "value", "1", "2"), "")
    rule = item.extra["rule"]
    assert "-0.0 equals 0.0" in rule and "order" in rule and "NaN equals NaN" in rule


@settings(max_examples=40, deadline=None)
@given(
    bits=st.integers(0, 40_000),
    seed=st.integers(0, 2**64),
    change=st.integers(0, 40_000),
    where=st.sampled_from(["leaf", "list", "key"]),
)
def test_an_int_of_any_size_is_compared_by_its_value(bits, seed, change, where):
    # Python refuses decimal text past 4,300 digits (and a target may lower that to 640): an
    # int of any size is still described and compared, alone, in a list digested whole, or as
    # a key, and a difference in any bit is found.
    import sys

    value = (1 << bits) | (seed % (1 << bits) if bits else 0)
    other = value ^ (1 << (change % (bits + 1)))

    def held(number):
        if where == "list":
            return {"v": [number] * (MAX_ITEMS + 1)}
        if where == "key":
            return {"v": {number: 1}}
        return {"v": number}

    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        left, right = records(held(value)), records(held(other))
        assert differences(left, records(held(value))) == []
    finally:
        sys.set_int_max_str_digits(before)
    assert differences(left, right)
    assert all(len(path) < MAX_KEY + 100 for path in left)
    assert all(len(item["text"]) <= 200 for item in left.values())


class _NoWholeRepr(str):
    """A str whose own repr fails: a description that needs the whole value's repr fails."""

    def __repr__(self) -> str:
        raise AssertionError("the whole value's repr was asked for")


def test_a_long_str_or_bytes_is_shown_by_its_start_and_keyed_by_all_of_it():
    text = _NoWholeRepr("x" * (5 << 20))
    [(_, made)] = records({"note": text}).items()
    assert made["text"].startswith("'xxx") and len(made["text"]) <= 200
    assert made["key"] == "sha256:" + hashlib.sha256(b"x" * (5 << 20)).hexdigest()
    data = bytes(range(256)) * (1 << 12)
    [(_, made)] = records({"blob": data}).items()
    assert made["key"] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert made["text"].startswith(repr(data[:16])[:-1]) and len(made["text"]) <= 200
    # One character or byte changed at the end is a difference.
    assert differences(records({"note": text}), records({"note": "x" * ((5 << 20) - 1) + "y"}))
    assert differences(records({"blob": data}), records({"blob": data[:-1] + b"!"}))
    # A long bytes key gives a short path, two keys two paths.
    paths = list(records({"m": {data: 1, data[:-1] + b"!": 1}}))
    assert len(paths) == 2 and all(len(path) < MAX_KEY + 100 for path in paths)


def test_an_object_whose_text_is_only_its_address_is_not_compared():
    found = records({"token": object()})
    assert list(uncompared(found)) == ["['token']"]
    # An object whose text says more than its address is compared by that text.
    import threading

    assert not uncompared(records({"lock": threading.Lock()}))


def test_a_long_key_gives_a_short_path_and_two_keys_two_paths():
    first, second = "k" * (5 << 20), "k" * ((5 << 20) - 1) + "j"
    paths = list(leaves({first: 1, second: 2}))
    assert len(paths) == 2 and all(len(path) < MAX_KEY + 100 for path in paths)
    assert paths[0] != paths[1]


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=3 * MAX_KEY))
def test_a_shown_name_is_short_and_shown_again_unchanged(name):
    shown = shown_name(name)
    assert len(shown) <= MAX_KEY + 64
    assert shown_name(shown) == shown
    if len(name) <= MAX_KEY:
        assert shown == name
    else:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        assert shown == f"{name[:MAX_KEY]}...({len(name):,} characters, sha256 {digest})"


HUGE_KEY = textwrap.dedent(
    """
    import torch

    KEY = "k" * (5 << 20)

    class Output:
        def __init__(self, t):
            self.t = t
        def to_pp_tensors(self):
            return {KEY: self.t}
        def copy_to_host(self, copy_tensor):
            return None

    class HugeKey:
        def is_active(self, info):
            return True
        def before_grammar(self, logits, info):
            return logits.float().sum(-1)
        def after_sample(self, state, ids):
            return Output(state)
        def from_pp_tensors(self, tensors):
            return Output(tensors[KEY])
    """
)


def test_a_5_mb_key_crosses_as_its_start_and_a_digest(tmp_path):
    from ppaux.observer import framing

    (tmp_path / "huge.py").write_text(HUGE_KEY, encoding="utf-8")
    crossed: list[int] = []
    feed = framing.FrameReader.feed

    def counting(self, data):
        crossed.append(len(data))
        return feed(self, data)

    with mock.patch.object(framing.FrameReader, "feed", counting):
        report = check_observer(f"{tmp_path / 'huge.py'}:HugeKey", ONE)
    key = "k" * (5 << 20)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    shown = f"{'k' * MAX_KEY}...({len(key):,} characters, sha256 {digest})"
    assert [step["sent"] for step in report.data["steps"]] == [[shown], [shown]]
    # Two steps of a 5 MB key: what crossed is a small part of one key.
    assert sum(crossed) < len(key) // 10


CASES = textwrap.dedent(
    """
    import numpy as np
    import torch

    class Host:
        def __init__(self, t):
            self.t = t
        def consume(self, batch, commits):
            for req in batch.reqs:
                req.customized_info = {"phase": self.t}

    class Out:
        def __init__(self, t, extra=None):
            self.t = t
            self.extra = extra
        def copy_to_host(self, copy_tensor):
            return Host(copy_tensor(self.t))
        def to_pp_tensors(self):
            return {"t": self.t}

    class Base:
        def is_active(self, info):
            return True
        def before_grammar(self, logits, info):
            return logits.float().sum(-1)
        def after_sample(self, state, ids):
            return Out(state)
        def from_pp_tensors(self, tensors):
            return Out(tensors["t"])

    class ConjObs(Base):
        def after_sample(self, state, ids):
            return Out(torch.complex(state, state + 1.0))
        def from_pp_tensors(self, tensors):
            return Out(tensors["t"].conj())

    class LazyConjObs(Base):
        def after_sample(self, state, ids):
            return Out(torch.complex(state, state + 1.0).conj())

    class NanSignObs(Base):
        def after_sample(self, state, ids):
            zeros = torch.zeros_like(state)
            return Out(zeros / zeros)
        def from_pp_tensors(self, tensors):
            t = tensors["t"]
            return Out(torch.where(torch.isnan(t), torch.full_like(t, float("nan")), t))

    class NumpyObs(Base):
        def after_sample(self, state, ids):
            return Out(state, np.arange(2048, dtype=np.float64))
        def from_pp_tensors(self, tensors):
            hist = np.arange(2048, dtype=np.float64)
            hist[1024] = 0.0
            return Out(tensors["t"], hist)

    class UncomparedObs(Base):
        def after_sample(self, state, ids):
            return Out(state, object())
        def from_pp_tensors(self, tensors):
            return Out(tensors["t"], object())

    def deep():
        x = []
        for _ in range(100000):
            x = [x]
        return x

    class DeepObs(Base):
        def after_sample(self, state, ids):
            return Out(state, deep())
        def from_pp_tensors(self, tensors):
            return Out(tensors["t"], deep())

    def nested(leaf, depth=100):
        x = leaf
        for _ in range(depth):
            x = [x]
        return x

    class DeepDiffObs(Base):
        def after_sample(self, state, ids):
            return Out(state, nested(1))
        def from_pp_tensors(self, tensors):
            return Out(tensors["t"], nested(2))

    class OrderObs(Base):
        # Equal values built in other orders: a long dict, a deep one, complex zeros.
        def after_sample(self, state, ids):
            keys = range(300)
            return Out(state, [{k: 1.0 for k in keys}, [[[[[{"a": 1, "b": 2}]]]]], -0j])
        def from_pp_tensors(self, tensors):
            keys = reversed(range(300))
            return Out(tensors["t"], [{k: 1.0 for k in keys}, [[[[[{"b": 2, "a": 1}]]]]], 0j])

    class BigIntObs(Base):
        # Ints past Python's 4,300 decimal digits: a real difference, not ppaux's own repr.
        def after_sample(self, state, ids):
            return Out(state, 7**6000)
        def from_pp_tensors(self, tensors):
            return Out(tensors["t"], 7**6000 + 1)

    class LongNameOut(Out):
        def __init__(self, t, extra=None):
            super().__init__(t)
            setattr(self, "n" * (1 << 20), extra)

    class LongNameObs(Base):
        def after_sample(self, state, ids):
            return LongNameOut(state, 1)
        def from_pp_tensors(self, tensors):
            return LongNameOut(tensors["t"], 2)
    """
)


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("values") / "cases.py"
    path.write_text(CASES, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def in_hand(cases):
    """``in_hand(name, limits)``: the check of ``cases.py:name`` run in this process, as
    ``assert_pp_safe`` runs an observer in hand, every check sending through one wire."""
    import importlib.util

    from ppaux.observer import check_loaded, observer_from
    from ppaux.replay.wiring import open_wire

    spec = importlib.util.spec_from_file_location("observer_value_cases", cases)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    wire = open_wire(ONE.transport, timeout_s=ONE.timeout_s)

    def check(name: str, limits: Limits = Limits()):
        loaded = observer_from(getattr(module, name), f"{cases}:{name}")
        return check_loaded(loaded, ONE, wire=wire, limits=limits)

    yield check
    wire.close()


@pytest.mark.parametrize("name", ["ConjObs", "OrderObs"])
def test_the_child_judges_as_the_check_in_hand_does(cases, in_hand, name):
    # The tests below judge values through the check in hand (the records an observer gives
    # are the same whichever process makes them, and the judge is one); here the child of
    # check-observer and the check in hand give the same findings for a tensor's values and
    # for containers built in other orders.
    child, here = check_observer(f"{cases}:{name}", ONE), in_hand(name)
    found = [(f.code, f.severity, f.message) for f in child.findings]
    assert found == [(f.code, f.severity, f.message) for f in here.findings]
    assert {code for code, _, _ in found} == {"ConjObs": {"PP711", "PP712"}, "OrderObs": set()}[
        name
    ]


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("ConjObs", {"PP711", "PP712"}),
        # torch.distributed.send refuses a lazy conjugate on the sender (gloo, torch 2.13)
        ("LazyConjObs", {"PP709"}),
        ("NanSignObs", set()),
        ("NumpyObs", {"PP711"}),
        ("OrderObs", set()),
        ("BigIntObs", {"PP711"}),
    ],
)
def test_the_check_compares_the_values_a_path_gives(in_hand, name, found):
    report = in_hand(name)
    assert {item.code for item in report.findings} == found, report.findings


@pytest.mark.parametrize(
    ("name", "why"), [("UncomparedObs", "only its address"), ("DeepObs", "deep")]
)
def test_the_report_says_what_was_not_compared(in_hand, name, why):
    from ppaux.report.gate import Gate

    report = in_hand(name)
    # One inconclusive finding, a warning that --strict makes an error; the JSON data and
    # the notes list each value, one note a value.
    [item] = report.findings
    assert (item.code, item.severity.value) == ("PP716", "warning")
    assert ": .extra" in item.message and "of the output" in item.message and why in item.message
    [strict] = Gate(strict=True).apply(report).findings
    assert strict.severity.value == "error"
    listed = report.data["observer"]["not_compared"]
    assert listed and all(
        entry["where"].startswith(".extra") and entry["where"].endswith(" of the output")
        for entry in listed
    )
    assert why in listed[0]["why"]
    [note] = [n for n in report.notes if "not compared" in n]
    assert ".extra" in note and "of the output" in note and why in note
    assert "\n" not in note


def test_a_value_nested_past_the_bound_is_compared_once_the_limit_is_raised(in_hand):
    # 100 lists deep, a different leaf on each path: past the default bound it is not
    # compared, naming the limit; raised past its depth, the difference is found.
    default = in_hand("DeepDiffObs")
    assert {f.code for f in default.findings} == {"PP716"}
    assert "max_value_nesting=64" in default.findings[0].message
    assert default.data["observer"]["limits_reached"] == ["max_value_nesting"]
    # The suggestion carries the limit's value in the run, the default here.
    assert default.findings[0].suggestions == (RaiseLimit("max_value_nesting", 64),)
    short = in_hand("DeepDiffObs", Limits(max_value_nesting=80))
    assert [f.suggestions for f in short.findings] == [(RaiseLimit("max_value_nesting", 80),)]
    raised = in_hand("DeepDiffObs", Limits(max_value_nesting=200))
    assert {f.code for f in raised.findings} == {"PP711"}


def test_a_long_attribute_name_is_shown_as_its_start_and_a_digest(in_hand):
    report = in_hand("LongNameObs")
    name = "n" * (1 << 20)
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    shown = f".{'n' * MAX_KEY}...({len(name):,} characters, sha256 {digest})"
    found = [f for f in report.findings if f.code == "PP711"]
    assert found and all(f.message.startswith(shown + " of the output") for f in found)
    assert all(len(f.message) < 1000 for f in report.findings)


def test_assert_pp_safe_strict_fails_on_what_was_not_compared(cases):
    # As check-observer --strict: a value past the limits is a warning that passes by
    # default, an error with strict=True; raised past its depth, the difference fails.
    from ppaux.testing import NotComparedWarning, assert_pp_safe

    target = f"{cases}:DeepDiffObs"
    shape = {"batch_sizes": ONE.batch_sizes, "steps": ONE.steps}
    # It passes, but says so: a test whose values went uncompared must not pass unnoticed.
    with pytest.warns(NotComparedWarning, match=r"not compared.*\(PP716\)$"):
        passed = assert_pp_safe(target, **shape)
    assert [(f.code, f.severity.value) for f in passed.findings] == [("PP716", "warning")]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert_pp_safe(target, ignore=["PP716"], **shape)  # ignored: no warning either
    assert [w.category for w in seen] == []
    with pytest.raises(AssertionError) as caught:
        assert_pp_safe(target, strict=True, **shape)
    assert "PP716 error" in str(caught.value)
    with pytest.raises(AssertionError) as caught:
        assert_pp_safe(target, limits=Limits(max_value_nesting=200), **shape)
    assert "PP711 error" in str(caught.value)
