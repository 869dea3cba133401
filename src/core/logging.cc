#include "core/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <mutex>

namespace ferry::core {
namespace {
std::mutex g_mu;
spdlog::sink_ptr g_sink;  // guarded by g_mu
spdlog::level::level_enum g_root = spdlog::level::info;  // guarded by g_mu

spdlog::sink_ptr sinkLocked() {
  if (!g_sink) g_sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  return g_sink;
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
  auto l = std::make_shared<spdlog::logger>(name, sinkLocked());
  l->set_level(g_root);
  l->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v");
  l->flush_on(spdlog::level::warn);
  spdlog::register_logger(l);
  return l;
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

std::optional<std::vector<std::string>> setLoggerLevel(const std::string& name, const std::string& level) {
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  std::string lv = level;
  for (auto& c : lv) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lv == "warning") lv = "warn";
  if (lv == "fatal") lv = "critical";
  bool known = false;
  for (auto* k : kLevels) known |= (lv == k);
  if (!known) return std::nullopt;
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
  logger(name)->set_level(lvl);
  changed.push_back(name);
  return changed;
}

}  // namespace ferry::core
