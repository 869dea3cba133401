// Fuzz target: MQTT framing and packet decoding (both versions), the lenient reading of a
// PUBLISH decode() refuses, topic validation and matching. Whatever decodes must encode again and
// decode to the same packet; what the lenient reading takes must be a PUBLISH with a packet id
// when its QoS is above 0.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "mqtt/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry::mqtt;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const Frame f = frame(in, 1 << 20);
  if (f.state == Frame::State::kOk) {
    for (Version v : {Version::k311, Version::k5}) {
      auto p = decode(in.substr(0, f.size), v);
      if (!p.isOk()) {
        auto loose = decodeUnvalidatedPublish(in.substr(0, f.size), v);
        if (loose.isOk() && (loose->type != PacketType::kPublish || (loose->qos > 0 && loose->packetId == 0)))
          std::abort();
        continue;
      }
      auto again = encode(*p, v);
      if (!again.isOk()) continue;  // e.g. a v5 property set the codec refuses to write back
      auto q = decode(*again, v);
      if (!q.isOk() || !(*q == *p)) std::abort();
    }
  }
  // Topic functions on the raw bytes split in two.
  const std::size_t mid = size / 2;
  (void)validateTopicName(in.substr(0, mid));
  (void)validateTopicFilter(in.substr(mid));
  (void)parseShared(in);
  (void)topicMatches(in.substr(0, mid), in.substr(mid));
  return 0;
}
