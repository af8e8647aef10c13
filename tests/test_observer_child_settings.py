"""What ppaux's isolated processes (the check's child, the torch-distributed receiver) keep of
the user's interpreter settings. The user's PYTHONPATH comes where Python puts it (after the
standard library, ahead of site-packages); the current directory and the target's folder never
reach the receiver; PYTHONWARNINGS reaches the child as ``-W`` options."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, ppaux_process
from hypothesis import given
from hypothesis import strategies as st

from ppaux.replay import environment_entries, ordered_path, warning_options

pytestmark = pytest.mark.torch

GOOD = REPO / "fixtures" / "observers" / "entropy_good.py"


def test_given_entries_go_after_the_standard_library_and_ahead_of_site_packages():
    isolated = ["/py/lib.zip", "/py/lib", "/py/dyn", "/venv/site", "/venv/site/extra"]
    given = ["/bin", "/proj/src", "/py/lib", "/venv/site", 7, ""]
    assert ordered_path(isolated, given, ["/venv/site"]) == [
        "/py/lib.zip",
        "/py/lib",
        "/py/dyn",
        "/bin",
        "/proj/src",
        "/venv/site",
        "/venv/site/extra",
    ]


def test_without_a_site_directory_everything_is_the_standard_library():
    assert ordered_path(["/a", "/b"], ["/c", "/a"], ["/nowhere"]) == ["/a", "/b", "/c"]


def test_pythonpath_entries_are_made_absolute_and_empty_ones_dropped():
    assert environment_entries("src::/abs:", "/work") == ["/work/src", "/abs"]
    assert environment_entries(None, "/work") == []


_ENTRY = st.sampled_from(["/a", "/b", "/c", "/s", "/t", "/u"])


@given(
    stdlib=st.lists(st.sampled_from(["/a", "/b", "/c"]), unique=True),
    rest=st.lists(st.sampled_from(["/s", "/t"]), unique=True),
    extra=st.lists(_ENTRY),
)
def test_the_standard_library_stays_first_and_nothing_is_lost_or_repeated(stdlib, rest, extra):
    isolated = stdlib + rest
    out = ordered_path(isolated, extra, ["/s"])
    head = isolated[: isolated.index("/s")] if "/s" in isolated else isolated
    assert out[: len(head)] == head
    assert sorted(set(out)) == sorted(set(isolated) | set(extra))
    assert len(out) == len(set(out))
    # the given entries that are not the standard library's keep their order
    placed = [e for e in dict.fromkeys(extra) if e not in head]
    assert [e for e in out if e in placed] == placed


def _check_through_a_package(tmp_path, package: str):
    """check-observer on an observer that imports the good fixture from ``package``, a folder
    of ``tmp_path/src`` on PYTHONPATH."""
    src = tmp_path / "src" / package
    src.mkdir(parents=True)
    shutil.copy(GOOD, src / "__init__.py")
    (tmp_path / "obs.py").write_text(f"from {package} import EntropyObserver\n", encoding="utf-8")
    return ppaux_process(
        "check-observer",
        "obs.py:EntropyObserver",
        "--steps",
        "1",
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "src")},
    )


def test_pythonpath_comes_before_an_installed_copy_in_the_child(tmp_path):
    # iniconfig is installed beside pytest; the project's own copy on PYTHONPATH must win.
    result = _check_through_a_package(tmp_path, "iniconfig")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_check_writes_no_bytecode_beside_the_users_files(tmp_path):
    # Nothing the user gave is changed: no __pycache__ beside the target or the modules it
    # imports (the child runs with -B; PYTHONDONTWRITEBYTECODE does not reach it under -I).
    result = _check_through_a_package(tmp_path, "helper_mod")
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in tmp_path.rglob("__pycache__")) == []


@pytest.mark.distributed
def test_the_receiver_imports_nothing_from_the_cwd_or_the_targets_folder(tmp_path):
    marker = tmp_path / "ran"
    folder = tmp_path / "observers"
    folder.mkdir()
    shutil.copy(GOOD, folder / "obs.py")
    for where in (tmp_path, folder):
        for name in ("random", "torch", "ppaux"):
            (where / f"{name}.py").write_text(
                f"open({str(marker)!r}, 'a').write('{name} ')\nraise SystemExit('shadowed')\n",
                encoding="utf-8",
            )
    # The installed command, as a user runs it (python -m ppaux_cli gives the child the same
    # path: test_the_childs_path_is_the_same_under_python_m_as_under_the_installed_command).
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "ppaux"),
            "check-observer",
            "observers/obs.py:EntropyObserver",
            "--transport",
            "torch-distributed",
            "--steps",
            "2",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert not marker.exists()


def test_pythonwarnings_become_the_w_options_python_makes_of_it():
    assert warning_options("error::DeprecationWarning,ignore::UserWarning") == [
        "-W",
        "error::DeprecationWarning",
        "-W",
        "ignore::UserWarning",
    ]
    assert warning_options("") == []


@pytest.mark.parametrize(("warnings", "code"), [(None, 0), ("error::DeprecationWarning", 2)])
def test_the_users_pythonwarnings_act_in_the_child(tmp_path, warnings, code):
    text = GOOD.read_text(encoding="utf-8")
    text += "\nimport warnings\nwarnings.warn('old', DeprecationWarning)\n"
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    result = ppaux_process(
        "check-observer",
        "obs.py:EntropyObserver",
        "--steps",
        "1",
        cwd=tmp_path,
        env={"PYTHONWARNINGS": warnings},
    )
    assert result.returncode == code, result.stdout + result.stderr
    if code:
        assert "raised DeprecationWarning: old" in result.stderr


@given(
    warnings=st.lists(st.sampled_from(["error", "ignore::UserWarning", "-c", "x", "-I"])),
    tail=st.lists(st.text(max_size=5), max_size=3),
)
def test_only_a_command_line_that_runs_ppauxs_boot_is_ppauxs_own(warnings, tail):
    from ppaux.replay import BOOT, runs_boot

    options = warning_options(",".join(warnings))
    assert runs_boot(["python", "-I", *options, "-c", BOOT, *tail])
    assert not runs_boot(["python", "-I", *options, "-c", BOOT + "\nimport os", *tail])
    assert not runs_boot(["python", "-I", *options, "-m", "ppaux.replay.receiver", *tail])
    # A script given BOOT's text as its argument is not the boot.
    assert not runs_boot(["python", "obs.py", "-c", BOOT])
    assert not runs_boot([])


def test_the_childs_path_is_the_same_under_python_m_as_under_the_installed_command(tmp_path):
    # A module that sits only in the current directory: neither form of ppaux finds it there
    # (python -m put the cwd first in ppaux's own process; the check does not pass it on).
    shutil.copy(GOOD, tmp_path / "here_only.py")
    as_module = ppaux_process(
        "check-observer", "here_only:EntropyObserver", "--steps", "1", cwd=tmp_path
    )
    installed = subprocess.run(
        [str(Path(sys.executable).parent / "ppaux"), "check-observer", "here_only:EntropyObserver"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 2, installed.stdout + installed.stderr
    assert "no module named 'here_only'" in installed.stderr
    assert (as_module.returncode, as_module.stderr) == (installed.returncode, installed.stderr)
