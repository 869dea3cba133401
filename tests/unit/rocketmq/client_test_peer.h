// A scripted in-process RocketMQ peer for the client unit tests: listens on 127.0.0.1:<any>,
// accepts one connection at a time on its own thread, decodes frames and hands each to the
// test's script, which may answer (in any order), send requests of its own, or close.
//
// Threading: the script runs on the peer thread; PeerConnection methods are called from it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "rocketmq/remoting.h"

namespace ferry::rocketmq::testing {

class PeerConnection {
 public:
  explicit PeerConnection(int fd) : fd_(fd) {}
  // What reply() writes: the `version` header field (the server's MQVersion ordinal) and the
  // header encoding of every frame sent.
  std::int32_t version = kVersion;
  SerializeType serializeType = SerializeType::kJson;
  bool send(const RemotingCommand& cmd) { return sendRaw(encodeFrame(cmd, serializeType)); }
  bool sendRaw(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Answers `request` with `code` (and optional body/extFields/remark).
  bool reply(const RemotingCommand& request, std::int32_t code, std::string body = {},
             std::map<std::string, std::string> ext = {},
             std::optional<std::string> remark = std::nullopt) {
    RemotingCommand r;
    r.code = code;
    r.version = version;
    r.opaque = request.opaque;
    r.flag = kFlagResponse;
    r.body = std::move(body);
    r.extFields = std::move(ext);
    r.remark = std::move(remark);
    return send(r);
  }
  void close() { closed_ = true; }
  bool closed() const { return closed_; }

 private:
  int fd_;
  bool closed_ = false;
};

// script(conn, frame) is called for every frame received; call conn.close() to drop the
// connection after it returns.
using PeerScript = std::function<void(PeerConnection&, const RemotingCommand&)>;

class ScriptedPeer {
 public:
  explicit ScriptedPeer(PeerScript script) : script_(std::move(script)) {
    listenFd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listenFd_, 8);
    socklen_t len = sizeof addr;
    ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~ScriptedPeer() {
    stop_ = true;
    ::shutdown(listenFd_, SHUT_RDWR);
    {
      std::lock_guard lock(mu_);
      if (connFd_ >= 0) ::shutdown(connFd_, SHUT_RDWR);
    }
    thread_.join();
    ::close(listenFd_);
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_.load(); }

  // Waits (condition variable, bounded) until `pred()` holds; pred runs under the peer's mutex
  // notifications, so use it for values the script updates through notify().
  template <typename Pred>
  bool waitFor(Pred pred, int seconds = 10) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(seconds), pred);
  }
  // Lets a script publish state changes to waitFor().
  template <typename Fn>
  void update(Fn fn) {
    {
      std::lock_guard lock(mu_);
      fn();
    }
    cv_.notify_all();
  }

 private:
  void loop() {
    while (!stop_) {
      int fd = ::accept(listenFd_, nullptr, nullptr);
      if (fd < 0) return;
      {
        std::lock_guard lock(mu_);
        connFd_ = fd;
      }
      accepted_.fetch_add(1);
      cv_.notify_all();
      serve(fd);
      {
        std::lock_guard lock(mu_);
        connFd_ = -1;
      }
      ::close(fd);
    }
  }

  void serve(int fd) {
    PeerConnection conn(fd);
    std::string buf;
    char chunk[65536];
    for (;;) {
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return;
      buf.append(chunk, static_cast<std::size_t>(n));
      for (;;) {
        FrameDecode d = decodeFrame(buf);
        if (d.state != FrameDecode::State::kOk) {
          if (d.state == FrameDecode::State::kInvalid) return;
          break;
        }
        buf.erase(0, d.consumed);
        script_(conn, d.command);
        if (conn.closed()) return;
      }
    }
  }

  PeerScript script_;
  int listenFd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  int connFd_ = -1;  // guarded by mu_
};

}  // namespace ferry::rocketmq::testing
