// Helpers for the transform tests: create plugins through the built-in descriptor by class name
// or alias (as the runtime does), build records, compare JSON.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "ferry/transform.h"
#include "transforms/builtins.h"

namespace ferry::transforms::testing {

inline const PluginEntry* findEntry(const std::string& name) {
  const PluginDescriptor& d = builtinPlugins();
  for (std::size_t i = 0; i < d.entryCount; ++i) {
    const PluginEntry& e = d.entries[i];
    if (name == e.className) return &e;
    for (const char* const* a = e.aliases; a && *a; ++a)
      if (name == *a) return &e;
  }
  return nullptr;
}

template <typename Base>
using Owned = std::unique_ptr<Base, std::function<void(Base*)>>;

template <typename Base>
Owned<Base> create(const std::string& name) {
  const PluginEntry* e = findEntry(name);
  if (e == nullptr) return Owned<Base>(nullptr, [](Base*) {});
  auto destroy = e->destroy;
  return Owned<Base>(static_cast<Base*>(e->create()), [destroy](Base* p) { destroy(p); });
}

// A transform of class `name` configured with `config` (the test fails if that fails).
inline Owned<Transform> transform(const std::string& name, const StringMap& config) {
  auto t = create<Transform>(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return t;
  Status s = t->configure(config);
  EXPECT_TRUE(s.isOk()) << name << ": " << s.toString();
  return t;
}

inline Record record(const std::string& topic, std::optional<std::string> value,
                     std::optional<std::string> key = std::nullopt) {
  Record r;
  r.topic = topic;
  if (value) r.value = Bytes(*value);
  if (key) r.key = Bytes(*key);
  return r;
}

inline nlohmann::json json(const Bytes& b) { return nlohmann::json::parse(b.view()); }

// A schema the test needs (the test fails if it does not build).
inline SchemaPtr built(const SchemaBuilder& b) {
  auto r = b.build();
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? *r : nullptr;
}

}  // namespace ferry::transforms::testing
