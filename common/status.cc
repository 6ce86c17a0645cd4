#include "common/status.h"

#include "common/enum_text.h"

namespace dfx {
namespace {

constexpr auto kCodeText = MakeEnumTable<Code>({{Code::kOk, "OK"},
                                                {Code::kInvalidArgument, "INVALID_ARGUMENT"},
                                                {Code::kNotFound, "NOT_FOUND"},
                                                {Code::kUnavailable, "UNAVAILABLE"},
                                                {Code::kDeadlineExceeded, "DEADLINE_EXCEEDED"},
                                                {Code::kFailedPrecondition, "FAILED_PRECONDITION"},
                                                {Code::kInternal, "INTERNAL"}},
                                               "UNKNOWN");

}  // namespace

const char* CodeName(Code code) { return kCodeText.Name(code); }

void DieOnErrorValue(const Status& status) {
  std::fprintf(stderr, "CHECK failed: Result::value() of an error: %s\n",
               status.ToString().c_str());
  std::abort();
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& prefix) const {
  if (ok()) return *this;
  return Status(code_, prefix + ": " + message_);
}

}  // namespace dfx
