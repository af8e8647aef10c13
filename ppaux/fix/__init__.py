"""Rewriting dumps so that rank 0 can pop them: :func:`tensorize_dump`, the job behind
``ppaux tensorize``. This is part of the torch wing: the rewrite imports torch when it runs.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
