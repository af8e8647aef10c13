"""Reading captured PP tensor dicts without torch and without running code from them: the
pickle interpreter and its allowlist, the value model, the file formats (zip, legacy, ppaux
captures), the payloads found in a dump, the checks that predict sglang's error, and
:func:`inspect_paths`, the job behind ``ppaux inspect``.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
