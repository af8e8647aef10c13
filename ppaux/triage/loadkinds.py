"""Kinds of failure of what a process builds, loads or writes before it serves, each with steps of
its own (:mod:`ppaux.triage.loadsteps`), told from the exception's type and message, or from the
frames of a traceback cut before them:

- ``build``: a kernel compiled at start-up (JIT) that did not build: torch's C++ extensions and
  flashinfer's ``ninja`` build (``CalledProcessError: Command '['ninja', '-v', ...]'``,
  ``Error building extension``), ``nvcc``'s errors, a Triton kernel that did not compile
  (``triton.compiler.errors.CompilationError``), the build's tool not found under a frame of the
  build (``FileNotFoundError: [Errno 2] No such file or directory: 'ninja'`` under
  flashinfer's ``run_ninja``), Triton's ``Failed to find C compiler`` (its launcher's build);
  cut, a frame of the build (``_run_ninja_build``, ``run_ninja``, Triton's ``_build`` and its
  compiler's ``compile``);
- ``disk``: a disk or the shared memory a process writes to is full (``OSError: [Errno 28] No
  space left on device``, ``ENOSPC``, ``Disk quota exceeded``): a container's small
  ``/dev/shm`` as a rule (a DataLoader's or a multiprocessing lock's), a cache's disk;
- ``weights``: the model's weights could not be read or fetched: safetensors' errors
  (``SafetensorError``, ``Error while deserializing header``), a checkpoint file that is missing
  or of another size, a filesystem that refuses to map a file (``No such device (os error 19)``
  under ``safe_open``), the Hugging Face Hub's errors (``RepositoryNotFoundError``,
  ``GatedRepoError``, ``401 Client Error`` for a URL of the Hub, ``We couldn't connect to
  'https://huggingface.co'``);
  cut, a frame of the Hub's download (``hf_raise_for_status``, ``hf_hub_download``);
- ``driver``: the NVIDIA driver, the CUDA runtime and the installed build do not fit each other
  (:func:`driver_mismatch`; NCCL's warning that quotes CUDA's words is read with its set-up): a
  driver older than the runtime the build was made for (``CUDA driver
  version is insufficient``, ``API call is not supported in the installed CUDA driver``,
  torch's ``The NVIDIA driver on your system is too old``, ``system has unsupported display
  driver / cuda driver combination``, ``forward compatibility was attempted``), or a build
  made without the GPU's architecture (``no kernel image is available for execution on the
  device``, ``CUDA_ERROR_NO_BINARY_FOR_GPU``). No kernel ran wrong: no shape or kernel failure.

The words are read in the message's own form: a message that quotes them (a ``KeyError`` on a
key holding ``No space left on device``) or another host's error that mentions the Hub names
none of these. A model's own error while it loads (a ``KeyError`` on a parameter's name) names
none of these either: it is a failure of another kind.
"""

from __future__ import annotations

import re

from ppaux.patterns import lazy
from ppaux.triage.quotedvalues import unquoted_values
from ppaux.triage.records import Failure

__all__ = [
    "BUILD",
    "DISK",
    "DRIVER",
    "LOAD_KINDS",
    "WEIGHTS",
    "checkpoint_mismatch",
    "cut_load_kind",
    "driver_mismatch",
    "load_kind",
]

BUILD = "build"
DISK = "disk"
WEIGHTS = "weights"
DRIVER = "driver"
#: The kinds told here, in the order they are told apart.
LOAD_KINDS = (DISK, BUILD, WEIGHTS, DRIVER)
#: CUDA's and torch's words for a driver, a runtime and a build that do not fit each other.
_DRIVER = lazy(
    r"CUDA driver version is insufficient|API call is not supported in the installed CUDA "
    r"driver|NVIDIA driver on your system is too old|unsupported display driver / cuda driver "
    r"combination|forward compatibility was attempted|no kernel image is available for "
    r"execution|cudaError(?:InsufficientDriver|CallRequiresNewerDriver|NoKernelImageForDevice|"
    r"SystemDriverMismatch)|CUDA_ERROR_(?:NO_BINARY_FOR_GPU|SYSTEM_DRIVER_MISMATCH|"
    r"COMPAT_NOT_SUPPORTED_ON_DEVICE)",
    re.IGNORECASE,
)

_DISK = lazy(r"No space left on device|\bENOSPC\b|\[Errno 28\]|Disk quota exceeded|\bEDQUOT\b")
_BUILD_TYPES = lazy(r"(?:^|\.)CompilationError$")
_BUILD_TEXT = lazy(
    r"Error building extension|Command '\['ninja'|\bninja: build stopped\b|"
    r"\bnvcc fatal\b|\bnvcc\b[^\n]{0,80}\berror\b|JIT compilation failed|"
    r"Failed to (?:build|compile) (?:the )?(?:kernel|module|extension)|"
    r"No such file or directory: '(?:ninja|nvcc)'|"  # the build's tool not installed
    r"Failed to find C compiler"  # Triton's launcher build: no cc, gcc or clang, no CC set
)
#: Frames of a build run at start-up: torch's extensions, flashinfer's JIT.
_BUILD_FUNCTIONS = frozenset(
    {"_run_ninja_build", "run_ninja", "_jit_compile", "_write_ninja_file_and_compile_objects"}
)
#: Triton's own files of a build on the host (see :func:`_triton_build`).
_TRITON_BUILD = lazy(r"triton/runtime/build\.py$")
_TRITON_COMPILER = lazy(r"triton/compiler/compiler\.py$")
_WEIGHTS_TYPES = lazy(
    r"(?:^|\.)(?:SafetensorError|HeaderTooLarge|RepositoryNotFoundError|GatedRepoError|"
    r"RevisionNotFoundError|EntryNotFoundError|LocalEntryNotFoundError|HfHubHTTPError|"
    r"OfflineModeIsEnabled)$"
)
_WEIGHTS_TEXT = lazy(
    r"Error while deserializing header|safetensors_rust|\.safetensors\b[^\n]{0,120}"
    r"(?:not found|No such file|does not exist|incomplete|truncated)|"
    r"does not appear to have a file named|couldn't connect to 'https://huggingface\.co'|"
    r"(?:401|403) Client Error[\s\S]{0,300}?\burl:? https?://(?:[\w-]+\.)*(?:huggingface|hf)\.co/|"
    r"Cannot access gated repo|"
    r"Error\(s\) in loading state_dict"
)
#: torch's ``load_state_dict`` refusing a checkpoint whose tensors have other shapes than the
#: model's: the model's configuration and the checkpoint disagree, the files are whole.
_CHECKPOINT_MISMATCH = lazy(r"Error\(s\) in loading state_dict[\s\S]{0,400}?\bsize mismatch for ")
#: The exceptions of a build's tool that could not run (not installed, not on the path).
_MISSING_TOOL = lazy(r"(?:^|\.)(?:FileNotFoundError|PermissionError|CalledProcessError)$")
#: Frames of reading a checkpoint's files or fetching them from the Hub.
_WEIGHTS_FUNCTIONS = frozenset({"safe_open", "load_file", "safe_load_file", "load_state_dict"})
_HUB_FUNCTIONS = frozenset(
    {"hf_raise_for_status", "hf_hub_download", "snapshot_download", "_get_metadata_or_catch_error"}
)


def load_kind(failure: Failure, texts: list[tuple[str, str]], every: str) -> str | None:
    """The kind told here of ``failure`` (``texts``: the type and message of its exception and
    of its chain; ``every``: them as one text), or None."""
    if _DISK.search(unquoted_values(every)):  # the message's own words, not a value it quotes
        return DISK
    if any(_BUILD_TYPES.search(t) for t, _ in texts) or _BUILD_TEXT.search(every):
        return BUILD
    if (
        _MISSING_TOOL.search(texts[0][0])
        and {f.function for f in failure.frames} & _BUILD_FUNCTIONS
    ):
        return BUILD  # the build's own tool not found (``FileNotFoundError: ... 'ninja'``)
    if driver_mismatch(every):
        return DRIVER  # no kernel ran wrong: the driver, the runtime and the build
    if any(_WEIGHTS_TYPES.search(t) for t, _ in texts) or _WEIGHTS_TEXT.search(every):
        return WEIGHTS
    functions = {frame.function for frame in failure.frames[-3:]}
    if functions & (_WEIGHTS_FUNCTIONS | _HUB_FUNCTIONS) and texts[0][0].endswith("OSError"):
        return WEIGHTS  # the file mapped or read where the weights are (os error 19, ...)
    return None


def driver_mismatch(every: str) -> bool:
    """Whether ``every`` (an exception's and its chain's text) says, in its own words (not a
    value it quotes), that the driver, the CUDA runtime and the build do not fit each other;
    NCCL's words of it (its warning that a CUDA call failed, quoting CUDA's) are a
    communicator's set-up that failed, with the host's steps."""
    return "NCCL" not in every and _DRIVER.search(unquoted_values(every)) is not None


def checkpoint_mismatch(every: str) -> bool:
    """Whether ``every`` (an exception's and its chain's text) is torch's refusal of a
    checkpoint whose tensors have other sizes than the model's (``size mismatch for
    lm_head.weight``): a model built with another configuration than the checkpoint's, not
    weights to fetch again."""
    return _CHECKPOINT_MISMATCH.search(every) is not None


def _triton_build(failure: Failure) -> bool:
    """Whether one of the last frames of ``failure`` is Triton's build on the host: its
    launcher's C build (``triton/runtime/build.py``) or a kernel's compilation from its source
    (``compile`` in ``triton/compiler/compiler.py``, not the load of a compiled kernel onto the
    device)."""
    return any(
        _TRITON_BUILD.search(frame.file)
        or (_TRITON_COMPILER.search(frame.file) and frame.function in ("compile", "make_ir"))
        for frame in failure.frames[-4:]
    )


def cut_load_kind(failure: Failure) -> str | None:
    """The kind a traceback cut before its exception is of, where its last frames are a
    build's or the Hub's download; None otherwise."""
    functions = {frame.function for frame in failure.frames[-4:]}
    if functions & _BUILD_FUNCTIONS or _triton_build(failure):
        return BUILD
    if functions & _HUB_FUNCTIONS:
        return WEIGHTS
    return None
