// Every REST body parser on the same bytes: they must return a value or an error, never crash,
// throw, or recurse without bound. A parsed value is also rendered back, as the server would.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rest/json_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  using namespace ferry::rest;
  if (auto j = parseJson(body); j.isOk()) (void)dumpJson(*j);
  if (auto c = parseCreateConnector(body); c.isOk()) {
    ferry::control::ConnectorInfo info{
        c->name, c->config, {0}, ferry::control::ConnectorType::kSource};
    (void)dumpJson(connectorInfoJson(info));
  }
  if (auto m = parseConfigMap(body); m.isOk()) (void)dumpJson(Json(*m));
  (void)parsePatch(body);
  if (auto o = parseOffsets(body); o.isOk()) (void)dumpJson(positionsJson(*o));
  (void)parseLoggerLevel(body);
  (void)validateConnectorName(body);
  (void)parseInitialState(body);
  return 0;
}
