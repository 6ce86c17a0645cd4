// Logging: spdlog behind one header. Everything logs to stderr through the
// default logger; `dfx::log::Init` sets the process name and level once.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace dfx::log {

// Configures the default logger: "[time] [name] [level] message" on stderr.
// `level` is one of trace, debug, info, warn, error, off. Call once from main.
void Init(const std::string& process_name, const std::string& level = "info");

}  // namespace dfx::log

#define DFX_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define DFX_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define DFX_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define DFX_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
