// The manifest is metadata (about 200 bytes an entry) and is read whole, as
// the reference viewer does; its numbers must keep the exact text the writer
// gave them (a FLOAT32 scalar 2 is written "2.0" and shown so).
#include "collectors/args_dump/args_dump_reader.h"

#include <fmt/format.h>

#include "common/json.h"

namespace dfx::collectors {
namespace {

Result<ArgsDumpEntry> ToEntry(const Json& a, const std::string& file, const std::string& where) {
  if (!a.is_object()) return JsonError(file, where, "an object", a);
  ArgsDumpEntry e;
  try {
    e.task_id = a.value("task_id", std::string());
    e.role = a.value("role", std::string());
    e.stage = a.value("stage", std::string());
    e.kind = a.value("kind", std::string());
    if (a.contains("dtype")) e.dtype = a["dtype"].get<std::string>();
    e.arg_index = a.value("arg_index", int64_t{-1});
    e.is_contiguous = a.value("is_contiguous", false);
    if (a.contains("shape")) e.shape = a["shape"].get<std::vector<int64_t>>();
    if (a.contains("strides")) e.strides = a["strides"].get<std::vector<int64_t>>();
    e.start_offset = a.value("start_offset", int64_t{0});
    e.truncated = a.value("truncated", false);
    e.overwritten = a.value("overwritten", false);
    const Json& v = a.contains("value") ? a["value"] : Json();
    e.value_text = v.is_boolean()  ? (v.get<bool>() ? "true" : "false")
                   : v.is_string() ? v.get<std::string>()
                                   : v.dump();
    e.bin_offset = a.value("bin_offset", int64_t{0});
    e.bin_size = a.value("bin_size", int64_t{0});
  } catch (const nlohmann::json::exception& ex) {
    return InvalidArgument(fmt::format("{}: at {}: {}", file, where, ex.what()));
  }
  return e;
}

}  // namespace

Result<ArgsDumpManifest> ReadArgsDumpManifest(const std::filesystem::path& manifest_path) {
  const std::string file = manifest_path.string();
  DFX_ASSIGN_OR_RETURN(Json m, ReadJsonFile(manifest_path));
  if (!m.is_object()) return JsonError(file, "$", "an object", m);
  // The list is "args"; a legacy manifest calls it "tensors".
  const char* list_key = m.contains("args") ? "args" : "tensors";
  if (!m.contains(list_key) || !m[list_key].is_array()) {
    return JsonError(file, "$.args", "an array", m.contains(list_key) ? m[list_key] : Json());
  }
  ArgsDumpManifest manifest;
  const Json& list = m[list_key];
  manifest.args.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    DFX_ASSIGN_OR_RETURN(ArgsDumpEntry e,
                         ToEntry(list[i], file, fmt::format("$.{}[{}]", list_key, i)));
    manifest.args.push_back(std::move(e));
  }
  if (m.contains("bin_file") && m["bin_file"].is_string()) {
    manifest.bin_file = m["bin_file"].get<std::string>();
  }
  return manifest;
}

void ArgsDumpBin::Open(const std::filesystem::path& dump_dir, const ArgsDumpManifest& manifest) {
  if (manifest.bin_file) in_.open(dump_dir / *manifest.bin_file, std::ios::binary);
}

std::vector<unsigned char> ArgsDumpBin::Read(const ArgsDumpEntry& entry) {
  std::vector<unsigned char> data(static_cast<size_t>(entry.bin_size));
  in_.clear();
  in_.seekg(entry.bin_offset);
  in_.read(reinterpret_cast<char*>(data.data()), entry.bin_size);
  data.resize(static_cast<size_t>(in_.gcount()));
  return data;
}

}  // namespace dfx::collectors
