"""A short example for each of the nine messages: code that raises it, next to the code fixed.

Each side is whole Python that defines what sglang's transport is given: on the last stage
``output`` (the auxiliary output add sends) and, where the message is already in it,
``tensors``; on rank 0 ``message`` (what arrived) and ``observer`` (rank 0's observer). The
error pages, ``ppaux explain`` and ``docs/errors/`` show them; the tests run every pair
through ppaux's reference transport. Torch-free: the code here is text.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EXAMPLES", "Example"]


@dataclass(frozen=True)
class Example:
    """Code that raises a page's message (``raises``) and the same code fixed (``fixed``)."""

    raises: str
    fixed: str


_OUTPUT = """class ScoresOutput:
    def __init__(self, scores):
        self.scores = scores  # a float32 tensor, one value per request
"""

_OBSERVER = """class ScoresObserver:
    def from_pp_tensors(self, tensors):
        return ScoresOutput(tensors["scores"])
"""

_SENT = 'message = {"__sampling_observer_output__.scores": torch.rand(4)}\n'

#: By message id; each shows the commonest cause of its message.
EXAMPLES: dict[str, Example] = {
    "add-unsupported": Example(
        raises=_OUTPUT + "\n\noutput = ScoresOutput(torch.rand(4))  # no to_pp_tensors()\n",
        fixed=_OUTPUT
        + """
    def to_pp_tensors(self):
        return {"scores": self.scores}


output = ScoresOutput(torch.rand(4))
""",
    ),
    "add-empty": Example(
        raises=_OUTPUT
        + """
    def to_pp_tensors(self):
        if not len(self.scores):
            return {}  # nothing to send for an empty batch
        return {"scores": self.scores}


output = ScoresOutput(torch.empty(0))
""",
        fixed=_OUTPUT
        + """
    def to_pp_tensors(self):
        return {"scores": self.scores}  # an empty tensor is a tensor


output = ScoresOutput(torch.empty(0))
""",
    ),
    "add-bad-name": Example(
        raises=_OUTPUT
        + """
    def to_pp_tensors(self):
        return {0: self.scores}  # a name must be a non-empty string


output = ScoresOutput(torch.rand(4))
""",
        fixed=_OUTPUT
        + """
    def to_pp_tensors(self):
        return {"scores": self.scores}


output = ScoresOutput(torch.rand(4))
""",
    ),
    "add-not-tensor": Example(
        raises=_OUTPUT
        + """
    def to_pp_tensors(self):
        return {"scores": self.scores.tolist()}  # a list


output = ScoresOutput(torch.rand(4))
""",
        fixed=_OUTPUT
        + """
    def to_pp_tensors(self):
        return {"scores": self.scores.contiguous()}  # a tensor


output = ScoresOutput(torch.rand(4))
""",
    ),
    "add-duplicate": Example(
        raises=_OUTPUT
        + """
    def to_pp_tensors(self):
        return {"scores": self.scores}


# Code before add already wrote the key into the message.
tensors = {"__sampling_observer_output__.scores": torch.rand(4)}
output = ScoresOutput(torch.rand(4))
""",
        fixed=_OUTPUT
        + """
    def to_pp_tensors(self):
        return {"scores": self.scores}


tensors = {}  # a fresh message for each batch: add alone writes the key
output = ScoresOutput(torch.rand(4))
""",
    ),
    "pop-no-observer": Example(
        raises=_SENT + "observer = None  # rank 0 runs without the observer the last stage has\n",
        fixed=_OUTPUT
        + "\n\n"
        + _OBSERVER
        + "\n\n"
        + _SENT
        + "observer = ScoresObserver()  # the same observer on every stage\n",
    ),
    "pop-unsupported": Example(
        raises=_SENT
        + """

class ScoresObserver:
    pass  # no from_pp_tensors()


observer = ScoresObserver()
""",
        fixed=_OUTPUT + "\n\n" + _OBSERVER + "\n\n" + _SENT + "observer = ScoresObserver()\n",
    ),
    "pop-non-tensor": Example(
        raises=_OUTPUT
        + "\n\n"
        + _OBSERVER
        + """

# The last stage's own code wrote a list under the key, after add.
message = {"__sampling_observer_output__.scores": [0.1, 0.2, 0.3]}
observer = ScoresObserver()
""",
        fixed=_OUTPUT
        + "\n\n"
        + _OBSERVER
        + """

message = {"__sampling_observer_output__.scores": torch.rand(3)}
observer = ScoresObserver()
""",
    ),
    "pop-not-reconstructed": Example(
        raises=_OUTPUT
        + """

class ScoresObserver:
    def from_pp_tensors(self, tensors):
        self.output = ScoresOutput(tensors["scores"])  # never returned


"""
        + _SENT
        + "observer = ScoresObserver()\n",
        fixed=_OUTPUT + "\n\n" + _OBSERVER + "\n\n" + _SENT + "observer = ScoresObserver()\n",
    ),
}
