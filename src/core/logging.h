// Logging: spdlog loggers named by area ("worker", "task", "rest", "backbone", connector names),
// with levels changeable at run time (REST /admin/loggers).
//
// Thread-safety: all functions are thread-safe.
#pragma once

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace ferry::core {

// Sets up the default sink (stderr, or a file when `file` is non-empty) and the root level.
void initLogging(const std::string& level, const std::string& file = "");
// The logger for `name`, created on first use with the root level.
std::shared_ptr<spdlog::logger> logger(const std::string& name);
// name -> level ("info", "debug", ...) for every logger, plus "root".
std::map<std::string, std::string> loggerLevels();
// Sets `name`'s level ("root" sets every logger). Returns the names changed; nullopt when the
// level is not one of trace, debug, info, warn, error, critical, off.
std::optional<std::vector<std::string>> setLoggerLevel(const std::string& name, const std::string& level);

}  // namespace ferry::core
