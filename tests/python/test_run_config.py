"""dfx.RunConfig: the fields and rules of docs/run-config.md §2.1-§2.3, checked by config/'s C++
code (the same messages as the CLI)."""

import warnings

import pytest

import dfx


def test_defaults_are_the_reference_defaults():
    c = dfx.RunConfig()
    assert (c.backend_type, c.execution_mode) == ("a2a3", "sim")
    assert c.enable_chip_swimlane == 0 and c.enable_dump_args == 0 and c.enable_pmu == 0
    assert not c.enable_dep_gen and not c.enable_scope_stats and not c.save_kernels
    assert not c.any_dfx()
    assert c.to_flags() == ["--backend-type", "a2a3", "--execution-mode", "sim"]


def test_quickstart_config_of_the_seed_page():
    c = dfx.RunConfig(backend_type="a2a3", enable_chip_swimlane=4, enable_dep_gen=True,
                      save_kernels=True)
    assert c.enable_chip_swimlane == 4 and c.enable_dep_gen and c.save_kernels


@pytest.mark.parametrize("given,level", [(True, 4), (False, 0), (0, 0), (1, 1), (3, 3), (4, 4)])
def test_swimlane_is_a_level_and_true_means_4(given, level):
    assert dfx.RunConfig(enable_chip_swimlane=given).enable_chip_swimlane == level


@pytest.mark.parametrize("bad", [5, -1, 100])
def test_swimlane_out_of_range_names_the_field_and_range(bad):
    with pytest.raises(ValueError) as e:
        dfx.RunConfig(enable_chip_swimlane=bad)
    assert "enable_chip_swimlane" in str(e.value)
    assert "[0, 4]" in str(e.value)


def test_swimlane_must_be_a_level_not_text():
    with pytest.raises(ValueError, match="enable_chip_swimlane"):
        dfx.RunConfig(enable_chip_swimlane="4")


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_dump_args_levels(level):
    assert dfx.RunConfig(enable_dump_args=level).enable_dump_args == level


def test_dump_args_refuses_other_levels():
    with pytest.raises(ValueError) as e:
        dfx.RunConfig(enable_dump_args=4)
    assert "enable_dump_args" in str(e.value) and "1 partial, 2 full" in str(e.value)


@pytest.mark.parametrize("event", [0, 1, 2, 4, 5, 6, 7, 8])
def test_pmu_event_types(event):
    assert dfx.RunConfig(enable_pmu=event).enable_pmu == event


@pytest.mark.parametrize("bad", [3, 9, -2])
def test_pmu_refuses_what_is_not_an_event_type(bad):
    with pytest.raises(ValueError) as e:
        dfx.RunConfig(enable_pmu=bad)
    assert "enable_pmu" in str(e.value) and "1, 2, 4, 5, 6, 7, 8" in str(e.value)


@pytest.mark.parametrize("field,value", [("enable_chip_swimlane", 1), ("enable_dep_gen", True),
                                         ("enable_dump_args", 1), ("enable_pmu", 2),
                                         ("enable_scope_stats", True)])
def test_any_dfx_field_forces_save_kernels(field, value):
    c = dfx.RunConfig(**{field: value}, save_kernels=False)
    assert c.save_kernels
    assert c.any_dfx()


def test_the_five_flags_combine_in_any_subset():
    c = dfx.RunConfig(enable_chip_swimlane=2, enable_pmu=4, enable_scope_stats=True)
    assert (c.enable_chip_swimlane, c.enable_pmu, c.enable_scope_stats) == (2, 4, True)
    assert not c.enable_dep_gen and c.enable_dump_args == 0


@pytest.mark.parametrize("platform,backend,mode", [("a2a3sim", "a2a3", "sim"),
                                                   ("a2a3", "a2a3", "onboard"),
                                                   ("a5sim", "a5", "sim"), ("a5", "a5", "onboard")])
def test_platform_is_deprecated_and_maps_to_the_pair(platform, backend, mode):
    with pytest.warns(DeprecationWarning, match=f"use --backend-type {backend} --execution-mode {mode}"):
        c = dfx.RunConfig(platform=platform)
    assert (c.backend_type, c.execution_mode, c.platform) == (backend, mode, platform)


def test_platform_consistent_with_the_pair_is_accepted():
    with pytest.warns(DeprecationWarning):
        c = dfx.RunConfig(platform="a5sim", backend_type="a5", execution_mode="sim")
    assert c.backend_type == "a5"


def test_platform_contradicting_the_pair_is_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="contradicts"):
            dfx.RunConfig(platform="a2a3sim", backend_type="a5")


def test_unknown_platform_names_the_allowed_ones():
    with pytest.raises(ValueError) as e:
        dfx.RunConfig(platform="a3")
    assert "a2a3sim" in str(e.value) and "a5sim" in str(e.value)


def test_new_spelling_emits_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dfx.RunConfig(backend_type="a5", execution_mode="onboard", enable_chip_swimlane=True)


def test_enable_l2_swimlane_is_deprecated_and_maps():
    with pytest.warns(DeprecationWarning, match="enable_chip_swimlane"):
        c = dfx.RunConfig(enable_l2_swimlane=True)
    assert c.enable_chip_swimlane == 4


def test_both_swimlane_spellings_is_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="keep only enable_chip_swimlane"):
            dfx.RunConfig(enable_chip_swimlane=2, enable_l2_swimlane=2)


def test_backend_and_mode_refuse_unknown_values():
    with pytest.raises(ValueError, match='"a2a3" or "a5"'):
        dfx.RunConfig(backend_type="a9")
    with pytest.raises(ValueError, match='"sim" or "onboard"'):
        dfx.RunConfig(execution_mode="hardware")


def test_unknown_field_lists_the_known_ones():
    with pytest.raises(ValueError) as e:
        dfx.RunConfig(enable_swimlane=4)
    assert "unknown RunConfig key" in str(e.value) and "enable_chip_swimlane" in str(e.value)


def test_rings_take_one_size_or_four():
    c = dfx.RunConfig(ring_task_window=64, ring_heap=[1024, 2048, 4096, 8192])
    assert c.ring_task_window == [64] * 4
    assert c.ring_heap == [1024, 2048, 4096, 8192]
    with pytest.raises(ValueError, match="ring_task_window must be a power of 2"):
        dfx.RunConfig(ring_task_window=100)
    with pytest.raises(ValueError, match="exactly 4"):
        dfx.RunConfig(ring_dep_pool=[8, 8])
    with pytest.raises(ValueError, match="ring_heap"):
        dfx.RunConfig(ring_heap=512)


def test_setters_are_validated_like_the_constructor():
    c = dfx.RunConfig()
    c.enable_chip_swimlane = True
    assert c.enable_chip_swimlane == 4 and c.save_kernels
    with pytest.raises(ValueError, match="enable_chip_swimlane"):
        c.enable_chip_swimlane = 7
    assert c.enable_chip_swimlane == 4  # a refused value changes nothing
    with pytest.warns(DeprecationWarning):
        c.platform = "a5"
    assert (c.backend_type, c.execution_mode) == ("a5", "onboard")


def test_flags_are_the_clis_and_round_trip():
    c = dfx.RunConfig(enable_chip_swimlane=3, enable_dep_gen=True, enable_dump_args=2, enable_pmu=4,
                      enable_scope_stats=True, backend_type="a5", aicpu_thread_num=2)
    flags = c.to_flags()
    assert "--chip-swimlane-level" in flags and "--enable-dep-gen" in flags
    assert dfx.RunConfig.from_flags(flags) == c


def test_from_flags_takes_the_pytest_spellings_and_bare_values():
    c = dfx.RunConfig.from_flags(["--enable-chip-swimlane", "--enable-dep-gen", "--dump-args",
                                  "--enable-pmu", "--enable-scope-stats"])
    assert (c.enable_chip_swimlane, c.enable_dump_args, c.enable_pmu) == (4, 1, 2)
    assert dfx.RunConfig.from_flags(["--chip-swimlane-level", "2"]).enable_chip_swimlane == 2
    with pytest.warns(DeprecationWarning, match="--platform a2a3sim is deprecated"):
        dfx.RunConfig.from_flags(["--platform", "a2a3sim"])
    with pytest.raises(ValueError, match="--enable-pmu 3"):
        dfx.RunConfig.from_flags(["--enable-pmu", "3"])
    with pytest.raises(ValueError, match="not a run-config flag: --ranks"):
        dfx.RunConfig.from_flags(["--ranks", "2"])


def test_work_dir_is_carried_for_run(tmp_path):
    c = dfx.RunConfig(work_dir=tmp_path, enable_dep_gen=True)
    assert c.work_dir == str(tmp_path)
    assert "work_dir" in repr(c) and "enable_dep_gen=True" in repr(c)


def test_to_dict_is_the_json_form():
    d = dfx.RunConfig(enable_pmu=True).to_dict()
    assert d["enable_pmu"] == 2 and d["save_kernels"] is True and d["backend_type"] == "a2a3"
