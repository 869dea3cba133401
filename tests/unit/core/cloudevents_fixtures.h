// Shared by the CloudEvents tests (tests/unit/core/cloudevents_test.cc, the codec;
// tests/unit/transforms/cloudevents_test.cc, the converter and the transform): small helpers and
// the JSON format spec's example event.
#pragma once

#include <string>

#include "ferry/record.h"

namespace ferry::cloudevents_testing {

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline std::string headerOf(const Headers& h, const std::string& key) {
  const Header* x = h.last(key);
  return x == nullptr ? std::string("<none>") : x->value.str();
}

// The JSON format spec's example (CloudEvents 1.0, json-format.md), with an extension.
inline constexpr const char* kSpecExample = R"({
    "specversion" : "1.0",
    "type" : "com.example.someevent",
    "source" : "/mycontext",
    "subject": null,
    "id" : "C234-1234-1234",
    "time" : "2018-04-05T17:31:00Z",
    "comexampleextension1" : "value",
    "comexampleothervalue" : 5,
    "datacontenttype" : "application/json",
    "data" : {
        "appinfoA" : "abc",
        "appinfoB" : 123,
        "appinfoC" : true
    }
})";

}  // namespace ferry::cloudevents_testing
