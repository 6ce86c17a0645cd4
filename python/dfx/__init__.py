"""dfx: Runtime DFX collection on emulated chips, from Python.

    import dfx
    cfg = dfx.RunConfig(backend_type="a2a3", enable_chip_swimlane=4, enable_dep_gen=True)
    manifest = dfx.run("examples/plans/l3_four_ranks.json", cfg, work_dir="W", ranks=4)
    for d in manifest.dispatches:
        print(d.dir, d.status, [a.path for a in d.artifacts])

RunConfig is validated by the same C++ code as every dfx CLI (config/); run()
drives the dfx-coordinator binary, so a Python run and a shell run are the
same run. The pytest plugin (dfx.pytest_plugin) adds the Runtime DFX flags to
pytest.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

from . import _dfx
from ._dfx import RunConfig

__version__ = _dfx.__version__
__all__ = ["RunConfig", "RunError", "Record", "run", "manifest", "summary", "find_coordinator"]


class RunError(RuntimeError):
    """A run that did not fully succeed. str() is the coordinator's message;
    `manifest` holds what the run did manage (None when it wrote none),
    `returncode`, `stdout` and `stderr` the coordinator's."""

    def __init__(self, message, returncode, stdout, stderr, manifest=None):
        super().__init__(message)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.manifest = manifest


class Record(dict):
    """A JSON object whose keys are also attributes: m.ranks[0].status."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _records(value):
    if isinstance(value, dict):
        return Record((k, _records(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_records(v) for v in value]
    return value


def find_coordinator():
    """The dfx-coordinator this package drives: $DFX_COORDINATOR, else the
    one of the tree this package lies in (an install prefix or a build
    directory), else the one on PATH."""
    env = os.environ.get("DFX_COORDINATOR")
    if env:
        return env
    here = Path(__file__).resolve().parent
    # <build>/python/dfx -> <build>/bin; <prefix>/lib/python3/dist-packages/dfx -> <prefix>/bin
    for bin_dir in (here.parent.parent / "bin", here.parents[3] / "bin"):
        candidate = bin_dir / "dfx-coordinator"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which("dfx-coordinator")
    if on_path:
        return on_path
    raise FileNotFoundError(
        "dfx-coordinator not found (looked at $DFX_COORDINATOR, beside this package and on "
        "PATH); install dfx or set DFX_COORDINATOR=/path/to/dfx-coordinator")


def _coordinator_message(stderr, returncode):
    lines = [line for line in stderr.splitlines() if line.strip()]
    own = [line for line in lines if line.startswith("dfx-coordinator")]
    if own:
        return "\n".join(own)
    return "\n".join(lines[-10:]) or f"dfx-coordinator exited with status {returncode}"


def _manifest(work_dir):
    """The run manifest of the last run in `work_dir` (docs/formats.md §16.1),
    L2 or L3: the coordinator writes one for both. An L2 manifest also has
    `artifacts`, every artifact of its dispatch entries (one per pass)."""
    manifest = _dfx.read_run_manifest(str(work_dir))
    if manifest is None:
        raise FileNotFoundError(
            f"{work_dir}: no run_manifest.json in dfx_outputs/ or the work dir "
            "(not a dfx-coordinator run's work dir)")
    if manifest["level"] == "L2":
        manifest["artifacts"] = [a for d in manifest["dispatches"] for a in d["artifacts"]]
    manifest["dfx_outputs"] = _dfx.dfx_outputs_dir(str(Path(work_dir).resolve()))
    return _records(manifest)


def run(program_or_plan, config=None, work_dir=None, ranks=None, launcher=None, args=(),
        timeout=None):
    """Runs a program (L2: one chip) or a plan (L3; also a program with
    `ranks` or `launcher`) with dfx-coordinator and returns its manifest as a
    Record: every rank (status, clock_offset_ns, ...) and dispatch (dir,
    status, error, artifacts with path, size, checksum, status); `level` is
    "L2" or "L3", and an L2 manifest also lists `artifacts` at the top. `launcher` is "local" or "mpirun" (default: mpirun
    when on PATH); `args` are extra dfx-coordinator run flags. Raises
    RunError with the coordinator's message when the run does not succeed
    (ValueError for a bad RunConfig)."""
    if config is None:
        config = RunConfig()
    if work_dir is None:
        work_dir = config.work_dir
    if work_dir is None:
        raise ValueError("run: work_dir is required (an argument or RunConfig(work_dir=...))")
    argv = [find_coordinator(), "run", os.fspath(program_or_plan), "--work-dir",
            os.fspath(work_dir)]
    if ranks is not None:
        argv += ["--ranks", str(int(ranks))]
    if launcher is not None:
        argv += ["--launcher", str(launcher)]
    argv += config.to_flags() + [str(a) for a in args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        try:
            partial = _manifest(work_dir)
        except Exception:  # pylint: disable=broad-except
            partial = None
        raise RunError(_coordinator_message(proc.stderr, proc.returncode), proc.returncode,
                       proc.stdout, proc.stderr, partial)
    return _manifest(work_dir)


def manifest(work_dir):
    """What the last run in `work_dir` did, file by file: the run manifest
    (run() returns the same)."""
    return _manifest(work_dir)


def summary(work_dir, straggler_threshold="5%", timeout=None):
    """The answer to "which rank or dispatch was slow, and why" for the last
    run in `work_dir`: `dfx-view summary --format json` as a Record with
    ranks, dispatches, steps (per dispatch index: slowest rank, lag, skew),
    stragglers (rank numbers), top kernels, ring-fill peaks and PMU totals.
    Needs the chip swimlane (--enable-chip-swimlane). Raises RunError with
    dfx-view's message when there is nothing to summarize."""
    view = str(Path(find_coordinator()).with_name("dfx-view"))
    if not os.access(view, os.X_OK):
        view = shutil.which("dfx-view") or view
    outputs = _dfx.dfx_outputs_dir(str(Path(work_dir).resolve()))
    proc = subprocess.run([view, "summary", outputs, "--format", "json",
                           "--straggler-threshold", str(straggler_threshold)],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        message = "\n".join(line for line in proc.stderr.splitlines() if line.strip())
        raise RunError(message or f"dfx-view summary exited with status {proc.returncode}",
                       proc.returncode, proc.stdout, proc.stderr)
    return _records(json.loads(proc.stdout))
