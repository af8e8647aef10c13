"""The outputs a check takes from its outputs callable are bounded by a field of Limits
(``max_outputs``), which the caller hands to the reader of the outputs."""

from __future__ import annotations

import pytest
from helpers import cli

from ppaux.limits import Limits
from ppaux.observer import TargetError
from ppaux.observer.check import CHECK_LIMITS
from ppaux.observer.target import load_outputs

_MAKER = (
    "class Out:\n"
    "    def copy_to_host(self):\n"
    "        return self\n\n\n"
    "def make():\n"
    "    return (Out() for _ in range({n}))\n"
)


def test_outputs_past_the_bound_given_are_refused_naming_the_limit(tmp_path):
    maker = tmp_path / "outs_bound_three.py"
    maker.write_text(_MAKER.format(n=3), encoding="utf-8")
    assert len(list(load_outputs(f"{maker}:make", 3))) == 3
    outputs = load_outputs(f"{maker}:make", 2)
    with pytest.raises(TargetError, match=r"more than 2 outputs .*\(limit max_outputs=2 reached\)"):
        list(outputs)


def test_the_default_bound_is_the_limits_field(tmp_path):
    maker = tmp_path / "outs_bound_many.py"
    most = Limits().max_outputs
    maker.write_text(_MAKER.format(n=most + 1), encoding="utf-8")
    with pytest.raises(TargetError, match=f"more than {most} outputs"):
        list(load_outputs(f"{maker}:make"))


def test_check_observer_takes_the_limit():
    assert "max_outputs" in CHECK_LIMITS
    refused = cli("check-observer", "x.py:Obs", "--limit", "max_outputs=0")
    assert refused.exit_code == 2
    assert "limit max_outputs must be from 1" in refused.stderr
