#include "common/file_util.h"

#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <fstream>
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

Status WriteFileAtomic(const fs::path& path, std::string_view data) {
  AtomicFileWriter w;
  DFX_RETURN_IF_ERROR(w.Open(path));
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

Status AtomicFileWriter::Open(const fs::path& final_path) {
  Abort();
  final_path_ = final_path;
  DFX_RETURN_IF_ERROR(MakeDirs(final_path.parent_path()));
  temp_path_ = TemporaryPathFor(final_path);
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr) {
    return InvalidArgument(temp_path_.string() +
                           ": cannot open for writing: " + std::strerror(errno));
  }
  bytes_written_ = 0;
  return Status::Ok();
}

Status AtomicFileWriter::Write(std::string_view data) {
  if (file_ == nullptr) return FailedPrecondition("AtomicFileWriter::Write before Open");
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), file_) != data.size()) {
    return Internal(temp_path_.string() + ": write failed: " + std::strerror(errno));
  }
  bytes_written_ += data.size();
  return Status::Ok();
}

Status AtomicFileWriter::Commit() {
  if (file_ == nullptr) return FailedPrecondition("AtomicFileWriter::Commit before Open");
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fflush(f) != 0 || std::fclose(f) != 0) {
    std::error_code ec;
    fs::remove(temp_path_, ec);
    return Internal(temp_path_.string() + ": flush failed: " + std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(temp_path_, final_path_, ec);
  if (ec) {
    fs::remove(temp_path_, ec);
    return Internal(final_path_.string() + ": rename failed: " + ec.message());
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

}  // namespace dfx
