// The web console served under /ui/ from files compiled into the binary (web/console, embedded
// by web/embed_assets.py), so a worker needs no loose files and no Node at run time. A folder
// named by web.root replaces them (development); see src/rest/README.md, "Web console".
#pragma once

#include <span>
#include <string_view>

#include "rest/http_server.h"

namespace ferry::rest {

struct ConsoleAsset {
  std::string_view path;         // below /ui/: "index.html", "assets/index-1a2b3c.js"
  std::string_view contentType;  // "text/javascript; charset=utf-8"
  std::string_view body;
  std::string_view gzip;  // the body gzipped, sent to clients that accept it
  bool immutable = false;  // a content-hashed name: cached for a year; others are revalidated
};

// Whether the request accepts gzip (Accept-Encoding names gzip or * without q=0).
bool acceptsGzip(std::string_view acceptEncoding);

// Answers a request whose path is /ui or below it from `assets` and returns true; returns false
// for any other path. GET and HEAD only (405 with Allow otherwise); /ui redirects to /ui/, /ui/
// is index.html; an unknown file is 404. With no assets, every /ui path is 404 naming
// `missingReason`. Each answer carries the console's security headers (a CSP that allows only
// the worker's own scripts and connections, no framing, nosniff, no referrer).
bool serveConsole(std::span<const ConsoleAsset> assets, std::string_view missingReason, const http::Request& req,
                  http::Response& res);

// The headers every console page is served with (also for web.root folders).
void addConsoleSecurityHeaders(http::Response& res);

}  // namespace ferry::rest
