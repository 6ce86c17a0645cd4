// `dfx-view report`: the run report, one self-contained HTML page that works
// offline (docs/formats.md §16): the run summary (run_summary.h) drawn as
// charts — ranks x dispatch steps as heatmaps of span and of skew against the
// step's median with the stragglers marked, busy / idle / scheduler time and
// the top kernels per rank, PMU cycles per kernel, ring occupancy over the
// steps, the coordinator's host lane, each rank's clock offset with its
// uncertainty bound, what was captured and what was not (run_manifest.json),
// and per dispatch the command that writes its trace.
//
// The charting library (Chart.js, Debian's libjs-chart.js) and the page
// (view/run_report_page.html) are compiled into the binary (view/CMakeLists.txt);
// the data is JSON inside the page. The page loads nothing from the network:
// its Content-Security-Policy allows only its own inline scripts (by nonce)
// and no connection, image or font from anywhere.
//
// Above `max_rows` ranks the per-rank charts show aggregates (the min,
// median, p90 and max rank of every step or metric) plus the outlier ranks
// (the stragglers and the ranks with the longest and shortest spans), so a
// run of 1,000 ranks x 100 dispatches stays readable and its page small.
//
// Functions; called from one thread.
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <string_view>

#include "common/json.h"
#include "common/status.h"
#include "view/run_summary.h"

namespace dfx::view {

struct RunReportOptions {
  std::filesystem::path output;   // the page; written atomically
  std::string view = "dfx-view";  // how the page's commands name dfx-view
  size_t max_rows = 200;          // more ranks than this: aggregates plus outliers
};

// The page's data: the summary `s` reshaped for the charts, with the run
// manifest beside the input (W/dfx_outputs/run_manifest.json, or two levels
// up from one rank<N>/d<K>) when there is one. Warnings go to `err`.
Json RunReportData(const RunSummary& s, const RunReportOptions& options, std::ostream& err);

// Writes the page for `s` to options.output.
Status WriteRunReport(const RunSummary& s, const RunReportOptions& options, std::ostream& err);

// `data` as a script-safe JSON text: every '<', '>' and '&' escaped (\u003c
// ...), so no "</script" or "<!--" can appear in the page's script data.
std::string ScriptSafeJson(const Json& data);

// The resources compiled in at build time (view/CMakeLists.txt): the page
// template with the markers %NONCE%, %TITLE%, %CHARTJS% and %DATA%, and
// Chart.js.
std::string_view RunReportPageTemplate();
std::string_view ChartJsLibrary();

}  // namespace dfx::view
