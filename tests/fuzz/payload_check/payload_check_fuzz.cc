// checkPayloadText's fast path (flatStructMatches) against the full check, on any bytes: the first
// byte picks a schema, the rest is the payload text. Invariant: where the fast path says yes, the
// full check reads JSON, says OK and has no defaults to apply; checkPayloadText answers exactly as
// the full check does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/schema.h"
#include "transforms/connect_json.h"

namespace {

using namespace ferry;
using namespace ferry::transforms;

SchemaPtr built(const SchemaBuilder& b) {
  auto s = b.build();
  if (!s.isOk()) std::abort();
  return *s;
}

const std::vector<SchemaPtr>& schemas() {
  static const std::vector<SchemaPtr> all = {
      built(SchemaBuilder::structure()
                .field("id", built(SchemaBuilder::int64()))
                .field("ts", built(logical::timestamp()))
                .field("qty", built(SchemaBuilder::int32()))
                .field("note", built(SchemaBuilder::string()))),
      built(SchemaBuilder::structure()
                .field("a", built(SchemaBuilder::int8().optional()))
                .field("b", built(SchemaBuilder::int16()))
                .field("c", built(SchemaBuilder::float32().optional()))
                .field("d", built(SchemaBuilder::boolean().optional()))
                .field("e", built(SchemaBuilder::string().optional().defaultJson("\"x\"")))
                .field("f", built(SchemaBuilder::float64()))),
      built(SchemaBuilder::structure()),
      built(SchemaBuilder::structure()
                .field("n", built(SchemaBuilder::structure().field("x", built(SchemaBuilder::int32())).optional()))
                .field("raw", built(SchemaBuilder::bytes().optional()))
                .field("ü", built(SchemaBuilder::int32().optional()))),
      built(SchemaBuilder::int64()),
  };
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto& all = schemas();
  const Schema& s = *all[data[0] % all.size()];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  bool defaults = false;
  bool json = false;
  const Status full = checkPayloadTextInFull(s, text, defaults, json);
  if (flatStructMatches(s, text) && !(full.isOk() && json && !defaults)) std::abort();
  bool defaults2 = false;
  bool json2 = false;
  const Status both = checkPayloadText(s, text, defaults2, json2);
  if (both.toString() != full.toString() || defaults2 != defaults || json2 != json) std::abort();
  return 0;
}
