// _dfx: the C++ half of the Python package `dfx` (python/dfx/__init__.py).
// It binds config/'s RunConfig and its codecs and collectors/' run manifest
// reader and output layout as they are, so a RunConfig built in Python is
// validated, normalised and turned into flags by the very code every CLI
// uses (docs/design.md §4: one source of truth), and a manifest is read by its one
// reader. JSON crosses the boundary as text (Python's json module on one
// side, common/json.h on the other), so no value is converted twice.
//
// Errors: a refused value raises ValueError with config/'s message (it names
// the field, the bad value and the allowed ones); a deprecated spelling
// emits a DeprecationWarning naming the new one.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectors/artifact_layout.h"
#include "collectors/run_manifest.h"
#include "common/file_util.h"
#include "common/json.h"
#include "common/status.h"
#include "common/version.h"
#include "config/run_config.h"

namespace py = pybind11;

namespace {

namespace fs = std::filesystem;
using dfx::Json;
using dfx::config::ParsedRunConfig;
using dfx::config::RunConfig;

// Where errors say the value came from.
constexpr const char* kOrigin = "RunConfig";

template <typename T>
T ValueOrRaise(dfx::Result<T> result) {
  if (!result.ok()) throw py::value_error(result.status().message());
  return std::move(*result);
}

Json ToJson(const py::handle& value) {
  const std::string text = py::str(py::module_::import("json").attr("dumps")(value));
  return ValueOrRaise(dfx::ParseJson(text, kOrigin));
}

py::object FromJson(const Json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

void WarnDeprecated(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) {
    if (PyErr_WarnEx(PyExc_DeprecationWarning, w.c_str(), 1) < 0) throw py::error_already_set();
  }
}

// The Python object: the C++ value plus where its run writes (the reference
// RunConfig carries work_dir; the C++ value leaves it to each binary).
struct PyRunConfig {
  RunConfig config;
  std::optional<std::string> work_dir;
};

// Parses a dict of RunConfig fields (the JSON form's keys) with config/'s
// JSON codec; warnings become DeprecationWarnings.
RunConfig Parse(const Json& fields) {
  ParsedRunConfig parsed = ValueOrRaise(dfx::config::RunConfigFromJson(fields, kOrigin));
  WarnDeprecated(parsed.warnings);
  return parsed.config;
}

// Sets one field: the current value as JSON with `key` replaced (and the
// keys it supersedes removed), parsed again, so a setter is checked exactly
// like the constructor.
void SetField(PyRunConfig& self, const std::string& key, const py::object& value,
              const std::vector<std::string>& superseded) {
  Json fields = dfx::config::RunConfigToJson(self.config);
  for (const auto& k : superseded) fields.erase(k);
  fields[key] = ToJson(value);
  self.config = Parse(fields);
}

// Every field the JSON form (and so the reference RunConfig) has, and the
// current-spelling keys a deprecated one replaces.
const std::vector<std::pair<std::string, std::vector<std::string>>>& Fields() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> fields = {
      {"backend_type", {}},
      {"execution_mode", {}},
      {"platform", {"backend_type", "execution_mode"}},
      {"enable_chip_swimlane", {}},
      {"enable_l2_swimlane", {"enable_chip_swimlane"}},
      {"enable_dep_gen", {}},
      {"enable_dump_args", {}},
      {"enable_pmu", {}},
      {"enable_scope_stats", {}},
      {"save_kernels", {}},
      {"aicpu_thread_num", {}},
      {"ring_task_window", {}},
      {"ring_heap", {}},
      {"ring_dep_pool", {}},
  };
  return fields;
}

py::object GetField(const PyRunConfig& self, const std::string& key) {
  if (key == "platform") {
    return py::str(dfx::config::PlatformName(self.config.backend_type, self.config.execution_mode));
  }
  const std::string json_key = key == "enable_l2_swimlane" ? "enable_chip_swimlane" : key;
  return FromJson(dfx::config::RunConfigToJson(self.config)[json_key]);
}

PyRunConfig Construct(const py::kwargs& kwargs) {
  PyRunConfig self;
  py::dict fields;
  for (auto item : kwargs) {
    const std::string key = py::str(item.first);
    if (key == "work_dir") {
      if (!item.second.is_none())
        self.work_dir = py::str(py::module_::import("os").attr("fspath")(item.second));
      continue;
    }
    fields[item.first] = item.second;
  }
  self.config = Parse(ToJson(fields));
  return self;
}

PyRunConfig FromFlags(const std::vector<std::string>& flags) {
  std::vector<std::string> rest = flags;
  ParsedRunConfig parsed = ValueOrRaise(dfx::config::ParseRunConfigFlags(rest));
  if (!rest.empty()) {
    throw py::value_error("not a run-config flag: " + rest.front() + "\n" +
                          dfx::config::RunConfigFlagsHelp());
  }
  WarnDeprecated(parsed.warnings);
  return PyRunConfig{parsed.config, std::nullopt};
}

std::string Repr(const PyRunConfig& self) {
  std::string out = "RunConfig(";
  const Json j = dfx::config::RunConfigToJson(self.config);
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out +=
        (first ? "" : ", ") + it.key() + "=" + py::repr(FromJson(it.value())).cast<std::string>();
    first = false;
  }
  if (self.work_dir) out += ", work_dir=" + py::repr(py::str(*self.work_dir)).cast<std::string>();
  return out + ")";
}

// The run manifest of the last run in `work_dir` (L2 or L3), as JSON
// objects; None when the work dir holds none. Where the session record is
// (an L3 run), else dfx_outputs/, else the work dir itself (no DFX flag).
py::object ReadRunManifest(const std::string& work_dir) {
  std::vector<fs::path> dirs;
  if (auto dir = dfx::collectors::FindRunRecordDir(work_dir)) dirs.push_back(*dir);
  dirs.push_back(dfx::collectors::DfxOutputsDir(work_dir));
  dirs.push_back(work_dir);
  std::error_code ec;
  for (const fs::path& dir : dirs) {
    const fs::path path = dir / dfx::collectors::kRunManifestFile;
    if (!fs::is_regular_file(path, ec)) continue;
    auto manifest = dfx::collectors::ReadRunManifest(path);
    if (!manifest.ok()) throw std::runtime_error(manifest.status().message());
    py::dict out = FromJson(dfx::collectors::RunManifestToJson(*manifest)).cast<py::dict>();
    out["manifest_path"] = path.string();
    return out;
  }
  return py::none();
}

}  // namespace

PYBIND11_MODULE(_dfx, m) {
  m.doc() = "C++ core of the dfx package: RunConfig validation and the run manifest reader";
  m.attr("__version__") = dfx::Version();
  m.attr("git_revision") = dfx::GitRevision();

  py::class_<PyRunConfig> cls(m, "RunConfig",
                              R"(How a run is configured: the Runtime DFX page's RunConfig.

Any subset of the fields, as keywords: backend_type ("a2a3" | "a5"),
execution_mode ("sim" | "onboard"), enable_chip_swimlane (0-4; True = 4),
enable_dep_gen, enable_dump_args (0 off, 1 partial, 2 full, 3 hybrid),
enable_pmu (0 or an event type 1, 2, 4, 5, 6, 7, 8; True = 2),
enable_scope_stats, save_kernels (forced True by any DFX field),
aicpu_thread_num, ring_task_window / ring_heap / ring_dep_pool (one size or
4 per-ring sizes) and work_dir. The deprecated platform= ("a2a3sim", ...) and
enable_l2_swimlane= spellings work and emit a DeprecationWarning. A refused
value raises ValueError naming the field and the allowed values.)");
  cls.def(py::init(&Construct));
  for (const auto& field : Fields()) {
    const std::string& name = field.first;
    const std::vector<std::string>& superseded = field.second;
    cls.def_property(
        name.c_str(), [name](const PyRunConfig& self) { return GetField(self, name); },
        [name, superseded](PyRunConfig& self, const py::object& value) {
          SetField(self, name, value, superseded);
        });
  }
  cls.def_property(
      "work_dir",
      [](const PyRunConfig& self) -> py::object {
        if (!self.work_dir) return py::none();
        return py::str(*self.work_dir);
      },
      [](PyRunConfig& self, const py::object& value) {
        if (value.is_none()) {
          self.work_dir.reset();
        } else {
          self.work_dir = py::str(py::module_::import("os").attr("fspath")(value));
        }
      });
  cls.def(
      "to_flags",
      [](const PyRunConfig& self) { return dfx::config::RunConfigToFlags(self.config); },
      "the dfx-coordinator flags that reproduce this config");
  cls.def(
      "to_dict",
      [](const PyRunConfig& self) { return FromJson(dfx::config::RunConfigToJson(self.config)); },
      "the JSON (wire / plan) form");
  cls.def(
      "any_dfx", [](const PyRunConfig& self) { return self.config.AnyDfx(); },
      "whether any of the five collectors is on");
  cls.def_static("from_flags", &FromFlags, py::arg("flags"),
                 "parses run-config flags exactly as dfx-coordinator does");
  cls.def("__eq__", [](const PyRunConfig& a, const PyRunConfig& b) {
    return a.config == b.config && a.work_dir == b.work_dir;
  });
  cls.def("__repr__", &Repr);

  m.def("run_config_flags_help", &dfx::config::RunConfigFlagsHelp);
  m.def("read_run_manifest", &ReadRunManifest, py::arg("work_dir"));
  m.def("dfx_outputs_dir", [](const std::string& work_dir) {
    return dfx::collectors::DfxOutputsDir(work_dir).string();
  });
}
