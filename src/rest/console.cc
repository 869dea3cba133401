// Serving the embedded web console (console.h).
#include "rest/console.h"

#include <string>

#include <nlohmann/json.hpp>

namespace ferry::rest {
namespace {

void sendError(http::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"error_code", status}, {"message", message}}.dump(), "application/json");
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

bool acceptsGzip(std::string_view header) {
  // "gzip", "gzip;q=0.5", "br, gzip", "*"; "gzip;q=0" refuses it.
  bool star = false, gzip = false, gzipRefused = false, starRefused = false;
  while (!header.empty()) {
    std::size_t comma = header.find(',');
    std::string_view item = trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    std::string_view coding = trim(item.substr(0, item.find(';')));
    bool zero = false;
    if (auto semi = item.find(';'); semi != std::string_view::npos) {
      std::string_view param = trim(item.substr(semi + 1));
      if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
        std::string_view q = trim(param.substr(2));
        zero = !q.empty() && q.find_first_not_of("0.") == std::string_view::npos;
      }
    }
    if (iequals(coding, "gzip") || iequals(coding, "x-gzip")) (zero ? gzipRefused : gzip) = true;
    if (coding == "*") (zero ? starRefused : star) = true;
  }
  if (gzipRefused) return false;
  return gzip || (star && !starRefused);
}

void addConsoleSecurityHeaders(http::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                 "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
}

bool serveConsole(std::span<const ConsoleAsset> assets, std::string_view missingReason, const http::Request& req,
                  http::Response& res) {
  constexpr std::string_view kPrefix = "/ui";
  std::string_view path = req.path;
  if (path.substr(0, kPrefix.size()) != kPrefix) return false;
  std::string_view below = path.substr(kPrefix.size());
  if (!below.empty() && below.front() != '/') return false;  // "/uix" is not the console
  if (req.method != "GET" && req.method != "HEAD") {
    res.set_header("Allow", "GET, HEAD");
    if (req.method == "OPTIONS") {
      res.status = 204;
      return true;
    }
    sendError(res, 405, "method " + req.method + " is not allowed on /ui/; use GET, HEAD");
    return true;
  }
  if (assets.empty()) {
    sendError(res, 404, "the web console is not included in this build: " + std::string(missingReason));
    return true;
  }
  if (below.empty()) {
    res.set_redirect("/ui/");
    return true;
  }
  std::string_view name = below.substr(1);
  if (name.empty()) name = "index.html";
  const ConsoleAsset* found = nullptr;
  for (const auto& a : assets)
    if (a.path == name) found = &a;
  if (found == nullptr) {
    // Only the printable start of what was asked is echoed.
    std::string shown;
    for (char c : path.substr(0, 200)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
    sendError(res, 404, "no such file: " + shown);
    return true;
  }
  addConsoleSecurityHeaders(res);
  res.set_header("Cache-Control", found->immutable ? "public, max-age=31536000, immutable" : "no-cache");
  res.set_header("Vary", "Accept-Encoding");
  res.status = 200;
  if (!found->gzip.empty() && acceptsGzip(req.get_header_value("Accept-Encoding"))) {
    res.set_header("Content-Encoding", "gzip");
    res.set_content(std::string(found->gzip), std::string(found->contentType));
  } else {
    res.set_content(std::string(found->body), std::string(found->contentType));
  }
  return true;
}

}  // namespace ferry::rest
