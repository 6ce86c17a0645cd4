// Loads program JSON files (docs/design.md §6) into a validated Program.
//
// Every error is an InvalidArgument whose message names the file, the JSON
// path and what was expected, e.g.
//   "prog.json: at $.orchestration[3].args[1].tensor: expected the name of a
//    declared tensor (one of a, b, c), got string \"q\"".
// Bad input never crashes. Thread-safe (no shared state).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/json.h"
#include "common/status.h"
#include "device/program.h"

namespace dfx::device {

Result<Program> LoadProgram(const std::filesystem::path& path);
// `origin` names the source (usually the file path) in error messages.
Result<Program> ParseProgram(const Json& json, const std::string& origin);
// ParseJson and ParseProgram in one: the same program, or the same error.
// An orchestration written in the usual statement forms (ParseProgramFast)
// is read straight from the text, without a JSON document of it.
// `before_program`, when given, runs once the text is known to be JSON and
// before the program's errors: a caller's error that must come after a
// syntax error but before the program's (RunDispatch's run config).
Result<Program> ParseProgramText(const std::string& text, const std::string& origin,
                                 const std::function<Status()>& before_program = nullptr);
// The program when its text is a plain top-level object whose orchestration
// holds submits without scalars, dump tags and scopes, with plain strings
// (printable ASCII, no escapes) and integers, and is a valid program: what
// ParseProgram reads from the same text's JSON document, statement for
// statement. nullopt for anything else, including every invalid program
// (ParseJson and ParseProgram then say what is wrong). Kernels and tensors
// go through the JSON reader either way. At 100k tasks (11 MB) this reads
// a program in a fraction of the document's time and memory.
std::optional<Program> ParseProgramFast(std::string_view text, const std::string& origin);
// Records where the scope statements (and the orchestration, the root
// scope) sit in `text`, the program's JSON text: Statement::line and
// Program::orchestration_line, by JSON path; `file_name` becomes
// Program::source_file. Text that does not match the program leaves lines 0.
void AttachSourceLines(Program* program, std::string_view text, const std::string& file_name);
// The JSON form of `program`; ParseProgram(ProgramToJson(p)) reproduces p.
Json ProgramToJson(const Program& program);
// Sets every statement's json_path ("$.orchestration[3].body[0]") from its
// position, for programs built in memory.
void AssignJsonPaths(Program* program);
// Checks a Program built in memory (by a generator) with the loader's rules.
Status ValidateProgram(const Program& program);

}  // namespace dfx::device
