"""ppaux's reference transport against the real module of sglang 0.5.19 and 0.5.23.

The real ``sampling_observer_pp.py`` is loaded from each release wheel (downloaded by
``tests/wheels.py``) with :mod:`ppaux.sglang_source.loader`. Several hundred generated calls
are made on both implementations with the same objects; the exception type and message (or the
return value), the calls made on the output or observer, and the resulting dict (keys in order,
values by identity) must be the same.
"""

from __future__ import annotations

import random
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
import wheels

from ppaux.replay import transport
from ppaux.sglang_source.loader import (
    TRANSPORT_SHA256,
    SglangNotFound,
    load_transport_module,
    read_transport_source,
)

pytestmark = [pytest.mark.wheels, pytest.mark.torch]

P = "__sampling_observer_output__."

#: The table of the reference page on sglang's transport (section 1), copied independently of
#: ppaux.sglang_source.loader so that a changed release or a changed constant is both noticed.
RELEASE_SHA256 = {
    "0.5.19": "4fe27cef77f9b65dfbc7123145d348eef6b0291456e97031b4ca7ad47e0f70eb",
    "0.5.20": "0b6db77de1177db6275bcc6fbf92abb8403b13c55ae7df263d06987779d45f5d",
    "0.5.21": "0b6db77de1177db6275bcc6fbf92abb8403b13c55ae7df263d06987779d45f5d",
    "0.5.22": "0b6db77de1177db6275bcc6fbf92abb8403b13c55ae7df263d06987779d45f5d",
    "0.5.23": "0b6db77de1177db6275bcc6fbf92abb8403b13c55ae7df263d06987779d45f5d",
}

COMPARED_RELEASES = ["0.5.19", "0.5.23"]
CASES_PER_FUNCTION = 400

NINE_MESSAGES = {
    "auxiliary output does not support pipeline-parallel transport",
    "auxiliary PP output must contain at least one tensor",
    "auxiliary PP tensor names must be non-empty strings",
    "is not a tensor",  # "auxiliary PP output {name!r} is not a tensor"
    "duplicate auxiliary PP tensor",  # "duplicate auxiliary PP tensor {name!r}"
    "received auxiliary PP output without a sampling observer",
    "sampling observer does not support pipeline-parallel transport",
    "received a non-tensor auxiliary PP output",
    "sampling observer did not reconstruct its PP output",
}


@pytest.fixture(scope="module")
def real_modules() -> dict[str, types.ModuleType]:
    return {
        version: load_transport_module(wheels.sglang_wheel(version))
        for version in COMPARED_RELEASES
    }


# -- the wheels themselves -------------------------------------------------------------------


def test_module_table_matches_reference_page() -> None:
    assert dict(TRANSPORT_SHA256) == RELEASE_SHA256


@pytest.mark.parametrize("version", sorted(RELEASE_SHA256))
def test_wheel_transport_sha256(version: str) -> None:
    found = read_transport_source(wheels.sglang_wheel(version))
    assert found.version == version
    assert found.sha256 == RELEASE_SHA256[version]
    assert version in found.stock_releases


def test_0_5_18_has_no_transport() -> None:
    wheel = wheels.sglang_wheel("0.5.18")
    with pytest.raises(SglangNotFound) as caught:
        load_transport_module(wheel)
    assert str(caught.value) == (
        f"{wheel}: sglang 0.5.18 has no sglang/srt/sampling/sampling_observer_pp.py"
        " (the PP auxiliary transport first shipped in 0.5.19)"
    )


def test_real_modules_load_without_sglang(real_modules: dict[str, types.ModuleType]) -> None:
    assert not [name for name in sys.modules if name == "sglang" or name.startswith("sglang.")]
    for module in real_modules.values():
        assert module._OUTPUT_PREFIX == transport._OUTPUT_PREFIX
        assert module.torch is torch


# -- objects the generated cases are made of ---------------------------------------------------
# Shared by both implementations of a case, so identities can be compared.

TENSORS = [
    torch.zeros(2),
    torch.ones(3, dtype=torch.int64),
    torch.nn.Parameter(torch.zeros(1)),
    torch.empty(0),
    torch.tensor(1.5),
    torch.zeros(2, 3)[:, 1],  # a non-contiguous view
]
NON_TENSORS: list[Any] = [
    None,
    0,
    1,
    "s",
    [1, 2],
    (1,),
    {"a": 1},
    torch.Size([2]),
    b"x",
    1.5,
    object(),
    True,
]
RESULTS: list[Any] = [object(), "rebuilt", 0, False, [], TENSORS[0]]


class Str(str):
    """A str subclass: passes the name check and formats like the str it holds."""


class Formatted(str):
    """A str subclass whose f-string formatting differs from its value."""

    def __format__(self, spec: str) -> str:
        return "formatted-" + str.__str__(self)


class DuckKey:
    """Not a str, but answers ``startswith``/``removeprefix`` as a prefixed key would."""

    def startswith(self, prefix: str) -> bool:
        return True

    def removeprefix(self, prefix: str) -> str:
        return "duck"

    def __repr__(self) -> str:
        return "DuckKey()"


GOOD_NAMES: list[Any] = [
    "a",
    "b",
    "mask",
    "logits.scores",
    P,
    " ",
    "é",
    "0",
    Str("sub"),
    Formatted("fmt"),
]
BAD_NAMES: list[Any] = ["", 1, None, b"a", ("a",), 0, 2.5, Str("")]
POP_KEYS: list[Any] = [
    "next_token_ids",
    "__msg_type__",
    P + "a",
    P + "b",
    P + "mask",
    P,
    P + P,
    "x" + P,
    P[:-1],
    P + "formatted-fmt",
    Str(P + "sub"),
    1,
    None,
    ("a",),
    b"k",
    2.5,
    DuckKey(),
    P + "duck",
]


class ItemsMapping(Mapping):
    """A mapping whose ``items()`` and length are given separately (duplicates, falsy)."""

    def __init__(self, pairs: list[tuple[Any, Any]], length: int) -> None:
        self.pairs = pairs
        self.length = length

    def __getitem__(self, key: Any) -> Any:
        return dict(self.pairs)[key]

    def __iter__(self) -> Iterator[Any]:
        return iter([name for name, _ in self.pairs])

    def __len__(self) -> int:
        return self.length

    def items(self) -> Any:  # type: ignore[override]
        return list(self.pairs)


class Truthy:
    """Truthy, without ``items``."""


class Falsy:
    """Falsy, without ``items``."""

    def __bool__(self) -> bool:
        return False


# -- recording subjects ------------------------------------------------------------------------


class Output:
    def __init__(self, produce: Callable[[], Any], log: list[Any]) -> None:
        self.produce, self.log = produce, log

    def to_pp_tensors(self) -> Any:
        self.log.append("to_pp_tensors")
        return self.produce()


class InstanceOutput:
    def __init__(self, produce: Callable[[], Any], log: list[Any]) -> None:
        def to_pp_tensors() -> Any:
            log.append("instance to_pp_tensors")
            return produce()

        self.to_pp_tensors = to_pp_tensors


class DisabledOutput:
    to_pp_tensors = None


class DisabledObserver:
    from_pp_tensors = None


class NoMethods:
    pass


class Observer:
    """Records a snapshot of what it receives; ``act`` may edit the received dict or ``tensors``."""

    def __init__(self, result: Any, act: str, tensors: dict[Any, Any], log: list[Any]) -> None:
        self.result, self.act, self.tensors, self.log = result, act, tensors, log

    def from_pp_tensors(self, received: Any) -> Any:
        self.log.append(("from_pp_tensors", type(received).__name__, snapshot(received)))
        if self.act == "raise":
            raise ValueError("observer failed")
        if self.act == "drop-first":
            received.pop(next(iter(received)))
        if self.act == "add-name":
            received["not-sent"] = TENSORS[0]
        if self.act == "delete-in-dict":
            del self.tensors[next(key for key in self.tensors if isinstance(key, str))]
        if self.act == "return-received":
            return received
        return self.result


def snapshot(mapping: Any) -> list[tuple[str, str, int]]:
    """Keys in order (type and repr) with the identity of each value."""
    return [(type(key).__name__, repr(key), id(value)) for key, value in mapping.items()]


# -- generated cases ---------------------------------------------------------------------------


@dataclass
class Case:
    """One call: how to build its dict and its subject, and which function to call."""

    function: str
    label: str
    items: list[tuple[Any, Any]]
    subject: Callable[[dict[Any, Any], list[Any]], Any]


def _value(rng: random.Random, tensor_share: float) -> Any:
    return rng.choice(TENSORS) if rng.random() < tensor_share else rng.choice(NON_TENSORS)


def _produce(rng: random.Random) -> tuple[str, Callable[[], Any]]:
    """What ``to_pp_tensors`` returns, with a label."""
    kind = rng.choice(["dict"] * 6 + ["items"] * 2 + ["falsy", "non-mapping", "raise"])
    if kind == "dict":
        names = GOOD_NAMES + (BAD_NAMES if rng.random() < 0.3 else [])
        pairs = [(rng.choice(names), _value(rng, 0.85)) for _ in range(rng.randint(0, 5))]
        produced: Any = dict(pairs)
    elif kind == "items":
        pairs = [
            (rng.choice(GOOD_NAMES[:4] + BAD_NAMES[:2]), _value(rng, 0.9))
            for _ in range(rng.randint(1, 4))
        ]
        produced = ItemsMapping(pairs, rng.choice([0, len(pairs)]))
    elif kind == "falsy":
        produced = rng.choice([None, [], (), 0, "", Falsy(), {}])
    elif kind == "non-mapping":
        produced = rng.choice([[("a", TENSORS[0])], "abc", 5, Truthy(), (("a", TENSORS[1]),)])
    else:

        def fail() -> Any:
            raise KeyError("to_pp_tensors failed")

        return kind, fail
    return f"{kind} {produced!r}"[:80], lambda: produced


def add_case(rng: random.Random) -> Case:
    items: list[tuple[Any, Any]] = []
    if rng.random() < 0.5:
        items.append(("next_token_ids", TENSORS[1]))
    for _ in range(rng.randint(0, 3)):
        # Prefixed keys already present make duplicates; others are bystanders.
        key = rng.choice([P + str.__str__(name) for name in GOOD_NAMES] + ["other", 7, P])
        items.append((key, _value(rng, 0.7)))
    label, produce = _produce(rng)
    kind = rng.choice(["method"] * 7 + ["instance", "none", "no-method", "disabled", "plain"])
    if kind == "method":

        def subject(tensors: dict[Any, Any], log: list[Any]) -> Any:
            return Output(produce, log)
    elif kind == "instance":

        def subject(tensors: dict[Any, Any], log: list[Any]) -> Any:
            return InstanceOutput(produce, log)
    else:
        fixed = {
            "none": None,
            "no-method": NoMethods(),
            "disabled": DisabledOutput(),
            "plain": rng.choice([0, "text", {"a": TENSORS[0]}]),
        }[kind]

        def subject(tensors: dict[Any, Any], log: list[Any]) -> Any:
            return fixed

    return Case("add_auxiliary_output_to_pp_tensors", f"{kind}: {label}", items, subject)


def pop_case(rng: random.Random) -> Case:
    count = rng.randint(0, 6)
    keys = POP_KEYS if rng.random() < 0.25 else [k for k in POP_KEYS if isinstance(k, str)]
    items = [(rng.choice(keys), _value(rng, 0.85)) for _ in range(count)]
    kind = rng.choice(["observer"] * 6 + ["instance", "none", "no-method", "disabled"])
    act = rng.choice(
        ["return"] * 6
        + ["return-none", "raise", "drop-first", "add-name", "delete-in-dict", "return-received"]
    )
    result = None if act == "return-none" else rng.choice(RESULTS)
    if kind == "observer":

        def subject(tensors: dict[Any, Any], log: list[Any]) -> Any:
            return Observer(result, act, tensors, log)
    elif kind == "instance":

        def subject(tensors: dict[Any, Any], log: list[Any]) -> Any:
            holder = NoMethods()
            holder.from_pp_tensors = Observer(result, act, tensors, log).from_pp_tensors
            return holder
    else:
        fixed = {"none": None, "no-method": NoMethods(), "disabled": DisabledObserver()}[kind]

        def subject(tensors: dict[Any, Any], log: list[Any]) -> Any:
            return fixed

    return Case("pop_auxiliary_output_from_pp_tensors", f"{kind}/{act}", items, subject)


def generate(seed: int) -> list[Case]:
    rng = random.Random(seed)
    return [add_case(rng) for _ in range(CASES_PER_FUNCTION)] + [
        pop_case(rng) for _ in range(CASES_PER_FUNCTION)
    ]


def run(module: Any, case: Case) -> tuple[Any, ...]:
    """Call ``case`` on ``module``; everything observable about the call, comparable across runs."""
    tensors = dict(case.items)
    log: list[Any] = []
    subject = case.subject(tensors, log)
    received: list[Any] = []
    try:
        result = getattr(module, case.function)(tensors, subject)
    except Exception as exc:  # every exception is part of the behaviour compared
        outcome: tuple[Any, ...] = ("raised", type(exc), str(exc))
    else:
        if isinstance(result, dict):
            received = snapshot(result)
        outcome = ("returned", id(result) if not isinstance(result, dict) else received)
    return outcome, log, snapshot(tensors)


@pytest.mark.parametrize("version", COMPARED_RELEASES)
def test_reference_matches_release(version: str, real_modules: dict[str, types.ModuleType]) -> None:
    real = real_modules[version]
    cases = generate(seed=int(version.replace(".", "")))
    seen: set[str] = set()
    for number, case in enumerate(cases):
        expected = run(real, case)
        got = run(transport, case)
        assert got == expected, f"case {number} ({case.function}, {case.label}, {case.items!r})"
        outcome = expected[0]
        if outcome[0] == "raised":
            seen.add(outcome[1].__name__ + ": " + outcome[2])
        else:
            seen.add(case.function + " returned")
    # The generator must reach every path, or the comparison proves little.
    for message in NINE_MESSAGES:
        assert any(message in entry for entry in seen), message
    for entry in [
        "add_auxiliary_output_to_pp_tensors returned",
        "pop_auxiliary_output_from_pp_tensors returned",
        "AttributeError: 'int' object has no attribute 'startswith'",
        "AttributeError: 'list' object has no attribute 'items'",
        "TypeError: startswith first arg must be bytes or a tuple of bytes, not str",
        "KeyError: '__sampling_observer_output__.not-sent'",
        "KeyError: '__sampling_observer_output__.duck'",
        "ValueError: observer failed",
        "KeyError: 'to_pp_tensors failed'",
        "RuntimeError: duplicate auxiliary PP tensor 'a'",
    ]:
        assert entry in seen, entry
    assert len(cases) == 2 * CASES_PER_FUNCTION


PROTOCOL_SUBJECTS: list[Any] = [
    None,
    0,
    "s",
    NoMethods(),
    DisabledOutput(),
    DisabledObserver(),
    Output(lambda: {}, []),
    Observer(None, "return", {}, []),
    InstanceOutput(lambda: {}, []),
    TENSORS[0],
    Output,
    Observer,
]


@pytest.mark.parametrize("version", COMPARED_RELEASES)
def test_protocols_agree(version: str, real_modules: dict[str, types.ModuleType]) -> None:
    real = real_modules[version]
    for name in ("PipelineParallelAuxiliaryOutput", "PipelineParallelSamplingObserver"):
        ours, theirs = getattr(transport, name), getattr(real, name)
        assert [isinstance(s, ours) for s in PROTOCOL_SUBJECTS] == [
            isinstance(s, theirs) for s in PROTOCOL_SUBJECTS
        ]


# -- the download helper decides skip or fail -------------------------------------------------

NETWORK_OUTPUT = (
    "Could not fetch URL https://pypi.org/simple/sglang/: connection error: "
    "HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded (Caused by "
    "NewConnectionError('Failed to establish a new connection: [Errno -3] Temporary failure in "
    "name resolution')) - skipping\n"
    "ERROR: No matching distribution found for sglang==9.9.9\n"
)
INDEX_OUTPUT = (
    "ERROR: Could not find a version that satisfies the requirement sglang==9.9.9 (from versions:"
    " 0.5.23)\nERROR: No matching distribution found for sglang==9.9.9\n"
)


@pytest.mark.parametrize(
    ("output", "require", "outcome"),
    [
        (NETWORK_OUTPUT, None, pytest.skip.Exception),
        (NETWORK_OUTPUT, "1", pytest.fail.Exception),
        (INDEX_OUTPUT, None, pytest.fail.Exception),
    ],
)
def test_download_failure_skips_only_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str, require: Any, outcome: type
) -> None:
    calls: list[list[str]] = []

    def fake_run(command: list[str], **kwargs: Any) -> Any:
        calls.append(command)
        return types.SimpleNamespace(returncode=1, stdout="", stderr=output)

    monkeypatch.setenv(wheels.CACHE_ENV, str(tmp_path))
    if require is None:
        monkeypatch.delenv(wheels.REQUIRE_ENV, raising=False)
    else:
        monkeypatch.setenv(wheels.REQUIRE_ENV, require)
    monkeypatch.setattr(wheels.subprocess, "run", fake_run)
    monkeypatch.setattr(wheels, "_unreachable", [])
    with pytest.raises(outcome) as caught:
        wheels.sglang_wheel("9.9.9")
    (command,) = calls
    assert command[:5] == [sys.executable, "-m", "pip", "download", "-vv"]
    assert "--no-deps" in command and command[-1] == "sglang==9.9.9"
    expected_detail = (
        NETWORK_OUTPUT.splitlines()[0]
        if output == NETWORK_OUTPUT
        else "ERROR: No matching distribution found for sglang==9.9.9"
    )
    assert str(caught.value.msg) == f"could not download sglang==9.9.9: {expected_detail}"
    assert list(tmp_path.iterdir()) == []
