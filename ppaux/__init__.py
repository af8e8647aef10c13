"""ppaux: tools for sglang's pipeline-parallel auxiliary-output transport.

Importing this package is cheap: it never imports torch, and the names of its face (listed in
``__init__.pyi``) are imported on first use. The areas are subpackages: :mod:`ppaux.dump`
(reading dumps, ``inspect``), :mod:`ppaux.skew` (fingerprints, ``check-skew``),
:mod:`ppaux.replay` (the torch wing: transport, wires, ``replay``), :mod:`ppaux.capture`
(recording inside sglang), :mod:`ppaux.sglang` (what ppaux knows of sglang) and
:mod:`ppaux.report` (findings, formats); :mod:`ppaux.fix` rewrites dumps (``tensorize``, torch
wing) and :mod:`ppaux.guard` checks a PP tensor dict in the code that writes it.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
