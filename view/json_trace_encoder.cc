#include "view/json_trace_encoder.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <iterator>

namespace dfx::view {

void JsonTraceEncoder::Head() { writer_->Append("{\"traceEvents\": [\n"); }

void JsonTraceEncoder::Tail(const Json& metadata) {
  writer_->Append("\n]");
  if (!metadata.is_null()) {
    writer_->Append(",\n\"metadata\": ");
    writer_->Append(metadata.dump());
  }
  writer_->Append("}\n");
}

void JsonTraceEncoder::Meta(const char* what, int pid, int tid, bool is_name, std::string_view name,
                            int sort) {
  std::string& b = Separated();
  b.append(R"({"ph":"M","cat":"__metadata","name":")");
  b.append(what);
  b.append(R"(","pid":)");
  b.append(std::to_string(pid));
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
  Appended();
}

void JsonTraceEncoder::Process(int pid, std::string_view name, int sort_index) {
  Meta("process_name", pid, -1, true, name, 0);
  Meta("process_sort_index", pid, -1, false, "", sort_index);
}

void JsonTraceEncoder::Thread(int pid, int tid, std::string_view name, int sort_index) {
  Meta("thread_name", pid, tid, true, name, 0);
  if (sort_index >= 0) Meta("thread_sort_index", pid, tid, false, "", sort_index);
}

void JsonTraceEncoder::Flow(uint64_t id, std::string_view name, const FlowPoint& from,
                            const FlowPoint& to, int in_count, int out_count) {
  for (int k = 0; k < 2; ++k) {
    const FlowPoint& a = k == 0 ? from : to;
    std::string& b = Separated();
    EventText e;             // under 400 bytes with a name of 64
    if (name.size() > 64) {  // not one of the views' names: no fixed bound
      fmt::format_to(
          std::back_inserter(b),
          FMT_COMPILE(R"({{"cat":"flow","id":{},"name":"{}","ph":"{}","pid":{},"tid":{})"), id,
          name, k == 0 ? "s" : "f", a.pid, a.tid);
    } else {
      e.Lit(R"({"cat":"flow","id":)").Int(id).Lit(R"(,"name":")").Lit(name);
      e.Lit(k == 0 ? R"(","ph":"s","pid":)" : R"(","ph":"f","pid":)").Int(a.pid);
      e.Lit(R"(,"tid":)").Int(a.tid);
    }
    e.Lit(R"(,"ts":)").Put(kNumChars, [&a](char* p) { return NumTo(p, a.ts); });
    if (a.bind_id != 0) e.Lit(R"(,"bind_id":)").Int(a.bind_id);
    if (k == 1) e.Lit(R"(,"bp":"e")");
    if (in_count > 0) {
      e.Lit(R"(,"input_task_count":)").Int(in_count);
      e.Lit(R"(,"output_task_count":)").Int(out_count);
    }
    e.Lit("}");
    b.append(e.view());
    Appended();
  }
}

// --- JsonTraceEvent ---------------------------------------------------------------

void JsonTraceEvent::Flush() {
  out_.append(buf_, static_cast<size_t>(p_ - buf_));
  p_ = buf_;
}

void JsonTraceEvent::Long(std::string_view plain) {
  if (plain.size() <= kRoom / 2) {
    Room(plain.size()).Lit(plain);
    return;
  }
  Flush();
  out_.append(plain);
}

JsonTraceEvent& JsonTraceEvent::Quoted(std::string_view text) {
  if (IsPlainText(text)) {
    Room(1).Lit("\"");
    Long(text);
    Room(1).Lit("\"");
    return *this;
  }
  Flush();
  AppendJsonString(&out_, text);
  return *this;
}

JsonTraceEvent& JsonTraceEvent::LongName(std::string_view json_head, std::string_view plain_tail) {
  Room(10).Lit(R"(,"name":")");
  Long(json_head);
  Long(plain_tail);
  Room(1).Lit("\"");
  return *this;
}

bool JsonTraceEvent::Dropped() {
  if (!encoder_.filter_->Drops(TraceNumber(ts_), TraceNumber(dur_))) return false;
  out_.resize(begin_);
  p_ = buf_;
  return true;
}

}  // namespace dfx::view
