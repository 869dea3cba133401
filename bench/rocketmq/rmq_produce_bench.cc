// rmq_produce_bench: ferry's native RocketMQ producer (src/backbone/rocketmq) under load, the
// counterpart of Apache RocketMQ's benchmark Producer (org.apache.rocketmq.example.benchmark).
// Sends N messages (or for D seconds) of S random alphanumeric bytes to one topic, either from
// T threads doing synchronous sends (default: 64 threads, the Java benchmark's default) or from
// one thread keeping K asynchronous sends in flight, and prints one JSON object on stdout:
// msgs_per_s, mb_per_s, send latency percentiles (ms), CPU seconds per million messages (from
// /proc/self/stat, over the send window and over the whole process), peak RSS (VmHWM).
//
// Threading: sync mode runs T sender threads, each with its own latency vector (merged after
// join); async mode has the main thread issue sends, the client's io thread run the callbacks,
// and a mutex + condition variable bound the in-flight count. No sleeps anywhere.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "rocketmq/client.h"
#include "rocketmq/producer.h"

namespace {

using Clock = std::chrono::steady_clock;
using ferry::rocketmq::ClientOptions;
using ferry::rocketmq::OutgoingMessage;
using ferry::rocketmq::Producer;
using ferry::rocketmq::ProducerOptions;
using ferry::rocketmq::RocketmqClient;
using ferry::rocketmq::SendResult;

struct Options {
  std::string namesrv = "127.0.0.1:19876";
  std::string topic = "BenchmarkTest";
  int size = 128;
  std::int64_t count = 0;     // total messages; 0 = use duration
  double durationS = 0;       // used when count == 0 (default 10 s then)
  std::string mode = "sync";  // sync | async
  int threads = 64;           // sync mode
  int inflight = 64;          // async mode
  int createQueues = 0;       // > 0: create/update the topic with that many queues first
  std::string serialize = "rocketmq";  // header serialization: rocketmq (binary) | json
};

void usage() {
  std::cerr << "usage: rmq_produce_bench [--namesrv H:P] [--topic T] [--size BYTES]\n"
               "         [--count N | --duration-s S] [--mode sync|async] [--threads T]\n"
               "         [--inflight K] [--create-queues Q] [--serialize rocketmq|json]\n"
               "Defaults: 127.0.0.1:19876, BenchmarkTest, 128 B, 10 s, sync with 64 threads\n"
               "(the Java benchmark Producer's defaults), async in-flight 64, binary headers.\n";
}

bool parseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "-h" || a == "--help") return false;
    if (!next(v)) return false;
    try {
      if (a == "--namesrv") o.namesrv = v;
      else if (a == "--topic") o.topic = v;
      else if (a == "--size") o.size = std::stoi(v);
      else if (a == "--count") o.count = std::stoll(v);
      else if (a == "--duration-s") o.durationS = std::stod(v);
      else if (a == "--mode") o.mode = v;
      else if (a == "--threads") o.threads = std::stoi(v);
      else if (a == "--inflight") o.inflight = std::stoi(v);
      else if (a == "--create-queues") o.createQueues = std::stoi(v);
      else if (a == "--serialize") o.serialize = v;
      else return false;
    } catch (...) {
      return false;
    }
  }
  if (o.count <= 0 && o.durationS <= 0) o.durationS = 10;
  return o.size >= 0 && o.threads > 0 && o.inflight > 0 &&
         (o.mode == "sync" || o.mode == "async") &&
         (o.serialize == "rocketmq" || o.serialize == "json");
}

// user+system CPU seconds of this process (fields 14 and 15 of /proc/self/stat).
double cpuSeconds() {
  std::ifstream f("/proc/self/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto p = s.rfind(')');
  if (p == std::string::npos) return 0;
  std::istringstream in(s.substr(p + 2));
  std::string field;
  std::uint64_t ut = 0, st = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) ut = std::stoull(field);
    if (i == 15) st = std::stoull(field);
  }
  return static_cast<double>(ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// VmHWM in bytes.
std::uint64_t peakRssBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

std::string randomBody(int size) {
  static const char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::mt19937 gen(std::random_device{}());
  std::uniform_int_distribution<int> pick(0, 61);
  std::string body(static_cast<std::size_t>(size), 'x');
  for (auto& c : body) c = kAlnum[pick(gen)];
  return body;
}

// Latencies in microseconds; failed sends are counted apart.
struct Tally {
  std::vector<std::uint32_t> latUs;
  std::int64_t failed = 0;
  std::string firstError;
};

std::uint32_t micros(Clock::duration d) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  return static_cast<std::uint32_t>(std::min<std::int64_t>(us, UINT32_MAX));
}

void runSync(Producer& producer, const Options& o, const std::string& body, Clock::time_point end,
             std::vector<Tally>& tallies) {
  tallies.resize(static_cast<std::size_t>(o.threads));
  std::vector<std::thread> threads;
  // Like the Java benchmark: N / T messages per thread, the remainder to the first one.
  for (int t = 0; t < o.threads; ++t) {
    std::int64_t quota = 0;
    if (o.count > 0) {
      quota = o.count / o.threads + (t == 0 ? o.count % o.threads : 0);
      if (quota == 0) continue;
    }
    threads.emplace_back([&, t, quota] {
      Tally& tally = tallies[static_cast<std::size_t>(t)];
      if (quota > 0) tally.latUs.reserve(static_cast<std::size_t>(quota));
      for (std::int64_t n = 0; quota > 0 ? n < quota : Clock::now() < end; ++n) {
        OutgoingMessage m;
        m.topic = o.topic;
        m.body = body;
        auto t0 = Clock::now();
        auto r = producer.send(std::move(m));
        if (r.isOk()) {
          tally.latUs.push_back(micros(Clock::now() - t0));
        } else {
          if (tally.failed++ == 0) tally.firstError = r.status().toString();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
}

void runAsync(Producer& producer, const Options& o, const std::string& body,
              Clock::time_point end, std::vector<Tally>& tallies) {
  tallies.resize(1);
  Tally& tally = tallies[0];
  if (o.count > 0) tally.latUs.reserve(static_cast<std::size_t>(o.count));
  std::mutex mu;
  std::condition_variable cv;
  int inflight = 0;
  for (std::int64_t n = 0; o.count > 0 ? n < o.count : Clock::now() < end; ++n) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return inflight < o.inflight; });
      ++inflight;
    }
    OutgoingMessage m;
    m.topic = o.topic;
    m.body = body;
    auto t0 = Clock::now();
    producer.sendAsync(std::move(m), {}, [&, t0](ferry::Result<SendResult> r) {
      auto lat = micros(Clock::now() - t0);
      std::lock_guard<std::mutex> lock(mu);
      if (r.isOk()) {
        tally.latUs.push_back(lat);
      } else if (tally.failed++ == 0) {
        tally.firstError = r.status().toString();
      }
      --inflight;
      cv.notify_one();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return inflight == 0; });
}

double percentileMs(const std::vector<std::uint32_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  auto idx = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(idx, sorted.size() - 1)] / 1000.0;
}

double round3(double v) {
  return static_cast<double>(static_cast<std::int64_t>(v * 1000 + 0.5)) / 1000;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parseArgs(argc, argv, o)) {
    usage();
    return 2;
  }
  ClientOptions co;
  co.namesrvAddrs = o.namesrv;
  co.serializeType = o.serialize == "json" ? ferry::rocketmq::SerializeType::kJson
                                           : ferry::rocketmq::SerializeType::kRocketmq;
  auto created = RocketmqClient::create(co);
  if (!created.isOk()) {
    std::cerr << "rmq_produce_bench: " << created.status().toString() << "\n";
    return 1;
  }
  std::unique_ptr<RocketmqClient> client = std::move(created).value();
  if (o.createQueues > 0) {
    auto s = client->createTopic(o.topic, o.createQueues);
    if (!s.isOk()) {
      std::cerr << "rmq_produce_bench: createTopic: " << s.toString() << "\n";
      return 1;
    }
  }
  // Resolve the route before the clock starts (the Java benchmark's first window starts 1 s
  // after its producer is up, so its TPS does not include the route lookup either).
  auto route = client->queryRoute(o.topic);
  if (!route.isOk()) {
    std::cerr << "rmq_produce_bench: route of " << o.topic << ": " << route.status().toString()
              << "\n";
    return 1;
  }
  int failedExit = 0;
  std::string body = randomBody(o.size);
  std::vector<Tally> tallies;
  double cpu0 = cpuSeconds();
  auto t0 = Clock::now();
  auto end = t0 + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(o.durationS));
  {
    Producer producer(*client, ProducerOptions{});
    if (o.mode == "sync") {
      runSync(producer, o, body, end, tallies);
    } else {
      runAsync(producer, o, body, end, tallies);
    }
  }
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  double cpu = cpuSeconds() - cpu0;

  std::vector<std::uint32_t> lat;
  std::int64_t failed = 0;
  std::string firstError;
  for (auto& t : tallies) {
    lat.insert(lat.end(), t.latUs.begin(), t.latUs.end());
    failed += t.failed;
    if (firstError.empty()) firstError = t.firstError;
  }
  std::sort(lat.begin(), lat.end());
  auto ok = static_cast<std::int64_t>(lat.size());
  double sum = 0;
  for (auto v : lat) sum += v;
  client.reset();
  double cpuTotal = cpuSeconds();
  double perM = ok > 0 ? 1e6 / static_cast<double>(ok) : 0;
  if (failed > 0) failedExit = 3;

  std::ostringstream js;
  js << "{\"mode\": \"" << o.mode << "\", \"concurrency\": "
     << (o.mode == "sync" ? o.threads : o.inflight) << ", \"msg_bytes\": " << o.size
     << ", \"sent\": " << ok << ", \"failed\": " << failed
     << ", \"seconds\": " << round3(seconds)
     << ", \"msgs_per_s\": " << static_cast<std::int64_t>(ok / seconds + 0.5)
     << ", \"mb_per_s\": " << round3(ok * static_cast<double>(o.size) / seconds / 1e6)
     << ", \"p50_ms\": " << round3(percentileMs(lat, 0.50))
     << ", \"p99_ms\": " << round3(percentileMs(lat, 0.99))
     << ", \"avg_ms\": " << round3(ok > 0 ? sum / static_cast<double>(ok) / 1000 : 0)
     << ", \"max_ms\": " << round3(lat.empty() ? 0 : lat.back() / 1000.0)
     << ", \"cpu_s_per_million\": " << round3(cpu * perM)
     << ", \"cpu_s_per_million_process\": " << round3(cpuTotal * perM)
     << ", \"peak_rss_mb\": " << static_cast<double>(peakRssBytes() / 100000) / 10;
  if (!firstError.empty()) {
    std::string e;
    for (char c : firstError) {
      if (c == '"' || c == '\\') e += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) e += c;
    }
    js << ", \"first_error\": \"" << e << "\"";
  }
  js << "}";
  std::cout << js.str() << std::endl;
  return failedExit;
}
