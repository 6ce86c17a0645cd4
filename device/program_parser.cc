// The program's JSON document read with every check: the loader's reference
// reader, whose errors name the file, the JSON path and what was expected.
#include "device/program_parser.h"

#include <algorithm>
#include <map>
#include <set>

namespace dfx::device::parsing {

std::string ShapeString(const std::vector<uint32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool MarkDumps(Submit* sub, int tensor) {
  bool any = false;
  for (size_t a = 0; a < sub->args.size(); ++a) {
    if (sub->args[a].tensor == tensor) {
      sub->dumps.push_back(static_cast<int>(a));
      any = true;
    }
  }
  return any;
}

Result<Program> Parser::Parse(const Json& j, const std::function<Status(Program*)>& body) {
  Program p;
  p.origin = file_;
  if (!j.is_object())
    return Err("$", "a JSON object with name, kernels, tensors, orchestration", j);
  DFX_RETURN_IF_ERROR(CheckKeys(j, "$", {"name", "kernels", "tensors", "orchestration"}));
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    return Err("$.name", "a non-empty string", j.value("name", Json()));
  p.name = j["name"].get<std::string>();
  DFX_RETURN_IF_ERROR(ParseKernels(j, &p));
  DFX_RETURN_IF_ERROR(ParseTensors(j, &p));
  if (!j.contains("orchestration") || !j["orchestration"].is_array())
    return Err("$.orchestration", "an array of statements", j.value("orchestration", Json()));
  if (body) {
    DFX_RETURN_IF_ERROR(body(&p));
  } else {
    DFX_RETURN_IF_ERROR(ParseBody(j["orchestration"], "$.orchestration", &p, &p.orchestration));
  }
  p.submit_count = submit_count_;
  return p;
}

template <typename Path>
Status Parser::CheckKeys(const Json& obj, const Path& path,
                         std::initializer_list<const char*> allowed) const {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    if (std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; }))
      continue;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return ErrMsg(PathOf(path) + "." + key,
                  "unknown key \"" + key + "\"; expected one of: " + list);
  }
  return Status::Ok();
}

template <typename Path>
Result<int64_t> Parser::Int(const Json& j, const Path& path, int64_t lo, int64_t hi) const {
  if (!j.is_number_integer())
    return Err(PathOf(path),
               "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", j);
  int64_t v = j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                  ? INT64_MAX
                  : j.get<int64_t>();
  if (v < lo || v > hi)
    return Err(PathOf(path),
               "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", j);
  return v;
}

Result<std::string> Parser::String(const Json& obj, const std::string& key, const std::string& path,
                                   const std::string& expected) const {
  auto it = obj.find(key);
  if (it == obj.end()) return ErrMsg(path, "missing key \"" + key + "\" (" + expected + ")");
  if (!it->is_string() || it->get_ref<const std::string&>().empty())
    return Err(path + "." + key, expected, *it);
  return it->get_ref<const std::string&>();
}

Result<DType> Parser::ParseDTypeAt(const Json& obj, const std::string& path) const {
  DFX_ASSIGN_OR_RETURN(std::string name, String(obj, "dtype", path, "a dtype name"));
  auto t = ParseDType(name);
  if (!t) return Err(path + ".dtype", "a dtype (one of " + DTypeNameList() + ")", obj["dtype"]);
  return *t;
}

Status Parser::ParseKernels(const Json& j, Program* p) {
  if (!j.contains("kernels") || !j["kernels"].is_array() || j["kernels"].empty())
    return Err("$.kernels", "a non-empty array of kernels", j.value("kernels", Json()));
  std::set<int> func_ids;
  for (size_t i = 0; i < j["kernels"].size(); ++i) {
    const Json& k = j["kernels"][i];
    std::string path = "$.kernels[" + std::to_string(i) + "]";
    if (!k.is_object()) return Err(path, "a kernel object", k);
    DFX_RETURN_IF_ERROR(CheckKeys(k, path, {"func_id", "name", "core_type", "op", "params"}));
    Kernel kernel;
    if (!k.contains("func_id")) return ErrMsg(path, "missing key \"func_id\" (an integer >= 0)");
    DFX_ASSIGN_OR_RETURN(int64_t fid, Int(k["func_id"], path + ".func_id", 0, 65534));
    kernel.func_id = static_cast<int>(fid);
    if (!func_ids.insert(kernel.func_id).second)
      return Err(path + ".func_id", "a func_id not used by another kernel", k["func_id"]);
    DFX_ASSIGN_OR_RETURN(kernel.name, String(k, "name", path, "a non-empty kernel name"));
    if (kernel_index_.count(kernel.name))
      return Err(path + ".name", "a kernel name not used by another kernel", k["name"]);
    DFX_ASSIGN_OR_RETURN(std::string core, String(k, "core_type", path, "\"aic\" or \"aiv\""));
    const std::optional<CoreType> core_type = kCoreTypeText.Parse(core);
    if (!core_type) return Err(path + ".core_type", "\"aic\" or \"aiv\"", k["core_type"]);
    kernel.core_type = *core_type;
    const std::string op_list = kKernelOpText.Choices(", ");
    DFX_ASSIGN_OR_RETURN(std::string op, String(k, "op", path, "an op (one of " + op_list + ")"));
    const std::optional<KernelOp> kernel_op = kKernelOpText.Parse(op);
    if (!kernel_op) return Err(path + ".op", "an op (one of " + op_list + ")", k["op"]);
    kernel.op = *kernel_op;
    Json params = k.value("params", Json::object());
    if (!params.is_object()) return Err(path + ".params", "an object", params);
    std::string ppath = path + ".params";
    switch (kernel.op) {
      case KernelOp::kBusy:
        DFX_RETURN_IF_ERROR(CheckKeys(params, ppath, {"duration_us"}));
        if (!params.contains("duration_us") || !params["duration_us"].is_number() ||
            params["duration_us"].get<double>() < 0 || params["duration_us"].get<double>() > 1e7)
          return Err(ppath + ".duration_us", "a number of microseconds in [0, 1e7]",
                     params.value("duration_us", Json()));
        kernel.duration_us = params["duration_us"].get<double>();
        break;
      case KernelOp::kRmsnorm:
        DFX_RETURN_IF_ERROR(CheckKeys(params, ppath, {"eps"}));
        if (params.contains("eps")) {
          if (!params["eps"].is_number() || params["eps"].get<double>() <= 0)
            return Err(ppath + ".eps", "a positive number", params["eps"]);
          kernel.eps = params["eps"].get<double>();
        }
        break;
      case KernelOp::kFail:
        DFX_RETURN_IF_ERROR(CheckKeys(params, ppath, {"message"}));
        kernel.message = "kernel failed";
        if (params.contains("message")) {
          if (!params["message"].is_string())
            return Err(ppath + ".message", "a string", params["message"]);
          kernel.message = params["message"].get<std::string>();
        }
        break;
      default:
        DFX_RETURN_IF_ERROR(CheckKeys(params, ppath, {}));
    }
    kernel_index_[kernel.name] = static_cast<int>(p->kernels.size());
    p->kernels.push_back(std::move(kernel));
  }
  return Status::Ok();
}

Result<std::vector<uint32_t>> Parser::ParseShape(const Json& obj, const std::string& path) const {
  if (!obj.contains("shape"))
    return ErrMsg(path, "missing key \"shape\" (an array of 1..5 positive integers)");
  const Json& s = obj["shape"];
  if (!s.is_array() || s.empty() || s.size() > 5)
    return Err(path + ".shape", "an array of 1..5 positive integers", s);
  std::vector<uint32_t> shape;
  uint64_t numel = 1;
  shape.reserve(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    auto dim_path = [&] { return path + ".shape[" + std::to_string(d) + "]"; };
    DFX_ASSIGN_OR_RETURN(int64_t v, Int(s[d], dim_path, 1, 1 << 24));
    shape.push_back(static_cast<uint32_t>(v));
    numel *= static_cast<uint64_t>(v);
  }
  if (numel > (1ull << 28)) return Err(path + ".shape", "at most 2^28 elements per tensor", s);
  return shape;
}

Status Parser::ParseInit(const Json& t, const std::string& path, TensorDecl* decl) const {
  if (!t.contains("init")) return Status::Ok();
  const Json& in = t["init"];
  auto ipath = [&] { return path + ".init"; };
  const char* expected =
      "\"zeros\", \"ones\", {\"range\": start or [start, step]}, {\"random\": seed} or an array "
      "of numel numbers";
  if (in.is_string()) {
    const std::string& name = in.get_ref<const std::string&>();
    if (name == "zeros") {
      decl->init.kind = InitKind::kZeros;
    } else if (name == "ones") {
      decl->init.kind = InitKind::kOnes;
    } else {
      return Err(ipath(), expected, in);
    }
  } else if (in.is_object() && in.size() == 1 && in.contains("range")) {
    decl->init.kind = InitKind::kRange;
    const Json& r = in["range"];
    if (r.is_number()) {
      decl->init.range_start = r.get<double>();
    } else if (r.is_array() && r.size() == 2 && r[0].is_number() && r[1].is_number()) {
      decl->init.range_start = r[0].get<double>();
      decl->init.range_step = r[1].get<double>();
    } else {
      return Err(ipath() + ".range", "a number or [start, step]", r);
    }
  } else if (in.is_object() && in.size() == 1 && in.contains("random")) {
    decl->init.kind = InitKind::kRandom;
    if (!in["random"].is_number_unsigned() &&
        !(in["random"].is_number_integer() && in["random"].get<int64_t>() >= 0))
      return Err(ipath() + ".random", "a non-negative integer seed", in["random"]);
    decl->init.seed = in["random"].get<uint64_t>();
  } else if (in.is_array()) {
    decl->init.kind = InitKind::kValues;
    if (in.size() != decl->Numel())
      return Err(ipath(),
                 "an array of exactly " + std::to_string(decl->Numel()) +
                     " numbers (the numel of shape " + ShapeString(decl->shape) + ")",
                 in);
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].is_number() && !in[i].is_boolean())
        return Err(ipath() + "[" + std::to_string(i) + "]", "a number", in[i]);
      decl->init.values.push_back(in[i].is_boolean() ? (in[i].get<bool>() ? 1.0 : 0.0)
                                                     : in[i].get<double>());
    }
  } else {
    return Err(ipath(), expected, in);
  }
  return Status::Ok();
}

Status Parser::ParseTensors(const Json& j, Program* p) {
  if (!j.contains("tensors") || !j["tensors"].is_array())
    return Err("$.tensors", "an array of tensors", j.value("tensors", Json()));
  for (size_t i = 0; i < j["tensors"].size(); ++i) {
    const Json& t = j["tensors"][i];
    std::string path = "$.tensors[" + std::to_string(i) + "]";
    if (!t.is_object()) return Err(path, "a tensor object", t);
    TensorDecl decl;
    DFX_ASSIGN_OR_RETURN(decl.name, String(t, "name", path, "a non-empty tensor name"));
    if (tensor_index_.count(decl.name))
      return Err(path + ".name", "a tensor name not used by another tensor", t["name"]);
    if (t.contains("view_of")) {
      DFX_RETURN_IF_ERROR(CheckKeys(t, path, {"name", "view_of", "shape", "offset"}));
      DFX_ASSIGN_OR_RETURN(std::string parent, String(t, "view_of", path, "a tensor name"));
      auto it = tensor_index_.find(parent);
      if (it == tensor_index_.end())
        return Err(path + ".view_of", "the name of a tensor declared earlier", t["view_of"]);
      const TensorDecl& pd = p->tensors[it->second];
      if (pd.view_of >= 0)
        return Err(path + ".view_of", "a base tensor (views of views are not supported)",
                   t["view_of"]);
      decl.view_of = it->second;
      decl.dtype = pd.dtype;
      DFX_ASSIGN_OR_RETURN(decl.shape, ParseShape(t, path));
      if (t.contains("offset")) {
        DFX_ASSIGN_OR_RETURN(int64_t off, Int(t["offset"], path + ".offset", 0, 1ll << 40));
        decl.offset = static_cast<uint64_t>(off);
      }
      if (decl.offset + decl.Numel() > pd.Numel())
        return ErrMsg(path, "view of " + std::to_string(decl.Numel()) + " elements at offset " +
                                std::to_string(decl.offset) + " does not fit in \"" + parent +
                                "\" (" + std::to_string(pd.Numel()) + " elements); expected " +
                                "offset + numel <= " + std::to_string(pd.Numel()));
    } else {
      DFX_RETURN_IF_ERROR(CheckKeys(t, path, {"name", "shape", "dtype", "init", "resident"}));
      DFX_ASSIGN_OR_RETURN(decl.shape, ParseShape(t, path));
      DFX_ASSIGN_OR_RETURN(decl.dtype, ParseDTypeAt(t, path));
      DFX_RETURN_IF_ERROR(ParseInit(t, path, &decl));
      if (t.contains("resident")) {
        if (!t["resident"].is_boolean())
          return Err(path + ".resident", "true or false (device-resident state)", t["resident"]);
        decl.resident = t["resident"].get<bool>();
      }
    }
    tensor_index_[decl.name] = static_cast<int>(p->tensors.size());
    p->tensors.push_back(std::move(decl));
  }
  return Status::Ok();
}

std::string Parser::TensorNames(const Program& p) const {
  std::string s;
  for (size_t i = 0; i < p.tensors.size() && i < 8; ++i) s += (i ? ", " : "") + p.tensors[i].name;
  if (p.tensors.size() > 8) s += ", ...";
  return s;
}

template <typename Path>
Result<int> Parser::TensorRef(const Json& v, const Path& path, const Program& p) const {
  if (v.is_string()) {
    auto it = tensor_index_.find(v.get_ref<const std::string&>());
    if (it != tensor_index_.end()) return it->second;
  }
  return Err(PathOf(path), "the name of a declared tensor (one of " + TensorNames(p) + ")", v);
}

Status Parser::ParseBody(const Json& body, const std::string& path, Program* p,
                         std::vector<Statement>* out) {
  for (size_t i = 0; i < body.size(); ++i) {
    std::string spath = path + "[" + std::to_string(i) + "]";
    const Json& s = body[i];
    if (!s.is_object())
      return Err(spath, "a statement object ({\"submit\"...}, {\"dump_tag\"...} or {\"scope\"...})",
                 s);
    Statement st;
    st.json_path = spath;
    if (s.contains("submit")) {
      st.kind = Statement::Kind::kSubmit;
      DFX_RETURN_IF_ERROR(ParseSubmit(s, spath, p, &st.submit));
    } else if (s.contains("dump_tag")) {
      st.kind = Statement::Kind::kDumpTag;
      DFX_RETURN_IF_ERROR(CheckKeys(s, spath, {"dump_tag"}));
      DFX_ASSIGN_OR_RETURN(st.tag_tensor, TensorRef(s["dump_tag"], spath + ".dump_tag", *p));
    } else if (s.contains("scope")) {
      st.kind = Statement::Kind::kScope;
      DFX_RETURN_IF_ERROR(CheckKeys(s, spath, {"scope", "manual", "body"}));
      DFX_ASSIGN_OR_RETURN(st.site, String(s, "scope", spath, "a non-empty scope site name"));
      if (s.contains("manual")) {
        if (!s["manual"].is_boolean()) return Err(spath + ".manual", "true or false", s["manual"]);
        st.manual = s["manual"].get<bool>();
      }
      if (!s.contains("body") || !s["body"].is_array())
        return Err(spath + ".body", "an array of statements", s.value("body", Json()));
      if (++depth_ > 64) return ErrMsg(spath, "scopes nested deeper than 64; expected at most 64");
      DFX_RETURN_IF_ERROR(ParseBody(s["body"], spath + ".body", p, &st.body));
      --depth_;
    } else {
      return Err(spath, "a statement with one of the keys submit, dump_tag, scope", s);
    }
    out->push_back(std::move(st));
  }
  return Status::Ok();
}

Status Parser::ParseSubmit(const Json& s, const std::string& path, Program* p, Submit* sub) {
  DFX_RETURN_IF_ERROR(
      CheckKeys(s, path, {"submit", "args", "scalars", "block_num", "dumps", "id", "deps"}));
  const Json& kernel_name = s["submit"];
  auto kernel_it = kernel_name.is_string()
                       ? kernel_index_.find(kernel_name.get_ref<const std::string&>())
                       : kernel_index_.end();
  if (kernel_it == kernel_index_.end()) {
    std::string names;
    for (const auto& k : p->kernels) names += (names.empty() ? "" : ", ") + k.name;
    return Err(path + ".submit", "the name of a declared kernel (one of " + names + ")",
               kernel_name);
  }
  sub->kernel = kernel_it->second;
  const Kernel& kernel = p->kernels[sub->kernel];
  if (!s.contains("args") || !s["args"].is_array() || s["args"].size() > 32)
    return Err(path + ".args", "an array of at most 32 tensor arguments", s.value("args", Json()));
  const Json& args = s["args"];
  sub->args.reserve(args.size());
  for (size_t a = 0; a < args.size(); ++a) {
    const Json& arg = args[a];
    auto apath = [&] { return path + ".args[" + std::to_string(a) + "]"; };
    if (!arg.is_object())
      return Err(apath(), "{\"tensor\": name, \"type\": INPUT|OUTPUT|INOUT|OUTPUT_EXISTING}", arg);
    DFX_RETURN_IF_ERROR(CheckKeys(arg, apath, {"tensor", "type"}));
    SubmitArg sa;
    auto tensor = arg.find("tensor");
    if (tensor == arg.end()) return ErrMsg(apath(), "missing key \"tensor\" (a tensor name)");
    auto tensor_path = [&] { return apath() + ".tensor"; };
    DFX_ASSIGN_OR_RETURN(sa.tensor, TensorRef(*tensor, tensor_path, *p));
    const char* types = "one of INPUT, OUTPUT, INOUT, OUTPUT_EXISTING";
    auto type = arg.find("type");
    if (type == arg.end() || !type->is_string())
      return Err(apath() + ".type", types, arg.value("type", Json()));
    const std::optional<ArgType> arg_type = ArgTypeNamed(type->get_ref<const std::string&>());
    if (!arg_type) return Err(apath() + ".type", types, *type);
    sa.type = *arg_type;
    if (sa.type == ArgType::kOutput && p->tensors[sa.tensor].view_of >= 0)
      return Err(apath() + ".tensor",
                 "a base tensor for an OUTPUT (a view cannot be rebound; use OUTPUT_EXISTING)",
                 *tensor);
    sub->args.push_back(sa);
  }
  if (s.contains("scalars")) {
    const Json& sc = s["scalars"];
    if (!sc.is_array() || sc.size() > 16)
      return Err(path + ".scalars", "an array of at most 16 scalars", sc);
    for (size_t i = 0; i < sc.size(); ++i) {
      std::string cpath = path + ".scalars[" + std::to_string(i) + "]";
      if (!sc[i].is_object()) return Err(cpath, "{\"dtype\": ..., \"value\": number}", sc[i]);
      DFX_RETURN_IF_ERROR(CheckKeys(sc[i], cpath, {"dtype", "value"}));
      Scalar scalar;
      DFX_ASSIGN_OR_RETURN(scalar.dtype, ParseDTypeAt(sc[i], cpath));
      if (!sc[i].contains("value") || !(sc[i]["value"].is_number() || sc[i]["value"].is_boolean()))
        return Err(cpath + ".value", "a number", sc[i].value("value", Json()));
      scalar.value = sc[i]["value"].is_boolean() ? (sc[i]["value"].get<bool>() ? 1 : 0)
                                                 : sc[i]["value"].get<double>();
      sub->scalars.push_back(scalar);
    }
  }
  if (s.contains("block_num")) {
    DFX_ASSIGN_OR_RETURN(int64_t bn, Int(s["block_num"], path + ".block_num", 1, 4096));
    sub->block_num = static_cast<int>(bn);
  }
  if (s.contains("dumps")) {
    const Json& d = s["dumps"];
    if (!d.is_array())
      return Err(path + ".dumps", "an array of tensor names passed to this submit", d);
    for (size_t i = 0; i < d.size(); ++i) {
      std::string dpath = path + ".dumps[" + std::to_string(i) + "]";
      DFX_ASSIGN_OR_RETURN(int t, TensorRef(d[i], dpath, *p));
      if (!MarkDumps(sub, t)) return Err(dpath, "a tensor passed in this submit's args", d[i]);
    }
  }
  if (s.contains("id")) {
    if (!s["id"].is_string() || s["id"].get<std::string>().empty())
      return Err(path + ".id", "a non-empty label string", s["id"]);
    sub->label = s["id"].get<std::string>();
    if (labels_.count(sub->label))
      return Err(path + ".id", "a label not used by an earlier submit", s["id"]);
  }
  if (s.contains("deps")) {
    const Json& d = s["deps"];
    if (!d.is_array()) return Err(path + ".deps", "an array of labels of earlier submits", d);
    for (size_t i = 0; i < d.size(); ++i) {
      std::string dpath = path + ".deps[" + std::to_string(i) + "]";
      if (!d[i].is_string() || !labels_.count(d[i].get<std::string>()))
        return Err(dpath, "the \"id\" label of an earlier submit", d[i]);
      sub->deps.push_back(labels_[d[i].get<std::string>()]);
    }
  }
  DFX_RETURN_IF_ERROR(CheckOp(kernel, *sub, *p, path, &s));
  if (!sub->label.empty()) labels_[sub->label] = submit_count_;
  ++submit_count_;
  return Status::Ok();
}

Status Parser::CheckOp(const Kernel& k, const Submit& sub, const Program& p,
                       const std::string& path, const Json* s) const {
  std::vector<int> ins, outs;  // arg indices
  for (size_t a = 0; a < sub.args.size(); ++a) {
    ArgType t = sub.args[a].type;
    if (t == ArgType::kInput || t == ArgType::kInout) ins.push_back(static_cast<int>(a));
    if (t != ArgType::kInput) outs.push_back(static_cast<int>(a));
  }
  auto shape = [&](int a) -> const std::vector<uint32_t>& {
    return p.tensors[sub.args[a].tensor].shape;
  };
  auto apath = [&](int a) { return path + ".args[" + std::to_string(a) + "].tensor"; };
  auto arity = [&](size_t nin_lo, size_t nin_hi, const std::string& form) -> Status {
    if (ins.size() < nin_lo || ins.size() > nin_hi || outs.size() != 1)
      return ErrMsg(path + ".args", std::string("kernel \"") + k.name + "\" (op " +
                                        KernelOpName(k.op) + ") expects " + form + ", got " +
                                        std::to_string(ins.size()) + " input(s) and " +
                                        std::to_string(outs.size()) + " output(s)");
    return Status::Ok();
  };
  auto mismatch = [&](int a, const std::string& expected) {
    if (s == nullptr) return ErrMsg(apath(a), "expected " + expected);
    return Err(apath(a), expected, (*s)["args"][a]["tensor"]);
  };
  switch (k.op) {
    case KernelOp::kAdd:
    case KernelOp::kMul: {
      DFX_RETURN_IF_ERROR(arity(1, 2, "1 or 2 inputs (INPUT/INOUT) and 1 output"));
      if (ins.size() == 1 && sub.scalars.size() != 1)
        return ErrMsg(path + ".scalars", std::string("op ") + KernelOpName(k.op) +
                                             " with one tensor input expects exactly 1 scalar");
      for (int a : ins)
        if (shape(a) != shape(outs[0]))
          return mismatch(a, "a tensor of the output's shape " + ShapeString(shape(outs[0])) +
                                 " (elementwise), but it has shape " + ShapeString(shape(a)));
      break;
    }
    case KernelOp::kCopy:
      DFX_RETURN_IF_ERROR(arity(1, 1, "1 input and 1 output"));
      if (p.tensors[sub.args[ins[0]].tensor].Numel() != p.tensors[sub.args[outs[0]].tensor].Numel())
        return mismatch(outs[0], "a tensor with as many elements as the input " +
                                     ShapeString(shape(ins[0])) + ", but it has shape " +
                                     ShapeString(shape(outs[0])));
      break;
    case KernelOp::kSoftmax:
      DFX_RETURN_IF_ERROR(arity(1, 1, "1 input and 1 output"));
      if (shape(ins[0]) != shape(outs[0]))
        return mismatch(outs[0], "the input's shape " + ShapeString(shape(ins[0])) +
                                     ", but it has shape " + ShapeString(shape(outs[0])));
      break;
    case KernelOp::kRmsnorm: {
      DFX_RETURN_IF_ERROR(arity(1, 2, "x, an optional gamma [n] and 1 output"));
      if (shape(ins[0]) != shape(outs[0]))
        return mismatch(outs[0], "the input's shape " + ShapeString(shape(ins[0])) +
                                     ", but it has shape " + ShapeString(shape(outs[0])));
      if (ins.size() == 2) {
        std::vector<uint32_t> g{shape(ins[0]).back()};
        if (shape(ins[1]) != g)
          return mismatch(ins[1], "a gamma of shape " + ShapeString(g) + ", but it has shape " +
                                      ShapeString(shape(ins[1])));
      }
      break;
    }
    case KernelOp::kReduceSum: {
      DFX_RETURN_IF_ERROR(arity(1, 1, "1 input and 1 output"));
      const auto& x = shape(ins[0]);
      uint64_t rows = p.tensors[sub.args[ins[0]].tensor].Numel() / x.back();
      if (p.tensors[sub.args[outs[0]].tensor].Numel() != rows)
        return mismatch(outs[0], "a tensor of " + std::to_string(rows) + " elements (input " +
                                     ShapeString(x) +
                                     " reduced over its last dimension), but it has shape " +
                                     ShapeString(shape(outs[0])));
      break;
    }
    case KernelOp::kMatmul: {
      DFX_RETURN_IF_ERROR(arity(2, 2, "a [m,k], b [k,n] and 1 output [m,n]"));
      const auto& a = shape(ins[0]);
      const auto& b = shape(ins[1]);
      const auto& c = shape(outs[0]);
      if (a.size() != 2)
        return mismatch(ins[0], "a 2-D [m,k] tensor, but it has shape " + ShapeString(a));
      if (b.size() != 2 || b[0] != a[1])
        return mismatch(ins[1], "a 2-D [k,n] tensor with k=" + std::to_string(a[1]) +
                                    ", but it has shape " + ShapeString(b));
      std::vector<uint32_t> want{a[0], b[1]};
      if (c != want)
        return mismatch(outs[0], "an output of shape " + ShapeString(want) +
                                     " ([m,k]x[k,n]->[m,n]), but it has shape " + ShapeString(c));
      break;
    }
    case KernelOp::kBusy:
    case KernelOp::kFail:
      break;
  }
  return Status::Ok();
}

}  // namespace dfx::device::parsing
