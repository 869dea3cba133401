// Arbitrary bytes as one connection's request stream, read with the server's limits (default and
// tiny): every request read must respect them, and every answer must serialise. The first byte
// picks the limits, so the fuzzer reaches the limit paths with short inputs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rest/http_server.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry::rest::http;
  if (size == 0) return 0;
  Limits limits;
  if (data[0] & 1) {
    limits.maxHeaderBytes = 256;
    limits.maxHeaderCount = 4;
    limits.maxTargetBytes = 32;
    limits.maxBodyBytes = 64;
  }
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  for (const auto& r : parseRequestStream(bytes, limits)) {
    if (r.errorStatus != 0) {
      if (r.errorStatus < 400 || r.errorStatus > 505 || r.errorMessage.empty()) std::abort();
      Response res;
      res.status = r.errorStatus;
      res.set_content(errorBody(r.errorStatus, r.errorMessage), "application/json");
      (void)serializeResponse(res, "GET", false, 11);
      continue;
    }
    const Request& q = r.request;
    if (q.body.size() > limits.maxBodyBytes) std::abort();
    if (q.headers.size() > limits.maxHeaderCount) std::abort();
    if (q.target.size() > limits.maxTargetBytes) std::abort();
    for (const auto& [name, value] : q.params) (void)q.get_param_value_count(name);
    Response res;
    res.status = 200;
    res.set_header("Location", q.target);  // a header built from request bytes
    res.set_content(q.body, q.get_header_value("Content-Type"));
    std::string out = serializeResponse(res, q.method, r.keepAlive, q.version);
    // No request byte may start a header line of its own in the answer.
    auto headEnd = out.find("\r\n\r\n");
    std::string_view head(out.data(), headEnd == std::string::npos ? out.size() : headEnd);
    std::size_t lines = 0;
    for (std::size_t i = head.find("\r\n"); i != std::string_view::npos; i = head.find("\r\n", i + 2))
      ++lines;
    if (lines > 4) std::abort();  // Location, Content-Type, Content-Length, Connection at most
  }
  (void)parseListener(bytes.substr(0, 64));
  return 0;
}
