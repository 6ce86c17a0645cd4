"""Shared fixtures of the Python tests (tests/python/CMakeLists.txt runs each
file as a ctest test, with DFX_SOURCE_DIR, DFX_BUILD_DIR and PYTHONPATH set
to the build's package)."""

import os
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("DFX_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("DFX_BUILD_DIR", SOURCE_DIR / "build"))
BIN = {
    "dfx-coordinator": BUILD_DIR / "bin" / "dfx-coordinator",
    "dfx-rank-agent": BUILD_DIR / "bin" / "dfx-rank-agent",
    "dfx-view": BUILD_DIR / "bin" / "dfx-view",
    "dfx-gen-program": BUILD_DIR / "device" / "dfx-gen-program",
}


# The sanitizer build preloads its runtime into this Python for the
# instrumented extension module (tests/python/CMakeLists.txt). Nothing this
# process starts may inherit it (a clang-built program carries its own
# runtime and refuses a second one), except another Python that imports dfx.
_PRELOAD = os.environ.pop("LD_PRELOAD", None)


def tool_env(**extra):
    """The environment for programs: ours, cmake, a compiler, a shell."""
    env = dict(os.environ)
    env.update(extra)
    return env


def python_env(**extra):
    """The environment for a Python that imports dfx (the preload back)."""
    env = tool_env(**extra)
    if _PRELOAD:
        env["LD_PRELOAD"] = _PRELOAD
    return env


def run(argv, check=False, **kwargs):
    """Runs argv, capturing text output (tool_env() unless `env` is given)."""
    kwargs.setdefault("env", tool_env())
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=check,
                          timeout=kwargs.pop("timeout", 240), **kwargs)


@pytest.fixture
def source_dir():
    return SOURCE_DIR


@pytest.fixture
def build_dir():
    return BUILD_DIR
