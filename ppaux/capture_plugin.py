"""The entry point sglang's plugin loader calls (``ppaux.capture_plugin:register``).

The plugin lives in :mod:`ppaux.capture.plugin`; this module keeps the entry point that
installed copies of ppaux registered in the ``sglang.srt.plugins`` group working.
"""

from ppaux.capture.plugin import register

__all__ = ["register"]
