// How much of a file the page cache holds, for tests of code that drops
// pages behind it (a recovery's reads, a trace's writes). Test code only.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <vector>

namespace dfx {

// Pages of `file` from byte `offset` (a multiple of the page size) on, at
// most `bytes` of them (to the end by default), in the page cache: mincore
// of a mapping of them. 0 when it cannot be read.
inline size_t ResidentPages(const std::filesystem::path& file, size_t offset = 0,
                            size_t bytes = SIZE_MAX) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st {};
  ::fstat(fd, &st);
  const size_t file_size = static_cast<size_t>(st.st_size);
  const size_t size = offset >= file_size ? 0 : std::min(bytes, file_size - offset);
  void* map = size == 0
                  ? MAP_FAILED
                  : ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(offset));
  ::close(fd);
  if (map == MAP_FAILED) return 0;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((size + page - 1) / page);
  size_t resident = 0;
  if (::mincore(map, size, in.data()) == 0) {
    for (unsigned char c : in) resident += c & 1;
  }
  ::munmap(map, size);
  return resident;
}

// Whether `path` is on a file system that keeps file data only in memory
// (tmpfs, ramfs), whose pages can never be dropped.
inline bool InMemoryFileSystem(const std::filesystem::path& path) {
  struct statfs fs_info {};
  if (::statfs(path.c_str(), &fs_info) != 0) return false;
  return fs_info.f_type == TMPFS_MAGIC || fs_info.f_type == RAMFS_MAGIC;
}

}  // namespace dfx
