#include "common/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dfx {

namespace fs = std::filesystem;

namespace {

constexpr long kPipeFsMagic = 0x50495045;  // linux/magic.h PIPEFS_MAGIC: an anonymous pipe

// What a file that is not regular is, for "PATH is <what>; give a regular file".
const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Status NotRegular(const fs::path& path, mode_t mode) {
  return InvalidArgument(
      fmt::format("{} is {}; give a regular file (a pipe such as <(cat FILE) is read once too)",
                  path.string(), KindOf(mode)));
}

Status TooLarge(const fs::path& path, uint64_t size, uint64_t max_bytes, bool at_least) {
  return InvalidArgument(fmt::format("{}: {}{} bytes; an input file may hold at most {} bytes",
                                     path.string(), at_least ? "more than " : "", size, max_bytes));
}

}  // namespace

Result<std::string> ReadInputFile(const fs::path& path, uint64_t max_bytes) {
  // Without O_NONBLOCK, opening a FIFO would wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound(path.string() + ": no such file");
    if (err == ENXIO) return NotRegular(path, S_IFSOCK);  // a Unix socket
    return InvalidArgument(
        fmt::format("{}: cannot open for reading: {}", path.string(), std::strerror(err)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return InvalidArgument(fmt::format("{}: {}", path.string(), std::strerror(errno)));
  }
  if (S_ISFIFO(st.st_mode)) {
    // An anonymous pipe (pipefs) is one this process was handed; a FIFO on
    // a file system is a path that may never get a writer.
    struct statfs fs_info {};
    if (::fstatfs(fd, &fs_info) != 0 || fs_info.f_type != kPipeFsMagic) {
      return NotRegular(path, st.st_mode);
    }
    (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  } else if (!S_ISREG(st.st_mode)) {
    return NotRegular(path, st.st_mode);
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return TooLarge(path, static_cast<uint64_t>(st.st_size), max_bytes, false);
  }
  // Read to the end, never past the limit (a regular file may grow, and
  // /proc files say 0 bytes).
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return InvalidArgument(
          fmt::format("{}: read failed: {}", path.string(), std::strerror(errno)));
    }
    if (n == 0) break;
    if (text.size() + static_cast<uint64_t>(n) > max_bytes) {
      return TooLarge(path, max_bytes, max_bytes, true);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace dfx
