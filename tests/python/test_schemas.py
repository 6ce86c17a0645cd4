"""The JSON Schemas (schemas/) against what the loaders accept: every example
program and plan, generated programs, and a fresh run manifest validate; what
the loaders refuse, the schemas refuse too."""

import json
from pathlib import Path

import jsonschema
import pytest

import dfx
from conftest import BIN, SOURCE_DIR, run

SCHEMAS = SOURCE_DIR / "schemas"
EXAMPLES = SOURCE_DIR / "examples"


def validator(name):
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def is_plan(doc):
    return "steps" in doc  # what the coordinator checks (coordinator/plan.cc IsPlan)


def example_files():
    return sorted(p for p in EXAMPLES.rglob("*.json"))


@pytest.mark.parametrize("path", example_files(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_validates(path):
    doc = json.loads(path.read_text())
    validator("plan" if is_plan(doc) else "program").validate(doc)


def test_there_are_examples_of_both_kinds():
    kinds = {is_plan(json.loads(p.read_text())) for p in example_files()}
    assert kinds == {True, False}


@pytest.mark.parametrize("generator", [["vector"], ["attention", "--layers", "1"],
                                       ["layered", "--tasks", "50", "--matmul-every", "5"]])
def test_generated_programs_validate(generator):
    r = run([BIN["dfx-gen-program"]] + generator, check=True)
    validator("program").validate(json.loads(r.stdout))


def test_test_programs_and_plans_validate():
    for path in sorted((SOURCE_DIR / "tests").rglob("testdata/*.json")):
        doc = json.loads(path.read_text())
        if "kernels" in doc or is_plan(doc):
            validator("plan" if is_plan(doc) else "program").validate(doc)


def test_what_the_loader_refuses_the_schema_refuses(tmp_path):
    program = json.loads((EXAMPLES / "vector_pipeline.json").read_text())
    program["kernels"][0]["colour"] = "red"  # an unknown key
    with pytest.raises(jsonschema.ValidationError):
        validator("program").validate(program)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(program))
    r = run([BIN["dfx-coordinator"], "run", bad, "--work-dir", tmp_path / "w"])
    assert r.returncode != 0 and 'unknown key "colour"' in r.stderr
    plan = {"programs": {"p": "x.json"}, "steps": [{"program": "p", "rank": 0, "ranks": [1]}]}
    with pytest.raises(jsonschema.ValidationError):
        validator("plan").validate(plan)


def test_a_fresh_manifest_validates(tmp_path):
    cfg = dfx.RunConfig(enable_chip_swimlane=2, enable_dep_gen=True, enable_dump_args=1)
    m = dfx.run(SOURCE_DIR / "tests/python/testdata/two_ranks.json", cfg, work_dir=tmp_path,
                ranks=2, launcher="local")
    doc = json.loads(Path(m.manifest_path).read_text())
    validator("run_manifest").validate(doc)
    # and the schema is not vacuous: a wrong status is refused
    doc["dispatches"][0]["status"] = "done"
    with pytest.raises(jsonschema.ValidationError):
        validator("run_manifest").validate(doc)


def test_an_l2_manifest_validates_and_replaces_an_l3_runs(tmp_path):
    # First an L3 run into the work dir, then an L2 run into the same one: the
    # L2 run writes its own manifest (level L2, one dispatch per pass, dir ".")
    # and leaves nothing of the L3 run for a reader to take as its own.
    cfg = dfx.RunConfig(enable_chip_swimlane=2, enable_dump_args=1)
    l3 = dfx.run(SOURCE_DIR / "tests/python/testdata/two_ranks.json", cfg, work_dir=tmp_path,
                 ranks=2, launcher="local")
    assert l3.level == "L3"
    assert (tmp_path / "dfx_outputs/rank1").is_dir()
    m = dfx.run(SOURCE_DIR / "examples/vector_pipeline.json", cfg, work_dir=tmp_path)
    assert m.level == "L2" and m.status == "ok" and m.launcher == "exec"
    assert m.session != l3.session
    assert [d.dir for d in m.dispatches] == ["."] and m.dispatches[0].status == "ok"
    assert [r.rank for r in m.ranks] == [0]
    assert "chip_swimlane_records.json" in {a.path for a in m.artifacts}
    assert not (tmp_path / "dfx_outputs/rank1").exists()
    assert not (tmp_path / "dfx_outputs/.session.json").exists()
    doc = json.loads(Path(m.manifest_path).read_text())
    validator("run_manifest").validate(doc)
    assert dfx.manifest(tmp_path) == m
