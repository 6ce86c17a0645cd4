// Logging: spdlog behind one header. Everything logs to stderr through the
// default logger in one format, "[time] [name] [level] message";
// `dfx::log::Init` sets the process name and level once.
//
// The console sink also owns the live status line of a terminal (a progress
// line redrawn in place): every log line first flushes stdout (so results
// printed there never land in the middle of a log line under 2>&1), clears
// the status line, writes itself and redraws the status line below it.
// Thread-safe (spdlog's sink mutex).
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace dfx::log {

// Configures the default logger. `level` is one of trace, debug, info, warn,
// error, critical, off. With `honour_env`, a valid $SPDLOG_LEVEL replaces
// `level` (pass true only when the user did not give a level on the command
// line); an invalid one is reported with a warning and ignored.
// Call once from main.
void Init(const std::string& process_name, const std::string& level = "info",
          bool honour_env = false);

// True when `level` is one of the names Init accepts.
bool IsLevelName(const std::string& level);

// Shows `line` as the live status line on stderr when stderr is a
// terminal, cut to the terminal's width; "" removes it. A no-op otherwise,
// and while the logger is off.
void SetStatusLine(const std::string& line);
// Whether SetStatusLine shows anything now (stderr is a terminal and the
// logger is on): a caller need not keep a status line up to date otherwise.
bool StatusLineShown();

}  // namespace dfx::log

#define DFX_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define DFX_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define DFX_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define DFX_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
