"""Locating and loading sglang's transport file, on small trees and wheels made here.

The transport file in these trees is a few lines written for the test (its imports are the ones
sglang's file makes); the real releases are loaded in ``test_transport_wheels.py``.
"""

from __future__ import annotations

import hashlib
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from ppaux.errors import PpauxError
from ppaux.sglang_source import loader as sglang_module
from ppaux.sglang_source.loader import (
    TRANSPORT_PATH,
    SglangNotFound,
    find_sglang_root,
    load_transport_module,
    read_transport_source,
    sglang_version,
)

FAKE_TRANSPORT = textwrap.dedent(
    """\
    import json
    import sglang.srt.sampling.sampling_observer as observer_module
    from sglang.srt.managers.auxiliary_output import DeviceAuxiliaryOutput
    from sglang.srt.sampling.sampling_observer import SamplingObserver
    from . import sampling_observer as relative

    _OUTPUT_PREFIX = "__sampling_observer_output__."

    def annotated(x: int) -> int:
        return x

    def late_import():
        import sglang.srt.managers.scheduler

    def add_auxiliary_output_to_pp_tensors(tensors, output):
        return tensors

    def pop_auxiliary_output_from_pp_tensors(tensors, observer):
        return None
    """
)

# Would raise if it were ever executed: version reading must be text only.
VERSION_FILE = "raise SystemExit('executed')\n__version__ = version = '0.5.99'\n"


def make_tree(root: Path, *, transport: str | None = FAKE_TRANSPORT, init: str = "") -> Path:
    package = root / "sglang"
    (package / "srt" / "sampling").mkdir(parents=True)
    (package / "__init__.py").write_text(init)
    (package / "_version.py").write_text(VERSION_FILE)
    if transport is not None:
        (root / TRANSPORT_PATH).write_text(transport)
    return root


def make_wheel(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in members.items():
            wheel.writestr(name, text)
    return path


def sglang_modules() -> set[str]:
    return {name for name in sys.modules if name == "sglang" or name.startswith("sglang.")}


@pytest.fixture
def fake_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = make_tree(tmp_path / "site", init="raise RuntimeError('sglang/__init__.py ran')\n")
    monkeypatch.syspath_prepend(str(site))
    return site


def test_find_spec_locates_sglang_without_running_its_init(fake_install: Path) -> None:
    before = sglang_modules()
    assert find_sglang_root() == fake_install
    assert sglang_modules() == before


def test_load_from_installed_sglang(fake_install: Path) -> None:
    before = sglang_modules()
    module = load_transport_module()
    assert sglang_modules() == before
    assert module.__name__ == "sglang.srt.sampling.sampling_observer_pp"
    assert module.__file__ == str(fake_install / TRANSPORT_PATH)
    assert module.__ppaux_source__.version == "0.5.99"


def test_load_from_directory_stubs_sglang_imports(tmp_path: Path) -> None:
    before = set(sys.modules)
    module = load_transport_module(make_tree(tmp_path))
    assert set(sys.modules) - before <= {"json"}
    assert module.DeviceAuxiliaryOutput.__name__ == "_DeviceAuxiliaryOutput"
    assert module.SamplingObserver.__name__ == "_SamplingObserver"
    assert module.observer_module is module.relative
    assert module.observer_module.DeviceAuxiliaryOutput is module.DeviceAuxiliaryOutput
    assert module.json is sys.modules["json"]
    # ppaux's own ``from __future__ import annotations`` must not reach the loaded code.
    assert module.annotated.__annotations__ == {"x": int, "return": int}


def test_other_sglang_imports_are_refused(tmp_path: Path) -> None:
    module = load_transport_module(make_tree(tmp_path))
    with pytest.raises(ImportError) as caught:
        module.late_import()
    assert str(caught.value) == (
        "sglang.srt.managers.scheduler is not available to sglang's transport loaded on its own"
        " by ppaux"
    )


def test_each_load_is_a_separate_module(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    first, second = load_transport_module(tree), load_transport_module(tree)
    assert first is not second
    assert first.observer_module is not second.observer_module
    first._OUTPUT_PREFIX = "changed"
    assert second._OUTPUT_PREFIX == "__sampling_observer_output__."


def test_directory_layouts(tmp_path: Path) -> None:
    site = make_tree(tmp_path / "site")
    checkout = tmp_path / "checkout"
    make_tree(checkout / "python")
    expected = site / TRANSPORT_PATH
    assert read_transport_source(site).origin == str(expected)
    assert read_transport_source(site / "sglang").origin == str(expected)
    assert read_transport_source(expected).origin == str(expected)
    assert read_transport_source(checkout).origin == str(checkout / "python" / TRANSPORT_PATH)
    assert sglang_version(checkout) == "0.5.99"


def test_load_from_wheel(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path / "sglang-0.5.99-py3-none-any.whl",
        {"sglang/_version.py": VERSION_FILE, TRANSPORT_PATH: FAKE_TRANSPORT},
    )
    found = read_transport_source(wheel)
    assert found.origin == f"{wheel}/{TRANSPORT_PATH}"
    assert found.version == "0.5.99"
    assert found.sha256 == hashlib.sha256(FAKE_TRANSPORT.encode()).hexdigest()
    assert found.stock_releases == ()
    assert load_transport_module(wheel)._OUTPUT_PREFIX == "__sampling_observer_output__."


@pytest.mark.parametrize(
    ("members", "version"),
    [
        ({"sglang/_version.py": "__version__ = version = '0.5.23'\n"}, "0.5.23"),
        ({"sglang/version.py": '__version__ = "0.4.6"\n'}, "0.4.6"),
        ({"sglang-0.5.7.dist-info/METADATA": "Name: sglang\nVersion: 0.5.7\n"}, "0.5.7"),
        ({"sglang/version.py": "from sglang._version import __version__\n"}, None),
        ({}, None),
    ],
)
def test_sglang_version_reads_text(tmp_path: Path, members: dict[str, str], version: str) -> None:
    assert sglang_version(make_wheel(tmp_path / "w.whl", members)) == version
    for name, text in members.items():
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_text(text)
    (tmp_path / "tree" / "sglang").mkdir(parents=True, exist_ok=True)
    assert sglang_version(tmp_path / "tree") == version


def test_not_found_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = make_tree(tmp_path / "old", transport=None)
    (old / "sglang" / "_version.py").write_text("__version__ = version = '0.5.18'\n")
    old_wheel = make_wheel(tmp_path / "old.whl", {"sglang/_version.py": "__version__ = '0.5.18'"})
    not_zip = tmp_path / "broken.whl"
    not_zip.write_bytes(b"not a zip")
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = "has no sglang/srt/sampling/sampling_observer_pp.py"
    shipped = "(the PP auxiliary transport first shipped in 0.5.19)"
    cases = {
        old: f"{old}: sglang 0.5.18 {missing} {shipped}",
        old_wheel: f"{old_wheel}: sglang 0.5.18 {missing} {shipped}",
        empty: f"{empty}: no sglang package in this directory",
        tmp_path / "nowhere": f"{tmp_path / 'nowhere'}: no such file or directory",
    }
    for source, message in cases.items():
        with pytest.raises(SglangNotFound) as caught:
            load_transport_module(source)
        assert str(caught.value) == message
    with pytest.raises(SglangNotFound, match=r"^.*broken\.whl: not a wheel \(zip\) file: "):
        load_transport_module(not_zip)
    monkeypatch.setattr(sglang_module, "find_sglang_root", lambda: None)
    with pytest.raises(SglangNotFound) as caught:
        load_transport_module()
    assert str(caught.value) == "sglang: not installed in this Python environment"
    assert isinstance(caught.value, PpauxError) and isinstance(caught.value, LookupError)


def test_oversized_transport_is_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path, transport="#" * (1024 * 1024 + 1))
    with pytest.raises(SglangNotFound, match="larger than 1048576 bytes"):
        read_transport_source(tree)


# A file that would leave a mark if it were ever run.
_MARKING = "import pathlib\npathlib.Path({mark!r}).write_text('ran')\n"

NOT_THE_TRANSPORT = (
    "not sglang's sampling_observer_pp.py; expected an sglang tree (a directory holding "
    "sglang/srt/sampling/sampling_observer_pp.py), a release wheel (.whl) or that file itself"
)


def test_a_python_file_other_than_the_transport_is_refused_unread(tmp_path: Path) -> None:
    mark = tmp_path / "ran"
    other = tmp_path / "observer.py"
    other.write_text(_MARKING.format(mark=str(mark)))
    for call in (read_transport_source, load_transport_module):
        with pytest.raises(SglangNotFound) as caught:
            call(other)
        assert str(caught.value) == f"{other}: {NOT_THE_TRANSPORT}"
    assert not mark.exists()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            _MARKING,
            "sampling_observer_pp.py defines no add_auxiliary_output_to_pp_tensors and no "
            "pop_auxiliary_output_from_pp_tensors, so it is not sglang's transport (nothing of "
            "it was run)",
        ),
        (
            _MARKING + "def pop_auxiliary_output_from_pp_tensors(t, o):\n    pass\n",
            "sampling_observer_pp.py defines no add_auxiliary_output_to_pp_tensors, so it is "
            "not sglang's transport (nothing of it was run)",
        ),
        (_MARKING + "def broken(:\n", f"not Python source (line 3); {NOT_THE_TRANSPORT}"),
    ],
)
def test_a_file_named_as_the_transport_that_is_not_it_is_never_run(
    tmp_path: Path, text: str, reason: str
) -> None:
    mark = tmp_path / "ran"
    source = text.format(mark=str(mark))
    tree = make_tree(tmp_path / "tree", transport=source)
    wheel = make_wheel(tmp_path / "sglang-0.5.99-py3-none-any.whl", {TRANSPORT_PATH: source})
    lone = tmp_path / "lone" / "sampling_observer_pp.py"
    lone.parent.mkdir()
    lone.write_text(source)
    origins = {
        tree: tree / TRANSPORT_PATH,
        wheel: f"{wheel}/{TRANSPORT_PATH}",
        lone: lone,
    }
    for given, origin in origins.items():
        with pytest.raises(SglangNotFound) as caught:
            load_transport_module(given)
        assert str(caught.value) == f"{origin}: {reason}"
    assert not mark.exists()


def test_the_transport_file_itself_is_loaded(tmp_path: Path) -> None:
    lone = tmp_path / "sampling_observer_pp.py"
    lone.write_text(FAKE_TRANSPORT)
    module = load_transport_module(lone)
    assert module.__file__ == str(lone)
    assert module.pop_auxiliary_output_from_pp_tensors({}, None) is None
