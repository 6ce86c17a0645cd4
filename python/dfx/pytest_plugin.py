"""pytest plugin: the Runtime DFX page's pytest flags, and fixtures.

Loaded automatically once dfx is installed (entry point `pytest11`), or with
`pytest -p dfx.pytest_plugin`. It adds the flags with the spellings and
defaults of dfx-coordinator (which are the reference runtime's):

    --enable-chip-swimlane [LEVEL]  (bare = 4)   --chip-swimlane-level N
    --enable-dep-gen   --dump-args [LEVEL] (bare = 1)   --enable-pmu [N] (bare = 2)
    --enable-scope-stats   --backend-type a2a3|a5   --execution-mode sim|onboard
    --platform P (deprecated)   --enable-l2-swimlane (deprecated)   --save-kernels
    --aicpu-thread-num N   --ring-task-window / --ring-heap / --ring-dep-pool N|N,N,N,N

and turns them into a dfx.RunConfig with the same C++ parser the CLI uses,
so the values are checked once, in one place. Fixtures:

    dfx_run_config  the RunConfig of the command line
    dfx_run         dfx_run(program_or_plan, ranks=None, launcher=None, config=None, **kw)
                    runs it into a fresh temporary work dir and returns the manifest
"""

import re
import warnings

import pytest

import dfx

# Flags whose value is optional: (flag, value when bare).
_OPTIONAL_VALUE = {
    "--enable-chip-swimlane": "4",
    "--enable-l2-swimlane": "4",
    "--dump-args": "1",
    "--enable-pmu": "2",
}
_SWITCHES = ["--enable-dep-gen", "--enable-scope-stats", "--save-kernels"]
_VALUED = ["--chip-swimlane-level", "--backend-type", "--execution-mode", "--platform",
           "--aicpu-thread-num", "--ring-task-window", "--ring-heap", "--ring-dep-pool"]
_INTEGER = re.compile(r"^\+?-?\d+$")


def _dest(flag):
    return "dfx_" + flag.lstrip("-").replace("-", "_")


def pytest_addoption(parser):
    group = parser.getgroup("dfx", "Runtime DFX (the flags of dfx-coordinator run)")
    for flag, bare in _OPTIONAL_VALUE.items():
        group.addoption(flag, dest=_dest(flag), nargs="?", const=bare, default=None,
                        metavar="N", help=f"(bare = {bare}); see dfx-coordinator run --help")
    for flag in _SWITCHES:
        group.addoption(flag, dest=_dest(flag), action="store_true", default=False)
    for flag in _VALUED:
        group.addoption(flag, dest=_dest(flag), default=None, metavar="VALUE")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):  # pylint: disable=unused-argument
    """`--enable-chip-swimlane tests/` means level 4 and the path, as on the
    CLI, where only an integer is taken as the optional value; argparse would
    take the path as the value, so such a bare flag is spelled --flag=N."""
    for i, arg in enumerate(args):
        if arg in _OPTIONAL_VALUE:
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is None or not _INTEGER.match(nxt):
                args[i] = f"{arg}={_OPTIONAL_VALUE[arg]}"


def run_config_flags(config):
    """The run-config flags given to pytest, as a dfx-coordinator would see them."""
    flags = []
    for flag in list(_OPTIONAL_VALUE) + _VALUED:
        value = config.getoption(_dest(flag))
        if value is not None:
            flags += [flag, str(value)]
    for flag in _SWITCHES:
        if config.getoption(_dest(flag)):
            flags.append(flag)
    return flags


def _build(config):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            cfg = dfx.RunConfig.from_flags(run_config_flags(config))
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
    for w in caught:
        config.issue_config_time_warning(pytest.PytestConfigWarning(str(w.message)), stacklevel=2)
    return cfg


def pytest_configure(config):
    """A bad flag value stops pytest before any test runs, with the CLI's message."""
    _build(config)


@pytest.fixture
def dfx_run_config(request):
    """The dfx.RunConfig of the command line's DFX flags (a fresh copy)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # reported once, at configure time
        return dfx.RunConfig.from_flags(run_config_flags(request.config))


@pytest.fixture
def dfx_run(dfx_run_config, tmp_path_factory):
    """Runs a program or plan with the command line's RunConfig (or `config`)
    in a fresh work dir; returns the manifest (dfx.run)."""

    def run(program_or_plan, ranks=None, launcher=None, config=None, work_dir=None, **kwargs):
        if work_dir is None:
            work_dir = tmp_path_factory.mktemp("dfx_run")
        return dfx.run(program_or_plan, config or dfx_run_config, work_dir=work_dir, ranks=ranks,
                       launcher=launcher, **kwargs)

    return run
