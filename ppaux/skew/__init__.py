"""Whether the stages of a deployment can talk: fingerprints of a host (:mod:`.fingerprint`),
their comparison into findings (:mod:`.compare`) and a matrix (:mod:`.matrix`), gathering them
over torch.distributed (:mod:`.gather`) and the live-patch check.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
