"""Reading sglang server logs for the root of a pipeline-parallel failure: :func:`triage_paths`,
the job behind ``ppaux triage``. Logs are streamed in one pass (:mod:`.scanner`), their lines
peeled of collectors' and launchers' prefixes (:mod:`.lineformat`), tracebacks reassembled
(:mod:`.records`, :mod:`.reading`), grouped into incidents (:mod:`.incidents`), their frames
read (:mod:`.frames`) and the next commands suggested (:mod:`.steps`). Torch-free.
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports

if TYPE_CHECKING:
    from ppaux.triage.frames import (
        Build,
    )
    from ppaux.triage.incidents import (
        Incident,
    )
    from ppaux.triage.job import (
        RULE_OF_MESSAGE,
        triage_paths,
    )
    from ppaux.triage.lineformat import (
        Envelope,
        Launcher,
        LogLine,
        parse_line,
    )
    from ppaux.triage.reading import (
        LogReading,
        read_log,
    )
    from ppaux.triage.records import (
        Event,
        Failure,
        Frame,
    )
    from ppaux.triage.sources import (
        LOG_SUFFIXES,
        LogOpenError,
        LogSource,
    )
    from ppaux.triage.zones import (
        LocalZone,
        TriageConfigError,
        local_zone,
    )

#: Each public name and the module that holds it, imported on first use.
_EXPORTS = {
    "Build": "frames",
    "Envelope": "lineformat",
    "Event": "records",
    "Failure": "records",
    "Frame": "records",
    "Incident": "incidents",
    "Launcher": "lineformat",
    "LocalZone": "zones",
    "LogLine": "lineformat",
    "LogOpenError": "sources",
    "LogReading": "reading",
    "LogSource": "sources",
    "LOG_SUFFIXES": "sources",
    "RULE_OF_MESSAGE": "job",
    "TriageConfigError": "zones",
    "local_zone": "zones",
    "parse_line": "lineformat",
    "read_log": "reading",
    "triage_paths": "job",
}

__all__ = [
    "LOG_SUFFIXES",
    "RULE_OF_MESSAGE",
    "Build",
    "Envelope",
    "Event",
    "Failure",
    "Frame",
    "Incident",
    "Launcher",
    "LocalZone",
    "LogLine",
    "LogOpenError",
    "LogReading",
    "LogSource",
    "TriageConfigError",
    "local_zone",
    "parse_line",
    "read_log",
    "triage_paths",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
