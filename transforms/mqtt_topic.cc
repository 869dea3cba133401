// MQTT topics of records (see mqtt_topic.h).
#include "transforms/mqtt_topic.h"

namespace ferry::transforms {

std::string_view mqttTopic(const Record& record) {
  const Header* h = record.headers.last("mqtt.topic");
  return h ? h->value.view() : std::string_view(record.topic);
}

std::vector<std::string_view> topicLevels(std::string_view topic) {
  std::vector<std::string_view> levels;
  for (std::size_t i = 0;;) {
    const std::size_t j = topic.find('/', i);
    levels.push_back(topic.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) return levels;
    i = j + 1;
  }
}

bool topicMatches(std::string_view filter, std::string_view topic) {
  std::size_t f = 0, t = 0;
  for (;;) {
    const std::size_t fe = filter.find('/', f), te = topic.find('/', t);
    const std::string_view fl = filter.substr(f, fe == std::string_view::npos ? std::string_view::npos : fe - f);
    const std::string_view tl = topic.substr(t, te == std::string_view::npos ? std::string_view::npos : te - t);
    if (fl == "#") return true;
    if (fl != "+" && fl != tl) return false;
    if (fe == std::string_view::npos || te == std::string_view::npos) {
      if (fe == std::string_view::npos && te == std::string_view::npos) return true;
      // "a/#" matches "a" too (MQTT: # includes the parent level).
      return te == std::string_view::npos && filter.substr(fe + 1) == "#";
    }
    f = fe + 1;
    t = te + 1;
  }
}

}  // namespace ferry::transforms
