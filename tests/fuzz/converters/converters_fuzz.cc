// Every converter on the same bytes, both ways (record data -> backbone bytes and back): each
// returns bytes or an error, never a crash, a throw or a recursion without bound. Invariants:
//   - identities (ByteArray, String, SimpleHeader, JsonConverter without schemas) give the input
//     back when they accept it; JsonConverter without schemas accepts the same bytes both ways;
//   - JsonConverter with schemas: what fromRecord wraps, toRecord unwraps to the same document
//     (JSON null becomes a tombstone, as Kafka's does); an envelope with a schema that reads is
//     written back and reads again to an equal schema and data;
//   - numeric converters: text -> bytes -> text -> bytes gives the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "transforms/converters.h"
#include "transforms/json_util.h"

namespace {

using namespace ferry;
using namespace ferry::transforms;

template <class C>
std::unique_ptr<C> make(const StringMap& config = {}) {
  auto c = std::make_unique<C>();
  if (!c->configure(config, /*isKey=*/false).isOk()) std::abort();
  return c;
}

void identity(Converter& c, const Bytes& in) {
  if (auto out = c.fromRecord("t", in); out.isOk() && out->view() != in.view()) std::abort();
  if (auto out = c.toRecord("t", in); out.isOk() && out->view() != in.view()) std::abort();
}

void number(Converter& c, const Bytes& in) {
  (void)c.toRecord("t", in);
  auto bytes = c.fromRecord("t", in);
  if (!bytes.isOk()) return;
  auto text = c.toRecord("t", *bytes);
  if (!text.isOk()) std::abort();
  auto again = c.fromRecord("t", *text);
  if (!again.isOk() || again->view() != bytes->view()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Bytes in(std::string(reinterpret_cast<const char*>(data), size));

  static auto byteArray = make<ByteArrayConverter>();
  static auto string = make<StringConverter>();
  static auto header = make<SimpleHeaderConverter>();
  static auto plainJson = make<JsonConverter>({{"schemas.enable", "false"}});
  static auto schemaJson = make<JsonConverter>({{"schemas.enable", "true"}});
  identity(*byteArray, in);
  identity(*string, in);
  identity(*header, in);
  identity(*plainJson, in);
  if (plainJson->fromRecord("t", in).isOk() != plainJson->toRecord("t", in).isOk()) std::abort();

  // An envelope with a schema that reads is written back and reads again to the same schema and
  // data (the writer accepts whatever the reader accepted).
  if (auto read = schemaJson->toRecordWithSchema("t", in); read.isOk() && read->schema) {
    auto written = schemaJson->fromRecordWithSchema("t", read->schema, read->data);
    if (!written.isOk()) std::abort();
    auto again = schemaJson->toRecordWithSchema("t", *written);
    if (!again.isOk() || !again->schema || !(*again->schema == *read->schema)) std::abort();
    if (again->data.isNull() != read->data.isNull()) std::abort();
    if (!read->data.isNull()) {
      auto a = parseJson(read->data.view());
      auto b = parseJson(again->data.view());
      if (!a || !b || !(*a == *b || *a != *a)) std::abort();
    }
  }
  if (auto wrapped = schemaJson->fromRecord("t", in); wrapped.isOk()) {
    auto unwrapped = schemaJson->toRecord("t", *wrapped);
    if (!unwrapped.isOk()) std::abort();
    auto a = parseJson(in.view());
    if (unwrapped->isNull()) {  // a null payload is a tombstone, as in Kafka's JsonConverter
      if (!a || !a->is_null()) std::abort();
    } else {
      auto b = parseJson(unwrapped->view());
      if (!a || !b || !(*a == *b || *a != *a)) std::abort();  // NaN never equals itself
    }
  }

  static auto shorts = make<ShortConverter>();
  static auto ints = make<IntegerConverter>();
  static auto longs = make<LongConverter>();
  static auto floats = make<FloatConverter>();
  static auto doubles = make<DoubleConverter>();
  static auto bools = make<BooleanConverter>();
  for (Converter* c : {static_cast<Converter*>(shorts.get()), static_cast<Converter*>(ints.get()),
                       static_cast<Converter*>(longs.get()), static_cast<Converter*>(floats.get()),
                       static_cast<Converter*>(doubles.get()), static_cast<Converter*>(bools.get())})
    number(*c, in);
  return 0;
}
