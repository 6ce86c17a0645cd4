"""`cmake --install` into a temporary prefix gives a working tree: the
installed coordinator runs the quickstart plan and finds its agent and viewer,
the Python package imports, an example runtime links dfx::collectors through
find_package(dfx) and through pkg-config, and CPack makes a .deb of it all."""

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from conftest import BUILD_DIR, SOURCE_DIR, python_env, run, tool_env

CXX = os.environ.get("DFX_CXX_COMPILER", "c++")
PROGRAMS = ["dfx-coordinator", "dfx-rank-agent", "dfx-view", "dfx-gen-program"]


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    p = tmp_path_factory.mktemp("install") / "prefix"
    r = run(["cmake", "--install", BUILD_DIR, "--prefix", p])
    assert r.returncode == 0, r.stderr
    return p


def test_the_tree_holds_programs_headers_libraries_and_data(prefix):
    expected = [f"bin/{p}" for p in PROGRAMS] + [
        "include/dfx/collectors/recorders.h", "include/dfx/collectors/run_manifest.h",
        "include/dfx/config/run_config.h", "include/dfx/common/status.h",
        "lib/libdfx_collectors.a", "lib/cmake/dfx/dfxConfig.cmake", "lib/pkgconfig/dfx.pc",
        "lib/python3/dist-packages/dfx/__init__.py",
        "lib/python3/dist-packages/dfx/pytest_plugin.py",
        "share/dfx/examples/plans/l3_four_ranks.json",
        "share/dfx/schemas/program.schema.json", "share/dfx/schemas/plan.schema.json",
        "share/dfx/schemas/run_manifest.schema.json", "share/doc/dfx/README.md",
        "share/doc/dfx/examples/consumer/CMakeLists.txt",
    ] + [f"share/man/man1/{p}.1" for p in PROGRAMS] + [
        f"share/bash-completion/completions/{p}" for p in PROGRAMS]
    expected += ["lib/systemd/system/dfx-rank-agent@.service", "lib/sysusers.d/dfx-agent.conf"]
    missing = [e for e in expected if not (prefix / e).exists()]
    assert not missing
    assert not list((prefix / "include").rglob("*_test.cc"))
    assert not (prefix / "include/dfx/collectors/testing").exists()


def test_installed_coordinator_runs_the_quickstart_plan(prefix, tmp_path):
    work = tmp_path / "quickstart"
    env = tool_env(PATH="/usr/local/bin:/usr/bin:/bin")  # no build tree, no prefix on PATH
    r = run([prefix / "bin/dfx-coordinator", "run",
             prefix / "share/dfx/examples/plans/l3_four_ranks.json", "--ranks", "4",
             "--launcher", "local", "--work-dir", work, "--enable-chip-swimlane", "4",
             "--enable-dep-gen", "--dump-args", "1", "--enable-pmu", "2", "--enable-scope-stats"],
            env=env, timeout=280)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((work / "dfx_outputs/run_manifest.json").read_text())
    assert manifest["status"] == "ok" and len(manifest["ranks"]) == 4
    assert (work / "dfx_outputs/rank3/d2/deps.json").is_file()
    # The hints (in dfx_outputs/README.txt at L3) name the installed viewer,
    # so they work when pasted; so do the summary's "dig further" commands.
    assert "verdict: ok" in r.stdout.splitlines()[-1], r.stdout
    readme = (work / "dfx_outputs/README.txt").read_text()
    hint = re.search(r"task graph: +(.*)", readme).group(1)
    assert shlex.split(hint)[0] == str(prefix / "bin/dfx-view")
    out = run(["sh", "-c", hint], env=env, cwd="/")
    assert out.returncode == 0, out.stderr
    dig = re.search(r"dig further: +(.*)", r.stdout).group(1).split("   |   ")
    summary = next(c for c in dig if " summary " in c)
    assert shlex.split(summary)[0] == str(prefix / "bin/dfx-view")
    out = run(["sh", "-c", summary], env=env, cwd="/")
    assert out.returncode == 0 and "stragglers: " in out.stdout, out.stderr


def test_installed_systemd_unit_names_the_installed_agent_and_verifies(prefix, tmp_path):
    unit = (prefix / "lib/systemd/system/dfx-rank-agent@.service").read_text()
    assert f"ExecStart={prefix}/bin/dfx-rank-agent serve " in unit
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (scripts/setup.sh: systemd)")
    instance = tmp_path / "dfx-rank-agent@0.service"
    instance.write_text(unit)
    r = run(["systemd-analyze", "verify", "--man=no", instance], cwd=tmp_path)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr


def test_python_package_imports_from_the_installed_tree(prefix):
    site = prefix / "lib/python3/dist-packages"
    env = python_env(PYTHONPATH=str(site))
    r = run([sys.executable, "-c",
             "import dfx; print(dfx.__file__); print(dfx.find_coordinator()); "
             "print(dfx.RunConfig(enable_chip_swimlane=True).enable_chip_swimlane)"],
            env=env, cwd="/")
    assert r.returncode == 0, r.stderr
    file, coordinator, level = r.stdout.split()
    assert Path(file).is_relative_to(site)
    assert coordinator == str(prefix / "bin/dfx-coordinator")
    assert level == "4"


def consumer_checks(binary, tmp_path):
    out = tmp_path / "consumer_out"
    r = run([binary, out, "--enable-chip-swimlane", "1"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["chip_swimlane_records.json"]
    records = json.loads((out / "chip_swimlane_records.json").read_text())
    assert records  # the three recorded tasks were exported
    r = run([binary, out, "--enable-chip-swimlane", "7"])
    assert r.returncode == 2 and "[0, 4]" in r.stderr  # the library's own validation


def test_example_consumer_links_dfx_collectors_via_find_package(prefix, tmp_path):
    build = tmp_path / "consumer"
    r = run(["cmake", "-S", SOURCE_DIR / "examples/consumer", "-B", build, "-G", "Ninja",
             f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCMAKE_CXX_COMPILER={CXX}",
             "-DCMAKE_BUILD_TYPE=Release"])
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(["cmake", "--build", build], timeout=280)
    assert r.returncode == 0, r.stdout + r.stderr
    consumer_checks(build / "dfx_consumer", tmp_path)


def test_pkg_config_file_builds_the_consumer(prefix, tmp_path):
    env = tool_env(PKG_CONFIG_PATH=str(prefix / "lib/pkgconfig"))
    r = run(["pkg-config", "--cflags", "--libs", "dfx"], env=env)
    assert r.returncode == 0, r.stderr
    flags = shlex.split(r.stdout)
    assert f"-I{prefix}/include/dfx" in [os.path.normpath(f) if f.startswith("-I") else f
                                         for f in flags] or any(
        Path(f[2:]).resolve() == (prefix / "include/dfx").resolve() for f in flags
        if f.startswith("-I"))
    assert "-ldfx_collectors" in flags
    binary = tmp_path / "consumer_pc"
    r = run([CXX, "-std=c++20", "-O1", SOURCE_DIR / "examples/consumer/main.cc", "-o", binary]
            + flags, timeout=280)
    assert r.returncode == 0, r.stderr
    consumer_checks(binary, tmp_path)


def test_cpack_makes_a_deb(tmp_path):
    r = run(["cpack", "-G", "DEB", "--config", BUILD_DIR / "CPackConfig.cmake", "-B", tmp_path,
             "-D", "CPACK_DEBIAN_COMPRESSION_TYPE=none"], timeout=280)
    assert r.returncode == 0, r.stdout + r.stderr
    debs = list(tmp_path.glob("dfx_*.deb"))
    assert len(debs) == 1
    listing = run(["dpkg-deb", "-c", debs[0]], check=True).stdout
    for path in ["./usr/bin/dfx-coordinator", "./usr/bin/dfx-rank-agent", "./usr/bin/dfx-view",
                 "./usr/lib/python3/dist-packages/dfx/__init__.py",
                 "./usr/lib/cmake/dfx/dfxConfig.cmake", "./usr/share/man/man1/dfx-coordinator.1",
                 "./usr/share/dfx/schemas/run_manifest.schema.json",
                 "./usr/lib/systemd/system/dfx-rank-agent@.service"]:
        assert path in listing
    depends = run(["dpkg-deb", "-f", debs[0], "Depends"], check=True).stdout
    assert "libzmq5" in depends and "python3" in depends
