"""check-skew's rules, matrix and JSON data, on the committed deployments and the fixture trees."""

from __future__ import annotations

import dataclasses

import pytest
from skew_fixtures import fingerprint_set, tree

from ppaux.report import Severity
from ppaux.sglang_source import analyse
from ppaux.skew import Fingerprint, MissingRank, load
from ppaux.skew import compare_stages as compare
from ppaux.skew.matrix import MAX_COLUMNS

NON_TENSOR = "received a non-tensor auxiliary PP output"


def _set(name: str) -> list[Fingerprint]:
    return [load(p) for p in fingerprint_set(name)]


def _codes(report) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity.value, f.path.rsplit("/", 1)[-1]) for f in report.findings]


def _with(fp: Fingerprint, *, tree_name: str | None = None, **changes) -> Fingerprint:
    if tree_name is not None:
        changes["sglang"] = analyse(tree(tree_name))
    return dataclasses.replace(fp, **changes)


def test_consistent_deployment_is_clean():
    report = compare(_set("consistent"))
    assert report.findings == () and report.problems == ()
    assert report.notes == ("first stage (receives): pp0; last stage (sends): pp3",)
    table = report.tables[0]
    assert table.columns == ("fact", "pp0", "pp1", "pp2", "pp3")
    assert table.marked == frozenset()
    assert [s["label"] for s in report.data["stages"]] == ["pp0", "pp1", "pp2", "pp3"]


def test_skewed_deployment():
    report = compare(_set("skewed"))
    assert _codes(report) == [
        ("PP307", "error", "pp0.json"),
        ("PP307", "error", "pp1.json"),
        ("PP309", "error", "pp1.json"),
        ("PP310", "error", "pp1.json"),
        ("PP307", "error", "pp2.json"),
        ("PP314", "error", "pp2.json"),
        ("PP301", "error", "pp3.json"),
        ("PP312", "warning", "pp2.json"),
    ]
    first = report.findings[0]
    assert first.message == (
        "this stage indexes 'sampling_mask_token_ids' on logprob batches, "
        "which pp3 (sglang 0.5.19) does not send"
    )
    assert (first.key, first.sglang_error) == (
        "sampling_mask_token_ids",
        "KeyError: 'sampling_mask_token_ids'",
    )
    messages = {f.code: f.message for f in report.findings}
    assert (
        messages["PP309"]
        == "torch 2.13.0+cu128 here; 2.14.1+cu128 on 3 other stages (pp0, pp2, pp3)"
    )
    assert messages["PP314"] == (
        "SGLANG_PP_SKIP_PURE_CHUNKED_OUTPUT_COMM false (unset) here; true "
        "on 3 other stages (pp0, pp1, pp3)"
    )
    assert messages["PP301"] == "sglang 0.5.19 here; 0.5.23 on 3 other stages (pp0, pp1, pp2)"


def test_the_release_deployment_names_every_difference_that_matters():
    """0.5.23 first, 0.5.18 and 0.5.19 in the middle, a patched 0.5.23 last."""
    report = compare(_set("releases"))
    assert _codes(report) == [
        ("PP301", "error", "pp1.json"),
        ("PP307", "error", "pp1.json"),
        ("PP309", "error", "pp1.json"),
        ("PP301", "error", "pp2.json"),
        ("PP307", "error", "pp2.json"),
        ("PP309", "error", "pp2.json"),
        ("PP303", "error", "pp3.json"),
        ("PP302", "warning", "pp1.json"),
        ("PP304", "warning", "pp3.json"),
    ]
    sender = next(f for f in report.findings if f.code == "PP303")
    assert sender.message == (
        "the last stage's add_auxiliary_output_to_pp_tensors does not check tensors"
    )
    assert sender.sglang_error == NON_TENSOR
    assert sender.hint.startswith("Run a release sglang (0.5.19+) on the last stage")
    middle = next(f for f in report.findings if f.code == "PP307")
    assert middle.sglang_error == "KeyError: 'next_token_sampling_mask_idx'"
    table = report.tables[0]
    rows = {row[0]: row[1:] for row in table.rows}
    assert rows["release match"] == (
        "release 0.5.20-0.5.23",
        "absent",
        "release 0.5.19",
        "modified",
    )
    assert rows["sender checks"] == ("all", "?", "all", "no tensors")
    sender_row = [row[0] for row in table.rows].index("sender checks")
    assert (sender_row, 4) in table.marked and (sender_row, 1) not in table.marked


def test_roles_unknown_checks_every_stage_both_ways():
    plain = _set("consistent")[0]
    fps = [
        dataclasses.replace(
            _with(plain, tree_name=name),
            rank=dataclasses.replace(plain.rank, pp_rank=None, pp_size=None, rank=i),
        )
        for i, name in enumerate(["v0523", "v0519"])
    ]
    report = compare(fps, ["a.json", "b.json"])
    keys = [f for f in report.findings if f.code == "PP307"]
    assert [(f.path, f.key) for f in keys] == [
        ("a.json", "sampling_mask_token_ids"),
        ("b.json", "next_token_sampling_mask_idx"),
    ]
    assert report.notes[0].startswith("roles unknown")


@pytest.mark.parametrize(
    "last, code, severity, message",
    [
        (
            "unvalidated_sender",
            "PP303",
            Severity.ERROR,
            "the last stage's add_auxiliary_output_to_pp_tensors does not check names, tensors, "
            "duplicates",
        ),
        (
            "other_prefix",
            "PP306",
            Severity.ERROR,
            "prefix '__aux_output__.' here; '__sampling_observer_output__.' on 3 other stages "
            "(pp0, pp1, pp2)",
        ),
        ("wire_modified", "PP308", Severity.ERROR, None),
        (
            "no_transport",
            "PP302",
            Severity.ERROR,
            "no auxiliary transport here (sglang 0.5.18) but pp0, pp1, pp2 have it: this last "
            "stage never sends the observer's output",
        ),
    ],
)
def test_tree_variants_on_the_last_stage(last, code, severity, message):
    fps = [_with(fp, tree_name="v0523") for fp in _set("consistent")]
    fps[3] = _with(fps[3], tree_name=last)
    report = compare(fps)
    found = [f for f in report.findings if f.code == code]
    assert len(found) == 1 and found[0].path.endswith("pp3.json")
    assert found[0].severity is severity
    if message is not None:
        assert found[0].message == message


def test_old_logprob_keys_fail_only_with_a_sampling_mask():
    fps = [_with(fp, tree_name="v0523") for fp in _set("consistent")]
    fps[3] = _with(fps[3], tree_name="old_logprob_keys")
    found = [f for f in compare(fps).findings if f.code == "PP307"]
    assert [f.path.rsplit("/", 1)[-1] for f in found] == ["pp0.json", "pp1.json", "pp2.json"]
    assert found[0].message == (
        "this stage indexes 'sampling_mask_num_accept_tokens' when a "
        "sampling mask is requested, which pp3 (sglang 0.5.22) does not send"
    )
    assert found[0].sglang_error == "KeyError: 'sampling_mask_num_accept_tokens'"


def test_unknown_capability_is_a_warning_not_a_difference():
    fps = _set("consistent")
    fps[1] = _with(
        fps[1],
        sglang=dataclasses.replace(
            fps[1].sglang,
            transport="unknown",
            match="unknown",
            unknown={"transport": "x.py: not valid Python: invalid syntax (line 3)"},
        ),
    )
    report = compare(fps)
    assert [(f.code, f.message) for f in report.findings] == [
        ("PP319", "x.py: not valid Python: invalid syntax (line 3)")
    ]


def test_a_file_cpython_refuses_is_an_error_said_once():
    from ppaux.sglang_source.capability import SourceFile

    fps = _set("consistent")
    broken = SourceFile(
        "wire",
        "x/parallel_state.py",
        "unparsable",
        "0" * 64,
        "not valid Python: '(' was never closed (line 3563)",
    )
    why = "x/parallel_state.py: not valid Python: '(' was never closed (line 3563)"
    fps[1] = _with(
        fps[1],
        sglang=dataclasses.replace(
            fps[1].sglang,
            wire="unknown",
            files=(*fps[1].sglang.files, broken),
            unknown={"wire": why, "other": "y.py: defines no f"},
        ),
    )
    report = compare(fps)
    found = [(f.code, f.severity, f.message) for f in report.findings]
    assert ("PP325", Severity.ERROR, why) in found
    # PP319 keeps what else is unknown, not the refused file again
    assert [m for code, _, m in found if code == "PP319"] == ["y.py: defines no f"]


def test_baseline():
    consistent = _set("consistent")
    golden = dataclasses.replace(consistent[0], source="golden.json")
    assert compare(consistent, baseline=golden).findings == ()
    skewed = _set("skewed")
    report = compare(skewed, baseline=golden)
    torch = [f for f in report.findings if f.code == "PP309"]
    assert [f.message for f in torch] == ["torch 2.13.0+cu128 here; the baseline has 2.14.1+cu128"]
    assert report.tables[0].columns[:2] == ("fact", "baseline")
    assert report.notes[-1] == "compared with the baseline golden.json"
    assert report.data["baseline"]["label"] == "baseline"
    # A whole deployment of 0.5.19 against a 0.5.23 baseline: every stage is named.
    old = [_with(fp, sglang=skewed[3].sglang) for fp in consistent]
    codes = [(f.code, f.path.rsplit("/", 1)[-1]) for f in compare(old, baseline=golden).findings]
    assert [c for c in codes if c[0] == "PP301"] == [("PP301", f"pp{i}.json") for i in range(4)]
    assert {c for c in codes if c[0] == "PP307"} == {("PP307", f"pp{i}.json") for i in range(4)}


def test_torch_patch_and_cuda_minor_severities():
    fps = _set("consistent")
    fps[2] = _with(fps[2], packages={**fps[2].packages, "torch": "2.14.2+cu128"})
    fps[3] = _with(fps[3], torch_build={**fps[3].torch_build, "cuda": "12.9"})
    found = {f.code: f for f in compare(fps).findings}
    assert found["PP309"].severity is Severity.WARNING
    assert found["PP311"].severity is Severity.ERROR
    assert (
        found["PP311"].message
        == "torch's CUDA build 12.9 here; 12.8 on 3 other stages (pp0, pp1, pp2)"
    )


def test_environment_rules():
    fps = _set("consistent")
    fps[1] = _with(
        fps[1],
        environment={
            **fps[1].environment,
            "SGLANG_PP_SKIP_PURE_CHUNKED_OUTPUT_COMM": "true",
            "NCCL_SOCKET_IFNAME": "ib0",
            "RANK": "1",
            "HF_TOKEN": "<redacted>",
        },
    )
    report = compare(fps)
    # "true" and "1" are the same to sglang; RANK differs by design; secrets are not compared.
    assert [(f.code, f.severity.value, f.key) for f in report.findings] == [
        ("PP315", "info", "NCCL_SOCKET_IFNAME")
    ]
    assert ("$NCCL_SOCKET_IFNAME", "eth0", "ib0", "eth0", "eth0") in report.tables[0].rows


def test_live_patch_in_a_fingerprint():
    fps = _set("consistent")
    live = {
        "sglang.srt.sampling.sampling_observer_pp.add_auxiliary_output_to_pp_tensors": (
            "replaced: by plugin.add from /srv/plugin.py"
        )
    }
    fps[3] = _with(fps[3], sglang=fps[3].sglang.with_live(live))
    found = compare(fps).findings
    assert [(f.code, f.severity.value) for f in found] == [("PP320", "error")]


def test_ranks_duplicated_and_missing():
    fps = _set("consistent")[:3]
    fps[2] = _with(fps[2], rank=fps[1].rank)
    report = compare(fps)
    assert [
        (f.code, f.path.rsplit("/", 1)[-1], f.message)
        for f in report.findings
        if f.code in ("PP316", "PP317")
    ] == [
        ("PP316", "pp2.json", f"rank 1 is also claimed by {fps[1].source}"),
        ("PP317", "rank 2", "world size is 4 but no fingerprint has rank 2"),
        ("PP317", "rank 3", "world size is 4 but no fingerprint has rank 3"),
    ]
    labels = [s["label"] for s in report.data["stages"]]
    assert labels == ["pp0", "pp1.r1", "pp1.r1#2"]


def test_missing_ranks_from_the_gather_are_not_reported_twice():
    fps = _set("consistent")[:3]
    gone = MissingRank(3, "node-3", "rank 3 (host node-3) sent no fingerprint within 5 s")
    report = compare(fps, missing=[gone])
    assert [(f.code, f.path, f.message) for f in report.findings] == [
        ("PP317", "rank 3", "rank 3 (host node-3) sent no fingerprint within 5 s")
    ]
    assert report.data["missing_ranks"] == [
        {
            "rank": 3,
            "host": "node-3",
            "message": "rank 3 (host node-3) sent no fingerprint within 5 s",
        }
    ]


def test_one_stage():
    report = compare(_set("releases")[3:])
    assert (
        report.notes[-1] == "only one stage: nothing to compare it with (its own checks still ran)"
    )
    # It says it is rank 3 of 4: the other three are missing.
    assert [f.code for f in report.findings] == ["PP303", "PP317", "PP317", "PP317", "PP304"]


def test_many_stages_share_columns():
    base = _set("consistent")[0]
    fps = [
        _with(
            base,
            host=f"node-{i}",
            rank=dataclasses.replace(base.rank, rank=i, world_size=64, pp_rank=None, pp_size=None),
        )
        for i in range(64)
    ]
    fps[17] = _with(fps[17], packages={**fps[17].packages, "torch": "2.13.0+cu128"})
    report = compare(fps, [f"f{i:02d}.json" for i in range(64)])
    table = report.tables[0]
    assert len(fps) > MAX_COLUMNS
    assert table.columns == ("fact", "rank0, rank1 and 61 more (63)", "rank17")
    rows = {row[0]: row for row in table.rows}
    assert rows["host"][1:] == ("63 hosts", "node-17")
    torch_row = [row[0] for row in table.rows].index("torch")
    assert table.marked == frozenset({(torch_row, 2)})
    assert [(f.code, f.path) for f in report.findings] == [("PP309", "f17.json")]


def test_thousands_of_differing_variables_are_counted_not_listed():
    fps = _set("consistent")
    fps[1] = _with(
        fps[1], environment={**fps[1].environment, **{f"VAR_{n}": str(n) for n in range(3000)}}
    )
    report = compare(fps)
    env = [f for f in report.findings if f.code == "PP315"]
    # The first 100 are listed; one more finding counts the other 2900.
    assert len(env) == 101
    assert env[-1].message == (
        "2900 more PP315 findings for this stage are not listed (the report lists the first "
        "100 of each code)"
    )
    assert env[-1].extra["omitted"] == 2900
    # The matrix keeps every row: formats other than text list them all.
    assert sum(1 for row in report.tables[0].rows if row[0].startswith("$VAR_")) == 3000
