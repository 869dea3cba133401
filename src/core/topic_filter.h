// MQTT topic filter matching (MQTT 3.1.1/5 §4.7), the one implementation shared by the MQTT
// codec (subscriptions), the MQTT bridge and the transforms (rule FROM clauses): pure logic, below
// every layer that needs it.
//
// Thread-safety: a free function.
#pragma once

#include <string_view>

namespace ferry::core {

// True when `topic` matches `filter`: `+` one whole level, `#` the rest and the parent level
// ("a/#" matches "a"), a `$share/<group>/` prefix ignored; a wildcard in the first level never
// matches a topic starting with `$` (§4.7.2).
bool mqttTopicMatches(std::string_view filter, std::string_view topic);

}  // namespace ferry::core
