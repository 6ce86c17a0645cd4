#include "view/trace_writer.h"

namespace dfx::view {

Status TraceWriter::Open(const std::filesystem::path& path) {
  DFX_RETURN_IF_ERROR(writer_.Open(path));
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
  if (!first_event_) b.append(",\n");
  first_event_ = false;
  return b;
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
  uint64_t id = next_flow_id_++;
  for (int k = 0; k < 2; ++k) {
    const Anchor& a = k == 0 ? from : to;
    std::string& b = Begin();
    AppendF(b, R"({{"cat":"flow","id":{},"name":"{}","ph":"{}","pid":{},"tid":{},"ts":)", id, name,
            k == 0 ? "s" : "f", Pid(a.pid), a.tid);
    Num(b, T(k == 0 ? from_ts : to_ts));
    if (a.event_id != 0) AppendF(b, R"(,"bind_id":{})", a.event_id);
    if (k == 1) b.append(R"(,"bp":"e")");
    if (in_count > 0) {
      AppendF(b, R"(,"input_task_count":{},"output_task_count":{})", in_count, out_count);
    }
    b.append("}");
    End();
  }
  flow_events_ += 2;
}

}  // namespace dfx::view
