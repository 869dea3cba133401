// The embedded web console's serving (src/rest/console.h): only its own files, GET/HEAD only, gzip
// negotiation, caching, security headers, and hostile paths refused without echoing them raw.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>

#include "rest/console.h"

namespace ferry::rest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::array<ConsoleAsset, 2> kAssets = {{
    {"index.html", "text/html; charset=utf-8", "<html>console</html>", "GZ-INDEX", false},
    {"assets/app-1a2b.js", "text/javascript; charset=utf-8", "console.log(1)", "GZ-JS", true},
}};

http::Request request(std::string method, std::string path, std::string acceptEncoding = "") {
  http::Request r;
  r.method = std::move(method);
  r.path = path;
  r.target = path;
  if (!acceptEncoding.empty()) r.headers.emplace("Accept-Encoding", acceptEncoding);
  return r;
}

http::Response serve(const http::Request& r, bool* handled = nullptr) {
  http::Response res;
  bool h = serveConsole(kAssets, "", r, res);
  if (handled) *handled = h;
  return res;
}

TEST(ConsoleTest, ServesItsFilesWithTypesCachingAndSecurityHeaders) {
  auto index = serve(request("GET", "/ui/"));
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.body, "<html>console</html>");
  EXPECT_EQ(index.get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(index.get_header_value("Cache-Control"), "no-cache");
  EXPECT_THAT(index.get_header_value("Content-Security-Policy"), HasSubstr("script-src 'self'"));
  EXPECT_THAT(index.get_header_value("Content-Security-Policy"), HasSubstr("frame-ancestors 'none'"));
  EXPECT_EQ(index.get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(serve(request("GET", "/ui/index.html")).body, "<html>console</html>");
  auto js = serve(request("HEAD", "/ui/assets/app-1a2b.js"));
  EXPECT_EQ(js.status, 200);
  EXPECT_THAT(js.get_header_value("Cache-Control"), HasSubstr("immutable"));
  auto redirect = serve(request("GET", "/ui"));
  EXPECT_EQ(redirect.status, 302);
  EXPECT_EQ(redirect.get_header_value("Location"), "/ui/");
}

TEST(ConsoleTest, GzipOnlyToClientsThatAcceptIt) {
  EXPECT_EQ(serve(request("GET", "/ui/", "gzip, deflate, br")).body, "GZ-INDEX");
  EXPECT_EQ(serve(request("GET", "/ui/", "gzip, deflate, br")).get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(serve(request("GET", "/ui/", "br")).body, "<html>console</html>");
  EXPECT_EQ(serve(request("GET", "/ui/", "br")).get_header_value("Content-Encoding"), "");
  EXPECT_EQ(serve(request("GET", "/ui/")).body, "<html>console</html>");
  EXPECT_TRUE(acceptsGzip("GZIP;q=0.5"));
  EXPECT_TRUE(acceptsGzip("*"));
  EXPECT_TRUE(acceptsGzip("x-gzip"));
  EXPECT_FALSE(acceptsGzip("gzip;q=0"));
  EXPECT_FALSE(acceptsGzip("gzip;q=0.000, *"));
  EXPECT_FALSE(acceptsGzip("*;q=0"));
  EXPECT_FALSE(acceptsGzip("gzipx, identity"));
  EXPECT_FALSE(acceptsGzip(""));
  EXPECT_FALSE(acceptsGzip(",,;;q=,"));
}

TEST(ConsoleTest, OnlyItsOwnPathsAndMethods) {
  bool handled = true;
  serve(request("GET", "/uix/index.html"), &handled);
  EXPECT_FALSE(handled);  // not the console: the routes answer it
  serve(request("GET", "/connectors"), &handled);
  EXPECT_FALSE(handled);
  for (const char* path : {"/ui/../../etc/passwd", "/ui/%2e%2e/etc/passwd", "/ui/assets/", "/ui//index.html",
                           "/ui/index.html%00", "/ui/INDEX.HTML", "/ui/assets/app-1a2b.js/x"}) {
    auto res = serve(request("GET", path), &handled);
    EXPECT_TRUE(handled) << path;
    EXPECT_EQ(res.status, 404) << path;
    EXPECT_THAT(res.body, HasSubstr("no such file")) << path;
  }
  // A hostile path is not echoed raw (control bytes become '?', at most 200 characters).
  auto res = serve(request("GET", "/ui/\x1b[31m" + std::string(5000, 'a')));
  EXPECT_EQ(res.status, 404);
  EXPECT_THAT(res.body, Not(HasSubstr("\x1b")));
  EXPECT_LT(res.body.size(), 400u);
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH"}) {
    auto r = serve(request(method, "/ui/"));
    EXPECT_EQ(r.status, 405) << method;
    EXPECT_EQ(r.get_header_value("Allow"), "GET, HEAD");
  }
  EXPECT_EQ(serve(request("OPTIONS", "/ui/")).status, 204);
}

TEST(ConsoleTest, ABuildWithoutTheConsoleSaysWhy) {
  http::Response res;
  EXPECT_TRUE(serveConsole({}, "Node.js and npm were not found", request("GET", "/ui/"), res));
  EXPECT_EQ(res.status, 404);
  EXPECT_THAT(res.body, HasSubstr("not included in this build: Node.js and npm were not found"));
}

}  // namespace
}  // namespace ferry::rest
