#include "view/task_label.h"

#include <fmt/format.h>

#include <algorithm>

namespace dfx::view {

std::string FormatTaskDisplay(uint64_t task_id) {
  int ring = RingOf(task_id);
  if (ring == 0) return fmt::format("t{}", LocalOf(task_id));
  return fmt::format("r{}t{}", ring, LocalOf(task_id));
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

}  // namespace dfx::view
