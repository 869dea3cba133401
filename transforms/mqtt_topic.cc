// MQTT topics of records (see mqtt_topic.h).
#include "transforms/mqtt_topic.h"

#include "core/topic_filter.h"

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
  return core::mqttTopicMatches(filter, topic);
}

}  // namespace ferry::transforms
