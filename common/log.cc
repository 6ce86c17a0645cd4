#include "common/log.h"

#include <spdlog/sinks/base_sink.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace dfx::log {

namespace {

constexpr const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};

size_t TerminalWidth() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

// stderr, with the status line kept below the log lines.
class ConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  ConsoleSink() : tty_(::isatty(STDERR_FILENO) != 0) {}

  bool tty() const { return tty_; }
  void SetStatus(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!tty_) return;
    status_ = line.substr(0, TerminalWidth() > 1 ? TerminalWidth() - 1 : 0);
    std::fputs("\r\033[K", stderr);
    std::fputs(status_.c_str(), stderr);
    std::fflush(stderr);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::fflush(stdout);
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    if (tty_ && !status_.empty()) std::fputs("\r\033[K", stderr);
    std::fwrite(formatted.data(), 1, formatted.size(), stderr);
    if (tty_ && !status_.empty()) std::fputs(status_.c_str(), stderr);
    std::fflush(stderr);
  }
  void flush_() override { std::fflush(stderr); }

 private:
  const bool tty_;
  std::string status_;
};

std::shared_ptr<ConsoleSink>& Sink() {
  static std::shared_ptr<ConsoleSink> sink;
  return sink;
}

}  // namespace

bool IsLevelName(const std::string& level) {
  for (const char* l : kLevels) {
    if (level == l) return true;
  }
  return false;
}

void Init(const std::string& process_name, const std::string& level, bool honour_env) {
  std::string chosen = level;
  std::string env_warning;
  if (honour_env) {
    if (const char* env = std::getenv("SPDLOG_LEVEL"); env != nullptr && *env != '\0') {
      if (IsLevelName(env)) {
        chosen = env;
      } else {
        env_warning = std::string("SPDLOG_LEVEL=") + env +
                      " is not a level (trace, debug, info, warn, error, critical, off); using " +
                      level;
      }
    }
  }
  Sink() = std::make_shared<ConsoleSink>();
  auto logger = std::make_shared<spdlog::logger>(process_name, Sink());
  logger->set_pattern("[%H:%M:%S.%e] [%n] [%l] %v");
  logger->set_level(spdlog::level::from_str(chosen));
  spdlog::set_default_logger(logger);
  if (!env_warning.empty()) logger->warn("{}", env_warning);
}

void SetStatusLine(const std::string& line) {
  if (StatusLineShown()) Sink()->SetStatus(line);
}

bool StatusLineShown() {
  const auto& sink = Sink();
  return sink && sink->tty() && spdlog::default_logger_raw()->level() != spdlog::level::off;
}

}  // namespace dfx::log
