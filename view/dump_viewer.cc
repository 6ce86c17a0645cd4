#include "view/dump_viewer.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <ostream>
#include <set>
#include <vector>

#include "common/file_util.h"
#include "common/json.h"

namespace dfx::view {
namespace {

struct Entry {
  size_t index;
  const Json* j;
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
  return s == "before_dispatch" ? "before" : s == "after_completion" ? "after" : s;
}
std::string RoleShort(const std::string& r) {
  return r == "input" ? "in" : r == "output" ? "out" : r;
}

std::string ShapeText(const Json& a) { return a.contains("shape") ? a["shape"].dump() : "[]"; }

Result<std::string> RenderTxt(const Json& a, std::ifstream* bin, bool have_bin) {
  std::string s;
  std::string dtype = a.value("dtype", std::string("UNKNOWN"));
  s += "# task_id: " + a.value("task_id", std::string()) + "\n";
  s += "# role: " + a.value("role", std::string()) + "\n";
  s += "# stage: " + a.value("stage", std::string()) + "\n";
  s += fmt::format("# arg_index: {}\n", a.value("arg_index", -1));
  s += "# dtype: " + dtype + "\n";
  s += "# kind: " + a.value("kind", std::string()) + "\n";
  s += fmt::format("# is_contiguous: {}\n", a.value("is_contiguous", false) ? "true" : "false");
  s += "# shape: " + ShapeText(a) + "\n";
  s += "# strides: " + (a.contains("strides") ? a["strides"].dump() : std::string("[]")) + "\n";
  s += fmt::format("# start_offset: {}\n", a.value("start_offset", int64_t{0}));
  if (a.value("overwritten", false)) {
    s += "# DATA OVERWRITTEN (host too slow)\n";
    return s;
  }
  if (a.value("truncated", false)) s += "# DATA TRUNCATED (tensor too large for arena)\n";
  if (a.value("kind", std::string()) == "scalar") {
    const Json& v = a.contains("value") ? a["value"] : Json();
    std::string text = v.is_boolean() ? (v.get<bool>() ? "true" : "false") : v.dump();
    if (v.is_string()) text = v.get<std::string>();
    s += "# value: " + text + "\n";
    return s;
  }
  int64_t size = a.value("bin_size", int64_t{0});
  if (size <= 0) {
    s += "# (no data)\n";
    return s;
  }
  if (!have_bin) return InvalidArgument("bin_path is None but bin_size > 0 (corrupt manifest?)");
  std::vector<unsigned char> data(static_cast<size_t>(size));
  bin->clear();
  bin->seekg(a.value("bin_offset", int64_t{0}));
  bin->read(reinterpret_cast<char*>(data.data()), size);
  size_t got = static_cast<size_t>(bin->gcount());
  size_t esize = DtypeSize(dtype);
  std::vector<int64_t> shape;
  if (a.contains("shape")) {
    for (const auto& d : a["shape"]) shape.push_back(d.get<int64_t>());
  }
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
  auto manifest_path = o.dump_dir / "args_dump.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(manifest_path, ec)) {
    return NotFound("args_dump.json not found in " + o.dump_dir.string());
  }
  DFX_ASSIGN_OR_RETURN(Json m, ReadJsonFile(manifest_path));
  if (!m.is_object()) return JsonError(manifest_path.string(), "$", "an object", m);
  const char* list_key = m.contains("args") ? "args" : "tensors";
  if (!m.contains(list_key) || !m[list_key].is_array()) {
    return JsonError(manifest_path.string(), "$.args", "an array",
                     m.contains(list_key) ? m[list_key] : Json());
  }
  const Json& args = m[list_key];
  bool have_bin = m.contains("bin_file") && m["bin_file"].is_string();
  std::ifstream bin;
  if (have_bin) bin.open(o.dump_dir / m["bin_file"].get<std::string>(), std::ios::binary);
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
        std::string t = e.j->value("task_id", std::string());
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
      std::string full = *o.stage == "before" ? "before_dispatch" : "after_completion";
      std::vector<Entry> next;
      for (const auto& e : sel) {
        if (e.j->value("stage", std::string()) == full) next.push_back(e);
      }
      sel = next;
    }
    if (o.role) {
      if (*o.role != "input" && *o.role != "output" && *o.role != "inout") {
        return InvalidArgument("--role must be one of {input, output, inout}, got '" + *o.role +
                               "'");
      }
      std::vector<Entry> next;
      for (const auto& e : sel) {
        if (e.j->value("role", std::string()) == *o.role) next.push_back(e);
      }
      sel = next;
    }
    if (o.arg) {
      std::vector<Entry> next;
      std::set<long> valid;
      for (const auto& e : sel) {
        long a = e.j->value("arg_index", -1L);
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
      const Json& a = *e.j;
      out << fmt::format(
          "{:>5}  {:<20} {:<6} {:<6} {:>4} {:<10} {:<20} {:>10}\n", e.index,
          a.value("task_id", std::string()), StageShort(a.value("stage", std::string())),
          a.value("role", std::string()), a.value("arg_index", -1), a.value("dtype", std::string()),
          ShapeText(a), a.value("bin_size", int64_t{0}));
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
    const Json& a = *e.j;
    DFX_ASSIGN_OR_RETURN(std::string text, RenderTxt(a, &bin, have_bin && bin.is_open()));
    auto path =
        txt_dir / fmt::format("task_{}_{}_{}{}.txt", a.value("task_id", std::string()),
                              StageShort(a.value("stage", std::string())),
                              RoleShort(a.value("role", std::string())), a.value("arg_index", -1));
    DFX_RETURN_IF_ERROR(WriteFileAtomic(path, text));
    out << "Saved: " << path.string() << "\n";
  }
  out << "Exported " << sel.size() << " arg(s) to " << txt_dir.string() << "/\n";
  return Status::Ok();
}

}  // namespace dfx::view
