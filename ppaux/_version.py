"""The version of ppaux, said once: ``pyproject.toml`` reads it from here, and every module
that writes it into a report or a file imports it from here (never from :mod:`ppaux`, whose
face sits above every area)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
