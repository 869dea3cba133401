#include "redis/connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ferry::redis {
namespace {

std::string sslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown TLS error" : out;
}

int msLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

}  // namespace

Connection::Connection(ConnectionOptions options)
    : options_(std::move(options)),
      address_(options_.host + ":" + std::to_string(options_.port)),
      reader_(options_.limits),
      buffer_(64 * 1024) {}

Connection::~Connection() { close(); }

void Connection::close() noexcept {
  if (ssl_ != nullptr) {
    SSL_free(static_cast<SSL*>(ssl_));
    ssl_ = nullptr;
  }
  if (sslCtx_ != nullptr) {
    SSL_CTX_free(static_cast<SSL_CTX*>(sslCtx_));
    sslCtx_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

Status Connection::fail(Status s) {
  close();
  return s;
}

Result<std::unique_ptr<Connection>> Connection::connect(const ConnectionOptions& options) {
  std::unique_ptr<Connection> c(new Connection(options));
  FERRY_RETURN_IF_ERROR(c->open());
  FERRY_RETURN_IF_ERROR(c->handshake());
  return c;
}

Status Connection::waitFor(short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    pollfd p{fd_, events, 0};
    const int n = ::poll(&p, 1, msLeft(deadline));
    if (n > 0) return Status::ok();
    if (n == 0) return fail(Status::timeout("Redis " + address_ + ": no answer in time while " + what));
    if (errno != EINTR) return fail(Status::unavailable("Redis " + address_ + ": poll: " + std::strerror(errno)));
  }
}

Status Connection::open() {
  const auto deadline = Clock::now() + options_.connectTimeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(options_.port);
  if (int rc = ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Status::unavailable("Redis " + address_ + ": cannot resolve host: " + gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, ::freeaddrinfo);
  std::string lastError = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd_ = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd_ < 0) {
      lastError = std::strerror(errno);
      continue;
    }
    int one = 1;
    (void)::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    (void)::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    if (::connect(fd_, ai->ai_addr, ai->ai_addrlen) == 0) break;
    if (errno == EINPROGRESS) {
      pollfd p{fd_, POLLOUT, 0};
      int n;
      do n = ::poll(&p, 1, msLeft(deadline));
      while (n < 0 && errno == EINTR);
      if (n == 0) {
        close();
        return Status::unavailable("Redis " + address_ + ": connect timed out after " +
                                   std::to_string(options_.connectTimeout.count()) + " ms");
      }
      int err = 0;
      socklen_t len = sizeof err;
      (void)::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
      if (n > 0 && err == 0) break;
      lastError = std::strerror(err != 0 ? err : errno);
    } else {
      lastError = std::strerror(errno);
    }
    close();
  }
  if (fd_ < 0) return Status::unavailable("Redis " + address_ + ": cannot connect: " + lastError);

  if (options_.tls.enabled) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) return fail(Status::internal("Redis " + address_ + ": TLS: " + sslErrors()));
    sslCtx_ = ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    const TlsOptions& t = options_.tls;
    if (!t.caFile.empty()) {
      if (SSL_CTX_load_verify_locations(ctx, t.caFile.c_str(), nullptr) != 1)
        return fail(Status::invalidArgument("Redis " + address_ + ": cannot load CA file '" + t.caFile +
                                            "': " + sslErrors()));
    } else {
      SSL_CTX_set_default_verify_paths(ctx);
    }
    if (!t.certFile.empty()) {
      if (SSL_CTX_use_certificate_chain_file(ctx, t.certFile.c_str()) != 1 ||
          SSL_CTX_use_PrivateKey_file(ctx, (t.keyFile.empty() ? t.certFile : t.keyFile).c_str(),
                                      SSL_FILETYPE_PEM) != 1)
        return fail(Status::invalidArgument("Redis " + address_ + ": cannot load client certificate '" +
                                            t.certFile + "': " + sslErrors()));
    }
    SSL_CTX_set_verify(ctx, t.verifyPeer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    SSL* ssl = SSL_new(ctx);
    if (ssl == nullptr) return fail(Status::internal("Redis " + address_ + ": TLS: " + sslErrors()));
    ssl_ = ssl;
    SSL_set_fd(ssl, fd_);
    SSL_set_tlsext_host_name(ssl, options_.host.c_str());
    if (t.verifyPeer && t.verifyHostname) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      // An IP address is checked against the certificate's IP SANs, a name against its DNS ones.
      if (X509_VERIFY_PARAM_set1_ip_asc(param, options_.host.c_str()) != 1)
        X509_VERIFY_PARAM_set1_host(param, options_.host.c_str(), 0);
    }
    for (;;) {
      ERR_clear_error();
      const int rc = SSL_connect(ssl);
      if (rc == 1) break;
      const int err = SSL_get_error(ssl, rc);
      if (err == SSL_ERROR_WANT_READ) FERRY_RETURN_IF_ERROR(waitFor(POLLIN, deadline, "in the TLS handshake"));
      else if (err == SSL_ERROR_WANT_WRITE) FERRY_RETURN_IF_ERROR(waitFor(POLLOUT, deadline, "in the TLS handshake"));
      else {
        const long verify = SSL_get_verify_result(ssl);
        // A certificate that does not check out is not retried as it is (a wrong CA or host name,
        // or not the server it should be); other handshake failures are.
        if (verify != X509_V_OK)
          return fail(Status::invalidArgument("Redis " + address_ + ": TLS handshake failed: certificate check failed: " +
                                              X509_verify_cert_error_string(verify)));
        return fail(Status::unavailable("Redis " + address_ + ": TLS handshake failed: " + sslErrors()));
      }
    }
  }
  return Status::ok();
}

Status Connection::handshake() {
  std::vector<std::vector<std::string>> cmds;
  if (options_.password) {
    if (options_.username && !options_.username->empty())
      cmds.push_back({"AUTH", *options_.username, *options_.password});
    else
      cmds.push_back({"AUTH", *options_.password});
  }
  if (options_.database != 0) cmds.push_back({"SELECT", std::to_string(options_.database)});
  if (!options_.clientName.empty()) cmds.push_back({"CLIENT", "SETNAME", options_.clientName});
  if (cmds.empty()) cmds.push_back({"PING"});
  FERRY_ASSIGN_OR_RETURN(auto replies, pipeline(cmds));
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const Reply& r = replies[i];
    if (!r.isError()) continue;
    const std::string& what = cmds[i][0];
    close();
    if (r.errorPrefix() == "NOAUTH" || r.errorPrefix() == "WRONGPASS" || what == "AUTH")
      return Status::invalidArgument("Redis " + address_ + " refused the login: " + r.describe() +
                                     " (check redis.username / redis.password)");
    if (r.errorPrefix() == "LOADING" || r.errorPrefix() == "BUSY")
      return Status::unavailable("Redis " + address_ + ": " + r.describe());
    return Status::invalidArgument("Redis " + address_ + ": " + what + " failed: " + r.describe());
  }
  return Status::ok();
}

Status Connection::write(std::string_view bytes, Clock::time_point deadline) {
  if (fd_ < 0) return Status::unavailable("Redis " + address_ + ": not connected");
  while (!bytes.empty()) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(static_cast<SSL*>(ssl_), bytes.data(),
                              static_cast<int>(std::min<std::size_t>(bytes.size(), 1 << 30)));
      if (n > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      const int err = SSL_get_error(static_cast<SSL*>(ssl_), n);
      if (err == SSL_ERROR_WANT_WRITE) FERRY_RETURN_IF_ERROR(waitFor(POLLOUT, deadline, "writing"));
      else if (err == SSL_ERROR_WANT_READ) FERRY_RETURN_IF_ERROR(waitFor(POLLIN, deadline, "writing"));
      else return fail(Status::unavailable("Redis " + address_ + ": TLS write failed: " + sslErrors()));
      continue;
    }
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      FERRY_RETURN_IF_ERROR(waitFor(POLLOUT, deadline, "writing"));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return fail(Status::unavailable("Redis " + address_ + ": write failed: " + std::strerror(errno)));
    }
  }
  return Status::ok();
}

Result<Reply> Connection::read(Clock::time_point deadline) {
  FERRY_ASSIGN_OR_RETURN(auto r, tryRead(deadline));
  if (!r) return fail(Status::timeout("Redis " + address_ + ": no answer in time while reading a reply"));
  return std::move(*r);
}

Result<std::optional<Reply>> Connection::tryRead(Clock::time_point deadline) {
  // Waits for the socket to be readable; a deadline passing is "no reply yet" here.
  auto wait = [&](short events) -> Result<bool> {
    for (;;) {
      pollfd p{fd_, events, 0};
      const int n = ::poll(&p, 1, msLeft(deadline));
      if (n > 0) return true;
      if (n == 0) return false;
      if (errno != EINTR) return fail(Status::unavailable("Redis " + address_ + ": poll: " + std::strerror(errno)));
    }
  };
  for (;;) {
    auto next = reader_.next();
    if (!next.isOk()) return fail(next.status().withContext("Redis " + address_));
    if (next.value()) return std::move(next.value());
    if (fd_ < 0) return Status::unavailable("Redis " + address_ + ": not connected");
    ssize_t n;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int r = SSL_read(static_cast<SSL*>(ssl_), buffer_.data(), static_cast<int>(buffer_.size()));
      if (r <= 0) {
        const int err = SSL_get_error(static_cast<SSL*>(ssl_), r);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
          FERRY_ASSIGN_OR_RETURN(bool ready, wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT));
          if (!ready) return std::optional<Reply>();
        } else if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0))
          return fail(Status::unavailable("Redis " + address_ + ": connection closed by the server"));
        else return fail(Status::unavailable("Redis " + address_ + ": TLS read failed: " + sslErrors()));
        continue;
      }
      n = r;
    } else {
      n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      if (n == 0) return fail(Status::unavailable("Redis " + address_ + ": connection closed by the server"));
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          FERRY_ASSIGN_OR_RETURN(bool ready, wait(POLLIN));
          if (!ready) return std::optional<Reply>();
          continue;
        }
        if (errno == EINTR) continue;
        return fail(Status::unavailable("Redis " + address_ + ": read failed: " + std::strerror(errno)));
      }
    }
    if (Status s = reader_.feed(buffer_.data(), static_cast<std::size_t>(n)); !s.isOk())
      return fail(s.withContext("Redis " + address_));
  }
}

Result<Reply> Connection::command(const std::vector<std::string>& args, std::chrono::milliseconds extra) {
  std::string out;
  appendCommand(out, args);
  const auto deadline = Clock::now() + options_.timeout + extra;
  FERRY_RETURN_IF_ERROR(write(out, deadline));
  return read(deadline);
}

Result<std::vector<Reply>> Connection::pipeline(const std::vector<std::vector<std::string>>& commands,
                                                std::chrono::milliseconds extra) {
  std::string out;
  for (const auto& c : commands) appendCommand(out, c);
  const auto deadline = Clock::now() + options_.timeout + extra;
  FERRY_RETURN_IF_ERROR(write(out, deadline));
  std::vector<Reply> replies;
  replies.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    FERRY_ASSIGN_OR_RETURN(Reply r, read(deadline));
    replies.push_back(std::move(r));
  }
  return replies;
}

}  // namespace ferry::redis
