#include "coordinator/artifact_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace dfx::coordinator {

namespace {

// Hashes and copies in pieces small enough to stay in the cache between
// the two passes over them.
void HashAndCopy(Checksum64& sum, char* to, const char* from, size_t size) {
  constexpr size_t kPiece = 64 << 10;
  for (size_t done = 0; done < size; done += kPiece) {
    const size_t n = std::min(kPiece, size - done);
    sum.Update(from + done, n);
    std::memcpy(to + done, from + done, n);
  }
}

// pwrite(2) of all `size` bytes (a direct write may be short); 0 or errno.
int WriteAllAt(int fd, const char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return 0;
}

// Clears O_DIRECT: the writes that follow go through the page cache.
void StopDirect(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT); }

}  // namespace

ArtifactWriter::ArtifactWriter(Options options) : options_(options), thread_([this] { Loop(); }) {}

ArtifactWriter::~ArtifactWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // queued jobs are dropped: their sinks abort their temporary files
  {
    std::lock_guard<std::mutex> lock(mu_);
    io_stop_ = true;  // the direct writes in flight finish first
  }
  io_cv_.notify_all();
  for (std::thread& t : io_threads_) t.join();
  std::free(staging_);
}

void ArtifactWriter::Push(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    ++outstanding_;
  }
  cv_.notify_one();
}

std::deque<ArtifactWriter::Done> ArtifactWriter::TakeResults() {
  wake_.Drain();
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

uint64_t ArtifactWriter::direct_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return direct_bytes_;
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
      Open(sink, job);
      return false;
    case Kind::kWrite:
      if (options_.write_delay.count() > 0) std::this_thread::sleep_for(options_.write_delay);
      if (!sink.error.empty()) return true;
      if (sink.file.direct()) {
        WriteDirect(job.sink, job.data);
      } else {
        sink.sum.Update(job.data.data(), job.data.size());
        if (Status s = sink.file.Write(job.data); !s.ok()) {
          sink.error = s.message();
          sink.file.Abort();
        }
      }
      return true;
    case Kind::kCommit: {
      if (sink.file.direct()) {
        FinishDirect(sink);
        if (sink.error.empty()) {
          if (Status s = WriteCarry(sink); !s.ok()) sink.error = s.message();
        }
      }
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
      if (sink.file.direct()) FinishDirect(sink);
      sink.file.Abort();
      return false;
  }
  return false;
}

void ArtifactWriter::Open(Sink& sink, const Job& job) {
  AtomicFileWriter::OpenOptions open;
  open.direct = options_.direct && job.size >= kDirectMinBytes;
  if (Status s = sink.file.Open(job.path, open); !s.ok()) {
    sink.error = s.message();
    return;
  }
  if (sink.file.direct()) {
    // The size is known (and bounded by the receiver): allocate it at once,
    // so no direct write extends the file, and a full disk fails the stream
    // before a byte is sent.
    if (::fallocate(sink.file.fd(), 0, 0, static_cast<off_t>(job.size)) != 0 && errno == ENOSPC) {
      sink.error =
          fmt::format("{}: no space for {} bytes", sink.file.temp_path().string(), job.size);
      sink.file.Abort();
    }
  }
}

size_t ArtifactWriter::AcquireBuffer() {
  std::unique_lock<std::mutex> lock(mu_);
  if (staging_ == nullptr) {
    // Huge pages where the kernel gives them: each direct write pins its
    // buffer's pages, one 2 MiB page instead of 512 small ones.
    constexpr size_t kHugePage = 2 << 20;
    staging_ =
        static_cast<char*>(std::aligned_alloc(kHugePage, kDirectBuffers * kDirectBufferBytes));
    DFX_CHECK(staging_ != nullptr);  // 4 MiB
    ::madvise(staging_, kDirectBuffers * kDirectBufferBytes, MADV_HUGEPAGE);
    for (size_t i = 0; i < kDirectBuffers; ++i) {
      free_buffers_.push_back(i);
      io_threads_.emplace_back([this] { IoLoop(); });
    }
  }
  done_cv_.wait(lock, [this] { return !free_buffers_.empty(); });
  const size_t buffer = free_buffers_.back();
  free_buffers_.pop_back();
  return buffer;
}

void ArtifactWriter::WriteDirect(const std::shared_ptr<Sink>& sink, std::string_view data) {
  Sink& s = *sink;
  if (s.carry.size() + data.size() < kDirectAlignment) {
    s.sum.Update(data.data(), data.size());
    s.carry.append(data);
    return;
  }
  while (!data.empty()) {
    const size_t buffer = AcquireBuffer();
    char* to = staging_ + buffer * kDirectBufferBytes;
    size_t fill = s.carry.size();
    std::memcpy(to, s.carry.data(), fill);
    const size_t n = std::min(data.size(), kDirectBufferBytes - fill);
    HashAndCopy(s.sum, to + fill, data.data(), n);
    data.remove_prefix(n);
    fill += n;
    const size_t aligned = fill / kDirectAlignment * kDirectAlignment;
    s.carry.assign(to + aligned, fill - aligned);
    DirectWrite w{sink, buffer, aligned, s.direct_at};
    s.direct_at += aligned;
    std::lock_guard<std::mutex> lock(mu_);
    if (aligned == 0) {  // what is left is short of a block: it waits in `carry`
      free_buffers_.push_back(buffer);
      continue;
    }
    ++s.direct_pending;
    direct_queue_.push_back(std::move(w));
    io_cv_.notify_one();
  }
}

void ArtifactWriter::FinishDirect(Sink& sink) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return sink.direct_pending == 0; });
  if (sink.direct_errno != 0 && sink.error.empty()) {
    sink.error = fmt::format("{}: write failed: {}", sink.file.temp_path().string(),
                             std::strerror(sink.direct_errno));
  }
}

Status ArtifactWriter::WriteCarry(Sink& sink) {
  if (sink.carry.empty()) return Status::Ok();
  StopDirect(sink.file.fd());
  if (int err = WriteAllAt(sink.file.fd(), sink.carry.data(), sink.carry.size(), sink.direct_at);
      err != 0) {
    return Internal(
        fmt::format("{}: write failed: {}", sink.file.temp_path().string(), std::strerror(err)));
  }
  sink.direct_at += sink.carry.size();
  sink.carry.clear();
  return Status::Ok();
}

void ArtifactWriter::IoLoop() {
  for (;;) {
    DirectWrite w;
    {
      std::unique_lock<std::mutex> lock(mu_);
      io_cv_.wait(lock, [this] { return io_stop_ || !direct_queue_.empty(); });
      if (direct_queue_.empty()) return;  // io_stop_ and nothing left
      w = std::move(direct_queue_.front());
      direct_queue_.pop_front();
    }
    bool direct = false;
    const int err = WriteOne(w, &direct);
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_buffers_.push_back(w.buffer);
      if (err != 0 && w.sink->direct_errno == 0) w.sink->direct_errno = err;
      --w.sink->direct_pending;
      if (err == 0 && direct) direct_bytes_ += w.size;
    }
    done_cv_.notify_all();
    w.sink.reset();  // may be the last reference: closes and removes an aborted file
  }
}

int ArtifactWriter::WriteOne(const DirectWrite& w, bool* direct) {
  const int fd = w.sink->file.fd();
  const char* data = staging_ + w.buffer * kDirectBufferBytes;
  int err = options_.fault_refuse_direct_writes ? EINVAL : WriteAllAt(fd, data, w.size, w.offset);
  *direct = err == 0;
  if (err == EINVAL) {
    // The filesystem took O_DIRECT at open but not this write: through the
    // page cache instead, this write and every later one of the file.
    StopDirect(fd);
    err = WriteAllAt(fd, data, w.size, w.offset);
  }
  return err;
}

}  // namespace dfx::coordinator
