"""Everything ppaux knows of sglang itself, as data: the names and paths its PP messages and
files use (:mod:`.names`), the nine messages of its transport with their rules and sides
(:mod:`.messages`) and their recognition in pasted text (:mod:`.message_search`), the release
table (:mod:`.releases`), where each release raises its messages (:mod:`.raise_sites`) and the
parameters of the functions the capture wraps (:mod:`.hook_shapes`), and the words of the
capability verdict (:mod:`.verdicts`). Reading an sglang tree is
:mod:`ppaux.sglang_source`'s.

Torch-free; nothing here imports sglang's package, and nothing of ppaux but its lazy face.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
