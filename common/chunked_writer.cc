#include "common/chunked_writer.h"

#include <zlib.h>

#include <atomic>
#include <thread>

#include "common/handoff.h"
#include "common/json_stream.h"

namespace dfx {

struct ChunkedWriter::Gzip {
  z_stream z{};
  std::string out;
  ~Gzip() { deflateEnd(&z); }
};

// What a chunk buffer holds: a full chunk and the event that crossed its end.
static constexpr size_t kChunkCapacity = ChunkedWriter::kChunkBytes + 4096;

// An empty chunk buffer whose pages are already mapped: the zeros written
// here take the first-touch page faults (~11 us per 4 KiB page on the
// virtual machines this project runs on, 256 per chunk) when the writer
// opens, not while the caller formats into it.
static std::string MappedChunk() {
  std::string chunk;
  chunk.resize(kChunkCapacity);
  chunk.clear();  // keeps the capacity, and its pages
  return chunk;
}

// The writer thread and the queue of full chunks it writes in file order
// (common/handoff.h): at most kBackgroundChunks in memory, the one being
// filled, one queued and the one being written.
struct ChunkedWriter::Background {
  Handoff<std::string> chunks{kBackgroundChunks - 2, [] {
                                std::string chunk;
                                chunk.reserve(kChunkCapacity);
                                return chunk;
                              }};
  std::atomic<uint64_t> file_bytes{0};  // the file's size after the last write
  uint64_t handed = 0;                  // caller's side: bytes queued so far
  // Direct writes (AtomicFileWriter::SetDirect): their alignment, and the
  // caller's next chunk, which each chunk is cut for (Flush).
  size_t align = 0;
  std::string next;
  std::thread thread;
};

ChunkedWriter::ChunkedWriter() = default;
ChunkedWriter::~ChunkedWriter() { StopBackground(); }
ChunkedWriter::ChunkedWriter(ChunkedWriter&& other) noexcept { *this = std::move(other); }
// A background writer's thread works on its own object: it is stopped (its
// queue written) before the move, and the moved-to writer writes in place.
ChunkedWriter& ChunkedWriter::operator=(ChunkedWriter&& other) noexcept {
  if (this != &other) {
    StopBackground();
    other.StopBackground();
    file_ = std::move(other.file_);
    gzip_ = std::move(other.gzip_);
    buffer_ = std::move(other.buffer_);
    status_ = std::move(other.status_);
  }
  return *this;
}

Status ChunkedWriter::Open(const std::filesystem::path& path, bool gzip, bool background,
                           bool map_chunks) {
  StopBackground();
  if (!(background && map_chunks)) buffer_.reserve(kChunkCapacity);  // else mapped below
  status_ = file_.Open(path);
  if (status_.ok() && gzip) {
    gzip_ = std::make_unique<Gzip>();
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
    if (deflateInit2(&gzip_->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      status_ = Internal(path.string() + ": cannot start gzip compression");
    }
    gzip_->out.resize(kChunkBytes);
  }
  if (status_.ok() && background) {
    file_.SetDropBehind(true);
    background_ = std::make_unique<Background>();
    Background& bg = *background_;
    if (!gzip) {
      file_.SetDirect();
      if (file_.direct()) {
        bg.align = file_.align();
        bg.next.reserve(kChunkCapacity);
      }
    }
    if (map_chunks) {
      // Every chunk the stream will use, mapped now (see MappedChunk): the
      // caller's, the next one of direct writes, and the two a full queue
      // and the writer hold.
      buffer_ = MappedChunk();
      if (bg.align != 0) bg.next = MappedChunk();
      for (size_t i = 0; i + 1 < kBackgroundChunks; ++i) bg.chunks.Give(MappedChunk());
    }
    bg.thread = std::thread([this, &bg] {
      std::string chunk;
      while (bg.chunks.Take(chunk)) {
        WriteChunk(chunk);
        chunk.clear();
      }
    });
  }
  return status_;
}

void ChunkedWriter::StopBackground(bool discard) {
  if (!background_) return;
  if (discard) {
    background_->chunks.Drop();
  } else {
    background_->chunks.Close();
  }
  background_->thread.join();
  background_.reset();
}

void ChunkedWriter::Abort() {
  StopBackground(/*discard=*/true);
  file_.Abort();
}

uint64_t ChunkedWriter::bytes_written() const {
  if (background_) {
    return gzip_ ? background_->file_bytes.load(std::memory_order_relaxed)
                 : background_->handed + buffer_.size();
  }
  return file_.bytes_written() + (gzip_ ? 0 : buffer_.size());
}

// Compresses `buffer_` (and with `finish`, ends the stream) into the file.
static Status Deflate(z_stream& z, std::string& in, std::string& out, bool finish,
                      AtomicFileWriter& file) {
  z.next_in = reinterpret_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&z, finish ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR) return Internal("gzip compression failed");
    const size_t produced = out.size() - z.avail_out;
    if (produced > 0) DFX_RETURN_IF_ERROR(file.Write(std::string_view(out.data(), produced)));
    if (finish ? rc == Z_STREAM_END : z.avail_in == 0 && z.avail_out != 0) break;
  }
  return Status::Ok();
}

void ChunkedWriter::String(std::string_view s) {
  AppendJsonString(&buffer_, s);
  MaybeFlush();
}

void ChunkedWriter::WriteChunk(std::string& chunk) {
  if (status_.ok() && !chunk.empty()) {
    status_ = gzip_ ? Deflate(gzip_->z, chunk, gzip_->out, false, file_) : file_.Write(chunk);
  }
  if (background_) background_->file_bytes.store(file_.bytes_written(), std::memory_order_relaxed);
}

void ChunkedWriter::Flush(bool cut) {
  if (buffer_.empty()) return;
  if (!background_) {
    WriteChunk(buffer_);
    buffer_.clear();
    return;
  }
  Background& bg = *background_;
  if (bg.align != 0) {
    // Direct writes go straight from a chunk's bytes when the file offset
    // of its first byte sits at the file's alignment as its memory does: the
    // chunk is cut short by the bytes that make the next one start so, and
    // they begin the next (the same string object: buffer() stays valid).
    const size_t a = bg.align;
    const uint64_t end = bg.handed + buffer_.size();
    const size_t want = reinterpret_cast<uintptr_t>(bg.next.data()) % a;
    const size_t carry = cut ? static_cast<size_t>((end % a + a - want) % a) : 0;
    bg.next.clear();
    if (carry != 0 && carry < buffer_.size()) {
      bg.next.append(buffer_, buffer_.size() - carry, carry);
      buffer_.resize(buffer_.size() - carry);
    }
  }
  bg.handed += buffer_.size();
  bg.chunks.Put(buffer_);  // the same string object: buffer() stays valid
  if (bg.align != 0) buffer_.swap(bg.next);
}

Status ChunkedWriter::Commit() {
  Flush(/*cut=*/false);
  StopBackground();  // every chunk written; status_ is the caller's again
  if (status_.ok() && gzip_) {
    std::string empty;
    status_ = Deflate(gzip_->z, empty, gzip_->out, true, file_);
  }
  if (!status_.ok()) {
    file_.Abort();
    return status_;
  }
  return file_.Commit();
}

}  // namespace dfx
