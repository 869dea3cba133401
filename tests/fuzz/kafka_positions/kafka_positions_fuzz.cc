// Kafka source positions come back from position stores and REST offset changes: any text in
// kafka.topic / kafka.partition / kafka.offset. Reading them (kafkaPositionOf, SafeOffsets) must
// never throw or crash. Invariants: a position is read only when both numbers are whole decimal
// integers in range, and reading the text of a read position gives the same position.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/kafka/kafka_positions.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  using namespace ferry::connectors;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // topic \0 partition \0 offset
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t i = 0; i <= bytes.size() && parts.size() < 3; ++i)
    if (i == bytes.size() || bytes[i] == '\0') {
      parts.emplace_back(bytes.substr(from, i - from));
      from = i + 1;
    }
  while (parts.size() < 3) parts.emplace_back();
  Record r;
  r.position.partition = {{"kafka.topic", parts[0]}, {"kafka.partition", parts[1]}};
  r.position.offset = {{"kafka.offset", parts[2]}};
  auto pos = kafkaPositionOf(r.position);
  if (pos) {
    if (pos->topic != parts[0] || pos->partition < 0 || pos->nextOffset < 0) std::abort();
    if (std::to_string(pos->partition) != parts[1] && parseKafkaNumber(parts[1]) != pos->partition)
      std::abort();
    Record back;
    back.position.partition = {{"kafka.topic", pos->topic},
                               {"kafka.partition", std::to_string(pos->partition)}};
    back.position.offset = {{"kafka.offset", std::to_string(pos->nextOffset)}};
    auto again = kafkaPositionOf(back.position);
    if (!again || again->topic != pos->topic || again->partition != pos->partition ||
        again->nextOffset != pos->nextOffset)
      std::abort();
  }
  SafeOffsets offsets;
  offsets.markSafe(r);  // must not throw on any text
  return 0;
}
