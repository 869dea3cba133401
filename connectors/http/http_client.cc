// libcurl settings shared by HttpSink and HttpSource's polling mode (see http_client.h).
#include "connectors/http/http_client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ferry::connectors::httpc {

void ensureCurlGlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

void defineClientKeys(ConfigDef& d) {
  d.define("http.timeout.ms", ConfigType::kLong, "30000", Importance::kMedium,
           "The longest one request may take, connecting included.", validators::atLeast(1));
  d.define("http.connect.timeout.ms", ConfigType::kLong, "10000", Importance::kLow,
           "The longest connecting (TCP and TLS) may take.", validators::atLeast(1));
  d.define("http.proxy", ConfigType::kString, "", Importance::kLow,
           "Proxy URL (http://host:port, socks5://host:port); empty: none (libcurl also reads "
           "the usual *_proxy environment variables when this is empty).");
  d.define("http.headers", ConfigType::kList, "", Importance::kMedium,
           "Headers sent with every request, each 'Name: value' (comma-separated list).");
  d.define("http.auth.type", ConfigType::kString, "none", Importance::kHigh,
           "Authentication: none, basic (http.auth.user / http.auth.password) or bearer (http.auth.token).",
           validators::oneOf({"none", "basic", "bearer"}));
  d.define("http.auth.user", ConfigType::kString, "", Importance::kMedium, "User name for basic authentication.");
  d.define("http.auth.password", ConfigType::kPassword, "", Importance::kMedium, "Password for basic authentication.");
  d.define("http.auth.token", ConfigType::kPassword, "", Importance::kMedium, "Bearer token.");
  d.define("http.ssl.ca.location", ConfigType::kString, "", Importance::kMedium,
           "PEM file of the CA certificates that sign the server's certificate; empty: the system's.");
  d.localPath("http.ssl.ca.location", LocalPath::kRead);
  d.define("http.ssl.certificate.location", ConfigType::kString, "", Importance::kLow,
           "PEM file of a client certificate (chain), for servers that ask for one.");
  d.localPath("http.ssl.certificate.location", LocalPath::kRead);
  d.define("http.ssl.key.location", ConfigType::kString, "", Importance::kLow, "PEM file of the client certificate's key.");
  d.localPath("http.ssl.key.location", LocalPath::kRead);
  d.define("http.ssl.key.password", ConfigType::kPassword, "", Importance::kLow, "Password of an encrypted client key.");
  d.define("http.ssl.verify", ConfigType::kBool, "true", Importance::kMedium,
           "Verify the server's certificate and host name (false only for tests).");
  d.define("http.version", ConfigType::kString, "auto", Importance::kLow,
           "HTTP version: auto (HTTP/2 over TLS when the server offers it, else HTTP/1.1), 1.1 or 2.",
           validators::oneOf({"auto", "1.1", "2"}));
}

Result<std::string> readLocalFile(const std::string& path, const FileReader& open, const std::string& key) {
  auto file = open(path);
  if (!file.isOk()) return file.status().withContext(key);
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(file->fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      const int err = errno;
      ::close(file->fd);
      return Status::invalidArgument(key + ": cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > (16u << 20)) {
      ::close(file->fd);
      return Status::invalidArgument(key + ": " + path + " is larger than 16 MiB");
    }
  }
  ::close(file->fd);
  return out;
}

Result<ClientSettings> clientSettings(const ParsedConfig& p, const FileReader& open) {
  ClientSettings s;
  s.timeoutMs = static_cast<long>(p.getLong("http.timeout.ms"));
  s.connectTimeoutMs = static_cast<long>(p.getLong("http.connect.timeout.ms"));
  s.proxy = p.getString("http.proxy");
  for (const auto& h : p.getList("http.headers")) {
    if (h.find(':') == std::string::npos || h.find_first_of("\r\n") != std::string::npos)
      return Status::invalidArgument("http.headers: '" + h + "' is not 'Name: value'");
    s.headers.push_back(h);
  }
  s.authType = p.getString("http.auth.type");
  for (char& c : s.authType) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  s.user = p.getString("http.auth.user");
  s.password = p.getString("http.auth.password");
  s.token = p.getString("http.auth.token");
  if (s.authType == "bearer" && s.token.empty())
    return Status::invalidArgument("http.auth.token: required when http.auth.type=bearer");
  if (s.authType == "basic" && s.user.empty())
    return Status::invalidArgument("http.auth.user: required when http.auth.type=basic");
  if (s.token.find_first_of("\r\n") != std::string::npos)
    return Status::invalidArgument("http.auth.token: contains a line break");
  s.verify = p.getBool("http.ssl.verify");
  s.httpVersion = p.getString("http.version");
  if (auto ca = p.getString("http.ssl.ca.location"); !ca.empty()) {
    FERRY_ASSIGN_OR_RETURN(s.caPem, readLocalFile(ca, open, "http.ssl.ca.location"));
  }
  const auto cert = p.getString("http.ssl.certificate.location");
  const auto key = p.getString("http.ssl.key.location");
  if (!cert.empty() != !key.empty())
    return Status::invalidArgument("http.ssl.certificate.location and http.ssl.key.location go together");
  if (!cert.empty()) {
    FERRY_ASSIGN_OR_RETURN(s.certPem, readLocalFile(cert, open, "http.ssl.certificate.location"));
    FERRY_ASSIGN_OR_RETURN(s.keyPem, readLocalFile(key, open, "http.ssl.key.location"));
  }
  s.keyPassword = p.getString("http.ssl.key.password");
  return s;
}

namespace {
// Whether a proxy variable libcurl reads is set and not empty (then libcurl decides per request).
bool proxyInEnvironment() {
  for (const char* name : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != 0) return true;
  }
  return false;
}
}  // namespace

curl_slist* applySettings(CURL* easy, const ClientSettings& s, const std::vector<std::string>& extraHeaders,
                          char* errorBuffer) {
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, s.timeoutMs);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, s.connectTimeoutMs);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  if (errorBuffer != nullptr) curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errorBuffer);
  if (!s.proxy.empty()) {
    curl_easy_setopt(easy, CURLOPT_PROXY, s.proxy.c_str());
  } else if (!proxyInEnvironment()) {
    // No proxy variable is set: say so once, rather than have libcurl read the environment
    // (its proxy and no_proxy variables) for every request.
    curl_easy_setopt(easy, CURLOPT_PROXY, "");
    curl_easy_setopt(easy, CURLOPT_NOPROXY, "");
  }
  if (s.httpVersion == "1.1") curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  else if (s.httpVersion == "2") curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2_0));
  else curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, s.verify ? 1L : 0L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, s.verify ? 2L : 0L);
  // The blobs are copied by libcurl (CURL_BLOB_COPY).
  if (!s.caPem.empty()) {
    curl_blob blob{const_cast<char*>(s.caPem.data()), s.caPem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &blob);
  }
  if (!s.certPem.empty()) {
    curl_blob cert{const_cast<char*>(s.certPem.data()), s.certPem.size(), CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(s.keyPem.data()), s.keyPem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    if (!s.keyPassword.empty()) curl_easy_setopt(easy, CURLOPT_KEYPASSWD, s.keyPassword.c_str());
  }
  if (s.authType == "basic") {
    curl_easy_setopt(easy, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(easy, CURLOPT_USERNAME, s.user.c_str());
    curl_easy_setopt(easy, CURLOPT_PASSWORD, s.password.c_str());
  }
  curl_slist* list = nullptr;
  auto add = [&](const std::string& h) {
    curl_slist* next = curl_slist_append(list, h.c_str());
    if (next == nullptr) {
      curl_slist_free_all(list);
      list = nullptr;
      return false;
    }
    list = next;
    return true;
  };
  for (const auto& h : s.headers)
    if (!add(h)) return nullptr;
  for (const auto& h : extraHeaders)
    if (!add(h)) return nullptr;
  if (s.authType == "bearer" && !add("Authorization: Bearer " + s.token)) return nullptr;
  // No "Expect: 100-continue" round trip before larger bodies.
  if (!add("Expect:")) return nullptr;
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, list);
  return list;
}

std::optional<std::int64_t> parseRetryAfter(std::string_view value, std::int64_t nowEpochMs) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r' ||
                            value.back() == '\n'))
    value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (value.find_first_not_of("0123456789") == std::string_view::npos) {
    if (value.size() > 9) return std::int64_t{999999999} * 1000;
    std::int64_t seconds = 0;
    for (char c : value) seconds = seconds * 10 + (c - '0');
    return seconds * 1000;
  }
  const std::string text(value);
  const time_t at = curl_getdate(text.c_str(), nullptr);
  if (at < 0) return std::nullopt;
  const std::int64_t delay = static_cast<std::int64_t>(at) * 1000 - nowEpochMs;
  return delay > 0 ? delay : 0;
}

namespace {
constexpr char kHex[] = "0123456789ABCDEF";
void encodeByte(std::string& out, unsigned char c) {
  out.push_back('%');
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 15]);
}
}  // namespace

std::string cleanUrl(std::string_view url) {
  std::string out;
  out.reserve(url.size());
  for (char ch : url) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || std::strchr("\"<>\\^`{|}", ch) != nullptr) encodeByte(out, c);
    else out.push_back(ch);
  }
  return out;
}

std::string encodeComponent(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || ch == '-' || ch == '.' || ch == '_' || ch == '~') out.push_back(ch);
    else encodeByte(out, c);
  }
  return out;
}

std::string describeAnswer(long status, std::string_view url, std::string_view body) {
  std::string out = "HTTP " + std::to_string(status) + " from " + std::string(url);
  if (body.empty()) return out;
  out += ": ";
  const std::size_t n = std::min<std::size_t>(body.size(), 512);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(body[i]);
    if (c >= 0x20 && c < 0x7f) out.push_back(static_cast<char>(c));
    else if (c == '\n' || c == '\r' || c == '\t') out.push_back(' ');
    else out += "?";
  }
  if (body.size() > n) out += "... (" + std::to_string(body.size()) + " bytes)";
  return out;
}

}  // namespace ferry::connectors::httpc
