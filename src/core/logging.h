// Logging: spdlog loggers named by area ("worker", "task", "rest", "backbone", connector names),
// with levels changeable at run time (REST /admin/loggers).
//
// Loggers live for the whole process (spdlog's registry). The code creates a fixed set of them;
// a level set for a name no code uses yet (Kafka Connect accepts any namespace) creates one too,
// so those names are validated and bounded: at most kMaxCreatedLoggers of them per process.
//
// Thread-safety: all functions are thread-safe.
#pragma once

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry::core {

// Names setLoggerLevel may create: 1..kMaxLoggerNameLength characters out of letters, digits and
// . _ - $ (Java class and package names, ferry's areas and connector names of that shape).
inline constexpr std::size_t kMaxLoggerNameLength = 255;
// How many loggers setLoggerLevel may create (names no code had created before).
inline constexpr std::size_t kMaxCreatedLoggers = 256;

// Sets up the default sink (stderr, or a file when `file` is non-empty) and the root level.
void initLogging(const std::string& level, const std::string& file = "");
// The logger for `name`, created on first use with the root level.
std::shared_ptr<spdlog::logger> logger(const std::string& name);
// name -> level ("info", "debug", ...) for every logger, plus "root".
std::map<std::string, std::string> loggerLevels();
// Sets `name`'s level ("root" sets every logger); `level` is one of trace, debug, info, warn
// (warning), error, critical (fatal), off, in any case. Returns the names changed. A name no
// logger has yet creates one, when the name is valid (InvalidArgument otherwise) and fewer than
// kMaxCreatedLoggers were created this way (InvalidArgument once that many were). Errors:
// InvalidArgument for an unknown level as well; nothing changes on an error.
Result<std::vector<std::string>> setLoggerLevel(const std::string& name, const std::string& level);
// OK when `name` may become a new logger's name (see kMaxLoggerNameLength).
Status validateLoggerName(std::string_view name);
// How many loggers setLoggerLevel created so far.
std::size_t createdLoggerCount();

}  // namespace ferry::core
