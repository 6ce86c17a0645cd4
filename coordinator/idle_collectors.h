// A collector that was on but had nothing to write in some dispatches
// (a program that tags no tensor for dump, a dispatch that ran no task) is
// normal: the run says so once, at info level, instead of a warning per
// dispatch from every agent (issue 45). The counts come from the manifest's
// dispatch entries, so L2 and L3 runs say it alike. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "collectors/run_manifest.h"
#include "config/run_config.h"

namespace dfx::coordinator {

// One line per collector that some dispatch armed and ran to the end
// without writing its file, e.g. "args dump: no tensor tagged for dump in
// 9 of 9 dispatch(es)". Only ok dispatches count, each with the collectors
// its pass armed (config::PlanPasses of `config`, the run's as asked;
// l3: the run was L3). Empty when every collector wrote.
std::vector<std::string> IdleCollectorLines(
    const std::vector<collectors::DispatchEntry>& dispatches, const config::RunConfig& config,
    bool l3);

}  // namespace dfx::coordinator
