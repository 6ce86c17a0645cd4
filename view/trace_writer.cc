#include "view/trace_writer.h"

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

Status TraceWriter::Open(const std::filesystem::path& path, const TraceFilter& filter) {
  filter_ = filter;
  const std::string name = path.filename().string();
  const bool gzip = name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
  DFX_RETURN_IF_ERROR(writer_.Open(path, gzip));
  writer_.Append("{\"traceEvents\": [\n");
  return Status::Ok();
}

Status TraceWriter::Finish(const Json& metadata) {
  writer_.Append("\n]");
  if (!metadata.is_null()) {
    writer_.Append(",\n\"metadata\": ");
    writer_.Append(metadata.dump());
  }
  writer_.Append("}\n");
  return writer_.Commit();
}

std::string& TraceWriter::Begin() {
  std::string& b = writer_.buffer();
  event_begin_ = b.size();
  last_dropped_ = false;
  if (!first_event_) b.append(",\n");
  return b;
}

void TraceWriter::End() {
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
  Meta("process_name", pid, -1, true, process_prefix_ + name, 0);
  Meta("process_sort_index", pid, -1, false, "", pid_base_ + sort);
}

void TraceWriter::ThreadName(int pid, int tid, const std::string& name, int sort) {
  if (!named_threads_.insert({Pid(pid), tid}).second) return;
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
  in_flow_ = true;  // both ends were checked above
  for (int k = 0; k < 2; ++k) {
    const Anchor& a = k == 0 ? from : to;
    std::string& b = Begin();
    AppendF(b,
            FMT_COMPILE(R"({{"cat":"flow","id":{},"name":"{}","ph":"{}","pid":{},"tid":{},"ts":)"),
            id, name, k == 0 ? "s" : "f", Pid(a.pid), a.tid);
    Num(b, T(k == 0 ? from_ts : to_ts));
    if (a.event_id != 0) AppendF(b, FMT_COMPILE(R"(,"bind_id":{})"), a.event_id);
    if (k == 1) b.append(R"(,"bp":"e")");
    if (in_count > 0) {
      AppendF(b, FMT_COMPILE(R"(,"input_task_count":{},"output_task_count":{})"), in_count,
              out_count);
    }
    b.append("}");
    End();
  }
  in_flow_ = false;
  flow_events_ += 2;
}

}  // namespace dfx::view
