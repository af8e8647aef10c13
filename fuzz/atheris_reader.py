"""Coverage-guided fuzzing of the dump reader with atheris (libFuzzer), by hand.

Each input goes through ``reader_harness.check_input``: the whole ``ppaux inspect`` pipeline,
with its promises checked (no exception, nothing run, UTF-8 report, one-line problems, file
unchanged). A broken promise is a crash: libFuzzer saves the input as ``crash-<sha1>``, which
then belongs in ``fixtures/make_adversarial.py`` as a case and a test.

Set up and run (atheris is not a dependency of ppaux; install it where you fuzz)::

    pip install atheris
    mkdir -p /tmp/ppaux-fuzz && python fuzz/atheris_reader.py -seed_corpus
    python fuzz/atheris_reader.py /tmp/ppaux-fuzz -max_total_time=600 -rss_limit_mb=2048 \\
        -timeout=20 -print_final_stats=1

``-seed_corpus`` copies the fixtures and the adversarial corpus into ``/tmp/ppaux-fuzz`` first.
Inputs are checked with small limits (see ``LIMITS``) so that every refusal path is reachable by
small inputs.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["ppaux"]):
    import reader_harness

    from ppaux.limits import Limits

REPO = Path(__file__).resolve().parent.parent
SEEDS = Path("/tmp/ppaux-fuzz")
LIMITS = Limits(
    max_pickle_bytes=1_000_000, max_depth=30, max_items=20_000, max_memo=2_000, max_zip_records=50
)
_WORKDIR = Path(tempfile.mkdtemp(prefix="ppaux-atheris-"))


def test_one_input(data: bytes) -> None:
    """libFuzzer's entry point: one input through the harness."""
    reader_harness.check_input(data, _WORKDIR, limits=LIMITS)


def _seed() -> None:
    SEEDS.mkdir(parents=True, exist_ok=True)
    for path in sorted((REPO / "fixtures").glob("*/*")):
        if path.suffix in (".pt", ".pkl") and path.stat().st_size <= 1_000_000:
            shutil.copy(path, SEEDS / f"{path.parent.name}-{path.name}")


def main() -> None:
    """Seed the corpus folder (``-seed_corpus``) or fuzz (libFuzzer's arguments)."""
    if "-seed_corpus" in sys.argv:
        _seed()
        return
    reader_harness.warm_up()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
