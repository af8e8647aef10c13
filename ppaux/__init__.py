"""ppaux: tools for sglang's pipeline-parallel auxiliary-output transport.

Importing this package is cheap: it never imports torch. The reference transport
(:mod:`ppaux.transport`) and the replay and capture modules import torch when they are used.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
