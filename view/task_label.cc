#include "view/task_label.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>

namespace dfx::view {

std::string FormatTaskDisplay(uint64_t task_id) {
  int ring = RingOf(task_id);
  if (ring == 0) return fmt::format(FMT_COMPILE("t{}"), LocalOf(task_id));
  return fmt::format(FMT_COMPILE("r{}t{}"), ring, LocalOf(task_id));
}

std::string FuncLetters(int n) {
  if (n < 0) return "";
  std::string s;
  long v = static_cast<long>(n) + 1;
  while (v > 0) {
    --v;
    s.push_back(static_cast<char>('a' + v % 26));
    v /= 26;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

int RowFuncId(const collectors::SwimlaneRecords& records, const collectors::TaskGraph* deps,
              const collectors::TaskRow& row) {
  if (deps == nullptr) return -1;
  const collectors::TaskInfo* t = deps->FindTask(records.TaskId(row));
  if (t == nullptr) return -1;
  int f = FuncIdForCore(*t, records.IsAic(row) ? "aic" : "aiv");
  return f < 0 ? -1 : f;
}

std::string KernelName(const collectors::NameMap& names, int func_id) {
  if (const std::string* n = names.Find(func_id)) return *n;
  return fmt::format(FMT_COMPILE("func_{}_{}"), func_id, FuncLetters(func_id));
}

}  // namespace dfx::view
