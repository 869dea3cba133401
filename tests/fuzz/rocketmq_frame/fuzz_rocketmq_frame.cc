// Fuzz target: the remoting frame decoder (both header encodings) must never crash, hang or
// over-read on any bytes from a socket, and whatever it accepts must re-encode (in the same header
// encoding) to a frame that decodes to the same command; the JSON header's fast decoding and plain
// encoding agree with the full ones.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rocketmq/remoting.h"

namespace {

bool sameCommand(const ferry::rocketmq::RemotingCommand& a,
                 const ferry::rocketmq::RemotingCommand& b) {
  return a.code == b.code && a.language == b.language && a.version == b.version &&
         a.opaque == b.opaque && a.flag == b.flag && a.remark == b.remark &&
         a.extFields == b.extFields && a.body == b.body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry::rocketmq;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // The JSON header's fast path agrees with the full parser wherever it decodes.
  {
    RemotingCommand fast, full;
    if (decodeJsonHeaderFast(in, fast)) {
      if (!decodeJsonHeaderFull(in, full).isOk() || !sameCommand(fast, full)) std::abort();
    }
  }
  FrameDecode d = decodeFrame(in);
  if (d.state != FrameDecode::State::kOk) {
    if (d.state == FrameDecode::State::kInvalid && d.error.empty()) std::abort();
    return 0;
  }
  if (d.consumed < 8 || d.consumed > in.size()) std::abort();
  std::string again = encodeFrame(d.command, d.type);
  FrameDecode d2 = decodeFrame(again);
  if (d2.state != FrameDecode::State::kOk || d2.consumed != again.size() || d2.type != d.type ||
      !sameCommand(d.command, d2.command)) {
    std::abort();
  }
  // The JSON header's plain (direct) encoding is byte for byte the full one wherever it applies.
  if (auto plain = encodeJsonHeaderPlain(d.command)) {
    if (*plain != encodeJsonHeaderFull(d.command)) std::abort();
  }
  // A second encoding of an already-normalised command is a fixed point.
  if (encodeFrame(d2.command, d2.type) != again) std::abort();
  return 0;
}
