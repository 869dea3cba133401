// Fuzz target: the embedded log's segment decoder must never crash, hang or over-read on any
// bytes (a torn or damaged segment file), and whatever it accepts must re-encode identically.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "backbone/embedded/segment_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry::backbone::segment;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  ScanResult s = scan(in);
  if (s.validBytes > in.size()) std::abort();
  std::size_t pos = 0;
  for (std::size_t i = 0; i < s.records; ++i) {
    Decoded d = decodeOne(in.substr(pos));
    if (d.state != DecodeState::kOk) std::abort();
    std::string again;
    encode(d.message, d.message.offset, again);
    if (again != in.substr(pos, d.consumed)) std::abort();
    pos += d.consumed;
  }
  if (pos != s.validBytes) std::abort();
  return 0;
}
