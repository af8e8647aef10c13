"""A tensor with attributes set on it, as torch.save writes it (torch 2.13: a plain tensor
through ``_rebuild_from_type_v2`` with its ``__dict__`` as state, a Parameter through
``_rebuild_parameter_with_state``): in the writer's grammar, clean, each attribute described by
name, type and value as torch.load sets it; an auxiliary one loses them on the wire (PP109, as
a subclass does); tensorize writes them back; a value that is not plain data keeps its own
findings."""

from __future__ import annotations

import collections
import zipfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_paths
from ppaux.fix.tensorize import tensorize_dump
from ppaux.sglang import OUTPUT_PREFIX

pytestmark = pytest.mark.torch


def _with(tensor: torch.Tensor, **attributes: object) -> torch.Tensor:
    for name, value in attributes.items():
        setattr(tensor, name, value)
    return tensor


def _inspected(path: Path) -> tuple[list[tuple[str, str, str]], list[dict]]:
    report = inspect_paths([str(path)])
    assert not report.problems, report.problems
    entries = report.data["files"][0]["payloads"][0]["entries"]
    return [(f.code, f.severity.value, f.message) for f in report.findings], entries


def _as_torch_reads(tensor: torch.Tensor) -> list[dict[str, str]]:
    """The attributes torch.load gave the tensor, described from torch's object."""
    return [
        {"name": name, "type": type(value).__name__, "value": repr(value)}
        for name, value in vars(tensor).items()
    ]


@pytest.mark.parametrize(
    "make",
    [
        lambda: _with(torch.arange(6.0).reshape(2, 3), foo=1),
        lambda: _with(torch.ones(3), label="x", scale=0.5, ids=[1, 2]),
        lambda: _with(torch.nn.Parameter(torch.ones(3)), bar="x"),
    ],
    ids=["tensor", "tensor-3", "parameter"],
)
def test_a_saved_tensors_attributes_are_clean_and_described(tmp_path, make):
    path = tmp_path / "t.pt"
    torch.save({"t": make()}, path)
    read = [torch.load(path, weights_only=wo)["t"] for wo in (True, False)]
    assert _as_torch_reads(read[0]) == _as_torch_reads(read[1]) != []
    found, entries = _inspected(path)
    assert found == []
    assert entries[0]["attributes"] == _as_torch_reads(read[0])


def test_a_tensor_without_attributes_has_no_attributes_field(tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"t": torch.ones(2)}, path)
    assert "attributes" not in _inspected(path)[1][0]


def test_an_auxiliary_tensors_attributes_are_lost_on_the_wire(tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"h": torch.ones(2), OUTPUT_PREFIX + "scores": _with(torch.ones(2), foo=1)}, path)
    assert torch.load(path)[OUTPUT_PREFIX + "scores"].foo == 1
    found, _ = _inspected(path)
    assert [(code, level) for code, level, _ in found] == [("PP109", "warning")], found
    assert "has attributes set on it (foo)" in found[0][2]


class _Custom:
    pass


def test_an_attribute_that_is_not_plain_data_keeps_its_security_finding(tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"t": _with(torch.ones(2), obj=_Custom(), fn=collections.Counter)}, path)
    with pytest.raises(Exception, match="Weights only load failed"):
        torch.load(path, weights_only=True)
    found, _ = _inspected(path)
    codes = {code for code, _, _ in found}
    assert "PP201" in codes and "PP202" not in codes, found
    assert any("_Custom" in message for _, _, message in found)


def test_tensorize_writes_the_attributes_back(tmp_path):
    source, output = tmp_path / "in.pt", tmp_path / "out.pt"
    value = {"t": _with(torch.ones(2), foo=1, tag="a"), OUTPUT_PREFIX + "s": [1.0, 2.0]}
    torch.save(value, source)
    result = tensorize_dump(str(source), str(output))
    assert not result.refusals, result.refusals
    loaded = torch.load(output)
    assert torch.equal(loaded[OUTPUT_PREFIX + "s"], torch.tensor([1.0, 2.0]))
    assert vars(loaded["t"]) == {"foo": 1, "tag": "a"}


_PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    attributes=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
            lambda n: not hasattr(torch.ones(1), n)
        ),
        _PLAIN,
        min_size=1,
        max_size=4,
    )
)
def test_any_plain_attributes_are_clean_and_named_as_torch_reads_them(tmp_path, attributes):
    path = tmp_path / "t.pt"
    torch.save({"t": _with(torch.ones(2), **attributes)}, path)
    read = torch.load(path, weights_only=True)["t"]
    found, entries = _inspected(path)
    assert found == []
    assert [a["name"] for a in entries[0]["attributes"]] == list(vars(read))
    assert [a["type"] for a in entries[0]["attributes"]] == [
        type(v).__name__ for v in vars(read).values()
    ]


def test_the_json_report_with_attributes_follows_the_schema(tmp_path):
    import json

    import jsonschema
    from helpers import REPO

    from ppaux.report.formats.json import render

    path = tmp_path / "t.pt"
    torch.save({"t": _with(torch.ones(2), foo=1, bar={"a": [1]})}, path)
    report = json.loads(render(inspect_paths([str(path)])))
    jsonschema.validate(report, json.loads((REPO / "docs" / "report.schema.json").read_text()))
    names = [a["name"] for a in report["files"][0]["payloads"][0]["entries"][0]["attributes"]]
    assert names == list(vars(torch.load(path)["t"]))


def test_attributes_past_the_listed_ones_are_counted(tmp_path):
    import json

    import jsonschema
    from helpers import REPO

    from ppaux.report.formats.json import render
    from ppaux.report.formats.text import render as text

    path = tmp_path / "t.pt"
    torch.save({"t": _with(torch.ones(2), **{f"a{i}": i for i in range(25)})}, path)
    total = len(vars(torch.load(path)["t"]))
    report = inspect_paths([str(path)])
    (entry,) = report.data["files"][0]["payloads"][0]["entries"]
    assert len(entry["attributes"]) + entry["attributes_omitted"] == total == 25
    document = json.loads(render(report))
    jsonschema.validate(document, json.loads((REPO / "docs" / "report.schema.json").read_text()))
    (note,) = [n for n in report.notes if "attributes" in n]
    assert note.endswith(f"a19=19 (int), and {total - len(entry['attributes'])} more")
    assert "a19=19 (int), and 5 more" in " ".join(text(report).split())  # wrapped to a width


def test_a_read_only_field_torch_save_wrote_names_torch_save_among_the_causes(tmp_path):
    from ppaux.report import RULES

    value = torch.ones(2)
    value.__dict__["is_leaf"] = True  # torch.save writes it; torch.load cannot set it
    path = tmp_path / "ro.pt"
    torch.save({"t": value}, path)
    with pytest.raises(AttributeError):
        torch.load(path, weights_only=False)  # a file this test wrote
    report = inspect_paths([str(path)])
    (refused,) = report.findings
    assert refused.code == "PP117", report.findings
    causes = refused.causes(RULES["PP117"])
    assert any(c.startswith("torch.save wrote it as it was") for c in causes), causes
    assert not any("newer torch" in c for c in causes), causes  # its version record is 3


def test_a_refusal_torch_save_cannot_have_written_names_no_torch_save_cause(tmp_path):
    from ppaux.report import RULES

    path = tmp_path / "t.pt"
    torch.save({"t": torch.ones(4)}, path)
    for name, text in (("v12.pt", b"12\n"), ("vx.pt", b"x\n")):
        edited = tmp_path / name
        with zipfile.ZipFile(path) as source, zipfile.ZipFile(edited, "w") as out:
            for info in source.infolist():
                body = source.read(info)
                out.writestr(info, text if info.filename.endswith("/version") else body)
        with pytest.raises(RuntimeError):
            torch.load(edited)  # a file this test wrote
        (refused,) = inspect_paths([str(edited)]).findings
        causes = refused.causes(RULES["PP117"])
        assert refused.code == "PP117", refused
        assert not any("torch.save wrote it" in c for c in causes), causes
        assert any("newer torch" in c for c in causes) is (text == b"12\n"), causes
