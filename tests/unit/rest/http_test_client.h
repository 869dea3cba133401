// A minimal HTTP/1.1 client over a raw socket for the REST tests: it sends exactly the bytes a
// test gives (so tests can send malformed, slow or oversized requests) and reads one answer with
// a bounded wait. Not thread-safe; one connection per object.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <map>
#include <string>

namespace ferry::rest::testing {

struct CaseLess {
  bool operator()(const std::string& a, const std::string& b) const {
    return strcasecmp(a.c_str(), b.c_str()) < 0;
  }
};

struct HttpAnswer {
  int status = 0;  // 0: no answer (closed or timed out)
  std::map<std::string, std::string, CaseLess> headers;
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

class TestConnection {
 public:
  explicit TestConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    int one = 1;
    if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~TestConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  TestConnection(const TestConnection&) = delete;
  TestConnection& operator=(const TestConnection&) = delete;

  bool connected() const { return fd_ >= 0; }

  // Sends every byte; false when the peer closed.
  bool send(const std::string& data) {
    std::size_t off = 0;
    while (fd_ >= 0 && off < data.size()) {
      ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return fd_ >= 0;
  }

  // Reads one answer within `timeout`. `head`: the request was HEAD (no body follows).
  HttpAnswer read(std::chrono::milliseconds timeout = std::chrono::seconds(10), bool head = false) {
    HttpAnswer a;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill(deadline)) return a;
    std::string head_ = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    std::size_t lineEnd = head_.find("\r\n");
    std::string statusLine = head_.substr(0, lineEnd);
    if (statusLine.size() < 12) return a;
    int status = std::atoi(statusLine.c_str() + 9);
    std::size_t pos = lineEnd == std::string::npos ? head_.size() : lineEnd + 2;
    while (pos < head_.size()) {
      std::size_t e = head_.find("\r\n", pos);
      if (e == std::string::npos) e = head_.size();
      std::string line = head_.substr(pos, e - pos);
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') v.erase(0, 1);
        a.headers[line.substr(0, colon)] = v;
      }
      pos = e + 2;
    }
    if (status == 100) return read(timeout, head);  // 100 Continue: the real answer follows
    std::size_t length = 0;
    if (!head && status != 204 && status != 304 && a.headers.count("Content-Length"))
      length = std::stoul(a.headers["Content-Length"]);
    while (buf_.size() < length)
      if (!fill(deadline)) return a;
    a.body = buf_.substr(0, length);
    buf_.erase(0, length);
    a.status = status;
    return a;
  }

  // True when the server closes the connection within `timeout` (bytes it sends are dropped).
  bool closedByPeer(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!fill(deadline)) return closed_;
      buf_.clear();
    }
    return false;
  }

 private:
  bool fill(std::chrono::steady_clock::time_point deadline) {
    if (fd_ < 0 || closed_) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char tmp[65536];
    ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool closed_ = false;
  std::string buf_;
};

// One request on a new connection: method, path, optional body (sent as JSON) and extra header
// lines ("Name: value\r\n" each).
inline HttpAnswer httpRequest(int port, const std::string& method, const std::string& path,
                              const std::string& body = "", const std::string& extraHeaders = "") {
  TestConnection c(port);
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extraHeaders;
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n";
  req += "\r\n" + body;
  c.send(req);
  return c.read(std::chrono::seconds(30), method == "HEAD");
}

}  // namespace ferry::rest::testing
