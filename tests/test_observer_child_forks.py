"""The test suite's fork server (tests/child_forks.py, ppaux.observer.forked) starts the check's
child as ppaux starts it: what the target can see of its process at import is the same, but for
the pids and the descriptors' numbers, whichever way the child came."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import REPO

from ppaux.observer import check_observer
from ppaux.observer.forked import HOOK, refusal

pytestmark = pytest.mark.torch

PROBE = r"""

import json as _json, os as _os, signal as _signal, sys as _sys, warnings as _warnings

if _os.getppid() == {parent}:  # the check's child itself, not rank 0's process
    _mask = _os.umask(0)
    _os.umask(_mask)
    _fds = []
    for _fd in sorted(int(fd) for fd in _os.listdir("/proc/self/fd")):
        try:
            _fds.append(_os.get_inheritable(_fd))
        except OSError:  # the listing's own descriptor, closed
            pass
    _state = {{
        "path": _sys.path, "flags": str(_sys.flags), "argv": _sys.argv,
        "session": _os.getsid(0) == _os.getpid(), "group": _os.getpgid(0) == _os.getpid(),
        "cwd": _os.getcwd(), "umask": _mask, "inheritable": _fds[:3], "count": len(_fds),
        "mask": sorted(int(s) for s in _signal.pthread_sigmask(_signal.SIG_BLOCK, [])),
        "environ": dict(_os.environ), "main": _sys.modules["__main__"].__file__,
        "warnoptions": _sys.warnoptions, "stdin": _os.read(0, 10).decode(),
        "handlers": [str(_signal.getsignal(s)) for s in (_signal.SIGINT, _signal.SIGPIPE)],
        "forked": "-c" in _sys.orig_argv,
    }}
    with open({out!r}, "w", encoding="utf-8") as _file:
        _json.dump(_state, _file)
"""


def _seen(tmp_path: Path, name: str) -> dict[str, object]:
    out = tmp_path / f"{name}.json"
    text = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
    target = tmp_path / f"{name}.py"
    target.write_text(text + PROBE.format(parent=os.getpid(), out=str(out)), encoding="utf-8")
    report = check_observer(f"{target}:EntropyObserver", cwd=str(tmp_path))
    assert report.findings == (), report.findings
    state: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    environ = state["environ"]
    assert isinstance(environ, dict)
    environ.pop("PYTEST_CURRENT_TEST", None)
    return state


def test_a_forked_child_sees_its_start_as_a_fresh_one_does(tmp_path, child_forks, monkeypatch):
    monkeypatch.delenv(HOOK, raising=False)
    fresh = _seen(tmp_path, "fresh")
    monkeypatch.setenv(HOOK, child_forks.hook)
    forked = _seen(tmp_path, "forked")
    # The server's child, or why not (the hook's or the server's reason).
    assert (fresh.pop("forked"), forked.pop("forked")) == (False, True), refusal()
    environ = forked["environ"]
    assert isinstance(environ, dict)
    assert environ.pop(HOOK) == child_forks.hook
    assert forked == fresh
    assert fresh["session"] is True and fresh["stdin"] == ""
    assert fresh["inheritable"] == [True, True, True]
