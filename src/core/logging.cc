#include "core/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <mutex>
#include <set>

#include "core/json_bounds.h"

namespace ferry::core {
namespace {
std::mutex g_mu;
spdlog::sink_ptr g_sink;  // guarded by g_mu
spdlog::level::level_enum g_root = spdlog::level::info;  // guarded by g_mu
std::set<std::string> g_created;  // guarded by g_mu: names setLoggerLevel created

spdlog::sink_ptr sinkLocked() {
  if (!g_sink) g_sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  return g_sink;
}

std::shared_ptr<spdlog::logger> createLocked(const std::string& name) {
  auto l = std::make_shared<spdlog::logger>(name, sinkLocked());
  l->set_level(g_root);
  l->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v");
  l->flush_on(spdlog::level::warn);
  spdlog::register_logger(l);
  return l;
}
}  // namespace

void initLogging(const std::string& level, const std::string& file) {
  std::lock_guard lock(g_mu);
  g_sink = file.empty() ? spdlog::sink_ptr(std::make_shared<spdlog::sinks::stderr_sink_mt>())
                        : spdlog::sink_ptr(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file));
  g_root = spdlog::level::from_str(level);
  if (level == "off") g_root = spdlog::level::off;
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v");
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) {
    l->sinks().clear();
    l->sinks().push_back(g_sink);
    l->set_level(g_root);
  });
}

std::shared_ptr<spdlog::logger> logger(const std::string& name) {
  if (auto l = spdlog::get(name)) return l;
  std::lock_guard lock(g_mu);
  if (auto l = spdlog::get(name)) return l;
  return createLocked(name);
}

Status validateLoggerName(std::string_view name) {
  if (name.empty()) return Status::invalidArgument("a logger name must not be empty");
  if (name.size() > kMaxLoggerNameLength)
    return Status::invalidArgument("a logger name has at most " +
                                   std::to_string(kMaxLoggerNameLength) + " characters");
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '$';
    if (!ok)
      return Status::invalidArgument(
          "a logger name holds only letters, digits and . _ - $ (e.g. org.apache.kafka.connect)");
  }
  return Status::ok();
}

std::size_t createdLoggerCount() {
  std::lock_guard lock(g_mu);
  return g_created.size();
}

std::map<std::string, std::string> loggerLevels() {
  std::map<std::string, std::string> out;
  {
    std::lock_guard lock(g_mu);
    auto sv = spdlog::level::to_string_view(g_root);
    out["root"] = std::string(sv.data(), sv.size());
  }
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) {
    if (l->name().empty()) return;
    auto sv = spdlog::level::to_string_view(l->level());
    out[l->name()] = std::string(sv.data(), sv.size());
  });
  return out;
}

Result<std::vector<std::string>> setLoggerLevel(const std::string& name, const std::string& level) {
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  std::string lv = level;
  for (auto& c : lv) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lv == "warning") lv = "warn";
  if (lv == "fatal") lv = "critical";
  bool known = false;
  for (auto* k : kLevels) known |= (lv == k);
  if (!known)
    return Status::invalidArgument("unknown log level '" + jsonExcerpt(level, 0, 16) +
                                   "': use TRACE, DEBUG, INFO, WARN, ERROR, FATAL or OFF");
  auto lvl = spdlog::level::from_str(lv);
  std::vector<std::string> changed;
  if (name == "root") {
    {
      std::lock_guard lock(g_mu);
      g_root = lvl;
    }
    changed.push_back("root");
    spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) {
      if (l->name().empty()) return;
      l->set_level(lvl);
      changed.push_back(l->name());
    });
    return changed;
  }
  // The empty name is spdlog's default logger, not a name a caller may set.
  if (name.empty()) return validateLoggerName(name);
  std::shared_ptr<spdlog::logger> target = spdlog::get(name);
  if (!target) {
    FERRY_RETURN_IF_ERROR(validateLoggerName(name));
    std::lock_guard lock(g_mu);
    target = spdlog::get(name);
    if (!target) {
      if (g_created.size() >= kMaxCreatedLoggers)
        return Status::invalidArgument(
            "too many new logger names: at most " + std::to_string(kMaxCreatedLoggers) +
            " names that no logger had may be given a level; set an existing logger or root");
      target = createLocked(name);
      g_created.insert(name);
    }
  }
  target->set_level(lvl);
  changed.push_back(name);
  return changed;
}

}  // namespace ferry::core
