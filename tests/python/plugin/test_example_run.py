"""A test written for the reference runtime's pytest flags: it runs an example
with whatever DFX flags pytest was given and checks the artifacts they call
for (run it through tests/python/test_plugin.py, or by hand:
  pytest -p dfx.pytest_plugin --enable-chip-swimlane 4 --enable-dep-gen \
      --backend-type a2a3 --execution-mode sim tests/python/plugin)."""

from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "vector_pipeline.json"


def test_example_artifacts_follow_the_flags(dfx_run_config, dfx_run):
    m = dfx_run(EXAMPLE)
    assert m.status == "ok"
    names = {a.path for a in m.artifacts}
    cfg = dfx_run_config
    assert ("chip_swimlane_records.json" in names) == (cfg.enable_chip_swimlane > 0)
    assert ("deps.json" in names) == cfg.enable_dep_gen
    assert ("pmu.csv" in names) == (cfg.enable_pmu > 0)
    assert ("scope_stats/scope_stats.jsonl" in names) == cfg.enable_scope_stats
    # Report what ran, for the calling test to check.
    print(f"DFX-CONFIG {cfg.backend_type} {cfg.execution_mode} swimlane={cfg.enable_chip_swimlane}"
          f" dep_gen={cfg.enable_dep_gen} artifacts={sorted(names)}")
