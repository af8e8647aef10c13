"""Runtime environments of real sglang releases, for the tests marked ``sglang_runtime``.

sglang's pipeline-parallel runtime path (``sglang.srt.distributed.parallel_state`` and
``sglang.srt.managers.scheduler_pp_mixin``) can only be imported through ``import sglang``, which
pulls in a few dozen third-party packages. This module prepares, once per release and cached
between runs, a directory from which those two modules import on a CPU-only machine:

``<cache>/<version>/``
    ``sglang/``      the release wheel (from :func:`wheels.sglang_wheel`), unpacked, unmodified;
    ``site/``        the third-party packages, installed with ``pip install --no-deps --target``
                     (the exact versions of :data:`PACKAGES`, overridden by the release's own
                     ``==`` pins from its METADATA), torch excluded: the test interpreter's own
                     CPU torch is used, and pinned in a constraints file so pip never pulls one;
    ``standins/``    small stand-in modules, written by this file, for imports that the PP path
                     never calls (see :data:`STANDINS`);
    ``runtime.json`` what was prepared, written last: an environment without it, or whose
                     recorded recipe differs, is prepared again from scratch.

All three trees are compiled to ``.pyc`` (``compileall`` with the test interpreter) as the last
step of the preparation, as pip compiles what it installs by default: a user's sglang imports
from its bytecode, so the tier's processes must not pay for compiling some 10,000 modules from
source every time they start (``PYTHONDONTWRITEBYTECODE=1``, set in some environments, stops
Python writing ``.pyc`` files, not reading them, so without this step nothing is ever cached).

One process prepares a release at a time (a file lock, ``<cache>/.<version>.lock``): the
pytest-xdist workers of a run, or two runs, wait for the preparation under way and then use it.

``<cache>`` is ``$PPAUX_RUNTIME_CACHE`` (default ``~/.cache/ppaux/runtime``). Processes are run
with the test interpreter and ``PYTHONPATH`` = sglang, site, stand-ins (see
:meth:`SglangRuntime.env`). A test skips when the package index cannot be reached, unless
``PPAUX_REQUIRE_WHEELS=1``, exactly as with :mod:`wheels`.
"""

from __future__ import annotations

import email.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
import runtime_zygote
import wheels
from helpers import file_lock

__all__ = [
    "CACHE_ENV",
    "PACKAGES",
    "RELEASE_PINNED",
    "STANDINS",
    "TORCH_PIN",
    "SglangRuntime",
    "runtime_cache",
    "sglang_runtime",
]

CACHE_ENV = "PPAUX_RUNTIME_CACHE"

#: The torch every runtime uses: the test interpreter's own CPU build. It goes into a constraints
#: file so that no package can pull another torch (an unpinned one is a multi-GB CUDA build).
TORCH_PIN = "torch==2.13.0"

#: The third-party distributions that ``import sglang.srt.distributed.parallel_state``,
#: ``import sglang.srt.managers.scheduler_pp_mixin`` and (0.5.19 - 0.5.22, whose
#: ``_pp_prep_batch_result`` imports it when called) ``import sglang.srt.managers.scheduler``
#: need beyond what the test virtual environment already holds (torch with jinja2, typer with
#: pydantic and click, rich with pygments). Found by importing those modules of 0.5.19 - 0.5.23
#: and adding what was missing, nothing more. Installed with ``--no-deps``, so the dependencies
#: they import are listed too. Exact versions, so that a new upload cannot change the tier.
PACKAGES: Mapping[str, str] = {
    # sglang.srt.utils.common and friends
    "numpy": "2.4.6",
    "orjson": "3.12.0",
    "psutil": "7.2.2",
    "pybase64": "1.5.1",
    "pillow": "12.3.0",
    "msgspec": "0.22.0",
    "pyzmq": "27.2.0",
    "setproctitle": "1.3.7",
    "starlette": "1.7.0",
    "anyio": "4.15.1",
    "sniffio": "1.3.1",
    "triton": "3.6.0",
    # sglang.lang (imported by sglang/__init__.py)
    "tqdm": "4.70.1",
    "ipython": "9.17.1",
    "traitlets": "5.16.1",
    "aiohttp": "3.14.3",
    "multidict": "6.9.1",
    "yarl": "1.25.1",
    "propcache": "0.5.4",
    "aiohappyeyeballs": "2.7.1",
    "aiosignal": "1.4.0",
    "frozenlist": "1.8.0",
    # sglang.srt.configs: transformers and what it checks or imports at import time
    "transformers": "5.19.0",
    "tokenizers": "0.23.2",
    "huggingface-hub": "1.33.0",
    "httpx": "0.28.1",
    "httpcore": "1.0.9",
    "h11": "0.16.0",
    "certifi": "2026.7.22",
    "idna": "3.20",
    "safetensors": "0.8.0",
    "regex": "2026.9.29",
    "pyyaml": "6.0.3",
    "sentencepiece": "0.2.1",
    # the rest of the scheduler's import chain
    "dill": "0.4.1",
    "apache-tvm-ffi": "0.1.11",
    "compressed-tensors": "0.18.0",
    "loguru": "0.7.3",
    "gguf": "0.19.0",
    "openai": "2.8.0",
    "distro": "1.9.0",
    "jiter": "0.17.0",
    "partial-json-parser": "0.2.1.1.post7",
    "einops": "0.8.2",
    "xgrammar": "0.2.7",
    # sglang.srt.managers.scheduler (0.5.19 - 0.5.22 import it inside _pp_prep_batch_result)
    "fastapi": "0.142.2",
    "opentelemetry-api": "1.45.0",
    "uvicorn": "0.54.0",
}

#: Distributions whose version is taken from the release's own METADATA where it pins one
#: exactly (``Requires-Dist: name==X``), so that each release runs with what it was built for.
RELEASE_PINNED = (
    "transformers",
    "tokenizers",
    "openai",
    "compressed-tensors",
    "apache-tvm-ffi",
    "sentencepiece",
    "xgrammar",
)

_STANDIN_NOTE = (
    "STAND-IN written by ppaux's tests/sglang_runtime.py, not the real package. It exists\n"
    "only so that sglang's module imports succeed; nothing on the pipeline-parallel path\n"
    "calls it, and every function it exposes raises if called."
)

#: Stand-in modules, path relative to ``standins/`` -> source. torchvision: the registry's wheels
#: are built against CUDA torch and fail to import with the CPU build ("operator torchvision::nms
#: does not exist"). sglang imports ``torchvision.transforms`` (InterpolationMode, functional) in
#: its model-config modules, and transformers, seeing a ``torchvision`` package, imports
#: ``transforms.functional``, ``transforms.v2.functional`` and ``io``; all of it is image
#: preprocessing, never reached by the PP output path.
STANDINS: Mapping[str, str] = {
    "torchvision/_standin.py": f'''"""{_STANDIN_NOTE}"""


def missing(module, name):
    if name.startswith("__"):
        raise AttributeError(name)

    def stand_in(*args, **kwargs):
        raise NotImplementedError(f"{{module}}.{{name}} is a ppaux stand-in and cannot run")

    stand_in.__name__ = name
    stand_in.__qualname__ = name
    return stand_in
''',
    "torchvision/__init__.py": f'''"""{_STANDIN_NOTE}"""

from torchvision._standin import missing

PPAUX_STANDIN = True
__version__ = "0.0.0+ppaux.standin"


def __getattr__(name):
    return missing(__name__, name)
''',
    "torchvision/transforms/__init__.py": f'''"""{_STANDIN_NOTE}"""

import enum

from torchvision._standin import missing


class InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def __getattr__(name):
    return missing(__name__, name)
''',
    **{
        path: f'''"""{_STANDIN_NOTE}"""

from torchvision._standin import missing
from torchvision.transforms import InterpolationMode  # noqa: F401


def __getattr__(name):
    return missing(__name__, name)
'''
        for path in (
            "torchvision/transforms/functional.py",
            "torchvision/transforms/v2/__init__.py",
            "torchvision/transforms/v2/functional.py",
            "torchvision/io/__init__.py",
        )
    },
}

# Bump when the way an environment is built changes, so that cached ones are rebuilt.
# 2: the trees are compiled to .pyc as pip compiles an installation.
_RECIPE_REVISION = 2
_PIP_TIMEOUT_S = 1800
_COMPILE_TIMEOUT_S = 1800


@dataclass(frozen=True)
class SglangRuntime:
    """A prepared runtime of one sglang release."""

    version: str
    root: Path
    prepare_s: float  # seconds spent preparing it in this process (0.0 when it came from cache)
    compile_s: float = 0.0  # of which compiling it to .pyc

    @property
    def sglang_dir(self) -> Path:
        return self.root / "sglang"

    @property
    def site_dir(self) -> Path:
        return self.root / "site"

    @property
    def standin_dir(self) -> Path:
        return self.root / "standins"

    @property
    def pythonpath(self) -> list[str]:
        return [str(self.sglang_dir), str(self.site_dir), str(self.standin_dir)]

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """An environment for a process of the test interpreter that runs this release."""
        env = dict(os.environ if base is None else base)
        env["PYTHONPATH"] = os.pathsep.join(self.pythonpath)
        env["PYTHONNOUSERSITE"] = "1"
        env.setdefault("TOKENIZERS_PARALLELISM", "false")
        # sglang (0.5.23) redirects third-party caches; keep every write inside the runtime.
        env.setdefault("HF_HOME", str(self.root / "hf-home"))
        env.setdefault("TRITON_CACHE_DIR", str(self.root / "triton-cache"))
        return env

    def packages_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """:meth:`env` with only the third-party packages and the stand-ins on ``PYTHONPATH``,
        for a process that is given the sglang tree another way (``--sglang-path``)."""
        env = self.env(base)
        env["PYTHONPATH"] = os.pathsep.join([str(self.site_dir), str(self.standin_dir)])
        return env

    def run(
        self, args: Sequence[str], *, timeout: float = 600, fresh: bool = False, **kwargs
    ) -> subprocess.CompletedProcess:
        """``python args...`` with this runtime; output captured as text, never raises on rc.
        Forked from the release's zygote (``tests/runtime_zygote.py``), after its imports,
        unless ``fresh``: a new interpreter, for what only a fresh one shows."""
        if not fresh:
            return runtime_zygote.run(self.version, args, self.env(), timeout=timeout, **kwargs)
        return subprocess.run(
            [sys.executable, *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **kwargs,
        )


def runtime_cache() -> Path:
    """The directory runtimes are cached in (created if missing)."""
    configured = os.environ.get(CACHE_ENV)
    cache = Path(configured) if configured else Path.home() / ".cache" / "ppaux" / "runtime"
    cache.mkdir(parents=True, exist_ok=True)
    return cache


# version -> (message, network): a runtime that could not be prepared is not tried again.
_failed: dict[str, tuple[str, bool]] = {}


def _give_up(message: str, *, network: bool) -> NoReturn:
    if network and os.environ.get(wheels.REQUIRE_ENV) != "1":
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


def _release_pins(wheel: Path) -> dict[str, str]:
    """``name -> version`` for every ``Requires-Dist: name==version`` (no marker) of the wheel."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))
    pins = {}
    for requirement in metadata.get_all("Requires-Dist") or []:
        if ";" in requirement:
            continue
        spec = requirement.replace(" ", "")
        if "==" in spec and "," not in spec:
            dist, version = spec.split("==", 1)
            pins[dist.split("[")[0].lower().replace("_", "-")] = version
    return pins


def requirements(wheel: Path) -> list[str]:
    """The exact ``name==version`` list installed for the release of ``wheel``."""
    pins = _release_pins(wheel)
    chosen = dict(PACKAGES)
    for dist in RELEASE_PINNED:
        if dist in pins:
            chosen[dist] = pins[dist]
    return [f"{dist}=={version}" for dist, version in sorted(chosen.items())]


def _recipe(wheel: Path) -> dict:
    return {
        "revision": _RECIPE_REVISION,
        "wheel": wheel.name,
        "wheel_size": wheel.stat().st_size,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "torch": TORCH_PIN,
        "requirements": requirements(wheel),
        "standins": dict(STANDINS),
    }


def _pip_install(site: Path, scratch: Path, reqs: Sequence[str], version: str) -> None:
    constraints = scratch / "constraints.txt"
    constraints.write_text(TORCH_PIN + "\n")
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-vv",
        "--no-deps",
        "--no-compile",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        "--target",
        str(site),
        "-c",
        str(constraints),
        *reqs,
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        message = f"pip install for sglang=={version} did not finish in {_PIP_TIMEOUT_S} s"
        _failed[version] = (message, True)
        _give_up(message, network=True)
    if done.returncode != 0:
        output = f"{done.stdout}\n{done.stderr}"
        network = wheels.network_failure(output)
        errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
        detail = network or (errors[-1] if errors else f"pip exit status {done.returncode}")
        message = f"could not install the runtime of sglang=={version}: {detail}"
        _failed[version] = (message, bool(network))
        _give_up(message, network=bool(network))


def _compile(scratch: Path, root: Path, trees: Sequence[str], version: str) -> None:
    """Compile every module under ``scratch``'s ``trees`` to ``.pyc`` with the test interpreter,
    as pip does after an installation (``compileall``, default optimisation, timestamp-checked
    ``.pyc``). The file names recorded in the bytecode are those under ``root``, where the
    runtime is moved when complete, not the scratch directory's.

    Like pip, a file that does not compile (a template or test file written for another Python)
    is left as it is: its module compiles in memory if it is ever imported. Anything else that
    stops ``compileall`` fails the preparation.
    """
    command = [
        sys.executable,
        "-m",
        "compileall",
        "-q",
        "-q",  # quiet even for files that do not compile: they are expected (see above)
        "-j",
        str(max(1, os.cpu_count() or 1)),
        "-s",
        str(scratch),
        "-p",
        str(root),
        *(str(scratch / tree) for tree in trees),
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        message = f"compiling the runtime of sglang=={version} took over {_COMPILE_TIMEOUT_S} s"
        _failed[version] = (message, False)
        _give_up(message, network=False)
    # compileall's exit status is 1 when any file failed to compile, which is expected; a
    # traceback means compileall itself failed.
    if done.returncode not in (0, 1) or "Traceback" in done.stderr:
        message = (
            f"could not compile the runtime of sglang=={version}: "
            f"{(done.stderr.strip().splitlines() or [f'exit status {done.returncode}'])[-1]}"
        )
        _failed[version] = (message, False)
        _give_up(message, network=False)


def _build(root: Path, wheel: Path, recipe: dict, version: str) -> float:
    """Build the runtime in a scratch directory beside ``root`` and move it in when complete;
    the seconds spent compiling it."""
    root.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{version}-building-"))
    scratch.chmod(0o755)  # mkdtemp's 0700 would hide the runtime from other users
    try:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(scratch / "sglang")
        _pip_install(scratch / "site", scratch, recipe["requirements"], version)
        for relative, source in STANDINS.items():
            path = scratch / "standins" / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(source))
        compiling = time.monotonic()
        _compile(scratch, root, ["sglang", "site", "standins"], version)
        compile_s = round(time.monotonic() - compiling, 1)
        (scratch / "runtime.json").write_text(json.dumps(recipe, indent=1, sort_keys=True))
        if root.exists():
            if _ready(root, recipe):  # another process finished the same runtime meanwhile
                return compile_s
            stale = root.with_name(f".{version}-stale-{os.getpid()}")
            os.replace(root, stale)
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(scratch, root)
        except OSError:
            if not _ready(root, recipe):
                raise
        return compile_s
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


def _ready(root: Path, recipe: dict) -> bool:
    try:
        return json.loads((root / "runtime.json").read_text()) == recipe
    except (OSError, ValueError):
        return False


_prepared: dict[str, SglangRuntime] = {}


def sglang_runtime(version: str) -> SglangRuntime:
    """The runtime of ``sglang==version``, prepared on first use and cached."""
    if version in _prepared:
        return _prepared[version]
    if version in _failed:
        message, network = _failed[version]
        _give_up(f"{message} (earlier in this test run)", network=network)
    wheel = wheels.sglang_wheel(version)  # skips or fails as the wheel tier does
    root = runtime_cache() / version
    recipe = _recipe(wheel)
    started = time.monotonic()
    compile_s = 0.0
    if not _ready(root, recipe):
        with file_lock(root.with_name(f".{version}.lock")):
            if not _ready(root, recipe):  # not prepared by another process while this one waited
                compile_s = _build(root, wheel, recipe, version)
    runtime = SglangRuntime(
        version=version,
        root=root,
        prepare_s=round(time.monotonic() - started, 1),
        compile_s=compile_s,
    )
    _prepared[version] = runtime
    return runtime


def _main(argv: Sequence[str]) -> int:
    """``python tests/sglang_runtime.py VERSION...``: prepare and print each runtime's path."""
    for version in argv:
        runtime = sglang_runtime(version)
        print(
            f"{version}\t{runtime.root}\t{runtime.prepare_s}s"
            f" (compiling to .pyc: {runtime.compile_s}s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
