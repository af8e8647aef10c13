"""An sglang installation read as source: finding and reading an sglang tree or wheel
(:mod:`.tree`), loading its transport module (:mod:`.loader`), source digests and the
capability analysis (:mod:`.analysis`, its verdict :class:`Capability`). What ppaux knows of
sglang itself, the names, messages and release table these are read against, is
:mod:`ppaux.sglang`'s.

Torch-free; nothing here imports sglang's package.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
