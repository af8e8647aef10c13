"""Reading sglang server logs for the root of a pipeline-parallel failure: :func:`triage_paths`,
the job behind ``ppaux triage``. Logs are streamed in one pass (:mod:`.scanner`), their lines
peeled of collectors' and launchers' prefixes (:mod:`.lineformat`), tracebacks reassembled
(:mod:`.records`, :mod:`.reading`), grouped into incidents (:mod:`.incidents`), their frames
read (:mod:`.frames`) and the next commands suggested (:mod:`.steps`). Torch-free.
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports

if TYPE_CHECKING:
    from ppaux.triage.frames import Build as Build
    from ppaux.triage.incidents import Incident as Incident
    from ppaux.triage.job import RULE_OF_MESSAGE as RULE_OF_MESSAGE
    from ppaux.triage.job import triage_paths as triage_paths
    from ppaux.triage.lineformat import Envelope as Envelope
    from ppaux.triage.lineformat import Launcher as Launcher
    from ppaux.triage.lineformat import LogLine as LogLine
    from ppaux.triage.lineformat import parse_line as parse_line
    from ppaux.triage.reading import LogReading as LogReading
    from ppaux.triage.reading import read_log as read_log
    from ppaux.triage.records import Event as Event
    from ppaux.triage.records import Failure as Failure
    from ppaux.triage.records import Frame as Frame
    from ppaux.triage.sources import LogOpenError as LogOpenError
    from ppaux.triage.sources import LogSource as LogSource

_EXPORTS = {
    "Build": "frames",
    "Envelope": "lineformat",
    "Event": "records",
    "Failure": "records",
    "Frame": "records",
    "Incident": "incidents",
    "Launcher": "lineformat",
    "LogLine": "lineformat",
    "LogOpenError": "sources",
    "LogReading": "reading",
    "LogSource": "sources",
    "RULE_OF_MESSAGE": "job",
    "parse_line": "lineformat",
    "read_log": "reading",
    "triage_paths": "job",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
