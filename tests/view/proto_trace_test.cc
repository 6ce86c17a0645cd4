// `dfx-view swimlane --format proto`: the Perfetto protobuf trace holds what
// the JSON trace of the same inputs holds. A real L2 run (dfx-coordinator,
// level 4 + dep_gen) and the L3 run fixture are converted both ways; the
// protobuf file is decoded with `protoc --decode=perfetto.protos.Trace`
// against the checked-in schema subset (tests/view/perfetto/), and the
// processes, threads, slices (name, track, start and end in ns, args),
// flow ends, counters and metadata are compared one by one. (Perfetto's
// trace_processor is not packaged for Debian, so the import into the UI
// itself is not tested here.)
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/l3/e2e_util.h"

namespace dfx::e2e {
namespace {

// --- protoc's text format, one field per line --------------------------------------
struct Message {
  std::multimap<std::string, std::string> fields;  // scalars, strings unescaped
  std::vector<std::pair<std::string, std::unique_ptr<Message>>> children;
  const std::string* Get(const std::string& key) const {
    auto it = fields.find(key);
    return it == fields.end() ? nullptr : &it->second;
  }
  const Message* Child(const std::string& key) const {
    for (const auto& [k, m] : children) {
      if (k == key) return m.get();
    }
    return nullptr;
  }
  std::vector<const Message*> All(const std::string& key) const {
    std::vector<const Message*> v;
    for (const auto& [k, m] : children) {
      if (k == key) v.push_back(m.get());
    }
    return v;
  }
};

std::string Unescape(const std::string& q) {  // "..." with C escapes
  std::string s;
  for (size_t i = 1; i + 1 < q.size(); ++i) {
    if (q[i] != '\\') {
      s.push_back(q[i]);
      continue;
    }
    const char e = q[++i];
    if (e >= '0' && e <= '7') {
      int v = 0;
      for (int k = 0; k < 3 && i < q.size() && q[i] >= '0' && q[i] <= '7'; ++k, ++i) {
        v = v * 8 + (q[i] - '0');
      }
      --i;
      s.push_back(static_cast<char>(v));
    } else if (e == 'n') {
      s.push_back('\n');
    } else if (e == 't') {
      s.push_back('\t');
    } else if (e == 'r') {
      s.push_back('\r');
    } else {
      s.push_back(e);  // a quote or a backslash
    }
  }
  return s;
}

std::unique_ptr<Message> ParseText(const std::string& text) {
  auto root = std::make_unique<Message>();
  std::vector<Message*> stack{root.get()};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line == "}") {
      stack.pop_back();
    } else if (line.back() == '{') {
      auto child = std::make_unique<Message>();
      Message* raw = child.get();
      stack.back()->children.emplace_back(line.substr(0, line.find(' ')), std::move(child));
      stack.push_back(raw);
    } else {
      const size_t colon = line.find(": ");
      std::string value = line.substr(colon + 2);
      if (!value.empty() && value[0] == '"') value = Unescape(value);
      stack.back()->fields.emplace(line.substr(0, colon), value);
    }
  }
  return root;
}

// --- what a trace holds, in one normal form for both files ---------------------------
std::string Number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

int64_t Ns(double us) { return std::llround(us * 1000.0); }

struct Content {
  std::map<int, std::string> process_names;
  std::map<int, int> process_sort;
  std::map<std::pair<int, int>, std::string> thread_names;
  // pid, tid, name, begin ns, end ns, args "k=v;..." (sorted by key)
  std::multiset<std::tuple<int, int, std::string, int64_t, int64_t, std::string>> slices;
  // 's' / 'f', name, pid, tid, ns
  std::multiset<std::tuple<char, std::string, int, int, int64_t>> flow_ends;
  // pid, "<name> <key>", ns, value
  std::multiset<std::tuple<int, std::string, int64_t, std::string>> counters;
  Json metadata;
};

std::string JsonValue(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return Number(v.get<double>());
  if (v.is_array()) {
    std::string s = "[";
    for (const auto& e : v) s += JsonValue(e) + ",";
    return s + "]";
  }
  return v.dump();
}

Content FromJson(const Json& trace) {
  Content c;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    const int pid = e.at("pid");
    const int tid = e.value("tid", -1);
    if (ph == "M") {
      const std::string name = e.at("name");
      if (name == "process_name") c.process_names[pid] = e["args"]["name"];
      if (name == "process_sort_index") c.process_sort[pid] = e["args"]["sort_index"];
      if (name == "thread_name") c.thread_names[{pid, tid}] = e["args"]["name"];
    } else if (ph == "X") {
      std::map<std::string, std::string> args;
      for (const auto& [k, v] : e["args"].items()) args[k] = JsonValue(v);
      std::string a;
      for (const auto& [k, v] : args) a += k + "=" + v + ";";
      const int64_t b = Ns(e.at("ts").get<double>());
      c.slices.emplace(pid, tid, e.at("name"), b,
                       Ns(e.at("ts").get<double>() + e.at("dur").get<double>()), a);
    } else if (ph == "s" || ph == "f") {
      c.flow_ends.emplace(ph[0], e.at("name"), pid, tid, Ns(e.at("ts").get<double>()));
    } else if (ph == "C") {
      for (const auto& [k, v] : e["args"].items()) {
        c.counters.emplace(pid, e.at("name").get<std::string>() + " " + k,
                           Ns(e.at("ts").get<double>()), JsonValue(v));
      }
    }
  }
  c.metadata = trace.value("metadata", Json());
  return c;
}

std::string AnnotationValue(const Message& a, const std::map<uint64_t, std::string>& strings) {
  if (const auto* v = a.Get("string_value_iid")) return strings.at(std::stoull(*v));
  if (const auto* v = a.Get("string_value")) return *v;
  if (const auto* v = a.Get("int_value")) return *v;
  if (const auto* v = a.Get("uint_value")) return *v;
  if (const auto* v = a.Get("double_value")) return Number(std::stod(*v));
  if (const auto* v = a.Get("bool_value")) return *v;
  std::string s = "[";
  for (const Message* e : a.All("array_values")) s += AnnotationValue(*e, strings) + ",";
  return s + "]";
}

Content FromProto(const Message& trace, int* cleared_flags) {
  Content c;
  std::map<uint64_t, std::pair<int, int>> tracks;  // uuid → pid, tid (-1: process)
  std::map<uint64_t, std::pair<int, std::string>> counter_tracks;
  std::map<uint32_t, std::map<uint64_t, std::string>> interned;  // field → iid → string
  std::map<uint64_t, std::vector<std::tuple<std::string, int64_t, std::string>>> open;
  for (const Message* p : trace.All("packet")) {
    if (const auto* flags = p->Get("sequence_flags"); flags && (std::stoi(*flags) & 1)) {
      ++*cleared_flags;
    }
    if (const Message* d = p->Child("interned_data")) {
      for (auto [key, field] : {std::pair{"event_categories", 1}, std::pair{"event_names", 2},
                                std::pair{"debug_annotation_names", 3},
                                std::pair{"debug_annotation_string_values", 29}}) {
        for (const Message* e : d->All(key)) {
          const std::string* s = e->Get(field == 29 ? "str" : "name");
          interned[field][std::stoull(*e->Get("iid"))] = *s;
        }
      }
    }
    const uint64_t ts = p->Get("timestamp") ? std::stoull(*p->Get("timestamp")) : 0;
    if (const Message* d = p->Child("track_descriptor")) {
      const uint64_t uuid = std::stoull(*d->Get("uuid"));
      if (const Message* proc = d->Child("process")) {
        const int pid = std::stoi(*proc->Get("pid"));
        tracks[uuid] = {pid, -1};
        if (const auto* n = proc->Get("process_name")) c.process_names[pid] = *n;
        if (const auto* s = proc->Get("legacy_sort_index")) c.process_sort[pid] = std::stoi(*s);
      } else if (const Message* th = d->Child("thread")) {
        const int pid = std::stoi(*th->Get("pid")), tid = std::stoi(*th->Get("tid"));
        tracks[uuid] = {pid, tid};
        if (const auto* n = th->Get("thread_name")) c.thread_names[{pid, tid}] = *n;
      } else if (d->Child("counter")) {
        counter_tracks[uuid] = {tracks.at(std::stoull(*d->Get("parent_uuid"))).first,
                                *d->Get("name")};
      }
    }
    const Message* e = p->Child("track_event");
    if (e == nullptr) continue;
    const uint64_t track = std::stoull(*e->Get("track_uuid"));
    const std::string* type = e->Get("type");
    const std::string name = e->Get("name_iid") ? interned[2].at(std::stoull(*e->Get("name_iid")))
                                                : (e->Get("name") ? *e->Get("name") : "");
    if (const Message* legacy = e->Child("legacy_event")) {
      const auto [pid, tid] = tracks.at(track);
      c.flow_ends.emplace(static_cast<char>(std::stoi(*legacy->Get("phase"))), name, pid, tid,
                          static_cast<int64_t>(ts));
    } else if (*type == "TYPE_SLICE_BEGIN") {
      std::map<std::string, std::string> args;
      for (const Message* a : e->All("debug_annotations")) {
        args[interned[3].at(std::stoull(*a->Get("name_iid")))] = AnnotationValue(*a, interned[29]);
      }
      std::string joined;
      for (const auto& [k, v] : args) joined += k + "=" + v + ";";
      open[track].emplace_back(name, ts, joined);
    } else if (*type == "TYPE_SLICE_END") {
      auto& stack = open[track];
      const auto [pid, tid] = tracks.at(track);
      const auto& [n, b, a] = stack.back();
      c.slices.emplace(pid, tid, n, b, ts, a);
      stack.pop_back();
    } else if (*type == "TYPE_COUNTER") {
      const auto& [pid, cname] = counter_tracks.at(track);
      const std::string* v = e->Get("counter_value");
      c.counters.emplace(pid, cname, ts,
                         v ? *v : Number(std::stod(*e->Get("double_counter_value"))));
    } else if (*type == "TYPE_INSTANT" && name == "trace metadata") {
      c.metadata = Json::parse(*e->Child("debug_annotations")->Get("legacy_json_value"));
    }
  }
  return c;
}

// Converts with dfx-view both ways and decodes the protobuf trace.
struct Pair {
  Content json, proto;
  uint64_t json_bytes = 0, proto_bytes = 0;
  int cleared_flags = 0;
};

Pair ConvertBothWays(const std::vector<std::string>& input_args, const fs::path& dir) {
  Pair p;
  std::vector<std::string> json_cmd{Bin("dfx-view"), "swimlane"};
  json_cmd.insert(json_cmd.end(), input_args.begin(), input_args.end());
  std::vector<std::string> proto_cmd = json_cmd;
  json_cmd.insert(json_cmd.end(), {"-o", (dir / "t.json").string()});
  proto_cmd.insert(proto_cmd.end(), {"--format", "proto", "-o", (dir / "t.pftrace").string()});
  auto r = RunCommand(json_cmd, dir / "json_log");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunCommand(proto_cmd, dir / "proto_log");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Wrote " + (dir / "t.pftrace").string()), std::string::npos) << r.out;
  const std::string decode = "protoc --decode=perfetto.protos.Trace -I '" +
                             Source("tests/view/perfetto").string() + "' perfetto_trace.proto < '" +
                             (dir / "t.pftrace").string() + "' > '" + (dir / "t.txt").string() +
                             "' 2> '" + (dir / "protoc.err").string() + "'";
  EXPECT_EQ(std::system(decode.c_str()), 0) << Slurp(dir / "protoc.err");
  p.json = FromJson(LoadJson(dir / "t.json"));
  p.proto = FromProto(*ParseText(Slurp(dir / "t.txt")), &p.cleared_flags);
  p.json_bytes = fs::file_size(dir / "t.json");
  p.proto_bytes = fs::file_size(dir / "t.pftrace");
  return p;
}

void ExpectSameContent(const Pair& p) {
  EXPECT_EQ(p.proto.process_names, p.json.process_names);
  EXPECT_EQ(p.proto.process_sort, p.json.process_sort);
  EXPECT_EQ(p.proto.thread_names, p.json.thread_names);
  EXPECT_EQ(p.proto.slices.size(), p.json.slices.size());
  EXPECT_TRUE(p.proto.slices == p.json.slices) << "slices differ (name, track, ns, args)";
  for (const auto& s : p.json.slices) {
    if (!p.proto.slices.count(s)) {
      ADD_FAILURE() << "first JSON slice missing from the proto trace: " << std::get<2>(s) << " "
                    << std::get<3>(s) << " " << std::get<5>(s);
      break;
    }
  }
  EXPECT_EQ(p.proto.flow_ends.size(), p.json.flow_ends.size());
  EXPECT_TRUE(p.proto.flow_ends == p.json.flow_ends) << "flow ends differ";
  EXPECT_TRUE(p.proto.counters == p.json.counters) << "counters differ";
  EXPECT_EQ(p.proto.metadata, p.json.metadata);
  EXPECT_EQ(p.cleared_flags, 1) << "one SEQ_INCREMENTAL_STATE_CLEARED at the start";
}

TEST(ProtoTraceTest, RealRunLevel4WithDepsHoldsWhatTheJsonTraceHolds) {
  const fs::path dir = TestDir("proto_l4");
  auto r = RunCommand({DFX_BINARY_DIR "/device/dfx-gen-program", "layered", "--tasks", "300",
                       "--indent", "-1", "-o", (dir / "program.json").string()},
                      dir / "gen_log");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCommand({Bin("dfx-coordinator"), "run", (dir / "program.json").string(), "--work-dir",
                  (dir / "run").string(), "--chip-swimlane-level", "4", "--enable-dep-gen", "-q"},
                 dir / "run_log");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path out = dir / "run" / "dfx_outputs";
  Pair p = ConvertBothWays({(out / "chip_swimlane_records.json").string(), "--overhead"}, dir);
  ASSERT_FALSE(HasFailure());
  ExpectSameContent(p);
  EXPECT_GT(p.json.slices.size(), 300u);
  EXPECT_GT(p.json.flow_ends.size(), 300u);
  EXPECT_FALSE(p.json.counters.empty());
  // What the format is for: the same trace in a fraction of the bytes.
  EXPECT_LT(p.proto_bytes * 2, p.json_bytes) << p.proto_bytes << " vs " << p.json_bytes;

  // Without -o the trace lands beside the records as merged_swimlane.pftrace.
  r = RunCommand({Bin("dfx-view"), "swimlane", (out / "chip_swimlane_records.json").string(),
                  "--format", "proto"},
                 dir / "default_log");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "merged_swimlane.pftrace")) << r.out;
  r = RunCommand({Bin("dfx-view"), "swimlane", (out / "chip_swimlane_records.json").string(),
                  "--format", "protobuf"},
                 dir / "bad_log");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--format"), std::string::npos) << r.err;
  if (!HasFailure()) fs::remove_all(dir);
}

TEST(ProtoTraceTest, RunTimelineHoldsWhatTheJsonTraceHolds) {
  const fs::path dir = TestDir("proto_run");
  fs::copy(Source("tests/view/fixtures/run"), dir / "run", fs::copy_options::recursive);
  Pair p = ConvertBothWays({"--run", (dir / "run" / "dfx_outputs").string()}, dir);
  ASSERT_FALSE(HasFailure());
  ExpectSameContent(p);
  EXPECT_FALSE(p.json.metadata.is_null());  // the run's clock alignment, as an annotation

  // --window cuts both the same way.
  Pair w =
      ConvertBothWays({"--run", (dir / "run" / "dfx_outputs").string(), "--window", "90:200"}, dir);
  ExpectSameContent(w);
  EXPECT_LT(w.json.slices.size(), p.json.slices.size());
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
