"""A check's error reaches the caller through an ``except`` clause that always raises again
(``except X: raise``, ``raise Y from error``): the check counts. Through a ``with`` it counts
where the context manager passes every error on (``open()``, ``nullcontext()``, a
``threading`` lock, ``torch.no_grad()``), not under ``contextlib.suppress``, and where ppaux
cannot tell (a manager of the file's own, ``self._lock``, a name the file binds again) what
the function refuses is unknown, with the line. Each expected verdict is written by hand."""

from __future__ import annotations

import pytest
from test_capability_checks_that_hold import RECEIVER_CHECK, TENSOR_CHECK, _edited, _indent


def _in_try(handlers: str) -> str:
    return "        try:\n" + _indent(TENSOR_CHECK) + handlers


def _in_with(manager: str) -> str:
    return f"        with {manager}:\n" + _indent(TENSOR_CHECK)


#: The tensor check wrapped: (edit, head of the file, whether the check counts).
WRAPPED = {
    "except RuntimeError: raise": (
        _in_try("        except RuntimeError:\n            raise\n"),
        "",
        True,
    ),
    "except raising another error from it": (
        _in_try(
            "        except RuntimeError as error:\n            raise ValueError() from error\n"
        ),
        "",
        True,
    ),
    "except that logs, then raises": (
        _in_try("        except Exception:\n            print(label)\n            raise\n"),
        "",
        True,
    ),
    "two handlers, both raising": (
        _in_try(
            "        except ValueError:\n            raise\n        except Exception:\n"
            "            raise RuntimeError('again')\n"
        ),
        "",
        True,
    ),
    "except: pass": (_in_try("        except RuntimeError:\n            pass\n"), "", False),
    "a handler that may return before its raise": (
        _in_try(
            "        except RuntimeError:\n            if label:\n                return\n"
            "            raise\n"
        ),
        "",
        False,
    ),
    "one handler raising, the next swallowing": (
        _in_try(
            "        except ValueError:\n            raise\n        except Exception:\n"
            "            pass\n"
        ),
        "",
        False,
    ),
    "a raise inside an if of the handler": (
        _in_try("        except RuntimeError:\n            if label:\n                raise\n"),
        "",
        False,
    ),
    "with open()": (_in_with('open("/dev/null")'), "", True),
    "with contextlib.nullcontext()": (
        _in_with("contextlib.nullcontext()"),
        "import contextlib\n",
        True,
    ),
    "with nullcontext() imported from contextlib": (
        _in_with("nullcontext()"),
        "from contextlib import nullcontext\n",
        True,
    ),
    "with threading.Lock()": (_in_with("threading.Lock()"), "import threading\n", True),
    "with a module lock": (_in_with("_LOCK"), "import threading\n_LOCK = threading.Lock()\n", True),
    "with torch.no_grad()": (_in_with("torch.no_grad()"), "", True),
    "with nullcontext() and suppress": (
        _in_with("contextlib.nullcontext(), contextlib.suppress(RuntimeError)"),
        "import contextlib\n",
        False,
    ),
    "with suppress imported from contextlib": (
        _in_with("suppress(RuntimeError)"),
        "from contextlib import suppress\n",
        False,
    ),
}


@pytest.mark.parametrize("case", sorted(WRAPPED))
def test_a_wrapped_check_counts_where_its_error_reaches_the_caller(tmp_path, case):
    edit, head, counts = WRAPPED[case]
    cap = _edited(tmp_path, TENSOR_CHECK, edit, head=head)
    assert cap.transport == "present", cap.unknown
    assert cap.sender_checks is not None, cap.unknown
    assert cap.sender_checks["tensors"] is counts
    assert cap.sender_validates is counts
    assert cap.receiver_validates is True


#: Managers ppaux cannot tell swallow or not: (manager, head of the file).
UNTOLD = {
    "an attribute": ("label.lock", ""),
    "a name bound twice": ("_LOCK", "import threading\n_LOCK = threading.Lock()\n_LOCK = None\n"),
    "a manager of the file's own": ("guard()", "def guard():\n    return None\n"),
    "open bound by the file": ('open("/dev/null")', "def open(*args):\n    return None\n"),
    "nullcontext imported twice": (
        "nullcontext()",
        "from contextlib import nullcontext\nfrom mine import nullcontext\n",
    ),
    "a module the file binds again": ("threading.Lock()", "import threading\nthreading = None\n"),
    "an unknown module's manager": ("mine.guard()", "import mine\n"),
}


@pytest.mark.parametrize("case", sorted(UNTOLD))
def test_a_check_under_a_manager_that_may_swallow_makes_the_checks_unknown(tmp_path, case):
    manager, head = UNTOLD[case]
    cap = _edited(tmp_path, TENSOR_CHECK, _in_with(manager), head=head)
    assert cap.transport == "present", cap.unknown
    assert cap.sender_checks is None and cap.sender_validates is None
    assert "cannot tell swallows its error or not" in cap.unknown["sender_checks"]
    assert cap.receiver_validates is True


def test_a_receiver_check_under_nullcontext_counts(tmp_path):
    edit = "    with contextlib.nullcontext():\n" + _indent(RECEIVER_CHECK)
    cap = _edited(tmp_path, RECEIVER_CHECK, edit, head="import contextlib\n")
    assert cap.receiver_checks is not None and cap.receiver_checks["tensors"] is True
    assert cap.receiver_validates is True
