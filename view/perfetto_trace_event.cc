#include "view/perfetto_trace_event.h"

#include <cmath>
#include <utility>

#include "common/decimal.h"
#include "view/event_text.h"

namespace dfx::view {

void PerfettoTraceEvent::Start(char ph, std::string_view cat) {
  ph_ = ph;
  cat_ = cat;
  name_.clear();
  name_per_task_ = false;
  pid_ = tid_ = 0;
  ts_ = 0;
  dur_ = std::nan("");
  has_dur_ = opened_ = skip_ = dropped_ = false;
}

PerfettoTraceEvent& PerfettoTraceEvent::Name(std::string_view, std::string_view raw_head,
                                             std::string_view plain_tail) {
  name_.assign(raw_head);
  name_.append(plain_tail);
  name_per_task_ = !plain_tail.empty();
  return *this;
}

PerfettoTraceEvent& PerfettoTraceEvent::NameText(std::string_view text) {
  name_.assign(text);
  name_per_task_ = false;
  return *this;
}

void PerfettoTraceEvent::Fail(std::string message) {
  if (status_.ok()) status_ = Internal(std::move(message));
  skip_ = true;
}

bool PerfettoTraceEvent::OpenFirst() {
  opened_ = true;
  if (!status_.ok()) {
    skip_ = true;
    return false;
  }
  ts_ = TraceNumber(ts_);
  dur_ = has_dur_ ? TraceNumber(dur_) : std::nan("");
  if (std::isnan(ts_) || (has_dur_ && std::isnan(dur_))) {
    Fail("proto trace: the ts or dur of \"" + name_ + "\" is not a finite number");
    return false;
  }
  if (filter_->Drops(ts_, dur_)) {
    dropped_ = true;
    skip_ = true;
    return false;
  }
  if (ph_ == 'X') {
    thread_->BeginSlice(pid_, tid_, ts_, cat_, name_, name_per_task_);
  } else if (ph_ != 'C') {
    Fail(std::string("proto trace: no encoding for an event of phase '") + ph_ + "'");
    return false;
  }
  return true;
}

void PerfettoTraceEvent::Integral(std::string_view key, int64_t v, bool is_unsigned) {
  if (!Open()) return;
  if (ph_ == 'X') {
    if (is_unsigned) {
      thread_->AnnotateUint(key, static_cast<uint64_t>(v));
    } else {
      thread_->AnnotateInt(key, v);
    }
  } else if (!is_unsigned) {
    thread_->CounterInt(pid_, name_, key, ts_, v);
  } else {
    char text[kMaxDecimalChars];
    const char* end = WriteDecimal(text, static_cast<uint64_t>(v));
    thread_->CounterNumberText(pid_, name_, key, ts_, {text, static_cast<size_t>(end - text)});
  }
}

PerfettoTraceEvent& PerfettoTraceEvent::Num(std::string_view key, double v) {
  if (!Open()) return *this;
  // A value with a fraction (NumTo's common case) reads back as n / 1000.
  const double ns = std::round(v * 1000.0);
  const int64_t n = std::fabs(ns) < 1e15 ? static_cast<int64_t>(ns) : 0;
  if (n % 1000 != 0) {
    const double us = static_cast<double>(n) / 1000.0;
    if (ph_ == 'X') {
      thread_->AnnotateDouble(key, us);
    } else {
      char text[kNumChars];
      const char* end = NumTo(text, v);
      thread_->CounterNumberText(pid_, name_, key, ts_, {text, static_cast<size_t>(end - text)});
    }
    return *this;
  }
  // Whole numbers, null: typed from the text, as the JSON reader types them.
  char text[kNumChars];
  const std::string_view t(text, static_cast<size_t>(NumTo(text, v) - text));
  if (t == "null") {
    if (ph_ == 'X') {
      thread_->AnnotateNull(key);
    } else {
      Fail("proto trace: counter args are not numbers");
    }
    return *this;
  }
  // Not a number: the encoding thread's error, reported by Finish.
  if (ph_ == 'X') {
    thread_->AnnotateNumberText(key, t);
  } else {
    thread_->CounterNumberText(pid_, name_, key, ts_, t);
  }
  return *this;
}

PerfettoTraceEvent& PerfettoTraceEvent::Bool(std::string_view key, bool v) {
  if (!Open()) return *this;
  if (ph_ == 'C') {
    Fail("proto trace: counter args are not numbers");
    return *this;
  }
  thread_->AnnotateBool(key, v);
  return *this;
}

PerfettoTraceEvent& PerfettoTraceEvent::String(std::string_view key, std::string_view text,
                                               bool per_task) {
  if (!Open()) return *this;
  if (ph_ == 'C') {
    Fail("proto trace: a counter arg that is not a number: " + std::string(key));
    return *this;
  }
  thread_->AnnotateString(key, text, per_task);
  return *this;
}

PerfettoTraceEvent& PerfettoTraceEvent::Integers(std::string_view key, const int64_t* v, size_t n) {
  if (!Open()) return *this;
  if (ph_ == 'C') {
    Fail("proto trace: counter args are not numbers");
    return *this;
  }
  thread_->AnnotateInts(key, v, n);
  return *this;
}

bool PerfettoTraceEvent::End() {
  if (Open() && ph_ == 'X') thread_->EndSlice(ts_, dur_);
  return !dropped_;
}

}  // namespace dfx::view
