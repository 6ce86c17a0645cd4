#include "common/file_util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

namespace dfx {

namespace fs = std::filesystem;

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return NotFound(path.string() + ": no such file");
    return InvalidArgument(path.string() + ": cannot open for reading: " + std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Internal(path.string() + ": read failed");
  return ss.str();
}

Status MakeDirs(const fs::path& dir) {
  if (dir.empty()) return Status::Ok();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return InvalidArgument(dir.string() + ": cannot create directory: " + ec.message());
  return Status::Ok();
}

namespace {

Status LinkError(const fs::path& link) {
  return InvalidArgument(link.string() +
                         " is a symbolic link; nothing is written or removed through links: "
                         "replace it with a real directory");
}

}  // namespace

Status CheckNoLinks(const fs::path& root, const fs::path& rel) {
  std::error_code ec;
  fs::path p = root;
  for (const fs::path& part : rel) {
    p /= part;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ec || !fs::exists(st)) return Status::Ok();  // the rest does not exist yet
    if (fs::is_symlink(st)) return LinkError(p);
  }
  return Status::Ok();
}

Status MakeDirsNoLinks(const fs::path& root, const fs::path& rel_dir) {
  DFX_RETURN_IF_ERROR(CheckNoLinks(root, rel_dir));
  DFX_RETURN_IF_ERROR(MakeDirs(root));
  fs::path p = root;
  for (const fs::path& part : rel_dir) {
    p /= part;
    std::error_code ec;
    if (fs::create_directory(p, ec) || !ec) {
      // Created, or it already existed: it must be a real directory.
      const fs::file_status st = fs::symlink_status(p, ec);
      if (fs::is_symlink(st)) return LinkError(p);
      if (!fs::is_directory(st)) {
        return InvalidArgument(p.string() + ": exists and is not a directory");
      }
      continue;
    }
    return InvalidArgument(p.string() + ": cannot create directory: " + ec.message());
  }
  return Status::Ok();
}

Status WriteFileAtomic(const fs::path& path, std::string_view data, mode_t mode) {
  AtomicFileWriter w;
  DFX_RETURN_IF_ERROR(w.Open(path, mode));
  DFX_RETURN_IF_ERROR(w.Write(data));
  return w.Commit();
}

AtomicFileWriter::~AtomicFileWriter() { Abort(); }

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept { *this = std::move(other); }

AtomicFileWriter& AtomicFileWriter::operator=(AtomicFileWriter&& other) noexcept {
  if (this != &other) {
    Abort();
    file_ = other.file_;
    final_path_ = std::move(other.final_path_);
    temp_path_ = std::move(other.temp_path_);
    bytes_written_ = other.bytes_written_;
    drop_behind_ = other.drop_behind_;
    max_stall_ms_ = other.max_stall_ms_;
    dropped_to_ = other.dropped_to_;
    stage_ = std::move(other.stage_);
    staged_ = other.staged_;
    align_ = other.align_;
    direct_ = other.direct_;
    stalled_ = other.stalled_;
    min_rate_ = other.min_rate_;
    window_bytes_ = other.window_bytes_;
    window_ns_ = other.window_ns_;
    other.direct_ = false;
    other.file_ = nullptr;
  }
  return *this;
}

fs::path TemporaryPathFor(const fs::path& final_path) {
  fs::path temp = final_path;
  temp += ".tmp." + std::to_string(::getpid());
  return temp;
}

bool IsTemporaryPath(std::string_view path_or_name) {
  return path_or_name.find(".tmp.") != std::string_view::npos;
}

Status AtomicFileWriter::Open(const fs::path& final_path, mode_t mode) {
  Abort();
  final_path_ = final_path;
  DFX_RETURN_IF_ERROR(MakeDirs(final_path.parent_path()));
  temp_path_ = TemporaryPathFor(final_path);
  // O_NOFOLLOW: a link planted under the temporary name is never written through.
  const int fd =
      ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    return InvalidArgument(temp_path_.string() + ": cannot open for writing: " +
                           (err == ELOOP ? std::string("it is a symbolic link, never followed")
                                         : std::string(std::strerror(err))));
  }
  // An existing temporary file keeps its old bits: set them (a secret must be 0600).
  if (::fchmod(fd, mode) != 0 || (file_ = ::fdopen(fd, "wb")) == nullptr) {
    const int err = errno;
    ::close(fd);
    ::unlink(temp_path_.c_str());
    return Internal(temp_path_.string() + ": cannot open for writing: " + std::strerror(err));
  }
  bytes_written_ = 0;
  drop_behind_ = false;
  dropped_to_ = 0;
  direct_ = stalled_ = false;
  staged_ = 0;
  return Status::Ok();
}

namespace {
// The staging block: a chunk's tail and the next one's head, or a
// misaligned chunk in pieces.
constexpr size_t kStageBytes = 64 << 10;
}  // namespace

void AtomicFileWriter::SetDirect(uint64_t min_bytes_per_sec) {
  if (file_ == nullptr || direct_ || bytes_written_ != 0) return;
  const int fd = ::fileno(file_);
  struct statx st {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) != 0 || !(st.stx_mask & STATX_DIOALIGN) ||
      st.stx_dio_offset_align == 0) {
    return;  // no direct I/O here (or a kernel that does not say)
  }
  // Whole file system blocks, not just what the device takes: ext4 here
  // serializes a direct write that starts or ends inside a 4 KiB block, and
  // 1 MiB writes at 512-byte offsets ran at 320-450 MB/s, against 2-3.5
  // GB/s at 4 KiB offsets (direct writes then turned themselves off).
  const size_t align = std::max<size_t>(
      {512, st.stx_dio_mem_align, st.stx_dio_offset_align, static_cast<size_t>(st.stx_blksize)});
  if (align > kStageBytes / 4 || (align & (align - 1)) != 0) return;
  if (!stage_) {
    void* p = nullptr;
    if (::posix_memalign(&p, align, kStageBytes) != 0) return;
    stage_.reset(static_cast<char*>(p));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (std::fflush(file_) != 0 || flags < 0 || ::fcntl(fd, F_SETFL, flags | O_DIRECT) != 0) return;
  // One block written and taken back: a file system that says it can but
  // refuses the write stays on the page cache.
  std::memset(stage_.get(), 0, align);
  if (::pwrite(fd, stage_.get(), align, 0) != static_cast<ssize_t>(align) ||
      ::ftruncate(fd, 0) != 0) {
    ::fcntl(fd, F_SETFL, flags);
    [[maybe_unused]] const int emptied = ::ftruncate(fd, 0);  // as it was, if it can be
    return;
  }
  align_ = align;
  staged_ = 0;
  direct_ = true;
  stalled_ = false;
  min_rate_ = min_bytes_per_sec;
  window_bytes_ = window_ns_ = 0;
}

Status AtomicFileWriter::WriteAll(const char* p, size_t n) {
  const int fd = ::fileno(file_);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      return Internal(temp_path_.string() +
                      ": write failed: " + std::strerror(w < 0 ? errno : EIO));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status AtomicFileWriter::DirectWrite(const char* p, size_t n) {
  const auto start = std::chrono::steady_clock::now();
  DFX_RETURN_IF_ERROR(WriteAll(p, n));
  const auto took = std::chrono::steady_clock::now() - start;
  window_ns_ += static_cast<uint64_t>(std::chrono::nanoseconds(took).count());
  window_bytes_ += n;
  if (took > std::chrono::milliseconds(max_stall_ms_)) stalled_ = true;
  if (window_bytes_ >= kDirectWindow) {
    // Slower than the page cache would take it: the page cache takes the rest.
    if (static_cast<double>(window_bytes_) * 1e9 <
        static_cast<double>(min_rate_) * static_cast<double>(window_ns_)) {
      stalled_ = true;
    }
    window_bytes_ = window_ns_ = 0;
  }
  return Status::Ok();
}

Status AtomicFileWriter::EndDirect() {
  if (!direct_) return Status::Ok();
  direct_ = false;
  const int fd = ::fileno(file_);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0) {
    return Internal(temp_path_.string() + ": write failed: " + std::strerror(errno));
  }
  const size_t n = staged_;
  staged_ = 0;
  return WriteAll(stage_.get(), n);
}

// stage_ holds the bytes from the last aligned offset on: a chunk's tail
// (under a block) for the next one's head, or a misaligned chunk in pieces.
Status AtomicFileWriter::WriteDirect(std::string_view data) {
  const size_t a = align_;
  while (!data.empty()) {
    // Up to the next aligned offset through the staging block; then whole
    // blocks straight from `data` if they sit at the file's alignment.
    const size_t head = (a - staged_ % a) % a;
    if (data.size() >= head + a && (reinterpret_cast<uintptr_t>(data.data()) + head) % a == 0 &&
        staged_ + head <= kStageBytes) {
      std::memcpy(stage_.get() + staged_, data.data(), head);
      staged_ += head;
      DFX_RETURN_IF_ERROR(DirectWrite(stage_.get(), staged_));
      staged_ = 0;
      const size_t body = (data.size() - head) / a * a;
      DFX_RETURN_IF_ERROR(DirectWrite(data.data() + head, body));
      data.remove_prefix(head + body);
      continue;  // the tail goes into the staging block
    }
    const size_t n = std::min(data.size(), kStageBytes - staged_);
    std::memcpy(stage_.get() + staged_, data.data(), n);
    staged_ += n;
    data.remove_prefix(n);
    if (staged_ == kStageBytes) {  // whole blocks (kStageBytes is a multiple of a)
      DFX_RETURN_IF_ERROR(DirectWrite(stage_.get(), staged_));
      staged_ = 0;
    }
  }
  return Status::Ok();
}

Status AtomicFileWriter::Write(std::string_view data) {
  if (file_ == nullptr) return FailedPrecondition("AtomicFileWriter::Write before Open");
  if (direct_) {
    DFX_RETURN_IF_ERROR(WriteDirect(data));
    bytes_written_ += data.size();
    if (stalled_) return EndDirect();
    return Status::Ok();
  }
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), file_) != data.size()) {
    return Internal(temp_path_.string() + ": write failed: " + std::strerror(errno));
  }
  const uint64_t from = bytes_written_;
  bytes_written_ += data.size();
  if (drop_behind_ && !data.empty()) {
    if (std::fflush(file_) != 0) {
      return Internal(temp_path_.string() + ": write failed: " + std::strerror(errno));
    }
    DropBehind(from);
  }
  return Status::Ok();
}

void AtomicFileWriter::DropBehind(uint64_t from) {
  const int fd = ::fileno(file_);
  const auto start = std::chrono::steady_clock::now();
  if (::sync_file_range(fd, static_cast<off64_t>(from), static_cast<off64_t>(bytes_written_ - from),
                        SYNC_FILE_RANGE_WRITE) != 0 ||
      std::chrono::steady_clock::now() - start > std::chrono::milliseconds(max_stall_ms_)) {
    drop_behind_ = false;  // no such thing here, or the device falls behind
    return;
  }
  if (bytes_written_ <= kDropBehindLag) return;
  // Again from one lag further back: what was still under writeback at the
  // last call (the kernel drops only clean, whole folios) gets another chance.
  const uint64_t to = bytes_written_ - kDropBehindLag;
  const uint64_t begin = dropped_to_ > kDropBehindLag ? dropped_to_ - kDropBehindLag : 0;
  ::posix_fadvise(fd, static_cast<off_t>(begin), static_cast<off_t>(to - begin),
                  POSIX_FADV_DONTNEED);
  dropped_to_ = to;
}

Status AtomicFileWriter::Commit() {
  if (file_ == nullptr) return FailedPrecondition("AtomicFileWriter::Commit before Open");
  if (Status s = EndDirect(); !s.ok()) {
    Abort();
    return s;
  }
  std::FILE* f = file_;
  file_ = nullptr;
  // Each failure keeps its own errno: the cleanup after it must not replace
  // the reason with its own (once "rename failed: Success").
  const bool flushed = std::fflush(f) == 0;
  const int flush_errno = errno;
  const bool closed = std::fclose(f) == 0;
  const int close_errno = errno;
  if (!flushed || !closed) {
    std::error_code ignored;
    fs::remove(temp_path_, ignored);
    return Internal(temp_path_.string() +
                    ": flush failed: " + std::strerror(flushed ? close_errno : flush_errno));
  }
  std::error_code ec;
  fs::rename(temp_path_, final_path_, ec);
  if (ec) {
    const std::string why = ec.message();
    std::error_code ignored;
    fs::remove(temp_path_, ignored);
    return Internal(final_path_.string() + ": rename of " + temp_path_.filename().string() +
                    " failed: " + why);
  }
  return Status::Ok();
}

void AtomicFileWriter::Abort() {
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
    std::error_code ec;
    fs::remove(temp_path_, ec);
  }
}

Checksum64::Checksum64() : state_(XXH64_createState()) {
  XXH64_reset(static_cast<XXH64_state_t*>(state_), 0);
}
Checksum64::~Checksum64() { XXH64_freeState(static_cast<XXH64_state_t*>(state_)); }
void Checksum64::Update(const void* data, size_t size) {
  XXH64_update(static_cast<XXH64_state_t*>(state_), data, size);
}
uint64_t Checksum64::Digest() const {
  return XXH64_digest(static_cast<const XXH64_state_t*>(state_));
}

Result<uint64_t> ChecksumFile(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return NotFound(path.string() + ": cannot open: " + std::strerror(errno));
  Checksum64 sum;
  std::string buf(1 << 20, '\0');
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) sum.Update(buf.data(), n);
  bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return Internal(path.string() + ": read failed");
  return sum.Digest();
}

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

// The pid /proc/locks names as the holder of a FLOCK on `dir`'s inode.
std::optional<pid_t> FlockHolder(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
  const std::string inode = fmt::format(":{}", static_cast<unsigned long long>(st.st_ino));
  const std::string device = fmt::format("{:02x}:{:02x}", major(st.st_dev), minor(st.st_dev));
  std::ifstream locks("/proc/locks");
  std::string line;
  // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
  while (std::getline(locks, line)) {
    std::istringstream in(line);
    std::string index, type, advisory, mode, where;
    long pid = 0;
    if (!(in >> index >> type >> advisory >> mode >> pid >> where)) continue;
    if (type == "FLOCK" && where == device + inode) return static_cast<pid_t>(pid);
  }
  return std::nullopt;
}

std::string CommandLineOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  while (!raw.empty() && raw.back() == ' ') raw.pop_back();
  if (raw.size() > 200) raw = raw.substr(0, 197) + "...";
  return raw;
}

}  // namespace

Result<DirectoryLock> DirectoryLock::Acquire(const fs::path& dir, const std::string& what) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return InvalidArgument(
        fmt::format("{} {}: cannot open: {}", what, dir.string(), std::strerror(errno)));
  }
  DirectoryLock lock;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    lock.fd_ = fd;
    return lock;
  }
  const int err = errno;
  ::close(fd);
  if (err != EWOULDBLOCK) {
    lock.warning_ = fmt::format(
        "{} {}: cannot be locked here ({}); nothing stops another dfx-coordinator from using it "
        "at the same time",
        what, dir.string(), std::strerror(err));
    return lock;
  }
  const std::optional<pid_t> pid = FlockHolder(dir);
  const std::string holder =
      pid ? fmt::format("pid {} ({})", *pid, CommandLineOf(*pid)) : std::string("another process");
  return FailedPrecondition(
      fmt::format("{} {} is in use by {}: wait for it to finish, or use another {}", what,
                  dir.string(), holder, what));
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept
    : fd_(other.fd_), warning_(std::move(other.warning_)) {
  other.fd_ = -1;
}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    warning_ = std::move(other.warning_);
    other.fd_ = -1;
  }
  return *this;
}

}  // namespace dfx
