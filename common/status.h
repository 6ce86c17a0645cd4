// Status and Result<T>: errors cross module boundaries as values.
//
// A Status is either OK or carries a Code that tells the caller what to do and
// a message written for a person (which file, which field, what was expected).
// Value type; cheap to copy when OK.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace dfx {

enum class Code {
  kOk = 0,
  kInvalidArgument,   // bad input: fix the file/flag named in the message
  kNotFound,          // a named thing does not exist
  kUnavailable,       // transient: retry may succeed
  kDeadlineExceeded,  // a wait ran out of time
  kFailedPrecondition,
  kInternal,  // a bug or an unexpected environment failure
};

const char* CodeName(Code code);

class Status;
// Aborts with "Result::value() of an error: <status>" (a bug, not bad input).
[[noreturn]] void DieOnErrorValue(const Status& status);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message" (or "OK").
  std::string ToString() const;
  // Returns a copy whose message is "prefix: message".
  Status WithContext(const std::string& prefix) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {Code::kDeadlineExceeded, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {Code::kFailedPrecondition, std::move(m)};
}
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Internal("Result constructed from OK status without value");
  }
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // The value. Reading it from an error is a bug: it aborts, naming the
  // error (check ok() first, or use DFX_ASSIGN_OR_RETURN).
  T& value() & { return Checked(), *value_; }
  const T& value() const& { return Checked(), *value_; }
  T&& value() && { return Checked(), std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void Checked() const {
    if (!value_.has_value()) DieOnErrorValue(status_);
  }
  std::optional<T> value_;
  Status status_;
};

}  // namespace dfx

// Bugs (not bad input) abort with a message.
#define DFX_CHECK(cond)                                                               \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

#define DFX_CONCAT_INNER(a, b) a##b
#define DFX_CONCAT(a, b) DFX_CONCAT_INNER(a, b)

// Return the status if it is not OK.
// (A name unique per use, so nested lambdas that return errors do not shadow.)
#define DFX_RETURN_IF_ERROR(expr) \
  DFX_RETURN_IF_ERROR_IMPL(DFX_CONCAT(dfx_status_, __COUNTER__), expr)
#define DFX_RETURN_IF_ERROR_IMPL(status, expr) \
  do {                                         \
    ::dfx::Status status = (expr);             \
    if (!status.ok()) return status;           \
  } while (0)

// DFX_ASSIGN_OR_RETURN(auto x, ResultReturningCall());
#define DFX_ASSIGN_OR_RETURN(lhs, expr) \
  DFX_ASSIGN_OR_RETURN_IMPL(DFX_CONCAT(dfx_result_, __LINE__), lhs, expr)
#define DFX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
