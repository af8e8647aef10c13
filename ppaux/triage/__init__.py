"""Reading sglang server logs for the root of a pipeline-parallel failure: :func:`triage_paths`,
the job behind ``ppaux triage``. Logs are streamed in one pass (:mod:`.scanner`), their lines
peeled of collectors' and launchers' prefixes (:mod:`.lineformat`), tracebacks reassembled
(:mod:`.records`, :mod:`.tracebacks`, :mod:`.reading`), grouped into incidents
(:mod:`.incidents`), their frames read (:mod:`.frames`) and the next commands suggested
(:mod:`.steps`). Torch-free.
"""

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
