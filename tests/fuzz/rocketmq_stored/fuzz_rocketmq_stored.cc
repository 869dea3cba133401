// Fuzz target: the decoders of broker-written message bytes (pull bodies, batch bodies, property
// strings) must never crash, hang or over-read, and what they accept must survive a re-encode.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rocketmq/remoting.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry::rocketmq;
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  StoredDecode s = decodeStoredMessages(in);
  if (!s.complete && s.error.empty()) std::abort();
  for (const StoredMessage& m : s.messages) {
    if (m.offsetMsgId.size() != 32 && m.offsetMsgId.size() != 56) std::abort();
    if (m.sysFlag & 0x1) std::abort();  // bodies come out decompressed
  }

  auto batch = decodeBatchBody(in);
  if (batch.isOk()) {
    auto again = decodeBatchBody(encodeBatchBody(*batch));
    if (!again.isOk() || again->size() != batch->size()) std::abort();
    for (std::size_t i = 0; i < batch->size(); ++i) {
      const auto& a = (*batch)[i];
      const auto& b = (*again)[i];
      if (a.flag != b.flag || a.body != b.body || a.properties != b.properties) std::abort();
    }
  }

  auto props = decodeProperties(in);
  if (decodeProperties(encodeProperties(props)) != props) std::abort();
  return 0;
}
