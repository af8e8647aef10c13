"""Checks for an integration's own test suite: is this sampling observer PP-safe?
(:func:`assert_pp_safe`, :func:`pp_safety_report`, and the pytest fixture ``pp_safe`` of
:mod:`ppaux.testing.plugin`). Imports torch when a check runs, not before.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
