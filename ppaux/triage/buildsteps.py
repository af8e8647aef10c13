"""An extension module that does not load against the environment it runs in: ``ImportError:
.../sgl_kernel/common_ops.abi3.so: undefined symbol: cuGreenCtxStreamCreate``. Its build expects
a symbol that the torch, CUDA runtime or driver loaded beside it does not define: it was built
for other versions than those installed. Told from the exception's type and message (an
``ImportError`` or ``OSError`` saying ``undefined symbol``); the steps name the package whose
build to check and what to check it against.
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.records import Failure
from ppaux.triage.stepdata import Step, from_log

__all__ = [
    "SYMBOL_CAUSE",
    "build_steps",
    "build_words",
    "quoted_symbol",
    "symbol_in_text",
    "undefined_symbol",
]

#: The loader's words: ``<library>: undefined symbol: <symbol>`` (the symbol as the linker names
#: it: a C name, or a C++ one mangled).
_UNDEFINED = lazy(
    r"(?P<library>/?[^\s:]{1,400}\.so(?:\.[\w.]{1,40})?): undefined symbol: "
    r"(?P<symbol>[\w.@$]{1,400})"
)
#: The types a library that does not load raises from: Python's import, ctypes' load.
_TYPES = lazy(r"(?:^|\.)(?:ImportError|ModuleNotFoundError|OSError)$")
#: The package a library belongs to: the folder under site-packages (or dist-packages).
_PACKAGE = lazy(r"(?:site|dist)-packages/(?P<package>[A-Za-z0-9_.-]{1,100})/")
#: A mangled C++ name of torch's (``_ZN3c10...``, ``_ZN2at...``, ``_ZNK5torch...``).
_TORCH_SYMBOL = lazy(r"^_ZN[KR]?\d{1,3}(?:c10|at|torch|caffe2)")
#: A symbol of CUDA's driver API (``cuGreenCtxStreamCreate``, ``cuModuleGetFunction``): what
#: the driver, not the runtime, defines.
_DRIVER_SYMBOL = lazy(r"^cu[A-Z]\w{1,200}$")


#: The cause a traceback cut before its exception is given (:attr:`~ppaux.triage.records.
#: Failure.warned`) where a record above it quotes a library's undefined symbol
#: (:func:`quoted_symbol`).
SYMBOL_CAUSE = "undefined-symbol"
#: A record that quotes the import it caught (vLLM's ``Failed to import from vllm._C with
#: ImportError('<library>: undefined symbol: <symbol>')``, a logger's ``ImportError: ...``).
_QUOTED_TYPE = lazy(r"\b(?:ImportError|ModuleNotFoundError|OSError)(?:\(['\"]?|: )")


def quoted_symbol(text: str) -> tuple[str, str] | None:
    """(the library, the symbol) where the record ``text`` quotes an import that failed for an
    undefined symbol (a warning logged as the program went on), else None."""
    if "undefined symbol" not in text:
        return None
    typed = _QUOTED_TYPE.search(text[:2000])
    found = None if typed is None else _UNDEFINED.search(text[:2000], typed.end())
    return None if found is None else (found.group("library"), found.group("symbol"))


def undefined_symbol(failure: Failure) -> tuple[str, str] | None:
    """(the library, the symbol) where ``failure`` (its exception or one of its chain) is a
    library that does not load for a symbol it needs, else None; for a traceback cut before
    its exception, where a record above it quoted such an import (:data:`SYMBOL_CAUSE`)."""
    if failure.exception is None and failure.warned and failure.warned[0] == SYMBOL_CAUSE:
        found = _UNDEFINED.search(failure.warned[1])
        return None if found is None else (found.group("library"), found.group("symbol"))
    said = [(failure.exception or "", failure.message), *failure.chain]
    for exception, message in said:
        if not _TYPES.search(exception):
            continue
        found = _UNDEFINED.search(message[:2000])
        if found is not None:
            return found.group("library"), found.group("symbol")
    return None


def symbol_in_text(text: str) -> tuple[str, str] | None:
    """(the library, the symbol) where a line of ``text`` (pasted, its last 50 lines read) is
    an ``ImportError`` or ``OSError`` of a library that does not load for a symbol it needs,
    else None."""
    for line in reversed(text.strip().splitlines()[-50:]):
        exception, _, message = line.strip().partition(": ")
        if not _TYPES.search(exception.rsplit(" ", 1)[-1]):
            continue
        found = _UNDEFINED.search(message[:2000])
        if found is not None:
            return found.group("library"), found.group("symbol")
    return None


def build_words(symbol: str) -> str:
    """What an undefined ``symbol`` says of the build that needs it, and what to do."""
    return _against(symbol)


def _against(symbol: str) -> str:
    """What the symbol says the build was made for, and what to do."""
    built = (
        "Install the package's build made for the torch and CUDA installed (its release notes "
        "or wheel names say which), or build it from source there"
    )
    if _DRIVER_SYMBOL.match(symbol):
        return (
            "a function of CUDA's driver API: the driver installed is older than the CUDA the "
            "build was made for (nvidia-smi shows the highest CUDA it supports). Upgrade the "
            "driver, or install the package's build made for a CUDA the driver supports"
        )
    if _TORCH_SYMBOL.match(symbol):
        return f"a function of torch's: the build was made for another torch release. {built}"
    return f"the build was made for another torch, CUDA runtime or driver. {built}"


def build_steps(library: str, symbol: str) -> list[Step]:
    """What to compare where a library does not load for ``symbol``: the package's version and
    build against torch's, CUDA's and the driver's."""
    where = "the failing process's environment"
    package = _PACKAGE.search(library)
    steps = [
        Step(
            None,
            where,
            f"a compiled extension does not load: it needs {symbol[:200]}, which nothing loaded "
            f"beside it defines; {_against(symbol)}",
        ),
        Step(
            ("python3", "-c", "import torch; print(torch.__version__, torch.version.cuda)"),
            where,
            "the torch release and the CUDA runtime it was built for",
        ),
        Step(
            ("nvidia-smi",),
            "the failing process's host",
            "the driver and the highest CUDA it supports",
        ),
    ]
    if package is not None:
        steps.append(
            from_log(
                ("python3", "-m", "pip", "show", "--"),
                package.group("package"),
                "the package",
                where,
                "the version of the package whose library does not load",
            )
        )
    return steps
