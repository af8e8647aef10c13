"""Turns ppaux capture on in every Python process started with this directory on PYTHONPATH.

For the tests that run sglang's own processes (tests/sglang_runtime_driver.py), which know
nothing of ppaux: ``ppaux.capture.install($PPAUX_CAPTURE_DIR)`` runs at interpreter start, before
sglang is imported, as a launcher of one's own would call it.
"""

import os

if os.environ.get("PPAUX_CAPTURE_DIR"):
    from ppaux import capture

    capture.install(os.environ["PPAUX_CAPTURE_DIR"])
