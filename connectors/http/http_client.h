// What HttpSink and HttpSource's polling mode share about talking to an HTTP server with libcurl:
// the client keys (timeouts, TLS, proxy, auth, static headers), setting them on an easy handle,
// Retry-After, and the URL cleanup after a template was rendered.
//
// Thread-safety: ClientSettings is a value; an easy handle belongs to one thread at a time
// (libcurl's rule). ensureCurlGlobalInit() may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/config.h"
#include "ferry/connector.h"
#include "ferry/result.h"

typedef void CURL;
struct curl_slist;

namespace ferry::connectors::httpc {

// curl_global_init, once per process (libcurl wants it before any other thread uses it).
void ensureCurlGlobalInit();

// Declares http.timeout.ms, http.connect.timeout.ms, http.proxy, http.headers, http.auth.*,
// http.ssl.ca.location, http.ssl.certificate.location, http.ssl.key.location,
// http.ssl.key.password, http.ssl.verify and http.version on `def`.
void defineClientKeys(ConfigDef& def);

struct ClientSettings {
  long timeoutMs = 30000;
  long connectTimeoutMs = 10000;
  std::string proxy;
  std::vector<std::string> headers;  // "Name: value"
  std::string authType = "none";     // none | basic | bearer
  std::string user;
  std::string password;
  std::string token;
  bool verify = true;
  std::string caPem;    // PEM contents (read through the task's openLocalFile), empty = system CAs
  std::string certPem;  // client certificate chain, PEM
  std::string keyPem;   // its private key, PEM
  std::string keyPassword;
  std::string httpVersion = "auto";  // auto | 1.1 | 2
};

using FileReader = std::function<Result<LocalFile>(const std::string& path)>;

// Reads the client keys of a parsed config; PEM files are read through `open` (the task context's
// openLocalFile, so file.allowed.dirs applies). InvalidArgument naming the key otherwise.
Result<ClientSettings> clientSettings(const ParsedConfig& config, const FileReader& open);

// Reads a whole local file opened by `open` (at most 16 MiB).
Result<std::string> readLocalFile(const std::string& path, const FileReader& open, const std::string& key);

// Sets every option of `settings` on `easy` (not the URL, method or body) and the static headers
// plus `extraHeaders` ("Content-Type: ..."); the returned list must outlive the handle's use (the
// caller frees it with curl_slist_free_all). Null on an allocation failure.
curl_slist* applySettings(CURL* easy, const ClientSettings& settings, const std::vector<std::string>& extraHeaders,
                          char* errorBuffer);

// Retry-After (RFC 9110: delay-seconds or an HTTP date) as milliseconds from now; nullopt when
// the value is neither. `nowEpochMs` is the wall clock (for dates).
std::optional<std::int64_t> parseRetryAfter(std::string_view value, std::int64_t nowEpochMs);

// Percent-encodes the bytes a URL may not hold as they are (controls, space, non-ASCII, "<>\^`{|}),
// leaving the URL's structure ('/', '?', '&', '%', ...) alone: what a rendered template needs.
std::string cleanUrl(std::string_view url);
// Percent-encodes every byte but the unreserved ones (a query parameter value).
std::string encodeComponent(std::string_view text);

// "HTTP 503 from <url>: <first 512 bytes of body, escaped>".
std::string describeAnswer(long status, std::string_view url, std::string_view body);

}  // namespace ferry::connectors::httpc
