#include "rest/prometheus.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

namespace ferry::rest {
namespace {

std::string escapeHelp(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string escapeLabelValue(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string sanitizeMetricName(std::string_view name, bool labelName) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (!labelName && c == ':') || (i > 0 && c >= '0' && c <= '9');
    out += ok ? c : '_';
  }
  if (out.empty()) out = "_";
  return out;
}

std::string formatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // Integral values (counters, bytes) print without an exponent while exactly representable.
  if (value == std::floor(value) && std::fabs(value) < 9.007199254740992e15)
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else
    std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

std::string renderPrometheus(const std::vector<control::MetricSample>& samples) {
  // Families must be contiguous in the exposition, so group first (keeping first-seen order).
  std::vector<std::string> order;
  std::map<std::string, std::vector<const control::MetricSample*>> families;
  // A histogram's samples (name_bucket, name_sum, name_count) form the family `name`.
  auto familyOf = [](const control::MetricSample& s) {
    if (s.type != "histogram") return s.name;
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (s.name.size() > suffix.size() && s.name.ends_with(suffix)) return s.name.substr(0, s.name.size() - suffix.size());
    }
    return s.name;
  };
  for (const auto& s : samples) {
    std::string name = sanitizeMetricName(familyOf(s));
    auto [it, inserted] = families.try_emplace(name);
    if (inserted) order.push_back(name);
    it->second.push_back(&s);
  }
  std::string out;
  for (const auto& name : order) {
    const auto& family = families[name];
    std::string help, type;
    for (const auto* s : family) {
      if (help.empty()) help = s->help;
      if (type.empty()) type = s->type;
    }
    if (type != "counter" && type != "gauge" && type != "histogram") type = "untyped";
    out += "# HELP " + name + " " + escapeHelp(help.empty() ? name : help) + "\n";
    out += "# TYPE " + name + " " + type + "\n";
    for (const auto* s : family) {
      out += s->type == "histogram" ? sanitizeMetricName(s->name) : name;
      if (!s->labels.empty()) {
        out += '{';
        bool first = true;
        for (const auto& [k, v] : s->labels) {
          if (!first) out += ',';
          first = false;
          out += sanitizeMetricName(k, /*labelName=*/true) + "=\"" + escapeLabelValue(v) + "\"";
        }
        out += '}';
      }
      out += ' ' + formatMetricValue(s->value) + '\n';
    }
  }
  return out;
}

std::vector<control::MetricSample> processMetrics() {
  std::vector<control::MetricSample> out;
  out.push_back({"ferry_up", {}, 1, "1 while the worker process serves", "gauge"});
  // statm: size resident shared text lib data dt, in pages.
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  if (statm >> size >> resident) {
    double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    out.push_back({"process_resident_memory_bytes",
                   {},
                   static_cast<double>(resident) * page,
                   "Resident memory size in bytes.",
                   "gauge"});
    out.push_back({"process_virtual_memory_bytes",
                   {},
                   static_cast<double>(size) * page,
                   "Virtual memory size in bytes.",
                   "gauge"});
  }
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    out.push_back({"process_cpu_seconds_total",
                   {},
                   cpu,
                   "Total user and system CPU time spent in seconds.",
                   "counter"});
  }
  return out;
}

}  // namespace ferry::rest
