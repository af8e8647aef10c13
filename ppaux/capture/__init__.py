"""Recording the failing dict inside a running sglang.

Modules, by what they hold: :mod:`.settings` (the ``PPAUX_CAPTURE_*`` settings and every limit),
:mod:`.state` (the one state object of the process), :mod:`.hooks` (the hooks around sglang's
add and pop, and the plugin's registration), :mod:`.hop_hooks` (the hooks on the scheduler's
and the PP group's methods, and every fixed-signature wrapper), :mod:`.markers` (the marks on
ppaux's own hooks and wrappers), :mod:`.hops` (the hops of sglang's output path),
:mod:`.checkpoints` (the looks at each hop, the trail), :mod:`.culprit` (the code between the
last clean and the first dirty hop), :mod:`.patching` (:func:`install` / :func:`uninstall`),
:mod:`.plugin` (the sglang plugin), :mod:`.writer` (writing one capture), :mod:`.host`
(versions, host, ranks), :mod:`.directory` (the capture directory: layout, bounds, what it
holds), :mod:`.environment` (would the plugin capture in this environment) and :mod:`.reports`
(the reports of ``ppaux capture``).
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
