"""replay and tensorize import torch only when a dump has something to rebuild.

torch's import is most of what the two commands cost (about 1.2 s of CPU and 200 MB on the
project's machine, see ``docs/benchmarks.md``): an input refused (a hostile global), unreadable
or without a tensor dict is answered without it. Each case runs the CLI in a fresh interpreter
and reports whether ``torch`` was in ``sys.modules`` when it ended.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import REPO

_PROBE = """
import sys
from ppaux_cli.app import main
sys.argv = ["ppaux", *sys.argv[1:]]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
print(f"torch imported: {'torch' in sys.modules}, exit {code}", file=sys.stderr)
"""


@pytest.mark.torch  # the commands refuse to start where torch is not installed
@pytest.mark.parametrize(
    ("argv", "imported", "code"),
    [
        (["replay", "adversarial/exec_os_system_reduce.pkl"], False, 1),
        (["replay", "adversarial/zip_absolute_names.pt"], False, 2),
        (["replay", "adversarial/bomb_many_aux_tensors.pt"], False, 2),
        (["replay", "dumps/missing.pt"], False, 2),
        (["replay", "dumps/no_tensor_dict.pt"], False, 0),
        (["replay", "dumps/aux_list.pt"], True, 1),
        (["tensorize", "adversarial/exec_os_system_reduce.pkl", "-o", "out.pt"], False, 1),
        (["tensorize", "dumps/missing.pt", "-o", "out.pt"], False, 2),
        (["tensorize", "dumps/aux_list.pt", "-o", "out.pt"], True, 0),
    ],
)
def test_torch_is_imported_only_to_rebuild(argv, imported, code, tmp_path):
    args = [str(REPO / "fixtures" / a) if "/" in a else a for a in argv]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"},
        timeout=120,
    )
    assert done.stderr.splitlines()[-1] == f"torch imported: {imported}, exit {code}", done.stderr


@pytest.mark.torch
def test_a_replay_that_rebuilt_nothing_reports_the_settings_it_would_have_used():
    # The report of a replay that never imported torch names the device and the implementation
    # as one that did would: the same settings, resolved without torch.
    from ppaux.replay import replay_paths

    nothing = replay_paths([str(REPO / "fixtures" / "dumps" / "no_tensor_dict.pt")])
    something = replay_paths([str(REPO / "fixtures" / "dumps" / "aux_list.pt")])
    assert nothing.data["replay"] == something.data["replay"]
    assert nothing.data["replay"]["device"] == "cpu"
    assert nothing.tables[0].columns == something.tables[0].columns
