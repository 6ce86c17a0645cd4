#include "view/trace_writer.h"

#include <cstring>

namespace dfx::view {

namespace {

// The number after `key` ("\"ts\":") in one event's JSON, or NaN.
double NumberAfter(std::string_view event, std::string_view key) {
  const size_t at = event.find(key);
  if (at == std::string_view::npos) return std::nan("");
  const char* p = event.data() + at + key.size();
  char* end = nullptr;
  const double v = std::strtod(p, &end);
  return end == p ? std::nan("") : v;
}

}  // namespace

Status ParseTraceFormat(const std::string& text, TraceFormat* format) {
  if (text == "json") {
    *format = TraceFormat::kJson;
  } else if (text == "proto") {
    *format = TraceFormat::kProto;
  } else {
    return InvalidArgument("--format " + text + ": expected json or proto");
  }
  return Status::Ok();
}

std::filesystem::path DefaultTracePath(const std::filesystem::path& json_default,
                                       TraceFormat format) {
  if (format == TraceFormat::kJson || json_default.extension() != ".json") return json_default;
  std::filesystem::path p = json_default;
  return p.replace_extension(".pftrace");
}

Status TraceWriter::Open(const std::filesystem::path& path, const TraceFilter& filter,
                         TraceFormat format, uint64_t min_bytes) {
  filter_ = filter;
  format_ = format;
  const std::string name = path.filename().string();
  const bool gzip = name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
  // A compressed trace may come out smaller than what is known of it.
  const bool fills_chunks =
      !gzip && min_bytes >= (ChunkedWriter::kBackgroundChunks + 1) * ChunkedWriter::kChunkBytes;
  DFX_RETURN_IF_ERROR(writer_.Open(path, gzip, /*background=*/true, fills_chunks));
  if (format_ == TraceFormat::kProto) {
    proto_ = std::make_unique<PerfettoEncodeThread>(&writer_);
    return Status::Ok();
  }
  writer_.Append("{\"traceEvents\": [\n");
  return Status::Ok();
}

Status TraceWriter::Finish(const Json& metadata) {
  if (proto_) {
    const Status encoded = proto_->Finish();  // the writer is this thread's again
    if (!proto_status_.ok() || !encoded.ok()) {
      writer_.Abort();
      return !proto_status_.ok() ? proto_status_ : encoded;
    }
    if (!metadata.is_null()) proto_->encoder().Metadata(metadata.dump());
    return writer_.Commit();
  }
  writer_.Append("\n]");
  if (!metadata.is_null()) {
    writer_.Append(",\n\"metadata\": ");
    writer_.Append(metadata.dump());
  }
  writer_.Append("}\n");
  return writer_.Commit();
}

std::string& TraceWriter::Begin() {
  last_dropped_ = false;
  if (proto_) {
    proto_event_.clear();
    return proto_event_;
  }
  std::string& b = writer_.buffer();
  event_begin_ = b.size();
  if (!first_event_) b.append(",\n");
  return b;
}

void TraceWriter::End() {
  if (proto_) {
    if (!proto_status_.ok()) return;
    proto_status_ = ParseJsonTraceEvent(proto_event_, &proto_parsed_);
    if (!proto_status_.ok()) return;
    const JsonTraceEvent& e = proto_parsed_;
    if (OutsideWindow(e.ts, e.dur)) {
      last_dropped_ = true;
      return;
    }
    proto_->Event(e);
    return;
  }
  std::string& b = writer_.buffer();
  if (filter_.windowed() && !in_flow_) {
    const std::string_view event(b.data() + event_begin_, b.size() - event_begin_);
    const double ts = NumberAfter(event, "\"ts\":");
    if (!std::isnan(ts)) {
      const double dur = NumberAfter(event, "\"dur\":");
      const double end = std::isnan(dur) ? ts : ts + dur;
      if (end < filter_.window_start || ts > filter_.window_end) {
        b.resize(event_begin_);
        last_dropped_ = true;
        return;
      }
    }
  }
  first_event_ = false;
  writer_.MaybeFlush();
}

void TraceWriter::Meta(const char* what, int pid, int tid, bool is_name, const std::string& name,
                       int sort) {
  std::string& b = Begin();
  b.append(R"({"ph":"M","cat":"__metadata","name":")");
  b.append(what);
  b.append(R"(","pid":)");
  b.append(std::to_string(Pid(pid)));
  if (tid >= 0) {
    b.append(R"(,"tid":)");
    b.append(std::to_string(tid));
  }
  b.append(R"(,"args":{)");
  if (is_name) {
    b.append(R"("name":)");
    AppendJsonString(&b, name);
  } else {
    b.append(R"("sort_index":)");
    b.append(std::to_string(sort));
  }
  b.append("}}");
  End();
}

void TraceWriter::ProcessName(int pid, const std::string& name, int sort) {
  if (!named_processes_.insert(fmt::format("{}/{}", Pid(pid), name)).second) return;
  if (proto_) {
    proto_->Process(Pid(pid), process_prefix_ + name, pid_base_ + sort);
    return;
  }
  Meta("process_name", pid, -1, true, process_prefix_ + name, 0);
  Meta("process_sort_index", pid, -1, false, "", pid_base_ + sort);
}

void TraceWriter::ThreadName(int pid, int tid, const std::string& name, int sort) {
  if (!named_threads_.insert({Pid(pid), tid}).second) return;
  if (proto_) {
    proto_->Thread(Pid(pid), tid, name, sort);
    return;
  }
  Meta("thread_name", pid, tid, true, name, 0);
  if (sort >= 0) Meta("thread_sort_index", pid, tid, false, "", sort);
}

void TraceWriter::Flow(const char* name, const Anchor& from, double from_ts, const Anchor& to,
                       double to_ts, int in_count, int out_count) {
  if (!filter_.flows) return;
  if (filter_.windowed()) {
    for (double t : {T(from_ts), T(to_ts)}) {
      if (t < filter_.window_start || t > filter_.window_end) return;
    }
  }
  uint64_t id = next_flow_id_++;
  if (proto_) {
    // The counts have no place on a legacy flow event (trace processor
    // keeps no args for them); the arrows are what the UI draws.
    proto_->Flow(id, name, Pid(from.pid), from.tid, T(from_ts), Pid(to.pid), to.tid, T(to_ts));
    flow_events_ += 2;
    return;
  }
  in_flow_ = true;  // both ends were checked above
  const size_t name_len = std::strlen(name);
  for (int k = 0; k < 2; ++k) {
    const Anchor& a = k == 0 ? from : to;
    std::string& b = Begin();
    EventText e;          // under 400 bytes with a name of 64
    if (name_len > 64) {  // not one of the views' names: no fixed bound
      AppendF(b, FMT_COMPILE(R"({{"cat":"flow","id":{},"name":"{}","ph":"{}","pid":{},"tid":{})"),
              id, name, k == 0 ? "s" : "f", Pid(a.pid), a.tid);
    } else {
      e.Lit(R"({"cat":"flow","id":)").Int(id).Lit(R"(,"name":")").Lit({name, name_len});
      e.Lit(k == 0 ? R"(","ph":"s","pid":)" : R"(","ph":"f","pid":)").Int(Pid(a.pid));
      e.Lit(R"(,"tid":)").Int(a.tid);
    }
    e.Lit(R"(,"ts":)").Num(T(k == 0 ? from_ts : to_ts));
    if (a.event_id != 0) e.Lit(R"(,"bind_id":)").Int(a.event_id);
    if (k == 1) e.Lit(R"(,"bp":"e")");
    if (in_count > 0) {
      e.Lit(R"(,"input_task_count":)").Int(in_count);
      e.Lit(R"(,"output_task_count":)").Int(out_count);
    }
    e.Lit("}");
    b.append(e.view());
    End();
  }
  in_flow_ = false;
  flow_events_ += 2;
}

// --- TraceEvent ---------------------------------------------------------------------

void TraceEvent::Start(TraceWriter* trace, std::string* json, char ph, std::string_view cat) {
  trace_ = trace;
  json_ = json;
  args_ = false;
  p_ = buf_;
  if (json_ != nullptr) {
    assert(IsPlainText(cat));
    Room(24 + cat.size()).Lit(R"({"ph":")").Lit({&ph, 1}).Lit(R"(","cat":")").Lit(cat).Lit("\"");
    return;
  }
  ph_ = ph;
  cat_ = cat;
  name_.clear();
  pid_ = tid_ = 0;
  ts_ = 0;
  dur_ = std::nan("");
  has_dur_ = opened_ = skip_ = name_per_task_ = false;
}

void TraceEvent::FlushText() {
  json_->append(buf_, static_cast<size_t>(p_ - buf_));
  p_ = buf_;
}

TraceEvent& TraceEvent::LongName(std::string_view json_head, std::string_view raw_head,
                                 std::string_view plain_tail) {
  if (json_ == nullptr) {
    name_.assign(raw_head);
    name_.append(plain_tail);
    name_per_task_ = !plain_tail.empty();
    return *this;
  }
  Room(10).Lit(R"(,"name":")");
  Text(json_head);
  Text(plain_tail);
  Room(1).Lit("\"");
  return *this;
}

void TraceEvent::Text(std::string_view s) {
  if (s.size() <= kRoom / 2) {
    Room(s.size()).Lit(s);
    return;
  }
  FlushText();
  json_->append(s);
}

TraceEvent& TraceEvent::ProtoStr(std::string_view key, std::string_view text, bool per_task) {
  if (!Open()) return *this;
  if (ph_ == 'C') {
    Fail("proto trace: a counter arg that is not a number: " + std::string(key));
    return *this;
  }
  trace_->proto_->AnnotateString(key, text, per_task);
  return *this;
}

void TraceEvent::Fail(std::string message) {
  if (trace_->proto_status_.ok()) trace_->proto_status_ = Internal(std::move(message));
  skip_ = true;
}

bool TraceEvent::OpenFirst() {
  opened_ = true;
  TraceWriter& w = *trace_;
  if (!w.proto_status_.ok()) {
    skip_ = true;
    return false;
  }
  ts_ = TraceNumber(ts_);
  dur_ = has_dur_ ? TraceNumber(dur_) : std::nan("");
  if (std::isnan(ts_) || (has_dur_ && std::isnan(dur_))) {
    Fail("proto trace: the ts or dur of \"" + name_ + "\" is not a finite number");
    return false;
  }
  if (w.OutsideWindow(ts_, dur_)) {
    w.last_dropped_ = true;
    skip_ = true;
    return false;
  }
  if (ph_ == 'X') {
    w.proto_->BeginSlice(pid_, tid_, ts_, cat_, name_, name_per_task_);
  } else if (ph_ != 'C') {
    Fail(std::string("proto trace: no encoding for an event of phase '") + ph_ + "'");
    return false;
  }
  return true;
}

void TraceEvent::ProtoInt(std::string_view key, int64_t v, bool is_unsigned) {
  if (!Open()) return;
  PerfettoEncodeThread& e = *trace_->proto_;
  if (ph_ == 'X') {
    if (is_unsigned) {
      e.AnnotateUint(key, static_cast<uint64_t>(v));
    } else {
      e.AnnotateInt(key, v);
    }
  } else if (!is_unsigned) {
    e.CounterInt(pid_, name_, key, ts_, v);
  } else {
    char text[24];
    const char* end = WriteDecimal(text, static_cast<uint64_t>(v));
    e.CounterNumberText(pid_, name_, key, ts_, {text, static_cast<size_t>(end - text)});
  }
}

void TraceEvent::ProtoNum(std::string_view key, double v) {
  if (!Open()) return;
  PerfettoEncodeThread& e = *trace_->proto_;
  // A value with a fraction (NumTo's common case) reads back as n / 1000.
  const double ns = std::round(v * 1000.0);
  const int64_t n = std::fabs(ns) < 1e15 ? static_cast<int64_t>(ns) : 0;
  if (n % 1000 != 0) {
    const double us = static_cast<double>(n) / 1000.0;
    if (ph_ == 'X') {
      e.AnnotateDouble(key, us);
    } else {
      char text[kNumChars];
      const char* end = NumTo(text, v);
      e.CounterNumberText(pid_, name_, key, ts_, {text, static_cast<size_t>(end - text)});
    }
    return;
  }
  // Whole numbers, null: typed from the text, as the JSON reader types them.
  char text[kNumChars];
  const std::string_view t(text, static_cast<size_t>(NumTo(text, v) - text));
  if (t == "null") {
    if (ph_ == 'X') {
      e.AnnotateNull(key);
    } else {
      Fail("proto trace: counter args are not numbers");
    }
    return;
  }
  // Not a number: the encoding thread's error, reported by Finish.
  if (ph_ == 'X') {
    e.AnnotateNumberText(key, t);
  } else {
    e.CounterNumberText(pid_, name_, key, ts_, t);
  }
}

void TraceEvent::ProtoInts(std::string_view key, const int64_t* v, size_t n) {
  if (!Open()) return;
  if (ph_ == 'C') {
    Fail("proto trace: counter args are not numbers");
    return;
  }
  trace_->proto_->AnnotateInts(key, v, n);
}

void TraceEvent::ProtoEnd() {
  if (Open() && ph_ == 'X') trace_->proto_->EndSlice(ts_, dur_);
}

}  // namespace dfx::view
