"""The attributes ppaux sets on the functions it installs, so that it (and ``ppaux capture``'s
culprit search) can tell its own wrappers and hooks from anyone else's.

Torch-free, and it imports nothing.
"""

__all__ = ["HOOK_MARK", "WRAPPER_MARK"]

#: Set on the hooks ppaux registers with sglang's HookRegistry (the plugin's form).
HOOK_MARK = "__ppaux_capture_hook__"
#: Set on the wrappers install() puts in place of a patched function or method.
WRAPPER_MARK = "__ppaux_capture__"
