// Outside bytes the console's routes read: an Accept-Encoding header (acceptsGzip), a request
// path under /ui (serveConsole) and a POST /connectors/{name}/tap body (parseTapOptions). The input
// is split at the first two NUL bytes into those three parts. Invariants: nothing crashes; a path
// is served only when it names one of the files exactly, any other path under /ui is a 404 whose
// message holds no control byte and stays short; accepted tap options are within their bounds.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rest/console.h"
#include "rest/json_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  using namespace ferry::rest;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto cut = [&](std::string_view& rest) {
    auto nul = rest.find('\0');
    std::string_view head = rest.substr(0, nul);
    rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
    return head;
  };
  std::string_view encoding = cut(in);
  std::string_view path = cut(in);
  std::string_view body = in;

  const bool gzip = acceptsGzip(encoding);
  static const std::array<ConsoleAsset, 2> assets = {{
      {"index.html", "text/html; charset=utf-8", "<html></html>", "GZ", false},
      {"assets/a.js", "text/javascript; charset=utf-8", "js", "GZ-JS", true},
  }};
  http::Request req;
  req.method = "GET";
  req.path = "/ui/" + std::string(path);
  req.target = req.path;
  req.headers.emplace("Accept-Encoding", std::string(encoding));
  http::Response res;
  if (!serveConsole(assets, "", req, res)) std::abort();  // every /ui/ path is the console's
  const bool known = path.empty() || path == "index.html" || path == "assets/a.js";
  if (known != (res.status == 200)) std::abort();
  if (res.status == 200) {
    if (gzip != (res.get_header_value("Content-Encoding") == "gzip")) std::abort();
  } else {
    // At most 200 characters of the path are echoed, each at most 2 once escaped in JSON.
    if (res.status != 404 || res.body.size() > 600) std::abort();
    for (unsigned char c : res.body)
      if (c < 0x20) std::abort();
  }

  auto options = parseTapOptions(body);
  if (options.isOk()) {
    if (!(options->capacity >= 1 && options->capacity <= runtime::kMaxTapCapacity)) std::abort();
    if (!(options->idleMs >= 1000 && options->idleMs <= 300000)) std::abort();
  }
  return 0;
}
