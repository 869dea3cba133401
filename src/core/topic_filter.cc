// MQTT topic filter matching (see topic_filter.h).
#include "core/topic_filter.h"

namespace ferry::core {

bool mqttTopicMatches(std::string_view filter, std::string_view topic) {
  if (filter.substr(0, 7) == "$share/") {
    const std::size_t slash = filter.find('/', 7);
    if (slash == std::string_view::npos) return false;
    filter = filter.substr(slash + 1);
  }
  if (!topic.empty() && topic[0] == '$' && !filter.empty() && (filter[0] == '+' || filter[0] == '#'))
    return false;
  std::size_t fi = 0, ti = 0;
  while (true) {
    const std::size_t fs = filter.find('/', fi);
    const std::string_view fl = filter.substr(fi, fs == std::string_view::npos ? std::string_view::npos : fs - fi);
    if (fl == "#") return true;  // matches the parent level and everything below
    if (ti > topic.size()) return false;
    const std::size_t ts = topic.find('/', ti);
    const std::string_view tl = topic.substr(ti, ts == std::string_view::npos ? std::string_view::npos : ts - ti);
    if (fl != "+" && fl != tl) return false;
    const bool fEnd = fs == std::string_view::npos, tEnd = ts == std::string_view::npos;
    if (fEnd && tEnd) return true;
    if (fEnd) return false;
    if (tEnd) {
      // "a/#" matches "a": only a remaining "#" level can match nothing.
      return filter.substr(fs + 1) == "#";
    }
    fi = fs + 1;
    ti = ts + 1;
  }
}

}  // namespace ferry::core
