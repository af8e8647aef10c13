"""Whether the stages of a deployment can talk: fingerprints of a host (:mod:`.fingerprint`),
their comparison into findings (:mod:`.compare`) and a matrix (:mod:`.matrix`), gathering them
over torch.distributed (:mod:`.gather`) and the live-patch check.
"""

from ppaux._lazy import lazy_exports

_EXPORTS = {
    "Fingerprint": "fingerprint",
    "FingerprintError": "fingerprint",
    "collect": "fingerprint",
    "load": "fingerprint",
    "load_paths": "fingerprint",
    "loads": "fingerprint",
    "compare": "compare",
    "matrix": "matrix",
    "Stage": "stage",
    "MissingRank": "stage",
    "make_stages": "stage",
    "connect": "gather",
    "SetupError": "gather",
    "GatherError": "gather",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
