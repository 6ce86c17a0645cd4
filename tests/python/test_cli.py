"""The conventions every CLI has: --help and --version on every binary and
subcommand, usage errors exit 2, hints that work when copied, man pages and
bash completion."""

import re
import shlex

import pytest

import dfx
from conftest import BIN, BUILD_DIR, SOURCE_DIR, run

SUBCOMMANDS = {
    "dfx-coordinator": ["run", "gather", "capture", "help"],
    "dfx-rank-agent": ["serve", "exec"],
    "dfx-view": ["swimlane", "deps", "dump", "scope-stats", "sched-overhead", "pmu", "summary",
                 "export"],
    "dfx-gen-program": ["layered", "attention", "vector"],
}
COMMANDS = [(b, []) for b in SUBCOMMANDS] + [(b, [s]) for b, subs in SUBCOMMANDS.items() for s in subs]


def ids(c):
    return " ".join([c[0]] + c[1])


@pytest.mark.parametrize("command", COMMANDS, ids=ids)
def test_help_exits_0(command):
    binary, sub = command
    r = run([BIN[binary]] + sub + ["--help"])
    assert r.returncode == 0, r.stderr
    assert "Usage:" in r.stdout and binary in r.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=ids)
def test_version_names_the_version_and_revision(command):
    binary, sub = command
    r = run([BIN[binary]] + sub + ["--version"])
    assert r.returncode == 0, r.stderr
    # A test build (-DDFX_FAULT_HOOKS=ON, cmake/fault_hooks.cmake) says so on a second line.
    assert re.fullmatch(rf"{binary} {re.escape(dfx.__version__)} \(git [0-9a-z.-]+\)\n"
                        r"(test build: fault-injection hooks \(DFX_FAULT_\*\) compiled in; "
                        r"not for installing\n)?", r.stdout), r.stdout
    assert dfx._dfx.git_revision in r.stdout  # the binaries and the Python package agree


@pytest.mark.parametrize("command", COMMANDS, ids=ids)
def test_a_bad_flag_exits_2(command):
    binary, sub = command
    r = run([BIN[binary]] + sub + ["--no-such-flag"])
    assert r.returncode == 2, (r.stdout, r.stderr)
    # The error names the flag and where the accepted ones are listed.
    assert "unknown flag --no-such-flag" in r.stderr, r.stderr
    assert f"`{' '.join([binary] + sub)} --help`" in r.stderr, r.stderr


def test_an_unknown_flag_is_named_before_a_missing_required_one():
    # CLI11 checks required options first: this used to say "--work-dir is required".
    r = run([BIN["dfx-coordinator"], "run", "--bogus", "x"])
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "dfx-coordinator: run: unknown flag --bogus" in r.stderr, r.stderr
    assert "required" not in r.stderr, r.stderr
    r = run([BIN["dfx-view"], "sched-overhead", "--deps-jsn", "d.json"])
    assert r.returncode == 2 and "unknown flag --deps-jsn" in r.stderr, r.stderr
    r = run([BIN["dfx-rank-agent"], "exec", "--program", "p.json", "--output-dri", "o"])
    assert r.returncode == 2 and "unknown flag --output-dri" in r.stderr, r.stderr


def test_bad_values_exit_2_with_the_reason(tmp_path):
    r = run([BIN["dfx-coordinator"], "run", SOURCE_DIR / "examples/vector_pipeline.json",
             "--work-dir", tmp_path, "--enable-chip-swimlane", "9"])
    assert r.returncode == 2 and "[0, 4]" in r.stderr
    r = run([BIN["dfx-gen-program"], "layered", "--tasks", "0"])
    assert r.returncode == 2 and "--tasks" in r.stderr


def test_help_of_a_command():
    r = run([BIN["dfx-coordinator"], "help", "gather"])
    assert r.returncode == 0 and "Usage: dfx-coordinator gather" in r.stdout
    r = run([BIN["dfx-coordinator"], "help", "nothing"])
    assert r.returncode == 2


@pytest.mark.parametrize("binary,words", [
    ("dfx-coordinator", ["DFX_RANK_AGENT", "DFX_VIEW", "TMPDIR"]),
    ("dfx-rank-agent", ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "TMPDIR"]),
])
def test_environment_is_documented_in_help(binary, words):
    text = run([BIN[binary], "--help"]).stdout
    for w in words:
        assert w in text


def test_run_help_documents_every_run_config_flag():
    text = run([BIN["dfx-coordinator"], "run", "--help"]).stdout
    for flag in ("--save-kernels", "--enable-chip-swimlane", "--chip-swimlane-level", "--dump-args",
                 "--enable-pmu", "--enable-scope-stats", "--platform", "--ring-heap"):
        assert flag in text


def test_printed_hints_work_when_copied(tmp_path):
    work = tmp_path / "my work"
    r = run([BIN["dfx-coordinator"], "run", SOURCE_DIR / "examples/vector_pipeline.json",
             "--work-dir", work, "--enable-dep-gen", "--enable-scope-stats"])
    assert r.returncode == 0, r.stderr
    hints = re.findall(r"(?:task graph|scope stats): +(.*)", r.stdout)
    assert len(hints) == 2, r.stdout
    for hint in hints:
        # pasted into a shell whose PATH has no dfx binaries, somewhere else
        out = run(["sh", "-c", hint], cwd="/", env={"PATH": "/usr/bin:/bin"})
        assert out.returncode == 0, (hint, out.stderr)
        assert shlex.split(hint)[0].endswith("dfx-view")


def test_man_pages_document_every_command():
    for binary, subs in SUBCOMMANDS.items():
        page = (BUILD_DIR / "man" / f"{binary}.1").read_text()
        text = page.replace("\\-", "-")
        assert f'.TH {binary.upper()} "1"' in page
        assert dfx.__version__ in text
        for sub in subs:
            if sub != "help":
                assert f"{binary} {sub}" in text
    assert "--enable-chip-swimlane" in (BUILD_DIR / "man" / "dfx-coordinator.1").read_text().replace("\\-", "-")


def complete(*words):
    script = (f"source {shlex.quote(str(SOURCE_DIR / 'share/dfx-completion.bash'))}; "
              f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); "
              f"COMP_CWORD={len(words) - 1}; _dfx_complete; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    r = run(["bash", "-c", script])
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_bash_completion_offers_subcommands_and_their_flags():
    coordinator = str(BIN["dfx-coordinator"])
    assert complete(coordinator, "ga") == ["gather"]
    assert "--enable-chip-swimlane" in complete(coordinator, "run", "--enable-c")
    assert "--spool" in complete(coordinator, "gather", "--sp")
    assert complete(str(BIN["dfx-view"]), "sched") == ["sched-overhead"]
    assert "serve" in complete(str(BIN["dfx-rank-agent"]), "se")
