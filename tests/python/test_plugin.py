"""The pytest plugin: the DFX flags (docs/run-config.md §2.5) with the CLI's spellings and
defaults, building the RunConfig the fixtures use."""

import sys

from conftest import SOURCE_DIR, python_env, run

PLUGIN_TESTS = SOURCE_DIR / "tests" / "python" / "plugin"


def pytest_run(*flags, autoload=False):
    env = python_env()
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-q"]
    if not autoload:
        argv += ["-p", "dfx.pytest_plugin"]
    return run(argv + list(flags), env=env, cwd=SOURCE_DIR)


def test_issue_command_line_runs_the_example_and_checks_artifacts():
    r = pytest_run("--enable-chip-swimlane", "4", "--enable-dep-gen", "--backend-type", "a2a3",
                   "--execution-mode", "sim", str(PLUGIN_TESTS))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "DFX-CONFIG a2a3 sim swimlane=4 dep_gen=True" in r.stdout
    assert "deps.json" in r.stdout and "chip_swimlane_records.json" in r.stdout


def test_bare_flags_take_the_cli_defaults_and_leave_the_path_alone():
    # The reference's form: --enable-chip-swimlane bare (= 4) before a path.
    r = pytest_run("--platform", "a2a3sim", "--enable-chip-swimlane", str(PLUGIN_TESTS),
                   "--enable-pmu")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "DFX-CONFIG a2a3 sim swimlane=4" in r.stdout
    assert "pmu.csv" in r.stdout
    assert "--platform a2a3sim is deprecated" in r.stdout + r.stderr


def test_no_flags_means_no_artifacts():
    r = pytest_run(str(PLUGIN_TESTS))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "swimlane=0 dep_gen=False artifacts=[]" in r.stdout


def test_a_bad_value_is_a_usage_error_with_the_clis_message():
    r = pytest_run("--enable-pmu", "3", str(PLUGIN_TESTS))
    assert r.returncode == 4  # pytest's usage error
    assert "--enable-pmu 3" in r.stderr and "1, 2, 4, 5, 6, 7, 8" in r.stderr


def test_the_plugin_loads_from_its_entry_point():
    r = pytest_run("--help", autoload=True)
    assert r.returncode == 0
    for flag in ("--enable-chip-swimlane", "--chip-swimlane-level", "--enable-dep-gen",
                 "--dump-args", "--enable-pmu", "--enable-scope-stats", "--backend-type",
                 "--execution-mode", "--platform", "--enable-l2-swimlane"):
        assert flag in r.stdout
