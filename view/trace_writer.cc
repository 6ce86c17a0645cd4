#include "view/trace_writer.h"

#include <fmt/format.h>

namespace dfx::view {

Status ParseTraceFormat(const std::string& text, TraceFormat* format) {
  const std::optional<TraceFormat> parsed = kTraceFormatText.Parse(text);
  if (!parsed) {
    return InvalidArgument("--format " + text + ": expected " + kTraceFormatText.Choices(" or "));
  }
  *format = *parsed;
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
  const std::string name = path.filename().string();
  const bool gzip = name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
  // A compressed trace may come out smaller than what is known of it.
  const bool fills_chunks =
      !gzip && min_bytes >= (ChunkedWriter::kBackgroundChunks + 1) * ChunkedWriter::kChunkBytes;
  DFX_RETURN_IF_ERROR(writer_.Open(path, gzip, /*background=*/true, fills_chunks));
  if (format == TraceFormat::kProto) {
    proto_ = std::make_unique<PerfettoEncodeThread>(&writer_);
    proto_event_ = std::make_unique<PerfettoTraceEvent>(proto_.get(), &filter_);
    return Status::Ok();
  }
  json_.Head();
  return Status::Ok();
}

Status TraceWriter::Finish(const Json& metadata) {
  if (proto_) {
    const Status encoded = proto_->Finish();  // the writer is this thread's again
    const Status& built = proto_event_->status();
    if (!built.ok() || !encoded.ok()) {
      writer_.Abort();
      return !built.ok() ? built : encoded;
    }
    if (!metadata.is_null()) proto_->encoder().Metadata(metadata.dump());
    return writer_.Commit();
  }
  json_.Tail(metadata);
  return writer_.Commit();
}

void TraceWriter::ProcessName(int pid, const std::string& name, int sort) {
  if (!named_processes_.insert(fmt::format("{}/{}", Pid(pid), name)).second) return;
  if (proto_) {
    proto_->Process(Pid(pid), process_prefix_ + name, pid_base_ + sort);
  } else {
    json_.Process(Pid(pid), process_prefix_ + name, pid_base_ + sort);
  }
}

void TraceWriter::ThreadName(int pid, int tid, const std::string& name, int sort) {
  if (!named_threads_.insert({Pid(pid), tid}).second) return;
  if (proto_) {
    proto_->Thread(Pid(pid), tid, name, sort);
  } else {
    json_.Thread(Pid(pid), tid, name, sort);
  }
}

void TraceWriter::Flow(std::string_view name, const Anchor& from, double from_ts, const Anchor& to,
                       double to_ts, int in_count, int out_count) {
  if (!filter_.KeepsFlow(T(from_ts), T(to_ts))) return;
  const uint64_t id = next_flow_id_++;
  flow_events_ += 2;
  if (proto_) {
    // The counts have no place on a legacy flow event (trace processor
    // keeps no args for them); the arrows are what the UI draws.
    proto_->Flow(id, name, Pid(from.pid), from.tid, T(from_ts), Pid(to.pid), to.tid, T(to_ts));
    return;
  }
  json_.Flow(id, name, {Pid(from.pid), from.tid, T(from_ts), from.event_id},
             {Pid(to.pid), to.tid, T(to_ts), to.event_id}, in_count, out_count);
}

}  // namespace dfx::view
