#pragma once
// The MQTT topic of a record and its levels, shared by the rule language and the MQTT-aware
// transforms: the `mqtt.topic` header the MQTT connectors set (the topic as the device sent it),
// else the record's own topic.
#include <string_view>
#include <vector>

#include "ferry/record.h"

namespace ferry::transforms {

// A view into `record` (its header or its topic): valid while the record is unchanged.
std::string_view mqttTopic(const Record& record);
// "a/b/c" -> {"a", "b", "c"}; "" -> {""}; views into `topic`.
std::vector<std::string_view> topicLevels(std::string_view topic);
// An MQTT topic filter matches a topic exactly as a broker matches a subscription
// (core::mqttTopicMatches: + one level, # the rest and the parent level, no wildcard in the first level
// matches a topic starting with '$').
bool topicMatches(std::string_view filter, std::string_view topic);

}  // namespace ferry::transforms
