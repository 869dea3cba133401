// The JVM connector host process (host.h).
#include "jvm/host.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/clock.h"
#include "core/logging.h"

extern char** environ;

namespace ferry::jvm {

namespace {

constexpr std::size_t kKeptLines = 30;

bool writeAll(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool readAll(int fd, char* out, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::read(fd, out + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<std::size_t>(r);
  }
  return true;
}

std::string javaExecutable(const JvmHostOptions& o) {
  if (!o.java.empty()) return o.java;
  if (const char* home = std::getenv("JAVA_HOME"); home != nullptr && *home != '\0') return std::string(home) + "/bin/java";
  return "java";
}

std::string describeExit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + ::strsignal(WTERMSIG(status));
  return "ended";
}

}  // namespace

Result<std::unique_ptr<JvmHost>> JvmHost::start(const JvmHostOptions& o) {
  if (o.classpath.empty()) return Status::failedPrecondition("the JVM host's class path is not known");
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Status::internal(std::string("socketpair: ") + std::strerror(errno));
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return Status::internal(std::string("pipe: ") + std::strerror(errno));
  }
  const std::string java = javaExecutable(o);
  std::vector<std::string> args = {java};
  if (!o.maxHeap.empty()) args.push_back("-Xmx" + o.maxHeap);
  // A JVM out of heap is ended at once (the worker reports it) rather than limping on.
  args.push_back("-XX:+ExitOnOutOfMemoryError");
  args.push_back("-Dorg.slf4j.simpleLogger.logFile=System.err");
  args.push_back("-Dorg.slf4j.simpleLogger.showDateTime=false");
  for (const auto& opt : o.jvmOptions) args.push_back(opt);
  args.insert(args.end(), {"-cp", o.classpath, "io.ferry.jvmhost.Main"});
  for (const auto& p : o.pluginPath) args.push_back(p);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // The channel is standard input only, read and written by the host: the JVM itself writes to
  // standard output (-XX:+ExitOnOutOfMemoryError's "Terminating due to ..."), so that goes to the
  // log pipe with standard error, never into the channel.
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, err[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group: a terminal's Ctrl-C reaches the worker, which then closes the host.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  pid_t pid = -1;
  const int rc = java.find('/') != std::string::npos
                     ? ::posix_spawn(&pid, java.c_str(), &fa, &attr, argv.data(), environ)
                     : ::posix_spawnp(&pid, java.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(sv[0]);
    ::close(err[0]);
    return Status::failedPrecondition("cannot run " + java + " (" + std::strerror(rc) +
                                      "): Java connectors need a Java 17+ runtime (set jvm.java.home, or JAVA_HOME)");
  }
  std::unique_ptr<JvmHost> h(new JvmHost());
  h->pid_ = pid;
  h->channel_ = sv[0];
  h->stderr_ = err[0];
  h->reader_ = std::thread([p = h.get()] { p->readLoop(); });
  h->errReader_ = std::thread([p = h.get()] { p->stderrLoop(); });
  auto hello = h->call(kHello, [](Writer&) {}, o.startTimeout);
  if (!hello.isOk()) return Status(hello.status().code(), "the JVM host did not start: " + hello.status().message());
  Reader r(*hello);
  FERRY_ASSIGN_OR_RETURN(h->info_.protocol, r.i32());
  FERRY_ASSIGN_OR_RETURN(h->info_.javaVersion, r.str("java version"));
  FERRY_ASSIGN_OR_RETURN(h->info_.javaVendor, r.str("java vendor"));
  FERRY_ASSIGN_OR_RETURN(h->info_.maxHeapBytes, r.i64());
  if (h->info_.protocol != kProtocolVersion)
    return Status::incompatible("the JVM host speaks protocol " + std::to_string(h->info_.protocol) +
                                "; this worker speaks " + std::to_string(kProtocolVersion) +
                                " (the host jar is from another build)");
  core::logger("jvm")->info("JVM host started (pid {}, Java {} by {}, max heap {} MiB)", pid, h->info_.javaVersion,
                            h->info_.javaVendor, h->info_.maxHeapBytes >> 20);
  return h;
}

JvmHost::~JvmHost() {
  if (channel_ >= 0) ::shutdown(channel_, SHUT_RDWR);  // the host reads the end and exits
  bool reaped = false;
  for (int i = 0; i < 250 && pid_ > 0; ++i) {  // up to 5 s
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      reaped = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!reaped && pid_ > 0) {
    core::logger("jvm")->warn("the JVM host (pid {}) did not exit within 5 s of its channel closing; killing it", pid_);
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (reader_.joinable()) reader_.join();
  if (errReader_.joinable()) errReader_.join();
  if (channel_ >= 0) ::close(channel_);
  if (stderr_ >= 0) ::close(stderr_);
}

void JvmHost::write(const std::string& frame) {
  std::lock_guard lock(writeMu_);
  (void)writeAll(channel_, frame);  // a broken channel ends the reader, which fails every call
}

Result<std::string> JvmHost::call(std::uint8_t type, const std::function<void(Writer&)>& fill,
                                  std::chrono::milliseconds timeout, std::int64_t serving) {
  auto p = std::make_shared<Pending>();
  std::uint32_t id;
  {
    std::lock_guard lock(mu_);
    if (ended_) return Status::unavailable(endedBecause_);
    id = nextId_++;
    pending_[id] = p;
  }
  Writer w(id, type);
  fill(w);
  const std::string frame = std::move(w).finish();
  int writeError = 0;
  {
    std::lock_guard lock(writeMu_);
    if (!writeAll(channel_, frame)) writeError = errno != 0 ? errno : EPIPE;
  }
  std::unique_lock lock(mu_);
  if (writeError != 0 && !ended_) {
    pending_.erase(id);
    return Status::unavailable("cannot write to the JVM host: " + std::string(std::strerror(writeError)));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // The host's questions for this handle first: its answer to us may wait on them.
    if (serving != 0) {
      auto in = inbox_.find(serving);
      auto hk = hooks_.find(serving);
      if (in != inbox_.end() && !in->second.empty() && hk != hooks_.end()) {
        auto [askId, payload] = std::move(in->second.front());
        in->second.pop_front();
        auto hooks = hk->second;
        lock.unlock();
        Writer a(askId, static_cast<std::uint8_t>(kOffsetsRead | 0x80));
        const Status answered = hooks->onOffsetsRead ? hooks->onOffsetsRead(payload, a)
                                                     : Status::failedPrecondition("no offsets here");
        if (answered.isOk()) {
          write(std::move(a).finish());
        } else {
          Writer failed(askId, kFailed);
          failed.str(answered.message());
          write(std::move(failed).finish());
        }
        lock.lock();
        continue;
      }
    }
    if (p->done || ended_) break;
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !p->done && !ended_) {
      pending_.erase(id);
      return Status::timeout("the JVM host did not answer within " + std::to_string(timeout.count()) + " ms");
    }
  }
  pending_.erase(id);
  if (!p->done) return Status::unavailable(endedBecause_);
  if (p->type == kFailed) {
    auto f = readFailure(p->payload);
    if (!f.isOk()) return f.status();
    const std::string what = f->exceptionClass + ": " + f->message;
    return f->retriable ? Status::unavailable(what) : Status::internal(what);
  }
  if (p->type != (type | 0x80))
    return Status::internal("the JVM host answered request type " + std::to_string(type) + " with type " +
                            std::to_string(p->type));
  return std::move(p->payload);
}

void JvmHost::attach(std::int64_t handle, HandleHooks hooks) {
  std::lock_guard lock(mu_);
  hooks_[handle] = std::make_shared<const HandleHooks>(std::move(hooks));
}

void JvmHost::detach(std::int64_t handle) {
  std::lock_guard lock(mu_);
  hooks_.erase(handle);
  inbox_.erase(handle);
}

// A frame the host sent of its own accord (not an answer): on the reader thread.
void JvmHost::onHostFrame(const FrameHead& head, std::string_view payload) {
  Reader r(payload);
  auto handle = r.i64();
  if (!handle.isOk()) return;
  std::shared_ptr<const HandleHooks> hooks;
  {
    std::lock_guard lock(mu_);
    if (auto it = hooks_.find(*handle); it != hooks_.end()) hooks = it->second;
    if (head.type == kOffsetsRead && hooks) {
      inbox_[*handle].emplace_back(head.id, std::string(payload));
      cv_.notify_all();
    }
  }
  if (!hooks) {
    if (head.type == kOffsetsRead) {  // nobody to answer: the task is gone
      Writer a(head.id, kFailed);
      a.str("no task with handle " + std::to_string(*handle) + " in this worker");
      write(std::move(a).finish());
    }
    return;
  }
  if (head.type == kEvent) {
    auto kind = r.u8();
    auto message = r.str("event message");
    if (kind.isOk() && message.isOk() && hooks->onEvent) hooks->onEvent(*kind, *message);
    return;
  }
  if (hooks->onReady) hooks->onReady();  // READY, or an OFFSETS_READ waiting for the task's next call
}

bool JvmHost::alive() const {
  std::lock_guard lock(mu_);
  return !ended_;
}

std::string JvmHost::endedBecause() const {
  std::lock_guard lock(mu_);
  return endedBecause_;
}

void JvmHost::readLoop() {
  std::string why;
  for (;;) {
    char len[4];
    if (!readAll(channel_, len, 4)) break;
    const std::uint32_t n = (static_cast<std::uint32_t>(static_cast<unsigned char>(len[0])) << 24) |
                            (static_cast<std::uint32_t>(static_cast<unsigned char>(len[1])) << 16) |
                            (static_cast<std::uint32_t>(static_cast<unsigned char>(len[2])) << 8) |
                            static_cast<std::uint32_t>(static_cast<unsigned char>(len[3]));
    if (n < 5 || n > kMaxFrameBytes) {
      why = "sent a frame of " + std::to_string(n) + " bytes";
      break;
    }
    std::string body(n, '\0');
    if (!readAll(channel_, body.data(), n)) break;
    auto split = splitFrame(body);
    if (!split.isOk()) {
      why = split.status().message();
      break;
    }
    if (split->first.type == kOffsetsRead || split->first.type == kEvent || split->first.type == kReady) {
      onHostFrame(split->first, split->second);
      continue;
    }
    std::lock_guard lock(mu_);
    auto it = pending_.find(split->first.id);
    if (it == pending_.end()) continue;  // a call that timed out meanwhile
    it->second->done = true;
    it->second->type = split->first.type;
    it->second->payload = std::string(split->second);
    cv_.notify_all();
  }
  if (!why.empty()) {  // a host that breaks the protocol is stopped
    core::logger("jvm")->error("the JVM host (pid {}) {}; stopping it", pid_, why);
    ::kill(pid_, SIGKILL);
  }
  int status = 0;
  std::string exit = "ended";
  if (::waitpid(pid_, &status, 0) == pid_) exit = describeExit(status);
  fail("the JVM host (pid " + std::to_string(pid_) + ") " + exit + (why.empty() ? "" : " after it " + why));
}

void JvmHost::fail(const std::string& why) {
  std::unique_lock lock(mu_);
  // Its last words first: the reason is usually in them (an OutOfMemoryError, a linkage error).
  // The process is gone, so its standard error ends at once (unless something it started holds it).
  cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stderrClosed_; });
  std::string tail;
  for (const auto& l : lastLines_) tail += (tail.empty() ? "" : "\n") + l;
  endedBecause_ = why + (tail.empty() ? "" : "; its last output:\n" + tail);
  ended_ = true;
  core::logger("jvm")->error("{}", endedBecause_);
  cv_.notify_all();
}

void JvmHost::stderrLoop() {
  std::string line;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(stderr_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\n' && line.size() < 8192) {
        line.push_back(buf[i]);
        continue;
      }
      if (buf[i] != '\n') continue;  // an over-long line: the rest is dropped
      core::logger("jvm")->info("{}", line);
      std::lock_guard lock(mu_);
      lastLines_.push_back(std::move(line));
      if (lastLines_.size() > kKeptLines) lastLines_.pop_front();
      line.clear();
    }
  }
  if (!line.empty()) core::logger("jvm")->info("{}", line);
  std::lock_guard lock(mu_);
  if (!line.empty()) lastLines_.push_back(std::move(line));
  stderrClosed_ = true;
  cv_.notify_all();
}

Result<std::shared_ptr<JvmHost>> JvmHostSupervisor::host() {
  std::lock_guard lock(mu_);
  if (host_ && host_->alive()) return host_;
  const std::int64_t now = core::monotonicMs();
  if (now < nextStartMs_)
    return Status::unavailable(lastStartError_.empty() ? "the JVM host is restarting" : lastStartError_);
  if (host_) core::logger("jvm")->warn("starting the JVM host again: {}", host_->endedBecause());
  host_.reset();
  auto started = JvmHost::start(o_);
  if (!started.isOk()) {
    lastStartError_ = started.status().message();
    nextStartMs_ = now + backoffMs_;
    backoffMs_ = std::min<std::int64_t>(backoffMs_ * 2, 30000);
    return started.status();
  }
  backoffMs_ = 1000;
  host_ = std::shared_ptr<JvmHost>(std::move(*started));
  return host_;
}

Result<std::string> JvmHostSupervisor::call(std::uint8_t type, const std::function<void(Writer&)>& fill,
                                            std::chrono::milliseconds timeout) {
  FERRY_ASSIGN_OR_RETURN(auto h, host());
  return h->call(type, fill, timeout);
}

}  // namespace ferry::jvm
