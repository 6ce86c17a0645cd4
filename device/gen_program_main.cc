// dfx-gen-program: writes a generated program JSON (device/generators.h).
//
//   dfx-gen-program layered --tasks 100000 --width 32 --seed 7 -o large_dag.json
//   dfx-gen-program attention --layers 2 --heads 2 -o attention_decode.json
//   dfx-gen-program vector -o vector_pipeline.json
//
// Usage errors exit 2, a failed write 1.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "common/json.h"
#include "common/unknown_arguments.h"
#include "common/version.h"
#include "device/generators.h"
#include "device/program_loader.h"

int main(int argc, char** argv) {
  using namespace dfx::device;
  CLI::App app{"dfx-gen-program: generates program JSON files for the emulated chips"};
  app.name("dfx-gen-program");
  app.require_subcommand(1);
  std::string output;
  int indent = -1;

  LayeredDagOptions dag;
  auto* layered = app.add_subcommand("layered", "layered random DAG");
  layered->add_option("--tasks", dag.tasks, "number of submits")
      ->check(CLI::Range(1ull, 100000000ull));
  layered->add_option("--width", dag.width, "tasks per layer")->check(CLI::Range(1, 100000));
  layered->add_option("--seed", dag.seed, "random seed");
  layered->add_option("--rows", dag.rows)->check(CLI::Range(1, 4096));
  layered->add_option("--cols", dag.cols)->check(CLI::Range(1, 4096));
  layered->add_option("--matmul-every", dag.matmul_every,
                      "every Nth task is an AIC matmul (0 = none)");
  layered->add_option("--name", dag.name);

  AttentionDecodeOptions att;
  auto* attention = app.add_subcommand("attention", "attention-decode-shaped graph");
  attention->add_option("--layers", att.layers)->check(CLI::Range(1, 100000));
  attention->add_option("--heads", att.heads)->check(CLI::Range(1, 1024));
  attention->add_option("--batch", att.batch)->check(CLI::Range(1, 4096));
  attention->add_option("--seq", att.seq)->check(CLI::Range(1, 65536));
  attention->add_option("--head-dim", att.head_dim)->check(CLI::Range(1, 4096));
  attention->add_option("--softmax-blocks", att.softmax_blocks)->check(CLI::Range(1, 4096));
  attention->add_option("--norm-blocks", att.norm_blocks)->check(CLI::Range(1, 4096));
  bool no_tags = false;
  attention->add_flag("--no-dump-tags", no_tags, "omit dump_tag / dumps statements");
  attention->add_option("--name", att.name);

  int rows = 16, cols = 16;
  auto* vector = app.add_subcommand("vector", "the 5-task vector pipeline (6 dependency edges)");
  vector->add_option("--rows", rows)->check(CLI::Range(1, 4096));
  vector->add_option("--cols", cols)->check(CLI::Range(1, 4096));

  for (auto* sub : {layered, attention, vector}) {
    sub->add_option("-o,--output", output, "output file (default: stdout)");
    sub->add_option("--indent", indent, "JSON indent (-1 = compact)");
  }
  for (CLI::App* a : {&app, layered, attention, vector}) {
    a->set_version_flag("--version", dfx::VersionLine("dfx-gen-program"));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A mistyped flag, not the required one it displaced, is the error.
    if (auto unknown = dfx::UnknownArgumentsOf(app, "dfx-gen-program")) {
      std::fprintf(stderr, "dfx-gen-program: %s\n", unknown->c_str());
      return 2;
    }
    // CLI11 names the flag and the bad value; a usage error exits 2 like
    // every other dfx binary (not CLI11's own 105, 106, 109 ...).
    (void)app.exit(e);
    return 2;
  }

  Program program;
  if (*layered) {
    program = GenerateLayeredDag(dag);
  } else if (*attention) {
    att.dump_tags = !no_tags;
    program = GenerateAttentionDecode(att);
  } else {
    program = GenerateVectorPipeline(rows, cols);
  }
  dfx::Json j = ProgramToJson(program);
  if (output.empty()) {
    std::printf("%s\n", j.dump(indent).c_str());
    return 0;
  }
  dfx::Status s = dfx::WriteJsonFileAtomic(output, j, indent);
  if (!s.ok()) {
    std::fprintf(stderr, "dfx-gen-program: %s\n", s.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %s (%d submits)\n", output.c_str(), program.submit_count);
  return 0;
}
