// The pmu.csv reader (docs/formats.md §10.2), beside its writer
// (PmuRecorder::Export): the one parser of the header and the rows, streaming
// a row at a time so a file of any size is read in constant memory. What the
// rows mean (sums per function, pipe utilisation) is the viewer's business.
//
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dfx::collectors {

struct PmuCsvHeader {
  std::vector<std::string> columns;   // every column, in file order
  std::vector<std::string> counters;  // pmu_total_cycles, then the event type's counters
};

// One data row; only the columns a reader of the counters needs are parsed.
struct PmuCsvRow {
  int core_id = 0;
  uint64_t task_id = 0;  // the "0x<16 hex>" cell
  long func_id = 0;
  int core_type = 0;  // 0 = AIC, 1 = AIV
  int event_type = 0;
  std::vector<double> counters;  // parallel to PmuCsvHeader::counters
};

// Reads the header into `header`, then calls `on_row` for every non-blank
// row in file order. Errors name the file, the line and, for a bad cell, the
// column: "pmu.csv: line 2: column func_id: expected a number, got \"zero\"".
// Reads and checks only the header line.
Result<PmuCsvHeader> ReadPmuCsvHeader(const std::filesystem::path& path);

Status ReadPmuCsv(const std::filesystem::path& path, PmuCsvHeader* header,
                  const std::function<void(const PmuCsvRow&)>& on_row);

}  // namespace dfx::collectors
