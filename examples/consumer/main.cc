// An accelerator runtime embedding the collectors (find_package(dfx) ->
// dfx::collectors): it builds its RunConfig from the Runtime DFX flags, arms
// the collectors that config enables, records where its AICore workers would
// (here: three made-up tasks on two cores) and exports the artifacts.
//
//   dfx_consumer OUTPUT_DIR [--enable-chip-swimlane [LEVEL]] [--enable-pmu [N]] ...
#include <cstdio>
#include <string>
#include <vector>

#include "collectors/artifact_layout.h"
#include "collectors/chip_layout.h"
#include "collectors/recorders.h"
#include "config/run_config.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dfx_consumer OUTPUT_DIR [run-config flags]\n%s",
                 dfx::config::RunConfigFlagsHelp());
    return 2;
  }
  std::vector<std::string> flags(argv + 2, argv + argc);
  auto parsed = dfx::config::ParseRunConfigFlags(flags);
  if (!parsed.ok()) {
    std::fprintf(stderr, "dfx_consumer: %s\n", parsed.status().message().c_str());
    return 2;
  }
  dfx::collectors::ChipLayout layout;
  layout.core_types = {dfx::collectors::CoreKind::kAic, dfx::collectors::CoreKind::kAiv};
  dfx::collectors::CapacityHint hint;
  hint.tasks = 3;
  hint.core_executions = 3;
  dfx::collectors::DfxCollectors collectors(parsed->config, layout, hint, argv[1], {});
  if (auto* swimlane = collectors.swimlane()) {
    for (uint32_t task = 0; task < 3; ++task) {
      swimlane->RecordAicoreTask(task % 2, task, task, 1000 * task, 1000 * task + 500, 10);
    }
  }
  std::vector<std::string> written;
  if (auto s = collectors.ExportAll(/*run_succeeded=*/true, &written); !s.ok()) {
    std::fprintf(stderr, "dfx_consumer: %s\n", s.message().c_str());
    return 1;
  }
  for (const auto& w : written) std::printf("%s\n", w.c_str());
  return 0;
}
