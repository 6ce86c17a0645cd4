#include "coordinator/artifact_writer.h"

#include <fmt/format.h>

namespace dfx::coordinator {

ArtifactWriter::ArtifactWriter(std::chrono::milliseconds write_delay)
    : write_delay_(write_delay), thread_([this] { Loop(); }) {}

ArtifactWriter::~ArtifactWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // queued jobs are dropped: their sinks abort their temporary files
}

void ArtifactWriter::Push(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    ++outstanding_;
  }
  cv_.notify_one();
}

std::deque<ArtifactWriter::Done> ArtifactWriter::TakeResults(bool woken) {
  bool waiting = woken;
  if (!waiting) {
    std::lock_guard<std::mutex> lock(mu_);
    waiting = !results_.empty();
  }
  if (waiting) wake_.Drain();
  std::deque<Done> out;
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(results_);
  outstanding_ -= taken_;
  taken_ = 0;
  return out;
}

std::map<uint64_t, uint32_t> ArtifactWriter::DiscardWrites(const std::set<uint64_t>& streams) {
  std::map<uint64_t, uint32_t> dropped;
  if (streams.empty()) return dropped;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->kind == Kind::kWrite && streams.count(it->stream)) {
      ++dropped[it->stream];
      --outstanding_;
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
  return dropped;
}

bool ArtifactWriter::Idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_ == 0;
}

void ArtifactWriter::Loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Done done;
    const bool report = Run(job, &done);
    job = Job{};  // release the frame before reporting (bounded memory)
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++taken_;  // counted as finished when the loop takes the results
      if (report) results_.push_back(std::move(done));
    }
    if (report) wake_.Notify();
  }
}

bool ArtifactWriter::Run(Job& job, Done* done) {
  Sink& sink = *job.sink;
  done->kind = job.kind;
  done->stream = job.stream;
  switch (job.kind) {
    case Kind::kOpen:
      if (Status s = sink.file.Open(job.path); !s.ok()) sink.error = s.message();
      return false;
    case Kind::kWrite:
      if (write_delay_.count() > 0) std::this_thread::sleep_for(write_delay_);
      if (sink.error.empty()) {
        sink.sum.Update(job.data.data(), job.data.size());
        if (Status s = sink.file.Write(job.data); !s.ok()) {
          sink.error = s.message();
          sink.file.Abort();
        }
      }
      return true;
    case Kind::kCommit: {
      std::string error = sink.error;
      if (error.empty() && sink.sum.Digest() != job.checksum) {
        error = fmt::format(
            "checksum mismatch: received data hashes to {}, the agent's checksum (kept when the "
            "file was written) is {}: the spool copy changed since, or was damaged on the way",
            Hex64(sink.sum.Digest()), Hex64(job.checksum));
      }
      if (error.empty()) {
        if (Status s = sink.file.Commit(); !s.ok()) error = s.message();
      }
      if (!error.empty()) sink.file.Abort();
      done->error = std::move(error);
      return true;
    }
    case Kind::kAbort:
      sink.file.Abort();
      return false;
  }
  return false;
}

}  // namespace dfx::coordinator
