// The JVM connector host process, seen from the worker (jvm/README.md).
//
// JvmHost is one running host: `java ... io.ferry.jvmhost.Main PLUGIN_FOLDER...` with one end of
// a Unix socketpair as its standard input, read and written (the channel, wire.h), and a pipe
// as its standard output and error (each line logged under [jvm], the last ones kept for failure messages). A
// reader thread hands answers to the calls waiting for them; when the process ends (it crashed,
// ran out of memory, was killed) every waiting and later call fails with Unavailable naming its
// exit and its last words. The host exits by itself when its channel closes, so it never outlives
// the worker, even one killed with kill -9.
//
// JvmHostSupervisor keeps one host for the worker: started on first use, started again after it
// died (no sooner than a back-off of 1 s doubling to 30 s, so a JVM that cannot start is not
// retried in a loop).
//
// Thread-safety: call() from any thread, concurrently.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ferry/result.h"
#include "jvm/wire.h"

namespace ferry::jvm {

struct JvmHostOptions {
  std::string java;       // the java executable; empty: $JAVA_HOME/bin/java, else `java` on PATH
  std::string classpath;  // the host jar and its libraries (as built: FERRY_JVM_HOST_CLASSPATH)
  std::vector<std::string> pluginPath;  // the worker's plugin.path folders
  std::string maxHeap;                  // -Xmx value ("512m"); empty: the JVM's default
  std::vector<std::string> jvmOptions;  // more options, before the class name
  std::chrono::milliseconds startTimeout{60000};
};

struct HostInfo {
  std::int32_t protocol = 0;
  std::string javaVersion;
  std::string javaVendor;
  std::int64_t maxHeapBytes = 0;
};

// What the worker does with the host's own frames about one handle (a running connector or task).
struct HandleHooks {
  // EVENT (kind 1: task reconfiguration requested, 2: error raised, 3: commit requested) and READY
  // (a source task's records are waiting): on the channel's reader thread; must be quick and
  // thread-safe.
  std::function<void(std::uint8_t kind, const std::string& message)> onEvent;
  std::function<void()> onReady;
  // OFFSETS_READ: writes the answer's payload into `answer`. Run by the thread of a call() made with this handle
  // (the task's own thread), never by the reader thread; onReady is called when one arrives so
  // that the task makes a call soon.
  std::function<Status(std::string_view payload, Writer& answer)> onOffsetsRead;
};

class JvmHost {
 public:
  // Starts the process and waits for its answer to HELLO.
  static Result<std::unique_ptr<JvmHost>> start(const JvmHostOptions& options);
  ~JvmHost();  // closes the channel; the host exits (killed after 5 s if it does not)
  JvmHost(const JvmHost&) = delete;
  JvmHost& operator=(const JvmHost&) = delete;

  // Sends one request (its payload written by `fill`) and waits up to `timeout` for the answer's
  // payload. A Java exception comes back as an error whose message starts with the exception's
  // class (Unavailable for Kafka's RetriableExceptions, else Internal); Unavailable once the
  // process is gone; Timeout when no answer came in time.
  // With `serving` a handle attached with hooks: while waiting, the host's OFFSETS_READ requests
  // for that handle are answered on this thread (HandleHooks::onOffsetsRead).
  Result<std::string> call(std::uint8_t type, const std::function<void(Writer&)>& fill,
                           std::chrono::milliseconds timeout, std::int64_t serving = 0);
  void attach(std::int64_t handle, HandleHooks hooks);
  void detach(std::int64_t handle);
  bool alive() const;
  // Why the process ended (empty while it runs).
  std::string endedBecause() const;

 private:
  JvmHost() = default;
  void readLoop();
  void stderrLoop();
  void fail(const std::string& why);
  void onHostFrame(const FrameHead& head, std::string_view payload);
  void write(const std::string& frame);

  pid_t pid_ = -1;
  int channel_ = -1;
  int stderr_ = -1;
  HostInfo info_;
  std::thread reader_, errReader_;
  std::mutex writeMu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint32_t nextId_ = 1;
  struct Pending {
    bool done = false;
    std::uint8_t type = 0;
    std::string payload;
  };
  std::map<std::uint32_t, std::shared_ptr<Pending>> pending_;
  std::map<std::int64_t, std::shared_ptr<const HandleHooks>> hooks_;
  // OFFSETS_READ requests waiting for a call() serving their handle: (request id, payload).
  std::map<std::int64_t, std::deque<std::pair<std::uint32_t, std::string>>> inbox_;
  bool ended_ = false;
  std::string endedBecause_;
  std::deque<std::string> lastLines_;  // of its standard error
  bool stderrClosed_ = false;
};

class JvmHostSupervisor {
 public:
  explicit JvmHostSupervisor(JvmHostOptions options) : o_(std::move(options)) {}
  // The running host (started first when there is none or it died).
  Result<std::shared_ptr<JvmHost>> host();
  // As JvmHost::call, on the running host (started first when there is none or it died; a start
  // that fails is the call's failure).
  Result<std::string> call(std::uint8_t type, const std::function<void(Writer&)>& fill,
                           std::chrono::milliseconds timeout);
 private:
  JvmHostOptions o_;
  mutable std::mutex mu_;
  std::shared_ptr<JvmHost> host_;
  std::int64_t nextStartMs_ = 0;
  std::int64_t backoffMs_ = 1000;
  std::string lastStartError_;
};

}  // namespace ferry::jvm
