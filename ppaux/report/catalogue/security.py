"""Rules about what loading a file would execute (codes PP2xx)."""

from __future__ import annotations

from ppaux.report.findings import Rule, Severity

__all__ = ["RULES"]

RULES = (
    Rule(
        code="PP201",
        name="unsafe-global",
        severity=Severity.ERROR,
        summary="The pickle references a global outside the tensor allowlist.",
        explanation=(
            "Loading this file with torch.load(weights_only=False) or pickle would import this "
            "name and, where the pickle calls it, run it. ppaux never imports or calls it: it "
            "records the name and its arguments."
        ),
        causes=(
            "A custom class or function saved inside the tensor dict (for example an output "
            "object instead of its tensors).",
            "A hostile file crafted to run code when it is loaded.",
        ),
        fix="Do not load the file with weights_only=False. If the object is yours, save its "
        "tensors instead; if you did not expect it, treat the file as hostile.",
        example="os.system('touch /tmp/pwned')",
        area="security",
    ),
    Rule(
        code="PP202",
        name="read-mismatch",
        severity=Severity.ERROR,
        summary="torch.load could read this file differently from ppaux: refused unchecked.",
        explanation=(
            "ppaux reads a file the way torch.load does (the same zip directory, the same "
            "data.pkl record, the same pickles). This file is built so that another reader, or "
            "torch itself, could see something else: two zip directories or an end record whose "
            "offset disagrees with the directory's position, names that differ only in case, "
            "overlapping records, data after the archive, a TorchScript archive (torch.load hands "
            "it to torch.jit.load, which runs its code), an old tar-format checkpoint, or a "
            "format that ppaux does not interpret. ppaux does not guess which view torch takes: "
            "the file is not checked, and must not be taken as clean."
        ),
        causes=(
            "A hostile file made to show a checker one thing and torch.load another.",
            "A file written or repaired by a tool other than torch.save.",
        ),
        fix="Do not load the file with weights_only=False. If it is yours, load it where that is "
        "safe and save its tensors again with torch.save; if you did not expect it, treat it "
        "as hostile.",
        example="zip directory at offset 4096 by the end record, at 4160 by its position",
        area="security",
    ),
    Rule(
        code="PP203",
        name="torchscript-archive",
        severity=Severity.ERROR,
        summary="A TorchScript archive: loading it runs code.",
        explanation=(
            "torch.load(weights_only=False) hands any zip whose record list holds "
            "'constants.pkl' to torch.jit.load, which compiles and runs the archive's "
            "TorchScript code; torch.jit.load itself finds the record whatever the case of its "
            "name. ppaux lists the records as torch's reader does: each name copied into a "
            "512-byte buffer (so a name ends at its first NUL byte, or is cut after 511 bytes) "
            "and stripped of the archive's folder. A record that reads as constants.pkl in any "
            "of these ways makes the file an executable archive, whatever its data.pkl holds; "
            "ppaux does not read it further."
        ),
        causes=(
            "A model saved with torch.jit.save, or a file crafted to look like a checkpoint.",
            "A hostile file whose constants.pkl hides behind a long or NUL-cut name.",
        ),
        fix="Do not load the file with torch.load(weights_only=False) or torch.jit.load. If it "
        "is yours, load it where that is safe and save its tensors again with torch.save.",
        example="record 'archive/constants.pkl' (torch.load dispatches to torch.jit.load)",
        area="security",
    ),
)
