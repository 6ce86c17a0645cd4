// The manifest is metadata (about 200 bytes an entry) and is read whole, as
// the reference viewer does; its numbers must keep the exact text the writer
// gave them (a FLOAT32 scalar 2 is written "2.0" and shown so).
#include "collectors/args_dump/args_dump_reader.h"

#include <fmt/format.h>

#include "collectors/args_dump/args_dump_keys.h"
#include "common/json.h"

namespace dfx::collectors {
namespace {

namespace keys = args_dump_keys;

Result<ArgsDumpEntry> ToEntry(const Json& a, const std::string& file, const std::string& where) {
  if (!a.is_object()) return JsonError(file, where, "an object", a);
  ArgsDumpEntry e;
  try {
    e.task_id = a.value(keys::kTaskId.c_str(), std::string());
    e.role = a.value(keys::kRole.c_str(), std::string());
    e.stage = a.value(keys::kStage.c_str(), std::string());
    e.kind = a.value(keys::kKind.c_str(), std::string());
    if (a.contains(keys::kDtype.c_str())) e.dtype = a[keys::kDtype.c_str()].get<std::string>();
    e.arg_index = a.value(keys::kArgIndex.c_str(), int64_t{-1});
    e.is_contiguous = a.value(keys::kIsContiguous.c_str(), false);
    if (a.contains(keys::kShape.c_str()))
      e.shape = a[keys::kShape.c_str()].get<std::vector<int64_t>>();
    if (a.contains(keys::kStrides.c_str()))
      e.strides = a[keys::kStrides.c_str()].get<std::vector<int64_t>>();
    e.start_offset = a.value(keys::kStartOffset.c_str(), int64_t{0});
    e.truncated = a.value(keys::kTruncated.c_str(), false);
    e.overwritten = a.value(keys::kOverwritten.c_str(), false);
    const Json& v = a.contains(keys::kValue.c_str()) ? a[keys::kValue.c_str()] : Json();
    e.value_text = v.is_boolean()  ? (v.get<bool>() ? "true" : "false")
                   : v.is_string() ? v.get<std::string>()
                                   : v.dump();
    e.bin_offset = a.value(keys::kBinOffset.c_str(), int64_t{0});
    e.bin_size = a.value(keys::kBinSize.c_str(), int64_t{0});
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
  // The list is kArgs; a legacy manifest calls it kLegacyArgs.
  const char* list_key =
      m.contains(keys::kArgs.c_str()) ? keys::kArgs.c_str() : keys::kLegacyArgs.c_str();
  if (!m.contains(list_key) || !m[list_key].is_array()) {
    return JsonError(file, std::string(JoinedText<"$.", keys::kArgs>), "an array",
                     m.contains(list_key) ? m[list_key] : Json());
  }
  ArgsDumpManifest manifest;
  const Json& list = m[list_key];
  manifest.args.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    DFX_ASSIGN_OR_RETURN(ArgsDumpEntry e,
                         ToEntry(list[i], file, fmt::format("$.{}[{}]", list_key, i)));
    manifest.args.push_back(std::move(e));
  }
  if (m.contains(keys::kBinFile.c_str()) && m[keys::kBinFile.c_str()].is_string()) {
    manifest.bin_file = m[keys::kBinFile.c_str()].get<std::string>();
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
