#!/usr/bin/env python3
"""How far `dfx-coordinator estimate` is from what the run really writes.

For programs of different shapes (dfx-gen-program's generators and the
committed examples) and every chip swimlane level 1-4 with the other
collectors on (args dump levels 1-3, PMU event types, dep_gen on and off,
scope stats), it runs `estimate --format json`, then the real run into the
same work dir, and compares the estimate per collector with the bytes of
the files that collector wrote. L2 runs and L3 runs on 2-4 local agents.
Prints one line per collector with its worst error and where, then
`worst error: X% ... within +-25%: yes|no`. Exit 1 when a run fails or an
estimate is off by more than 25% (or says 0 for a file that was written,
or the reverse).

Usage: bench/estimate/estimate_error.py [--tiny] [BUILD_DIR]   (default build-rel)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT = 0.25
ROOT = Path(__file__).resolve().parents[2]

# The files of each column of the estimate (paths relative to a dispatch
# directory, or to dfx_outputs/ for the run's own files).
def collector_of(rel):
    name = rel.name
    parts = rel.parts
    if name == "chip_swimlane_records.json":
        return "chip_swimlane"
    if name == "deps.json":
        return "deps"
    if "args_dump" in parts:
        return "args_dump"
    if name == "pmu.csv":
        return "pmu"
    if "scope_stats" in parts:
        return "scope_stats"
    if name.startswith("name_map"):
        return "name_map"
    if name.startswith("merged_swimlane"):
        return "merged_trace"
    if name == "dispatch_program.json":
        return "dispatch_files"
    if name in ("run_manifest.json", "README.txt", "report.html", ".session.json"):
        return "run_files"
    return None


def written(dfx_dir):
    out = {}
    for path in dfx_dir.rglob("*"):
        if path.is_file() and ".tmp." not in path.name:
            c = collector_of(path.relative_to(dfx_dir))
            if c:
                out[c] = out.get(c, 0) + path.stat().st_size
    return out


def run(argv, **kw):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, **kw)


def main():
    args = sys.argv[1:]
    tiny = "--tiny" in args
    args = [a for a in args if a != "--tiny"]
    build = Path(args[0] if args else "build-rel")
    coordinator = build / "bin" / "dfx-coordinator"
    gen = build / "device" / "dfx-gen-program"
    for b in (coordinator, gen):
        if not b.exists():
            print(f"estimate_error.py: no {b} (build first)", file=sys.stderr)
            return 2
    tmp = Path(tempfile.mkdtemp(prefix="dfx_estimate_"))
    try:
        return measure(tiny, coordinator, gen, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(tiny, coordinator, gen, tmp):
    scale = 1 if tiny else 10
    programs = {
        "layered": ["layered", "--tasks", str(60 * scale), "--width", "8"],
        "layered_wide": ["layered", "--tasks", str(100 * scale), "--width", "64", "--rows", "16",
                         "--cols", "32"],
        "attention": ["attention", "--layers", str(2 * scale), "--heads", "4",
                      "--softmax-blocks", "3"],
    }
    files = {}
    for name, argv in programs.items():
        files[name] = tmp / f"{name}.json"
        r = run([str(gen)] + argv + ["-o", str(files[name])])
        if r.returncode != 0:
            print(f"RUN FAILED: dfx-gen-program {' '.join(argv)}: {r.stderr}")
            return 1
    files["vector_pipeline"] = ROOT / "examples/vector_pipeline.json"
    files["attention_decode"] = ROOT / "examples/attention_decode.json"
    if not tiny:
        files["large_dag_2k"] = ROOT / "examples/large_dag_2k.json"
    # Every swimlane level, each with another args-dump level and PMU event
    # type; dep_gen on at levels 2 and 4 (the merged trace differs with it).
    levels = {1: ["--dump-args", "1", "--enable-pmu", "1"],
              2: ["--dump-args", "2", "--enable-pmu", "2", "--enable-dep-gen"],
              3: ["--dump-args", "3", "--enable-pmu", "4"],
              4: ["--dump-args", "2", "--enable-pmu", "8", "--enable-dep-gen"]}
    cases = []
    for name, path in files.items():
        for level, flags in levels.items():
            cases.append((f"{name} L2 swimlane {level}", path,
                          ["--enable-chip-swimlane", str(level), "--enable-scope-stats"] + flags))
    plan = ROOT / "examples/plans/l3_four_ranks.json"
    l3 = ["--launcher", "local", "--swimlane-traces", "eager", "--enable-scope-stats"]
    cases.append(("l3_four_ranks L3 4 ranks swimlane 4", plan,
                  ["--ranks", "4", "--enable-chip-swimlane", "4"] + l3 + levels[4]))
    cases.append(("attention L3 2 ranks swimlane 3", files["attention"],
                  ["--ranks", "2", "--enable-chip-swimlane", "3"] + l3 + levels[3]))
    cases.append(("layered L3 3 ranks swimlane 1", files["layered"],
                  ["--ranks", "3", "--enable-chip-swimlane", "1"] + l3 + levels[1]))

    worst = {}  # collector -> (error, case, estimated, written)
    failed = False
    for i, (label, path, flags) in enumerate(cases):
        work = tmp / f"w{i}"
        est = run([str(coordinator), "estimate", str(path), "--work-dir", str(work),
                   "--format", "json"] + flags)
        if est.returncode != 0:
            print(f"RUN FAILED: estimate of {label}: {est.stderr}")
            return 1
        estimate = json.loads(est.stdout)["collectors"]
        r = run([str(coordinator), "run", str(path), "--work-dir", str(work), "-q"] + flags)
        if r.returncode != 0:
            print(f"RUN FAILED: run of {label}: {r.stdout}{r.stderr}")
            return 1
        actual = written(work / "dfx_outputs")
        for collector in sorted(set(actual) | {k for k, v in estimate.items() if v}):
            e, a = estimate.get(collector, 0), actual.get(collector, 0)
            signed = (e - a) / a if a else float("inf")
            err = abs(signed)
            if collector not in worst or err > abs(worst[collector][0]):
                worst[collector] = (signed, label, e, a)
            if err > LIMIT:
                failed = True
            if os.environ.get("DFX_ESTIMATE_VERBOSE"):
                print(f"  {label}: {collector} estimated {e} written {a}")
        shutil.rmtree(work, ignore_errors=True)

    overall = max(abs(v[0]) for v in worst.values())
    for collector, (err, label, e, a) in sorted(worst.items()):
        print(f"{collector:>15}: worst error {100 * err:+.1f}% ({label}: estimated {e} B, "
              f"written {a} B)" if a else f"{collector:>15}: estimated {e} B, nothing written "
              f"({label})")
    print(f"cases: {len(cases)} ({len(files)} program shapes, swimlane levels 1-4, L2 and L3)")
    per = ", ".join(f"{c} {100 * abs(v[0]):.0f}%" for c, v in sorted(worst.items()) if v[3])
    print(f"estimate_error: per_collector={per}")
    print(f"estimate_error: worst_pct={100 * overall:.1f} cases={len(cases)} shapes={len(files)}")
    print(f"worst error: {100 * overall:.1f}% (every collector and level; "
          f"within +-{100 * LIMIT:.0f}%: {'no' if failed else 'yes'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
