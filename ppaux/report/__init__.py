"""Findings, reports and everything that turns them into output: the rule catalogue,
the gate (``--fail-on``, ``--select``/``--ignore``, configuration) and the formats.

Torch-free. Every other area produces :class:`Finding` objects and :class:`Report` documents;
this package owns their shape, their codes and their rendering.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
