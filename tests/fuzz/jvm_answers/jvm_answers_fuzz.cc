// What the JVM host sends comes from a process running third-party code: the worker must refuse
// what does not parse, never crash, read past the end or allocate for a count it was not sent.
// Invariants: a plugin scan that parsed, written again and parsed, is the same scan; a source batch
// that does not parse adds no record.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "jvm/java_plugins.h"
#include "jvm/java_records.h"
#include "jvm/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry::jvm;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto split = splitFrame(bytes); split.isOk()) (void)readFailure(split->second);
  {
    SchemasIn schemas;
    std::vector<ferry::Record> records;
    auto n = readSourceBatch(bytes, schemas, records);
    if (!n.isOk() && !records.empty()) std::abort();
    if (n.isOk() && *n != records.size()) std::abort();
  }
  {
    Reader r(bytes);
    (void)readSinkContextRequests(r);
  }
  (void)parseConfigDef(bytes);
  (void)parseValidation(bytes);
  if (auto scan = parsePluginScan(bytes); scan.isOk()) {
    Writer w(1, kPlugins | 0x80);
    w.i32(static_cast<std::int32_t>(scan->plugins.size()));
    for (const auto& p : scan->plugins) w.str(p.className).u8(p.source ? 1 : 2).u8(p.openMessaging ? 1 : 0).str(p.version).str(p.location);
    w.i32(static_cast<std::int32_t>(scan->problems.size()));
    for (const auto& [where, why] : scan->problems) w.str(where).str(why);
    const std::string frame = std::move(w).finish();
    auto again = parsePluginScan(std::string_view(frame).substr(9));
    if (!again.isOk() || again->plugins.size() != scan->plugins.size() || again->problems != scan->problems) std::abort();
    for (std::size_t i = 0; i < scan->plugins.size(); ++i)
      if (again->plugins[i].className != scan->plugins[i].className || again->plugins[i].location != scan->plugins[i].location ||
          again->plugins[i].openMessaging != scan->plugins[i].openMessaging)
        std::abort();
  }
  return 0;
}
