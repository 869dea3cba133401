// The HTTP/1.1 transport (see http_server.h). Beast parses (its parser bounds header bytes and
// body size, chunked included); everything else here is the connection state machine, the
// handler pool and TLS.
#include "rest/http_server.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <charconv>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "core/logging.h"
#include "core/percent.h"
#include "core/thread.h"

namespace ferry::rest::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using Parser = bhttp::request_parser<bhttp::string_body>;
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using beast::error_code;

namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// Query components: '+' is a space, %XX a byte.
std::string decodeQueryComponent(std::string_view s) { return percentDecode(s, true); }

void parseQuery(std::string_view query, std::multimap<std::string, std::string>& params) {
  std::size_t start = 0;
  while (start <= query.size()) {
    auto amp = query.find('&', start);
    auto end = amp == std::string_view::npos ? query.size() : amp;
    auto part = query.substr(start, end - start);
    if (!part.empty()) {
      auto eq = part.find('=');
      if (eq == std::string_view::npos)
        params.emplace(decodeQueryComponent(part), "");
      else
        params.emplace(decodeQueryComponent(part.substr(0, eq)),
                       decodeQueryComponent(part.substr(eq + 1)));
    }
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
}

std::string stripCrLf(std::string v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](char c) { return c == '\r' || c == '\n'; }),
          v.end());
  return v;
}

void configureParser(Parser& p, const Limits& limits) {
  p.header_limit(static_cast<std::uint32_t>(
      std::min<std::size_t>(limits.maxHeaderBytes, std::numeric_limits<std::uint32_t>::max())));
  p.body_limit(limits.maxBodyBytes);
}

// The status for a parse error (0: the connection just ends, nothing to answer).
int statusForParseError(const error_code& ec, bool headerDone) {
  if (ec == bhttp::error::header_limit) return 431;
  if (ec == bhttp::error::body_limit) return 413;
  if (ec == bhttp::error::buffer_overflow) return headerDone ? 413 : 431;
  if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
      ec == asio::error::eof || ec == asio::error::operation_aborted ||
      ec == asio::error::connection_reset || ec == beast::error::timeout ||
      ec == asio::ssl::error::stream_truncated)
    return 0;
  // The parser's bad_* errors: a malformed request.
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) return 400;
  return 0;
}

std::string messageForStatus(int status, const Limits& limits) {
  switch (status) {
    case 431:
      return "request header too large (at most " + std::to_string(limits.maxHeaderBytes) +
             " bytes in " + std::to_string(limits.maxHeaderCount) + " header lines)";
    case 413:
      return "request body too large (limit " + std::to_string(limits.maxBodyBytes) + " bytes)";
    case 414:
      return "request target too long (limit " + std::to_string(limits.maxTargetBytes) +
             " bytes)";
    case 503:
      return "the worker is busy: too many request bodies are being received; retry";
    default:
      return "malformed HTTP request";
  }
}

std::size_t fieldCount(const Parser& p) {
  std::size_t count = 0;
  for (auto it = p.get().begin(); it != p.get().end(); ++it) ++count;
  return count;
}

// Checks a parsed header against the limits Beast does not enforce itself; 0 when it passes.
int checkHeader(const Parser& p, const Limits& limits) {
  const auto& h = p.get();
  if (fieldCount(p) > limits.maxHeaderCount) return 431;
  if (h.target().size() > limits.maxTargetBytes) return 414;
  if (h.version() != 10 && h.version() != 11) return 505;
  if (auto len = p.content_length(); len && *len > limits.maxBodyBytes) return 413;
  return 0;
}

Request buildRequest(Parser& p) {
  Request r;
  auto& m = p.get();
  r.method = std::string(m.method_string());
  r.target = std::string(m.target());
  r.version = m.version();
  auto q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) parseQuery(std::string_view(r.target).substr(q + 1), r.params);
  for (const auto& f : m) r.headers.emplace(std::string(f.name_string()), std::string(f.value()));
  r.body = std::move(m.body());
  return r;
}

// A chunked body's trailer adds fields after the header was checked: they count too.
int checkTrailer(const Parser& p, const Limits& limits) {
  return fieldCount(p) > limits.maxHeaderCount ? 431 : 0;
}

bool expectsContinue(const Parser& p) {
  const auto& h = p.get();
  auto it = h.find(bhttp::field::expect);
  return h.version() >= 11 && it != h.end() && iequals(std::string_view(it->value().data(), it->value().size()), "100-continue") &&
         !p.is_done();
}

}  // namespace

// ---------------------------------------------------------------- values

bool HeaderLess::operator()(const std::string& a, const std::string& b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](char x, char y) { return lower(x) < lower(y); });
}

std::string Request::get_header_value(const std::string& name, std::size_t i) const {
  auto range = headers.equal_range(name);
  for (auto it = range.first; it != range.second; ++it, --i)
    if (i == 0) return it->second;
  return "";
}

std::string Request::get_param_value(const std::string& name, std::size_t i) const {
  auto range = params.equal_range(name);
  for (auto it = range.first; it != range.second; ++it, --i)
    if (i == 0) return it->second;
  return "";
}

void Response::set_content(std::string content, std::string contentType) {
  body = std::move(content);
  set_header("Content-Type", std::move(contentType));
}

void Response::set_header(const std::string& name, std::string value) {
  value = stripCrLf(std::move(value));
  for (auto& [k, v] : headers)
    if (iequals(k, name)) {
      v = std::move(value);
      return;
    }
  headers.emplace_back(stripCrLf(name), std::move(value));
}

void Response::add_header(const std::string& name, std::string value) {
  headers.emplace_back(stripCrLf(name), stripCrLf(std::move(value)));
}

void Response::set_redirect(const std::string& url, int code) {
  set_header("Location", url);
  status = code;
}

std::string Response::get_header_value(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return "";
}

Result<Listener> parseListener(std::string_view text) {
  Listener l;
  std::string_view rest;
  auto bad = [&](const std::string& why) {
    return Status::invalidArgument("listeners: '" + std::string(text) + "' " + why +
                                   " (expected http://host:port or https://host:port)");
  };
  if (text.rfind("http://", 0) == 0) {
    rest = text.substr(7);
  } else if (text.rfind("https://", 0) == 0) {
    l.tls = true;
    rest = text.substr(8);
  } else {
    return bad("has no http:// or https:// scheme");
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::size_t colon;
  if (!rest.empty() && rest.front() == '[') {  // [::1]:8083
    auto close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      return bad("has a malformed IPv6 address");
    l.host = std::string(rest.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = rest.rfind(':');
    if (colon == std::string_view::npos) return bad("has no port");
    l.host = std::string(rest.substr(0, colon));
  }
  auto portText = rest.substr(colon + 1);
  int port = -1;
  auto [end, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
  if (ec != std::errc() || end != portText.data() + portText.size() || port < 0 || port > 65535)
    return bad("has no valid port");
  l.port = port;
  return l;
}

std::string errorBody(int status, std::string_view message) {
  nlohmann::json j = {{"error_code", status}, {"message", std::string(message)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string serializeResponse(const Response& res, const std::string& requestMethod,
                              bool keepAlive, int requestVersion) {
  const int status = res.status < 0 ? 200 : res.status;
  std::string reason(bhttp::obsolete_reason(static_cast<bhttp::status>(status)));
  if (reason.empty() || reason == "<unknown-status>") reason = "Status";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
  const bool noBody = status < 200 || status == 204 || status == 304;
  for (const auto& [k, v] : res.headers) {
    if (iequals(k, "Content-Length") || iequals(k, "Connection") ||
        iequals(k, "Transfer-Encoding"))
      continue;
    out += k + ": " + v + "\r\n";
  }
  // A stream's body ends with the connection.
  if (!noBody && !res.stream) out += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  if (!keepAlive || res.stream)
    out += "Connection: close\r\n";
  else if (requestVersion == 10)
    out += "Connection: keep-alive\r\n";
  out += "\r\n";
  if (!noBody && requestMethod != "HEAD") out += res.body;
  return out;
}

std::vector<ParsedRequest> parseRequestStream(std::string_view bytes, const Limits& limits) {
  std::vector<ParsedRequest> out;
  std::size_t used = 0;
  auto fail = [&](int status) {
    ParsedRequest r;
    r.errorStatus = status;
    r.errorMessage = messageForStatus(status, limits);
    out.push_back(std::move(r));
  };
  while (used < bytes.size()) {
    Parser p;
    configureParser(p, limits);
    p.eager(false);
    error_code ec;
    while (!p.is_header_done()) {
      std::size_t n = p.put(asio::buffer(bytes.data() + used, bytes.size() - used), ec);
      used += n;
      if (ec == bhttp::error::need_more) return out;  // incomplete
      if (ec) {
        if (int s = statusForParseError(ec, false)) fail(s);
        return out;
      }
      if (n == 0) return out;
    }
    if (int s = checkHeader(p, limits)) {
      fail(s);
      return out;
    }
    p.eager(true);
    while (!p.is_done()) {
      std::size_t n = p.put(asio::buffer(bytes.data() + used, bytes.size() - used), ec);
      used += n;
      if (ec == bhttp::error::need_more) return out;
      if (ec) {
        if (int s = statusForParseError(ec, true)) fail(s);
        return out;
      }
      if (n == 0) return out;
    }
    if (int s = checkTrailer(p, limits)) {
      fail(s);
      return out;
    }
    ParsedRequest r;
    r.keepAlive = p.keep_alive();
    r.request = buildRequest(p);
    out.push_back(std::move(r));
    if (!out.back().keepAlive) return out;
  }
  return out;
}

// ---------------------------------------------------------------- static files

namespace {

std::string contentTypeFor(const std::string& path) {
  static const std::map<std::string, std::string> kTypes = {
      {".html", "text/html; charset=utf-8"}, {".htm", "text/html; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},   {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"}, {".json", "application/json"},
      {".map", "application/json"},          {".svg", "image/svg+xml"},
      {".png", "image/png"},                 {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},               {".gif", "image/gif"},
      {".ico", "image/x-icon"},              {".webp", "image/webp"},
      {".woff", "font/woff"},                {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"}, {".wasm", "application/wasm"}};
  auto dot = path.rfind('.');
  auto slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return "application/octet-stream";
  std::string ext = path.substr(dot);
  for (auto& c : ext) c = lower(c);
  auto it = kTypes.find(ext);
  return it == kTypes.end() ? "application/octet-stream" : it->second;
}

std::optional<std::string> realPath(const std::string& p) {
  char* r = ::realpath(p.c_str(), nullptr);
  if (r == nullptr) return std::nullopt;
  std::string out(r);
  std::free(r);
  return out;
}

}  // namespace

bool serveStatic(const std::string& root, std::string_view urlPrefix, const Request& req,
                 Response& res) {
  std::string_view path = req.path;
  if (path.rfind(urlPrefix, 0) != 0) return false;
  std::string_view below = path.substr(urlPrefix.size());
  if (!below.empty() && below.front() != '/') return false;  // "/uix" is not under "/ui"
  auto error = [&](int status, const std::string& message) {
    res.status = status;
    res.set_content(errorBody(status, message), "application/json");
  };
  if (req.method != "GET" && req.method != "HEAD") {
    res.set_header("Allow", "GET, HEAD");
    if (req.method == "OPTIONS") {
      res.status = 204;
      return true;
    }
    error(405, "method " + req.method + " is not allowed on " + std::string(urlPrefix) +
                   "/; use GET, HEAD");
    return true;
  }
  if (below.empty()) {
    res.set_redirect(std::string(urlPrefix) + "/");
    return true;
  }
  const std::string decoded = core::percentDecode(below);
  auto notFound = [&] { error(404, "no such file: " + req.path); };
  if (decoded.find('\0') != std::string::npos) return notFound(), true;
  auto rootReal = realPath(root);
  if (!rootReal) return notFound(), true;
  std::string candidate = *rootReal + decoded;
  if (!candidate.empty() && candidate.back() == '/') candidate += "index.html";
  // realpath resolves "..", "." and every symlink; what remains must be inside the root.
  auto real = realPath(candidate);
  if (!real || real->rfind(*rootReal + "/", 0) != 0) return notFound(), true;
  struct stat st{};
  if (::stat(real->c_str(), &st) != 0) return notFound(), true;
  if (S_ISDIR(st.st_mode)) {
    // No listings: a folder is its index.html, reached with the trailing slash.
    auto index = realPath(*real + "/index.html");
    if (!index || index->rfind(*rootReal + "/", 0) != 0) return notFound(), true;
    res.set_redirect(req.path + "/");
    return true;
  }
  if (!S_ISREG(st.st_mode)) return notFound(), true;
  constexpr off_t kMaxFile = 64 << 20;
  if (st.st_size > kMaxFile) return error(500, "file too large to serve: " + req.path), true;
  std::ifstream in(*real, std::ios::binary);
  if (!in) return notFound(), true;
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  res.status = 200;
  res.set_content(std::move(content), contentTypeFor(*real));
  return true;
}

// ---------------------------------------------------------------- handler pool

namespace {

// A fixed set of threads taking jobs from a bounded queue. tryPush never blocks.
class HandlerPool {
 public:
  void start(int threads, std::size_t capacity) {
    capacity_ = capacity;
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  bool tryPush(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= capacity_) return false;
    queue_.push_back(std::move(job));
    cv_.notify_one();
    return true;
  }
  // Runs what is queued, then joins.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::size_t capacity_ = 0;
  std::vector<std::thread> threads_;
};

Result<std::shared_ptr<ssl::context>> makeTlsContext(const TlsOptions& t) {
  const std::string prefix = "listeners.https.ssl.";
  if (!iequals(t.keystoreType, "PEM"))
    return Status::invalidArgument(prefix + "keystore.type=" + t.keystoreType +
                                   " is not supported: use PEM (a file with the private key and "
                                   "the certificate chain)");
  if (t.keystoreLocation.empty())
    return Status::invalidArgument(prefix + "keystore.location must name a PEM file for https "
                                            "listeners");
  if (::access(t.keystoreLocation.c_str(), R_OK) != 0)
    return Status::invalidArgument(prefix + "keystore.location: cannot read " +
                                   t.keystoreLocation + ": " + std::strerror(errno));
  try {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::single_dh_use);
    int minV = INT_MAX, maxV = 0;
    for (const auto& p : t.enabledProtocols) {
      int v = p == "TLSv1.3"   ? TLS1_3_VERSION
              : p == "TLSv1.2" ? TLS1_2_VERSION
              : p == "TLSv1.1" ? TLS1_1_VERSION
              : p == "TLSv1"   ? TLS1_VERSION
                               : 0;
      if (v == 0)
        return Status::invalidArgument(prefix + "enabled.protocols: unknown protocol '" + p +
                                       "' (use TLSv1.2, TLSv1.3)");
      minV = std::min(minV, v);
      maxV = std::max(maxV, v);
    }
    if (maxV == 0)
      return Status::invalidArgument(prefix + "enabled.protocols must name at least one protocol");
    SSL_CTX_set_min_proto_version(ctx->native_handle(), minV);
    SSL_CTX_set_max_proto_version(ctx->native_handle(), maxV);
    // Always a callback: without one OpenSSL asks the terminal for an encrypted key's password.
    std::string pw = t.keyPassword;
    ctx->set_password_callback([pw](std::size_t, ssl::context::password_purpose) { return pw; });
    error_code ec;
    ctx->use_certificate_chain_file(t.keystoreLocation, ec);
    if (ec)
      return Status::invalidArgument(prefix + "keystore.location: " + t.keystoreLocation +
                                     " holds no usable PEM certificate chain: " + ec.message());
    ctx->use_private_key_file(t.keystoreLocation, ssl::context::pem, ec);
    if (ec)
      return Status::invalidArgument(
          prefix + "keystore.location: " + t.keystoreLocation +
          " holds no usable PEM private key (encrypted? set " + prefix + "key.password): " +
          ec.message());
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
      return Status::invalidArgument(prefix + "keystore.location: " + t.keystoreLocation +
                                     ": the private key does not match the certificate");
    if (t.clientAuthentication != "none" && t.clientAuthentication != "requested" &&
        t.clientAuthentication != "required")
      return Status::invalidArgument(prefix + "client.authentication must be none, requested or "
                                              "required, not '" + t.clientAuthentication + "'");
    if (!t.truststoreLocation.empty()) {
      ctx->load_verify_file(t.truststoreLocation, ec);
      if (ec)
        return Status::invalidArgument(prefix + "truststore.location: cannot load " +
                                       t.truststoreLocation + ": " + ec.message());
    } else if (t.clientAuthentication != "none") {
      return Status::invalidArgument(prefix + "client.authentication=" + t.clientAuthentication +
                                     " needs " + prefix + "truststore.location (the CAs that "
                                     "client certificates must chain to)");
    }
    if (t.clientAuthentication == "required")
      ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    else if (t.clientAuthentication == "requested")
      ctx->set_verify_mode(ssl::verify_peer);
    else
      ctx->set_verify_mode(ssl::verify_none);
    return ctx;
  } catch (const std::exception& e) {
    return Status::invalidArgument(prefix + "*: cannot set up TLS: " + e.what());
  }
}

std::string peerCommonName(SSL* ssl) {
  if (SSL_get_verify_result(ssl) != X509_V_OK) return "";
  X509* cert = SSL_get_peer_certificate(ssl);
  if (cert == nullptr) return "";
  std::string out;
  X509_NAME* name = X509_get_subject_name(cert);
  int idx = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (idx >= 0) {
    ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
    unsigned char* utf8 = nullptr;
    int len = ASN1_STRING_to_UTF8(&utf8, data);
    if (len > 0) out.assign(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(len));
    OPENSSL_free(utf8);
  }
  X509_free(cert);
  return out;
}

struct FileStamp {
  std::int64_t mtimeNs = 0;
  std::int64_t size = -1;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stampOf(const std::string& path) {
  struct stat st{};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
          static_cast<std::int64_t>(st.st_size)};
}

}  // namespace

// ---------------------------------------------------------------- server

// Body bytes a request holds against ServerOptions::maxBodyBytesInFlight, released when the
// request (and the handler run that owns it) is gone.
class BodyReservation {
 public:
  BodyReservation(std::atomic<std::uint64_t>& total, std::uint64_t bytes)
      : total_(total), bytes_(bytes) {}
  ~BodyReservation() { total_ -= bytes_; }
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;

 private:
  std::atomic<std::uint64_t>& total_;
  std::uint64_t bytes_;
};

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void onStop() = 0;
};

class HttpServer::Impl {
 public:
  Impl(ServerOptions options, Handler handler)
      : options_(std::move(options)), handler_(std::move(handler)) {}

  Status start();
  void stop();

  ServerOptions options_;
  Handler handler_;
  // Declared before ioc_: sessions still owned by its pending handlers decrement open_ when
  // ioc_ is destroyed.
  std::atomic<std::uint64_t> open_{0};
  std::atomic<std::uint64_t> connectionsRejected_{0};
  std::atomic<std::uint64_t> requestsRejected_{0};
  std::atomic<std::uint64_t> timeouts_{0};
  std::atomic<std::uint64_t> tlsReloads_{0};
  std::atomic<std::uint64_t> bodyBytesInFlight_{0};
  asio::io_context ioc_{1};
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
  std::vector<bool> acceptorTls_;
  std::vector<int> ports_;
  // Keeps ioc_.run() going while handlers run and nothing else is pending (during stop()).
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread io_;
  HandlerPool pool_;
  bool started_ = false;

  // I/O thread only after start().
  std::shared_ptr<ssl::context> tls_;
  FileStamp keystoreStamp_, truststoreStamp_;
  std::chrono::steady_clock::time_point lastTlsCheck_{};
  std::map<std::uint64_t, std::weak_ptr<SessionBase>> sessions_;
  std::uint64_t nextSession_ = 0;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point lastRejectLog_{};


  void accept(std::size_t i);
  void onAccepted(std::size_t i, tcp::socket socket);
  void maybeReloadTls();
  void forget(std::uint64_t id) { sessions_.erase(id); }
};

template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  Session(HttpServer::Impl& server, std::uint64_t id, tcp::socket socket,
          std::shared_ptr<ssl::context> ctx, std::string remote)
      : server_(server),
        id_(id),
        ctx_(std::move(ctx)),
        stream_(makeStream(std::move(socket), ctx_.get())),
        buffer_(server.options_.limits.maxHeaderBytes + 64 * 1024),
        remote_(std::move(remote)) {
    ++server_.open_;
  }
  ~Session() override {
    --server_.open_;
  }

  void run() {
    lowest().expires_after(server_.options_.headerTimeout);
    if constexpr (kTls) {
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](error_code ec) {
                                if (ec) return self->finish(ec);
                                self->peer_ = peerCommonName(self->stream_.native_handle());
                                self->readHeader();
                              });
    } else {
      readHeader();
    }
  }

  void onStop() override {
    stopping_ = true;
    // Waiting for or reading a request, or lingering: close now. Handling or writing: the answer
    // is written first (write() sees stopping_ and closes after it).
    if (state_ == State::kStreaming) return endStream();
    if (state_ != State::kHandling && state_ != State::kWriting) closeNow();
  }

 private:
  enum class State { kReading, kHandling, kWriting, kStreaming, kClosing };

  static Stream makeStream(tcp::socket socket, ssl::context* ctx) {
    if constexpr (kTls)
      return Stream(beast::tcp_stream(std::move(socket)), *ctx);
    else
      return Stream(std::move(socket));
  }

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  const Limits& limits() const { return server_.options_.limits; }

  // Waits for the next request's first byte within the keep-alive idle timeout.
  void awaitNextRequest() {
    state_ = State::kReading;
    if (stopping_) return closeNow();
    if (buffer_.size() > 0) return readHeader();  // pipelined: already here
    lowest().expires_after(server_.options_.idleTimeout);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](error_code ec, std::size_t n) {
                              if (ec) return self->finish(ec);
                              self->buffer_.commit(n);
                              self->lowest().expires_after(self->server_.options_.headerTimeout);
                              self->readHeader();
                            });
  }

  void readHeader() {
    state_ = State::kReading;
    parser_.emplace();
    configureParser(*parser_, limits());
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = this->shared_from_this()](error_code ec, std::size_t) {
                               self->onHeader(ec);
                             });
  }

  void onHeader(error_code ec) {
    if (ec) {
      if (int s = statusForParseError(ec, false)) return answerErrorAndClose(s);
      return finish(ec);
    }
    if (int s = checkHeader(*parser_, limits())) return answerErrorAndClose(s);
    if (!parser_->is_done()) {
      // Reserve the body's bytes before reading them (the whole limit for a chunked body).
      const std::uint64_t need = parser_->content_length().value_or(limits().maxBodyBytes);
      std::uint64_t held = server_.bodyBytesInFlight_.fetch_add(need) + need;
      reservation_ = std::make_shared<BodyReservation>(server_.bodyBytesInFlight_, need);
      if (held > server_.options_.maxBodyBytesInFlight) {
        reservation_.reset();
        ++server_.requestsRejected_;
        return answerErrorAndClose(503);
      }
    }
    lowest().expires_after(server_.options_.bodyTimeout);
    if (parser_->is_done()) return dispatch();
    if (expectsContinue(*parser_)) {
      out_ = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(stream_, asio::buffer(out_),
                        [self = this->shared_from_this()](error_code ec, std::size_t) {
                          if (ec) return self->finish(ec);
                          self->readBody();
                        });
      return;
    }
    readBody();
  }

  void readBody() {
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = this->shared_from_this()](error_code ec, std::size_t) {
                        if (ec) {
                          if (int s = statusForParseError(ec, true))
                            return self->answerErrorAndClose(s);
                          return self->finish(ec);
                        }
                        self->dispatch();
                      });
  }

  void dispatch() {
    if (int s = checkTrailer(*parser_, limits())) return answerErrorAndClose(s);
    state_ = State::kHandling;
    keepAlive_ = parser_->keep_alive();
    auto request = std::make_shared<Request>(buildRequest(*parser_));
    parser_.reset();
    request->remote_addr = remote_;
    request->is_tls = kTls;
    request->peer_name = peer_;
    auto self = this->shared_from_this();
    HttpServer::Impl& server = server_;
    auto reservation = std::move(reservation_);  // released with the request, after the handler
    bool queued = server_.pool_.tryPush([self, request, reservation, &server] {
      Response res;
      try {
        server.handler_(*request, res);
      } catch (const std::exception& e) {
        core::logger("rest")->error("{} {} failed: {}", request->method, request->path, e.what());
        res = Response{};
        res.status = 500;
        res.set_content(errorBody(500, "internal error"), "application/json");
      }
      core::logger("rest")->debug("{} {} -> {}", request->method, request->path, res.status);
      std::string method = request->method;
      int version = request->version;
      asio::post(self->stream_.get_executor(), [self, res = std::move(res), method, version] {
        if (res.stream && method != "HEAD" && res.status >= 200 && res.status < 300 && res.status != 204)
          return self->startStream(serializeResponse(res, method, false, version), res.stream);
        self->write(serializeResponse(res, method, self->keepAlive_ && !self->stopping_, version));
      });
    });
    if (!queued) {
      ++server_.requestsRejected_;
      Response res;
      res.status = 503;
      res.set_header("Retry-After", "1");
      res.set_content(errorBody(503, "the worker is busy: too many requests waiting; retry"),
                      "application/json");
      write(serializeResponse(res, request->method, keepAlive_ && !stopping_, request->version));
    }
  }

  void write(std::string data) {
    state_ = State::kWriting;
    const bool close = !keepAlive_ || stopping_;
    out_ = std::move(data);
    lowest().expires_after(server_.options_.writeTimeout);
    asio::async_write(stream_, asio::buffer(out_),
                      [self = this->shared_from_this(), close](error_code ec, std::size_t) {
                        if (ec) return self->finish(ec);
                        self->out_.clear();
                        self->out_.shrink_to_fit();
                        if (self->stopping_) return self->closeNow();
                        if (close) return self->lingerClose();
                        self->awaitNextRequest();
                      });
  }

  // A streamed response (EventStream): the head, then next()'s output every interval, while the
  // connection is read so that a client going away ends it at once.
  void startStream(std::string head, std::shared_ptr<EventStream> events) {
    state_ = State::kStreaming;
    keepAlive_ = false;
    events_ = std::move(events);
    streamEnds_ = std::chrono::steady_clock::now() + events_->maxDuration;
    timer_.emplace(stream_.get_executor());
    watchClient();
    streamWrite(std::move(head));
  }

  void watchClient() {
    lowest().async_read_some(asio::buffer(discard_), [self = this->shared_from_this()](error_code ec, std::size_t) {
      if (self->state_ != State::kStreaming) return;
      if (ec) return self->endStream();  // closed by the client (or the server stopping)
      self->watchClient();  // a client has nothing to send on a stream: dropped
    });
  }

  void streamWrite(std::string data) {
    if (data.empty()) return streamWait();
    out_ = std::move(data);
    lowest().expires_after(server_.options_.writeTimeout);
    asio::async_write(stream_, asio::buffer(out_), [self = this->shared_from_this()](error_code ec, std::size_t) {
      if (self->state_ != State::kStreaming) return;
      if (ec) {
        if (ec == beast::error::timeout) ++self->server_.timeouts_;
        return self->endStream();
      }
      self->lowest().expires_never();  // the pending read waits for as long as the stream lasts
      self->streamWait();
    });
  }

  void streamWait() {
    if (stopping_ || std::chrono::steady_clock::now() >= streamEnds_) return endStream();
    timer_->expires_after(events_->interval);
    timer_->async_wait([self = this->shared_from_this()](error_code ec) {
      if (ec || self->state_ != State::kStreaming) return;
      std::optional<std::string> chunk;
      try {
        chunk = self->events_->next();
      } catch (const std::exception& e) {
        core::logger("rest")->error("event stream to {} failed: {}", self->remote_, e.what());
      }
      if (!chunk) return self->endStream();
      if (chunk->empty() && ++self->idleTicks_ >= self->events_->keepAliveEvery) *chunk = ": keep-alive\n\n";
      if (!chunk->empty()) self->idleTicks_ = 0;
      self->streamWrite(std::move(*chunk));
    });
  }

  void endStream() {
    if (state_ != State::kStreaming) return;
    if (timer_) timer_->cancel();
    events_.reset();  // its destructor releases what it holds
    closeNow();
  }

  // An error found while reading: answer it, then close without reading the rest.
  void answerErrorAndClose(int status) {
    parser_.reset();
    keepAlive_ = false;
    Response res;
    res.status = status;
    if (status == 503) res.set_header("Retry-After", "1");
    res.set_content(errorBody(status, messageForStatus(status, limits())), "application/json");
    write(serializeResponse(res, "GET", false, 11));
  }

  // Closes our sending side, then discards what the client still sends for a short while, so
  // that closing with unread data (which sends a reset) does not destroy the answer before the
  // client read it. Memory stays one small buffer whatever the client sends.
  void lingerClose() {
    state_ = State::kClosing;
    error_code ignored;
    // TLS: no close_notify exchange; the answer carried its length, the client needs no more.
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().expires_after(std::chrono::milliseconds(1000));
    drain();
  }

  void drain() {
    lowest().async_read_some(asio::buffer(discard_),
                             [self = this->shared_from_this()](error_code ec, std::size_t) {
                               if (ec) return self->closeNow();
                               self->drain();
                             });
  }

  void finish(error_code ec) {
    if (ec == beast::error::timeout) {
      ++server_.timeouts_;
      core::logger("rest")->debug("closing connection from {}: deadline passed", remote_);
    }
    closeNow();
  }

  void closeNow() {
    state_ = State::kClosing;
    error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
    server_.forget(id_);
  }

  HttpServer::Impl& server_;
  std::uint64_t id_;
  std::shared_ptr<ssl::context> ctx_;  // outlives stream_ (declared before it)
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::shared_ptr<BodyReservation> reservation_;  // for the body being read
  std::string out_;
  std::array<char, 16384> discard_{};
  std::string remote_;
  std::string peer_;
  State state_ = State::kReading;
  bool keepAlive_ = false;
  bool stopping_ = false;
  // kStreaming: the stream, its timer, when it ends, ticks since it last sent something.
  std::shared_ptr<EventStream> events_;
  std::optional<asio::steady_timer> timer_;
  std::chrono::steady_clock::time_point streamEnds_{};
  int idleTicks_ = 0;
};

void HttpServer::Impl::maybeReloadTls() {
  auto now = std::chrono::steady_clock::now();
  if (now - lastTlsCheck_ < std::chrono::seconds(1)) return;
  lastTlsCheck_ = now;
  FileStamp ks = stampOf(options_.tls.keystoreLocation);
  FileStamp ts = stampOf(options_.tls.truststoreLocation);
  if (ks == keystoreStamp_ && ts == truststoreStamp_) return;
  keystoreStamp_ = ks;  // a bad file is reported once, not every second
  truststoreStamp_ = ts;
  auto ctx = makeTlsContext(options_.tls);
  if (!ctx.isOk()) {
    core::logger("rest")->error("TLS certificate reload failed, keeping the previous one: {}",
                                ctx.status().message());
    return;
  }
  tls_ = *ctx;
  ++tlsReloads_;
  core::logger("rest")->info("TLS keystore {} reloaded", options_.tls.keystoreLocation);
}

void HttpServer::Impl::accept(std::size_t i) {
  acceptors_[i]->async_accept([this, i](error_code ec, tcp::socket socket) {
    if (stopping_ || !acceptors_[i]->is_open()) return;
    if (ec) {
      // EMFILE and the like: try again shortly instead of spinning.
      core::logger("rest")->warn("accept failed: {}", ec.message());
      auto timer = std::make_shared<asio::steady_timer>(ioc_, std::chrono::milliseconds(50));
      timer->async_wait([this, i, timer](error_code) {
        if (!stopping_) accept(i);
      });
      return;
    }
    onAccepted(i, std::move(socket));
    accept(i);
  });
}

void HttpServer::Impl::onAccepted(std::size_t i, tcp::socket socket) {
  error_code ec;
  if (open_.load() >= options_.maxConnections) {
    ++connectionsRejected_;
    auto now = std::chrono::steady_clock::now();
    if (now - lastRejectLog_ >= std::chrono::seconds(1)) {
      lastRejectLog_ = now;
      core::logger("rest")->warn(
          "REST connection limit reached ({} open): closing new connections ({} so far)",
          options_.maxConnections, connectionsRejected_.load());
    }
    socket.close(ec);
    return;
  }
  socket.set_option(tcp::no_delay(true), ec);
  auto ep = socket.remote_endpoint(ec);
  std::string remote = ec ? "" : ep.address().to_string();
  const std::uint64_t id = nextSession_++;
  if (acceptorTls_[i]) {
    maybeReloadTls();
    auto s = std::make_shared<Session<TlsStream>>(*this, id, std::move(socket), tls_,
                                                  std::move(remote));
    sessions_[id] = s;
    s->run();
  } else {
    auto s = std::make_shared<Session<PlainStream>>(*this, id, std::move(socket), nullptr,
                                                    std::move(remote));
    sessions_[id] = s;
    s->run();
  }
}

Status HttpServer::Impl::start() {
  if (started_) return Status::failedPrecondition("the HTTP server is already started");
  if (options_.listeners.empty()) return Status::invalidArgument("listeners: no listener given");
  bool anyTls = false;
  for (const auto& l : options_.listeners) anyTls |= l.tls;
  if (anyTls) {
    auto ctx = makeTlsContext(options_.tls);
    if (!ctx.isOk()) return ctx.status();
    tls_ = *ctx;
    keystoreStamp_ = stampOf(options_.tls.keystoreLocation);
    truststoreStamp_ = stampOf(options_.tls.truststoreLocation);
    lastTlsCheck_ = std::chrono::steady_clock::now();
  }
  for (const auto& l : options_.listeners) {
    const std::string where = (l.host.empty() ? "0.0.0.0" : l.host) + ":" + std::to_string(l.port);
    error_code ec;
    auto addr = asio::ip::make_address(l.host.empty() ? "0.0.0.0" : l.host, ec);
    if (ec) {
      // A host name: resolve it once.
      tcp::resolver resolver(ioc_);
      auto results = resolver.resolve(l.host, std::to_string(l.port), ec);
      if (ec || results.empty())
        return Status::invalidArgument("listeners: cannot resolve host '" + l.host +
                                       "': " + ec.message());
      addr = results.begin()->endpoint().address();
    }
    auto acceptor = std::make_unique<tcp::acceptor>(ioc_);
    tcp::endpoint ep(addr, static_cast<unsigned short>(l.port));
    acceptor->open(ep.protocol(), ec);
    // SO_REUSEADDR allows a quick restart; SO_REUSEPORT (never set) would let a second worker
    // share the port and silently take half of its connections.
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(ep, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return Status::unavailable("cannot listen on " + where + ": " + ec.message() +
                                 " (is another process using the port? choose another one)");
    ports_.push_back(acceptor->local_endpoint().port());
    acceptors_.push_back(std::move(acceptor));
    acceptorTls_.push_back(l.tls);
  }
  started_ = true;
  pool_.start(std::max(1, options_.handlerThreads), options_.queueCapacity);
  for (std::size_t i = 0; i < acceptors_.size(); ++i) accept(i);
  work_.emplace(ioc_.get_executor());
  io_ = core::namedThread("http-io", [this] {
    for (;;) {
      try {
        ioc_.run();
        return;
      } catch (const std::exception& e) {
        core::logger("rest")->error("REST I/O loop: {}", e.what());
      }
    }
  });
  return Status::ok();
}

void HttpServer::Impl::stop() {
  if (!started_) return;
  started_ = false;
  asio::post(ioc_, [this] {
    stopping_ = true;
    error_code ignored;
    for (auto& a : acceptors_) a->close(ignored);
    auto sessions = sessions_;
    for (auto& [id, weak] : sessions)
      if (auto s = weak.lock()) s->onStop();
  });
  // Answers in flight are written, for at most 5 s (a client that does not read them is not
  // worth holding up a shutdown); handlers themselves are always joined below.
  auto deadline = std::chrono::steady_clock::now() +
                  std::min<std::chrono::milliseconds>(options_.writeTimeout, std::chrono::seconds(5));
  while (open_.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  pool_.stop();
  work_.reset();
  ioc_.stop();
  if (io_.joinable()) io_.join();
}

HttpServer::HttpServer(ServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
  try {
    return impl_->start();
  } catch (const std::exception& e) {
    return Status::unavailable(std::string("cannot start the HTTP server: ") + e.what());
  }
}

void HttpServer::stop() { impl_->stop(); }

std::vector<int> HttpServer::ports() const { return impl_->started_ ? impl_->ports_ : std::vector<int>{}; }

ServerStats HttpServer::stats() const {
  ServerStats s;
  s.connectionsRejected = impl_->connectionsRejected_.load();
  s.requestsRejected = impl_->requestsRejected_.load();
  s.timeouts = impl_->timeouts_.load();
  s.tlsReloads = impl_->tlsReloads_.load();
  s.openConnections = impl_->open_.load();
  s.bodyBytesInFlight = impl_->bodyBytesInFlight_.load();
  return s;
}

std::string percentDecode(std::string_view s, bool plusIsSpace) {
  return core::percentDecode(s, plusIsSpace);
}

}  // namespace ferry::rest::http
