#include "view/dump_viewer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <set>
#include <vector>

#include "collectors/args_dump/args_dump_keys.h"
#include "collectors/args_dump/args_dump_reader.h"
#include "collectors/artifact_layout.h"
#include "common/file_util.h"

namespace dfx::view {
namespace {

namespace keys = collectors::args_dump_keys;

using collectors::ArgsDumpEntry;

struct Entry {
  size_t index;  // position in the manifest
  const ArgsDumpEntry* a;
};

size_t DtypeSize(const std::string& d) {
  if (d == "FLOAT32" || d == "INT32" || d == "UINT32") return 4;
  if (d == "FLOAT16" || d == "BFLOAT16" || d == "INT16" || d == "UINT16") return 2;
  if (d == "INT64" || d == "UINT64") return 8;
  if (d == "INT8" || d == "UINT8" || d == "BOOL") return 1;
  return 1;  // unknown dtypes (FP8, FP4, ...) print per-byte hex
}

double HalfToDouble(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  double v;
  if (exp == 0)
    v = std::ldexp(mant, -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

std::string FormatElement(const std::string& dtype, const unsigned char* p) {
  if (dtype == "FLOAT32") {
    float f;
    std::memcpy(&f, p, 4);
    return FormatSignificant(f, 6);
  }
  if (dtype == "FLOAT16") {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return FormatSignificant(HalfToDouble(h), 4);
  }
  if (dtype == "BFLOAT16") {
    uint16_t h;
    std::memcpy(&h, p, 2);
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return FormatSignificant(f, 3);
  }
#define DFX_INT_CASE(NAME, TYPE)   \
  if (dtype == NAME) {             \
    TYPE v;                        \
    std::memcpy(&v, p, sizeof(v)); \
    return std::to_string(v);      \
  }
  DFX_INT_CASE("INT8", int8_t)
  DFX_INT_CASE("INT16", int16_t)
  DFX_INT_CASE("INT32", int32_t)
  DFX_INT_CASE("INT64", int64_t)
  DFX_INT_CASE("UINT8", uint8_t)
  DFX_INT_CASE("UINT16", uint16_t)
  DFX_INT_CASE("UINT32", uint32_t)
  DFX_INT_CASE("UINT64", uint64_t)
#undef DFX_INT_CASE
  if (dtype == "BOOL") return p[0] ? "true" : "false";
  return fmt::format("0x{:02x}", p[0]);
}

std::string StageShort(const std::string& s) {
  return s == keys::kStageBefore ? "before" : s == keys::kStageAfter ? "after" : s;
}
std::string RoleShort(const std::string& r) {
  return r == keys::kRoleInput ? "in" : r == keys::kRoleOutput ? "out" : r;
}

// "[4,8]", or "[]" when the manifest has none.
std::string DimsText(const std::optional<std::vector<int64_t>>& dims) {
  return dims ? fmt::format("[{}]", fmt::join(*dims, ",")) : "[]";
}

Result<std::string> RenderTxt(const ArgsDumpEntry& a, collectors::ArgsDumpBin* bin) {
  std::string s;
  std::string dtype = a.dtype.value_or(std::string(keys::kDtypeUnknown));
  s += "# task_id: " + a.task_id + "\n";
  s += "# role: " + a.role + "\n";
  s += "# stage: " + a.stage + "\n";
  s += fmt::format("# arg_index: {}\n", a.arg_index);
  s += "# dtype: " + dtype + "\n";
  s += "# kind: " + a.kind + "\n";
  s += fmt::format("# is_contiguous: {}\n", a.is_contiguous ? "true" : "false");
  s += "# shape: " + DimsText(a.shape) + "\n";
  s += "# strides: " + DimsText(a.strides) + "\n";
  s += fmt::format("# start_offset: {}\n", a.start_offset);
  if (a.overwritten) {
    s += "# DATA OVERWRITTEN (host too slow)\n";
    return s;
  }
  if (a.truncated) s += "# DATA TRUNCATED (tensor too large for arena)\n";
  if (a.kind == keys::kKindScalar) {
    s += "# value: " + a.value_text + "\n";
    return s;
  }
  if (a.bin_size <= 0) {
    s += "# (no data)\n";
    return s;
  }
  if (!bin->is_open()) {
    return InvalidArgument("bin_path is None but bin_size > 0 (corrupt manifest?)");
  }
  DFX_ASSIGN_OR_RETURN(std::vector<unsigned char> data, bin->Read(a));
  size_t got = data.size();
  size_t esize = DtypeSize(dtype);
  std::vector<int64_t> shape = a.shape.value_or(std::vector<int64_t>{});
  size_t numel = 1;
  for (auto d : shape) numel *= static_cast<size_t>(std::max<int64_t>(d, 0));
  size_t count = std::min(numel, got / esize);
  std::vector<std::string> values(count);
  size_t width = 0;
  for (size_t i = 0; i < count; ++i) {
    values[i] = FormatElement(dtype, &data[i * esize]);
    width = std::max(width, values[i].size());
  }
  size_t row = shape.empty() ? 1 : static_cast<size_t>(std::max<int64_t>(shape.back(), 1));
  s += "# Overview:\n";
  for (size_t i = 0; i < count; i += row) {
    std::string line;
    for (size_t k = i; k < std::min(count, i + row); ++k) {
      if (k > i) line += " ";
      line += fmt::format("{:>{}}", values[k], width);
    }
    s += line + "\n";
  }
  s += "# Detail:\n";
  for (size_t i = 0; i < count; ++i) {
    std::vector<int64_t> idx(shape.size());
    size_t rem = i;
    for (size_t d = shape.size(); d-- > 0;) {
      size_t dim = static_cast<size_t>(std::max<int64_t>(shape[d], 1));
      idx[d] = static_cast<int64_t>(rem % dim);
      rem /= dim;
    }
    std::string ids;
    for (size_t d = 0; d < idx.size(); ++d) ids += (d ? ", " : "") + std::to_string(idx[d]);
    s += "[" + ids + "] " + values[i] + "\n";
  }
  return s;
}

}  // namespace

std::string FormatSignificant(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
  return buf;
}

Status RunDumpViewer(const DumpViewerOptions& o, std::ostream& out, std::ostream& err) {
  (void)err;
  auto manifest_path = o.dump_dir / collectors::kArgsDumpManifestName;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(manifest_path, ec)) {
    return NotFound(std::string(collectors::kArgsDumpManifestName) + " not found in " +
                    o.dump_dir.string());
  }
  DFX_ASSIGN_OR_RETURN(collectors::ArgsDumpManifest m,
                       collectors::ReadArgsDumpManifest(manifest_path));
  const std::vector<ArgsDumpEntry>& args = m.args;
  collectors::ArgsDumpBin bin;
  bin.Open(o.dump_dir, m);
  std::vector<Entry> sel;
  bool do_export = o.do_export;
  if (o.index) {
    long n = static_cast<long>(args.size());
    if (*o.index < 0 || *o.index >= n) {
      return InvalidArgument(fmt::format("--index {} out of range (0-{})", *o.index, n - 1));
    }
    sel.push_back({static_cast<size_t>(*o.index), &args[static_cast<size_t>(*o.index)]});
    do_export = true;
  } else {
    for (size_t i = 0; i < args.size(); ++i) sel.push_back({i, &args[i]});
    if (o.task) {
      std::vector<Entry> next;
      std::vector<std::string> valid;
      for (const auto& e : sel) {
        std::string t = e.a->task_id;
        if (t == *o.task) next.push_back(e);
        if (std::find(valid.begin(), valid.end(), t) == valid.end()) valid.push_back(t);
      }
      if (next.empty()) {
        std::string shown;
        for (size_t i = 0; i < valid.size() && i < 5; ++i) shown += (i ? ", " : "") + valid[i];
        return NotFound(fmt::format("--task {} not found.\nValid task_ids (showing first {}): {}",
                                    *o.task, std::min<size_t>(5, valid.size()), shown));
      }
      sel = next;
    }
    if (o.stage) {
      if (*o.stage != "before" && *o.stage != "after") {
        return InvalidArgument("--stage must be 'before' or 'after', got '" + *o.stage + "'");
      }
      std::string full(*o.stage == "before" ? keys::kStageBefore.view() : keys::kStageAfter.view());
      std::vector<Entry> next;
      for (const auto& e : sel) {
        if (e.a->stage == full) next.push_back(e);
      }
      sel = next;
    }
    if (o.role) {
      if (*o.role != keys::kRoleInput && *o.role != keys::kRoleOutput &&
          *o.role != keys::kRoleInout) {
        return InvalidArgument("--role must be one of {input, output, inout}, got '" + *o.role +
                               "'");
      }
      std::vector<Entry> next;
      for (const auto& e : sel) {
        if (e.a->role == *o.role) next.push_back(e);
      }
      sel = next;
    }
    if (o.arg) {
      std::vector<Entry> next;
      std::set<long> valid;
      for (const auto& e : sel) {
        long a = e.a->arg_index;
        valid.insert(a);
        if (a == *o.arg) next.push_back(e);
      }
      if (next.empty()) {
        std::string shown;
        for (long v : valid) shown += (shown.empty() ? "" : ", ") + std::to_string(v);
        return NotFound(fmt::format(
            "--arg {} not found in current selection.\nValid arg_indices: {}", *o.arg, shown));
      }
      sel = next;
    }
  }
  if (sel.empty()) return NotFound("No args match the given filters.");
  bool filtered = o.task || o.stage || o.role || o.arg;
  if (!do_export) {
    out << fmt::format("{:>5}  {:<20} {:<6} {:<6} {:>4} {:<10} {:<20} {:>10}\n", "idx", "task_id",
                       "stage", "role", "arg", "dtype", "shape", "bytes");
    for (const auto& e : sel) {
      const ArgsDumpEntry& a = *e.a;
      out << fmt::format("{:>5}  {:<20} {:<6} {:<6} {:>4} {:<10} {:<20} {:>10}\n", e.index,
                         a.task_id, StageShort(a.stage), a.role, a.arg_index, a.dtype.value_or(""),
                         DimsText(a.shape), a.bin_size);
    }
    if (filtered) {
      out << "Filtered: " << sel.size() << "/" << args.size() << " args\n";
      out << "Add --export to write the selected args as text files.\n";
    }
    return Status::Ok();
  }
  auto txt_dir = o.dump_dir / "txt";
  DFX_RETURN_IF_ERROR(MakeDirs(txt_dir));
  for (const auto& e : sel) {
    const ArgsDumpEntry& a = *e.a;
    DFX_ASSIGN_OR_RETURN(std::string text, RenderTxt(a, &bin));
    auto path = txt_dir / fmt::format("task_{}_{}_{}{}.txt", a.task_id, StageShort(a.stage),
                                      RoleShort(a.role), a.arg_index);
    DFX_RETURN_IF_ERROR(WriteFileAtomic(path, text));
    out << "Saved: " << path.string() << "\n";
  }
  out << "Exported " << sel.size() << " arg(s) to " << txt_dir.string() << "/\n";
  return Status::Ok();
}

}  // namespace dfx::view
