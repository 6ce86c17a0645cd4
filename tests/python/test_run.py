"""dfx.run from Python: a 2-rank L3 plan and an L2 program on real agents
over loopback, their manifests, and errors raised with the coordinator's
message."""

import os
from pathlib import Path

import pytest

import dfx

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"


def test_two_rank_plan_returns_its_manifest(tmp_path):
    cfg = dfx.RunConfig(backend_type="a2a3", execution_mode="sim", enable_chip_swimlane=4,
                        enable_dep_gen=True, enable_pmu=2)
    m = dfx.run(HERE / "testdata/two_ranks.json", cfg, work_dir=tmp_path, ranks=2,
                launcher="local")
    assert m.level == "L3" and m.status == "ok"
    assert m.run_config["enable_chip_swimlane"] == 4
    assert [r.rank for r in m.ranks] == [0, 1]
    for r in m.ranks:
        assert r.status == "ok" and r.error is None
        assert isinstance(r.clock_offset_ns, int)  # measured for every rank
    assert sorted(d.dir for d in m.dispatches) == ["rank0/d0", "rank1/d0", "rank1/d1"]
    out = Path(m.dfx_outputs)
    assert out == tmp_path.resolve() / "dfx_outputs"
    for d in m.dispatches:
        assert d.status == "ok" and d.tasks_executed > 0
        names = {Path(a.path).name for a in d.artifacts}
        assert {"chip_swimlane_records.json", "deps.json", "pmu.csv"} <= names
        for a in d.artifacts:
            assert a.status == "ok" and a.checksum.startswith("xxh64:")
            assert (out / a.path).stat().st_size == a.size
    # dfx.manifest reads the same run back; dfx.summary answers which rank was slow.
    assert dfx.manifest(tmp_path) == m
    s = dfx.summary(tmp_path)
    assert sorted(r.rank for r in s.ranks) == [0, 1]
    assert len(s.dispatches) == 3 and all(d.rows > 0 for d in s.dispatches)
    assert isinstance(s.stragglers, list)
    assert {st.ranks for st in s.steps} <= {1, 2}
    with pytest.raises(dfx.RunError, match="straggler-threshold"):
        dfx.summary(tmp_path, straggler_threshold="lots")


def test_l2_program_returns_its_artifacts(tmp_path):
    cfg = dfx.RunConfig(enable_chip_swimlane=1, enable_scope_stats=True, work_dir=tmp_path)
    m = dfx.run(EXAMPLES / "vector_pipeline.json", cfg)
    assert m.level == "L2" and m.status == "ok"
    paths = {a.path for a in m.artifacts}
    assert "chip_swimlane_records.json" in paths
    assert "scope_stats/scope_stats.jsonl" in paths
    for a in m.artifacts:
        assert os.path.getsize(Path(m.dfx_outputs) / a.path) == a.size
        assert a.checksum.startswith("xxh64:") and len(a.checksum) == 22


def test_failed_dispatch_raises_with_the_coordinators_message(tmp_path):
    with pytest.raises(dfx.RunError) as e:
        dfx.run(HERE / "testdata/fail_plan.json", dfx.RunConfig(enable_dep_gen=True),
                work_dir=tmp_path, ranks=2, launcher="local")
    assert e.value.returncode == 1
    assert "did not fully succeed" in str(e.value)
    m = e.value.manifest  # what did run is still reported
    assert m.status == "failed"
    by_dir = {d.dir: d for d in m.dispatches}
    assert by_dir["rank0/d0"].status == "ok"
    assert by_dir["rank1/d0"].status == "failed"
    assert "injected kernel failure" in by_dir["rank1/d0"].error


def test_usage_error_raises_before_anything_runs(tmp_path):
    with pytest.raises(dfx.RunError) as e:
        dfx.run(tmp_path / "missing.json", dfx.RunConfig(), work_dir=tmp_path / "w")
    assert e.value.returncode == 2
    assert "missing.json" in str(e.value)


def test_work_dir_is_required():
    with pytest.raises(ValueError, match="work_dir"):
        dfx.run(EXAMPLES / "vector_pipeline.json", dfx.RunConfig())
