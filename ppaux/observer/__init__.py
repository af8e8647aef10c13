"""Checking a sampling observer before it ships: ``ppaux check-observer`` and
``ppaux.testing.assert_pp_safe``.

The target (``module:attr`` or ``file.py:attr``: an observer, a class or a zero-argument
factory) runs in a child process of its own (:mod:`.child`, :mod:`.worker`): there it is loaded,
which runs its code, and driven as sglang's model runner drives it (:mod:`.drive`, on the
stand-ins of :mod:`.standins` or sglang's own classes, :mod:`.requests`); each output goes down
the single-stage path and the PP path through one of replay's wires (:mod:`.paths`), and what
happened is sent back as records (:mod:`.runner`, :mod:`.framing`). This process compares
them (:mod:`.compare`) and judges them into findings PP701 - PP718 (:mod:`.judge`,
:mod:`.check`), importing neither torch nor the target. An object already in hand is run
in-process and judged the same way. Loading the face imports nothing.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
