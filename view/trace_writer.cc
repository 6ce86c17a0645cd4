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
                         TraceFormat format) {
  filter_ = filter;
  format_ = format;
  const std::string name = path.filename().string();
  const bool gzip = name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
  DFX_RETURN_IF_ERROR(writer_.Open(path, gzip, /*background=*/true));
  if (format_ == TraceFormat::kProto) {
    proto_ = std::make_unique<PerfettoTraceEncoder>(&writer_.buffer());
    return Status::Ok();
  }
  writer_.Append("{\"traceEvents\": [\n");
  return Status::Ok();
}

Status TraceWriter::Finish(const Json& metadata) {
  if (proto_) {
    if (!proto_status_.ok()) {
      writer_.Abort();
      return proto_status_;
    }
    if (!metadata.is_null()) proto_->Metadata(metadata.dump());
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
    if (filter_.windowed() && !std::isnan(e.ts)) {
      const double end = std::isnan(e.dur) ? e.ts : e.ts + e.dur;
      if (end < filter_.window_start || e.ts > filter_.window_end) {
        last_dropped_ = true;
        return;
      }
    }
    proto_status_ = proto_->Event(e);
    writer_.MaybeFlush();
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
    writer_.MaybeFlush();
    return;
  }
  Meta("process_name", pid, -1, true, process_prefix_ + name, 0);
  Meta("process_sort_index", pid, -1, false, "", pid_base_ + sort);
}

void TraceWriter::ThreadName(int pid, int tid, const std::string& name, int sort) {
  if (!named_threads_.insert({Pid(pid), tid}).second) return;
  if (proto_) {
    proto_->Thread(Pid(pid), tid, name, sort);
    writer_.MaybeFlush();
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
    proto_->FlowEnd(true, id, name, Pid(from.pid), from.tid, T(from_ts));
    proto_->FlowEnd(false, id, name, Pid(to.pid), to.tid, T(to_ts));
    writer_.MaybeFlush();
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

}  // namespace dfx::view
