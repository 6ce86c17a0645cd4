// The manifest is metadata (about 200 bytes an entry) and is read whole, as
// the reference viewer does; its numbers must keep the exact text the writer
// gave them (a FLOAT32 scalar 2 is written "2.0" and shown so).
#include "collectors/args_dump/args_dump_reader.h"

#include <fmt/format.h>

#include "collectors/args_dump/args_dump_keys.h"
#include "common/json.h"
#include "common/json_value.h"

namespace dfx::collectors {
namespace {

namespace keys = args_dump_keys;

// One field of an entry: absent keeps `*out` (the default); another type is
// an error naming the field.
class Fields {
 public:
  Fields(const Json& object, const std::string& file, const std::string& where)
      : object_(object), file_(file), where_(where) {}

  Status String(const std::string& key, std::string* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_string()) return Wrong(key, "a string", *v);
    *out = v->get<std::string>();
    return Status::Ok();
  }
  Status Integer(const std::string& key, int64_t* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    std::optional<int64_t> i = v->is_boolean() ? std::nullopt : JsonInteger<int64_t>(*v);
    if (!i) return Wrong(key, "an integer", *v);
    *out = *i;
    return Status::Ok();
  }
  Status Bool(const std::string& key, bool* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_boolean()) return Wrong(key, "true or false", *v);
    *out = v->get<bool>();
    return Status::Ok();
  }
  Status Dims(const std::string& key, std::optional<std::vector<int64_t>>* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_array()) return Wrong(key, "an array of integers", *v);
    std::vector<int64_t> dims;
    for (const Json& d : *v) {
      std::optional<int64_t> i = d.is_boolean() ? std::nullopt : JsonInteger<int64_t>(d);
      if (!i) return Wrong(key, "an array of integers", *v);
      dims.push_back(*i);
    }
    *out = std::move(dims);
    return Status::Ok();
  }
  const Json* Find(const std::string& key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

 private:
  Status Wrong(const std::string& key, const char* expected, const Json& got) const {
    return JsonError(file_, where_ + "." + key, expected, got);
  }
  const Json& object_;
  const std::string& file_;
  const std::string& where_;
};

Result<ArgsDumpEntry> ToEntry(const Json& a, const std::string& file, const std::string& where) {
  if (!a.is_object()) return JsonError(file, where, "an object", a);
  ArgsDumpEntry e;
  const Fields f(a, file, where);
  DFX_RETURN_IF_ERROR(f.String(keys::kTaskId.c_str(), &e.task_id));
  DFX_RETURN_IF_ERROR(f.String(keys::kRole.c_str(), &e.role));
  DFX_RETURN_IF_ERROR(f.String(keys::kStage.c_str(), &e.stage));
  DFX_RETURN_IF_ERROR(f.String(keys::kKind.c_str(), &e.kind));
  if (f.Find(keys::kDtype.c_str()) != nullptr) {
    std::string dtype;
    DFX_RETURN_IF_ERROR(f.String(keys::kDtype.c_str(), &dtype));
    e.dtype = std::move(dtype);
  }
  DFX_RETURN_IF_ERROR(f.Integer(keys::kArgIndex.c_str(), &e.arg_index));
  DFX_RETURN_IF_ERROR(f.Bool(keys::kIsContiguous.c_str(), &e.is_contiguous));
  DFX_RETURN_IF_ERROR(f.Dims(keys::kShape.c_str(), &e.shape));
  DFX_RETURN_IF_ERROR(f.Dims(keys::kStrides.c_str(), &e.strides));
  DFX_RETURN_IF_ERROR(f.Integer(keys::kStartOffset.c_str(), &e.start_offset));
  DFX_RETURN_IF_ERROR(f.Bool(keys::kTruncated.c_str(), &e.truncated));
  DFX_RETURN_IF_ERROR(f.Bool(keys::kOverwritten.c_str(), &e.overwritten));
  const Json* value = f.Find(keys::kValue.c_str());
  const Json v = value != nullptr ? *value : Json();
  e.value_text = v.is_boolean()  ? (v.get<bool>() ? "true" : "false")
                 : v.is_string() ? v.get<std::string>()
                                 : v.dump();
  DFX_RETURN_IF_ERROR(f.Integer(keys::kBinOffset.c_str(), &e.bin_offset));
  DFX_RETURN_IF_ERROR(f.Integer(keys::kBinSize.c_str(), &e.bin_size));
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
  if (!manifest.bin_file) return;
  path_ = dump_dir / *manifest.bin_file;
  in_.open(path_, std::ios::binary);
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path_, ec);
  size_ = ec ? 0 : static_cast<uint64_t>(size);
}

Result<std::vector<unsigned char>> ArgsDumpBin::Read(const ArgsDumpEntry& entry) {
  const std::string what = fmt::format("task {} arg {} ({}, {})", entry.task_id, entry.arg_index,
                                       entry.role, entry.stage);
  if (entry.bin_offset < 0 || entry.bin_size < 0) {
    return InvalidArgument(
        fmt::format("{}: {} has bin_offset {} and bin_size {} in the manifest; both must be >= 0",
                    path_.string(), what, entry.bin_offset, entry.bin_size));
  }
  const uint64_t offset = static_cast<uint64_t>(entry.bin_offset);
  const uint64_t size = static_cast<uint64_t>(entry.bin_size);
  if (offset > size_ || size > size_ - offset) {
    return InvalidArgument(fmt::format(
        "{}: {} byte(s) of {} expected at offset {}, but the file holds {} byte(s): it is "
        "truncated (or the manifest does not belong to it)",
        path_.string(), size, what, offset, size_));
  }
  std::vector<unsigned char> data(static_cast<size_t>(size));
  in_.clear();
  in_.seekg(static_cast<std::streamoff>(offset));
  in_.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in_.gcount()) != size) {
    return InvalidArgument(
        fmt::format("{}: {} byte(s) of {} expected at offset {}, only {} could be read",
                    path_.string(), size, what, offset, static_cast<uint64_t>(in_.gcount())));
  }
  return data;
}

}  // namespace dfx::collectors
