#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace dfx::log {

void Init(const std::string& process_name, const std::string& level) {
  auto logger = spdlog::stderr_color_mt(process_name);
  logger->set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace dfx::log
