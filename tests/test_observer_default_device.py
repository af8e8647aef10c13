"""A target that sets torch's default device (``meta`` here; GPU code does it with ``cuda``)
changes only its own tensors: ppaux's synthetic logits, NaN digests and wire tensors name their
device, so a correct observer still passes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

#: An observer whose output goes across as it is; ``{import_time}`` runs at import and
#: ``{in_hook}`` at the top of before_grammar, which returns ``{returned}``.
OBSERVER = """\
import torch

{import_time}


class Host:
    def __init__(self, t):
        self.t = t

    def consume(self, batch, commits):
        for req, commit, value in zip(batch.reqs, commits, self.t.tolist()):
            if commit is None:
                continue
            if req.customized_info is None:
                req.customized_info = {{}}
            req.customized_info.setdefault("v", []).append(value)


class Out:
    def __init__(self, t):
        self.t = t

    def copy_to_host(self, copy):
        return Host(copy(self.t))

    def to_pp_tensors(self):
        return {{"t": self.t}}


class Obs:
    def is_active(self, info):
        return True

    def before_grammar(self, logits, info):
        {in_hook}
        return {returned}

    def after_sample(self, state, tokens):
        return Out(state)

    def from_pp_tensors(self, tensors):
        return Out(tensors["t"])
"""


def _target(tmp_path: Path, **parts: str) -> str:
    path = tmp_path / "devobs.py"
    path.write_text(textwrap.dedent(OBSERVER.format(**parts)), encoding="utf-8")
    return f"{path}:Obs"


ONE = ObserverOptions(batch_sizes=(1, 2), steps=2)


@pytest.mark.parametrize("transport", ["wire", "torch-distributed"])
def test_meta_as_the_default_device_at_import_is_no_finding(tmp_path, transport):
    target = _target(
        tmp_path,
        import_time="torch.set_default_device('meta')",
        in_hook="pass",
        returned="logits.float().sum(-1).cpu()",
    )
    options = ObserverOptions(batch_sizes=(1, 2), steps=2, transport=transport, timeout_s=60)
    report = check_observer(target, options)
    assert report.findings == ()
    assert report.data["observer"]["ended"] == []


def test_meta_set_in_a_hook_leaves_a_nan_output_comparable(tmp_path):
    # The NaN in the output is canonicalised before its digest, by a tensor ppaux makes.
    target = _target(
        tmp_path,
        import_time="",
        in_hook="torch.set_default_device('meta')",
        returned="torch.tensor([float('nan')] * logits.shape[0], device='cpu')",
    )
    report = check_observer(target, ONE)
    assert report.findings == ()
