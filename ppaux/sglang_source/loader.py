"""Load sglang's own PP transport module without importing the sglang package.

``import sglang.srt.sampling.sampling_observer_pp`` would first run ``sglang/__init__.py``, which
imports a score of heavy packages (numpy, triton, zmq, ...) that a debugging host may not have.
The transport file itself (sglang 0.5.19+) needs only torch and two names from sibling modules
that it uses in annotations. So this module reads that one file, from the installed sglang, from a
directory or straight from a release wheel, and runs it as a lone module whose ``sglang.*`` imports
are answered by small placeholder modules.

Nothing is added to ``sys.modules``: the placeholders are served by an ``__import__`` private to
the loaded module, so several releases can be loaded side by side in one process, and a real
``import sglang`` later is not affected. Loading runs the file's code, as importing it would; the
caller chooses the source. :data:`TRANSPORT_SHA256` tells whether the file is a stock release's.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.metadata
import importlib.util
import re
import types
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ppaux.errors import PpauxError
from ppaux.sglang import families
from ppaux.sglang.names import ADD, POP, TRANSPORT_MODULE, TRANSPORT_PATH
from ppaux.sglang_source.tree import read_member_capped

__all__ = [
    "TRANSPORT_PATH",
    "TRANSPORT_SHA256",
    "SglangNotFound",
    "TransportSource",
    "find_sglang_root",
    "load_transport_module",
    "read_transport_source",
    "sglang_version",
]

#: sha256 of ``TRANSPORT_PATH`` in each release that has it, from the release table that
#: ships with ppaux (``ppaux/data/releases.json``, read from the PyPI wheels).
TRANSPORT_SHA256: Mapping[str, str] = types.MappingProxyType(
    {
        version: family.transport_sha256
        for family in families()
        if family.transport and family.transport_sha256
        for version in family.versions
    }
)

#: The transport's file name: a ``.py`` given as the source must be this file.
_TRANSPORT_NAME = TRANSPORT_PATH.rpartition("/")[2]
_NOT_THE_TRANSPORT = (
    f"not sglang's {_TRANSPORT_NAME}; expected an sglang tree (a directory holding "
    f"{TRANSPORT_PATH}), a release wheel (.whl) or that file itself"
)

# The real file is under 3 KB; the cap only keeps a hostile wheel member from filling memory.
_MAX_SOURCE_BYTES = 1024 * 1024

# ``__version__ = version = '0.5.23'`` (``_version.py``, 0.5.15+) or ``__version__ = "0.4.6"``
# (``version.py`` of older releases); read as text, never executed.
_VERSION_RE = re.compile(
    r"""^__version__\s*=\s*(?:version\s*=\s*)?(['"])(?P<version>[^'"\s]+)\1""", re.MULTILINE
)
_METADATA_VERSION_RE = re.compile(r"^Version:\s*(?P<version>\S+)\s*$", re.MULTILINE)

Source = str | Path | None


class SglangNotFound(PpauxError, LookupError):
    """No sglang transport module where one was looked for: ``str()`` is '<where>: <reason>'."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


@dataclass(frozen=True)
class TransportSource:
    """The bytes of one ``sampling_observer_pp.py`` and where they came from."""

    #: Path shown in tracebacks and messages: a file, or ``<wheel>/sglang/...`` inside a wheel.
    origin: str
    #: The file's bytes, exactly as stored.
    code: bytes
    #: The sglang release the file belongs to, if it could be read; None otherwise.
    version: str | None

    @property
    def sha256(self) -> str:
        """Hex sha256 of :attr:`code`, comparable with :data:`TRANSPORT_SHA256`."""
        return hashlib.sha256(self.code).hexdigest()

    @property
    def stock_releases(self) -> tuple[str, ...]:
        """The releases that ship exactly these bytes; empty for a modified or unknown file."""
        digest = self.sha256
        return tuple(v for v, known in TRANSPORT_SHA256.items() if known == digest)


def find_sglang_root() -> Path | None:
    """Return the directory that holds the importable ``sglang`` package, or None.

    Uses ``importlib.util.find_spec("sglang")``: for a top-level name it only searches
    ``sys.path`` and never runs ``sglang/__init__.py``.
    """
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):
        # ValueError: a 'sglang' entry in sys.modules without a __spec__ (a test double).
        return None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or ():
        return Path(location).parent
    if spec.origin:
        return Path(spec.origin).parent.parent
    return None


def sglang_version(root: str | Path) -> str | None:
    """Return the sglang release found at ``root`` (a directory or a ``.whl``), or None.

    ``root`` is a directory holding ``sglang/`` (or the ``sglang`` package directory itself, or
    a source checkout with ``python/sglang``), or a wheel file. The version comes from
    ``sglang/_version.py`` (or the older ``sglang/version.py``) read as text, then from the
    ``sglang-*.dist-info/METADATA`` beside it.
    """
    path = Path(root)
    if path.is_file():
        with _open_wheel(path) as wheel:
            return _wheel_version(wheel)
    package = _package_dir(path)
    if package is None:
        return None
    return _directory_version(package)


def read_transport_source(source: Source = None) -> TransportSource:
    """Read sglang's ``sampling_observer_pp.py`` from ``source`` without running anything.

    ``source`` is None (the installed sglang, found with :func:`find_sglang_root`), a directory
    (see :func:`sglang_version`), a ``.whl`` file, or the ``.py`` file itself. Raises
    :class:`SglangNotFound` when there is no such file there.
    """
    if source is None:
        root = find_sglang_root()
        if root is None:
            raise SglangNotFound("sglang", "not installed in this Python environment")
        return _read_from_directory(root, where=str(root))
    path = Path(source)
    if path.is_file() and path.suffix == ".py":
        if path.name != _TRANSPORT_NAME:
            raise SglangNotFound(str(path), _NOT_THE_TRANSPORT)
        return TransportSource(str(path), _read_capped(path, str(path)), None)
    if path.is_file():
        return _read_from_wheel(path)
    if path.is_dir():
        return _read_from_directory(path, where=str(path))
    raise SglangNotFound(str(path), "no such file or directory")


def load_transport_module(source: Source = None) -> types.ModuleType:
    """Return a fresh, unregistered copy of sglang's ``sampling_observer_pp`` module.

    ``source`` is as for :func:`read_transport_source`. The module is named
    ``sglang.srt.sampling.sampling_observer_pp`` but is not put in ``sys.modules``; its imports
    of ``sglang.srt.managers.auxiliary_output`` and ``sglang.srt.sampling.sampling_observer``
    get placeholder modules, any other ``sglang`` import raises ``ImportError``, and every other
    import (torch, typing) is the ordinary one. The module also carries ``__ppaux_source__``, the
    :class:`TransportSource` it was built from.
    """
    found = read_transport_source(source)
    _check_defines_transport(found)
    module = types.ModuleType(TRANSPORT_MODULE)
    module.__file__ = found.origin
    module.__package__ = TRANSPORT_MODULE.rpartition(".")[0]
    module_globals = module.__dict__
    module_globals["__builtins__"] = _builtins_with_stub_import(_stub_modules())
    module_globals["__ppaux_source__"] = found
    # dont_inherit: this file's own ``from __future__`` flags must not leak into sglang's code.
    code = compile(found.code, found.origin, "exec", dont_inherit=True)
    exec(code, module_globals)
    return module


# ----------------------------------------------------------------------------------------------
# Reading the file


def _read_capped(path: Path, where: str) -> bytes:
    """Read a file that must be small, refusing it past ``_MAX_SOURCE_BYTES``."""
    with path.open("rb") as handle:
        data = handle.read(_MAX_SOURCE_BYTES + 1)
    if len(data) > _MAX_SOURCE_BYTES:
        raise SglangNotFound(where, f"larger than {_MAX_SOURCE_BYTES} bytes; not sglang's file")
    return data


def _package_dir(path: Path) -> Path | None:
    """The ``sglang`` package directory that ``path`` contains or is, if any.

    Tried in order: ``path/sglang`` (site-packages, an unpacked wheel), ``path/python/sglang`` (a
    source checkout), then ``path`` itself when it is named ``sglang``.
    """
    candidates = [path / "sglang", path / "python" / "sglang"]
    if path.name == "sglang":
        candidates.append(path)
    return next((candidate for candidate in candidates if candidate.is_dir()), None)


def _read_from_directory(path: Path, where: str) -> TransportSource:
    """Read the transport from an installed or unpacked tree."""
    package = _package_dir(path)
    if package is None:
        raise SglangNotFound(where, "no sglang package in this directory")
    version = _directory_version(package)
    transport = package.parent / TRANSPORT_PATH
    if not transport.is_file():
        raise SglangNotFound(where, _missing_reason(version))
    return TransportSource(str(transport), _read_capped(transport, str(transport)), version)


def _directory_version(package: Path) -> str | None:
    """Version of the ``sglang`` package at ``package``, read as text."""
    for name in ("_version.py", "version.py"):
        candidate = package / name
        if candidate.is_file():
            text = _read_capped(candidate, str(candidate)).decode("utf-8", "replace")
            match = _VERSION_RE.search(text)
            if match:
                return match.group("version")
    for metadata in sorted(package.parent.glob("sglang-*.dist-info/METADATA")):
        match = _METADATA_VERSION_RE.search(metadata.read_text("utf-8", "replace"))
        if match:
            return match.group("version")
    return None


def _open_wheel(path: Path) -> zipfile.ZipFile:
    """Open ``path`` as a zip, turning a non-zip into :class:`SglangNotFound`."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SglangNotFound(str(path), f"not a wheel (zip) file: {exc}") from None


def _read_member(wheel: zipfile.ZipFile, name: str, where: str) -> bytes | None:
    """Bytes of one small member of ``wheel``, or None if it has no such member."""
    try:
        info = wheel.getinfo(name)
    except KeyError:
        return None
    if info.file_size > _MAX_SOURCE_BYTES:
        raise SglangNotFound(where, f"{name} is larger than {_MAX_SOURCE_BYTES} bytes")
    try:
        # Read at most the cap even if the zip header lies about the size, whatever the method.
        data = read_member_capped(wheel, info, _MAX_SOURCE_BYTES)
    except ValueError as exc:
        raise SglangNotFound(where, f"cannot read {name}: {exc}") from None
    if len(data) > _MAX_SOURCE_BYTES:
        raise SglangNotFound(where, f"{name} is larger than {_MAX_SOURCE_BYTES} bytes")
    return data


def _wheel_version(wheel: zipfile.ZipFile) -> str | None:
    """Version of the sglang release inside an open wheel."""
    where = str(wheel.filename)
    for name in ("sglang/_version.py", "sglang/version.py"):
        data = _read_member(wheel, name, where)
        if data is not None:
            match = _VERSION_RE.search(data.decode("utf-8", "replace"))
            if match:
                return match.group("version")
    for name in sorted(wheel.namelist()):
        if re.fullmatch(r"sglang-[^/]*\.dist-info/METADATA", name):
            data = _read_member(wheel, name, where)
            match = _METADATA_VERSION_RE.search((data or b"").decode("utf-8", "replace"))
            if match:
                return match.group("version")
    return None


def _read_from_wheel(path: Path) -> TransportSource:
    """Read the transport straight from a release wheel, without unpacking it."""
    with _open_wheel(path) as wheel:
        version = _wheel_version(wheel)
        data = _read_member(wheel, TRANSPORT_PATH, str(path))
    if data is None:
        raise SglangNotFound(str(path), _missing_reason(version))
    return TransportSource(f"{path}/{TRANSPORT_PATH}", data, version)


def _missing_reason(version: str | None) -> str:
    """Why a tree or wheel without the transport file has none."""
    release = f"sglang {version}" if version else "this sglang"
    return f"{release} has no {TRANSPORT_PATH} (the PP auxiliary transport first shipped in 0.5.19)"


# ----------------------------------------------------------------------------------------------
# Running the file


def _check_defines_transport(found: TransportSource) -> None:
    """Refuse, before anything runs, a file that does not define sglang's add and pop.

    The file is parsed (``ast.parse`` runs none of it): a file that is not Python, or whose top
    level defines no ``add_auxiliary_output_to_pp_tensors`` and
    ``pop_auxiliary_output_from_pp_tensors``, is not sglang's transport whatever its name.
    """
    import ast

    try:
        tree = ast.parse(found.code, found.origin)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        # ValueError: NUL bytes; RecursionError, MemoryError: nesting past the parser's stack.
        line = getattr(exc, "lineno", None)
        at = f" (line {line})" if line else ""
        raise SglangNotFound(found.origin, f"not Python source{at}; {_NOT_THE_TRANSPORT}") from None
    defined = {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    missing = [name for name in (ADD, POP) if name not in defined]
    if missing:
        raise SglangNotFound(
            found.origin,
            f"{_TRANSPORT_NAME} defines no {' and no '.join(missing)}, so it is not sglang's "
            "transport (nothing of it was run)",
        )


class _DeviceAuxiliaryOutput(Protocol):
    """Stands in for sglang's ``DeviceAuxiliaryOutput`` (the transport's annotations name it)."""


class _SamplingObserver(Protocol):
    """Stands in for sglang's ``SamplingObserver`` (the transport's annotations name it)."""


def _stub_modules() -> dict[str, types.ModuleType]:
    """Placeholder ``sglang`` modules for the transport's imports, linked as packages are."""
    names = [
        "sglang",
        "sglang.srt",
        "sglang.srt.managers",
        "sglang.srt.managers.auxiliary_output",
        "sglang.srt.sampling",
        "sglang.srt.sampling.sampling_observer",
    ]
    doc = "ppaux placeholder; not sglang's module"
    stubs = {name: types.ModuleType(name, doc) for name in names}
    for name, module in stubs.items():
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(stubs[parent], child, module)
    # Where 0.5.20+ defines it, and where 0.5.19 defined it (0.5.20+ re-exports it there).
    # Any: the stubs are plain modules, given these attributes here.
    managers_module: Any = stubs["sglang.srt.managers.auxiliary_output"]
    managers_module.DeviceAuxiliaryOutput = _DeviceAuxiliaryOutput
    observer_module: Any = stubs["sglang.srt.sampling.sampling_observer"]
    observer_module.DeviceAuxiliaryOutput = _DeviceAuxiliaryOutput
    observer_module.SamplingObserver = _SamplingObserver
    return stubs


def _builtins_with_stub_import(stubs: Mapping[str, types.ModuleType]) -> dict[str, Any]:
    """A builtins namespace whose ``__import__`` answers ``sglang`` imports from ``stubs``.

    Import statements look ``__import__`` up in the running module's builtins, so giving the
    loaded module its own copy redirects its imports and nobody else's.
    """
    real_import = builtins.__import__

    def _import(
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: Sequence[str] = (),
        level: int = 0,
    ) -> types.ModuleType:
        absolute = name
        if level > 0:
            package = (globals or {}).get("__package__") or ""
            absolute = importlib.util.resolve_name("." * level + name, package)
        if absolute != "sglang" and not absolute.startswith("sglang."):
            return real_import(name, globals, locals, fromlist, level)
        if absolute not in stubs:
            raise ImportError(
                f"{absolute} is not available to sglang's transport loaded on its own by ppaux",
                name=absolute,
            )
        if fromlist or level > 0:
            return stubs[absolute]
        # ``import a.b.c`` binds the top-level package.
        return stubs[absolute.partition(".")[0]]

    namespace = dict(vars(builtins))
    namespace["__import__"] = _import
    return namespace
