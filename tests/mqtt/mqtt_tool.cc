// mqtt_tool: the MQTT end of the bridge tests, on ferry's MqttClient (itself tested against
// mosquitto in mqtt_broker_tests).
//
//   publish --port P --topic T --count N [--first-seq F] [--qos 1] [--rate R] [--topics K] [--stamp]
//       N publishes with payload "<seq>" (seqs F .. F+N-1) and the MQTT 5 user property seq=<seq>,
//       to T, or with --topics K > 1 to T/<seq % K>. At most R messages per second when R > 0.
//       The client reconnects and re-sends whatever was unacknowledged (a broker restart loses
//       nothing); exit 0 once every publish was acknowledged, 1 when one failed. Prints one
//       JSON summary line. --stamp adds the user property sent_us (system clock, microseconds).
//   consume --port P --filter F --client-id C --count N [--idle-ms 5000] [--timeout-ms 300000]
//       A persistent session (clean start off, session expiry 1 h) subscribed to F at QoS 1;
//       every message is acknowledged once printed: one JSON line per message
//       {"topic","payload_hex","props":{...},"dup"}. Stops once N arrived and then none for
//       --idle-ms (duplicates past N still show), or at --timeout-ms (exit 3 if N was not reached).
//       --reconnect-idle-ms M: when fewer than N arrived and none for M ms, say so on stderr (with
//       how many the client holds unacknowledged) and connect the session again.
//       --distinct-prop P: messages count toward N by distinct values of the user property P
//       (one without it counts each time), so duplicates do not end the wait before every
//       message arrived. (Without it, a run with 3,646 duplicates stopped at N after an 8 s pause
//       while the last 3,248 distinct messages were still on their way, and the bridge test
//       reported them lost.)
//       --summary (for bench/): no line per message; stops once N messages arrived and prints
//       {"received","first_us","last_us","lat_n","lat_p50_us","lat_p99_us","lat_max_us"}, the
//       latencies being arrival minus the sent_us property (same machine, same clock).
//
// Diagnostics on stderr.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <unordered_set>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "mqtt/client.h"

namespace {

using namespace std::chrono;
using ferry::mqtt::ClientOptions;
using ferry::mqtt::IncomingMessage;
using ferry::mqtt::MqttClient;
using ferry::mqtt::OutgoingMessage;

long long nowUs() {
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

ClientOptions options(const std::string& host, int port, const std::string& clientId) {
  ClientOptions o;
  o.host = host;
  o.port = static_cast<std::uint16_t>(port);
  o.clientId = clientId;
  o.cleanStart = false;
  o.sessionExpiryS = 3600;
  o.connectTimeoutMs = 5000;
  o.reconnectMaxMs = 1000;
  o.maxInflight = 500;
  return o;
}

int publish(const std::string& host, int port, const std::string& topic, long count, long first,
            int qos, long rate, int topics, bool stamp) {
  auto o = options(host, port, "ferry-tool-pub-" + std::to_string(steady_clock::now().time_since_epoch().count()));
  MqttClient c(o);
  if (auto st = c.connect(); !st.isOk()) {
    std::cerr << "connect: " << st.toString() << "\n";
    return 2;
  }
  std::atomic<long> failed{0};
  const auto t0 = steady_clock::now();
  for (long i = 0; i < count; ++i) {
    const long seq = first + i;
    OutgoingMessage m;
    m.topic = topics > 1 ? topic + "/" + std::to_string(seq % topics) : topic;
    m.payload = std::to_string(seq);
    m.qos = static_cast<std::uint8_t>(qos);
    m.properties.addUser("seq", std::to_string(seq));
    if (stamp) m.properties.addUser("sent_us", std::to_string(nowUs()));
    c.publish(std::move(m), [&failed](ferry::Status s) {
      if (!s.isOk()) {
        if (failed++ == 0) std::cerr << "publish failed: " << s.toString() << "\n";
      }
    });
    if (rate > 0) {
      const auto due = t0 + microseconds(static_cast<long long>((i + 1) * 1e6 / static_cast<double>(rate)));
      std::this_thread::sleep_until(due);
    }
  }
  auto st = c.flush(minutes(10));
  const double secs = duration<double>(steady_clock::now() - t0).count();
  std::cout << nlohmann::json{{"published", count}, {"failed", failed.load()}, {"seconds", secs},
                              {"last_error", c.lastError().toString()}}
                   .dump()
            << std::endl;
  if (!st.isOk()) std::cerr << "flush: " << st.toString() << "\n";
  return st.isOk() && failed == 0 ? 0 : 1;
}

int consume(const std::string& host, int port, const std::string& filter, const std::string& clientId,
            long count, long idleMs, long timeoutMs, long reconnectIdleMs, bool summary,
            const std::string& distinctProp) {
  std::unordered_set<std::string> seen;  // values of distinctProp
  // Whether `m` counts toward N.
  auto counts = [&](const IncomingMessage& m) {
    if (distinctProp.empty()) return true;
    for (auto& [k, v] : m.properties.userProperties())
      if (k == distinctProp) return seen.insert(v).second;
    return true;
  };
  std::vector<long long> lat;
  long long firstUs = 0, lastUs = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<IncomingMessage> q;
  std::unique_ptr<MqttClient> client;
  // Connects the persistent session (again) and subscribes; false (after saying why) on failure.
  auto open = [&]() {
    client = std::make_unique<MqttClient>(options(host, port, clientId));
    client->setMessageHandler([&](IncomingMessage m) {
      std::lock_guard lock(mu);
      q.push_back(std::move(m));
      cv.notify_one();
    });
    if (auto st = client->connect(); !st.isOk()) {
      std::cerr << "connect: " << st.toString() << "\n";
      return false;
    }
    if (auto st = client->subscribe({{filter, 1, false, false, 0}}); !st.isOk()) {
      std::cerr << "subscribe: " << st.toString() << "\n";
      return false;
    }
    return true;
  };
  if (!open()) return 2;
  long got = 0;
  const auto deadline = steady_clock::now() + milliseconds(timeoutMs);
  auto lastAt = steady_clock::now();
  for (;;) {
    std::deque<IncomingMessage> batch;
    {
      std::unique_lock lock(mu);
      cv.wait_for(lock, milliseconds(200), [&] { return !q.empty(); });
      batch.swap(q);
    }
    for (auto& m : batch) {
      if (summary) {
        const long long at = nowUs();
        if (firstUs == 0) firstUs = at;
        lastUs = at;
        for (auto& [k, v] : m.properties.userProperties())
          if (k == "sent_us") lat.push_back(at - std::stoll(v));
        client->ack(m.token);
        if (counts(m)) ++got;
        continue;
      }
      nlohmann::json props = nlohmann::json::object();
      for (auto& [k, v] : m.properties.userProperties()) props[k] = v;
      static const char* kHex = "0123456789abcdef";
      std::string hex;
      for (unsigned char ch : m.payload) {
        hex.push_back(kHex[ch >> 4]);
        hex.push_back(kHex[ch & 15]);
      }
      std::cout << nlohmann::json{{"topic", m.topic}, {"payload_hex", hex}, {"props", props}, {"dup", m.dup}}
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
      client->ack(m.token);
      if (counts(m)) ++got;
    }
    if (!batch.empty()) {
      std::cout.flush();
      lastAt = steady_clock::now();
    }
    const auto now = steady_clock::now();
    if (summary && got >= count) break;
    if (got >= count && now - lastAt >= milliseconds(idleMs)) break;
    // A stall before N. Seen once in a full run: after a mosquitto restart the session stayed
    // connected and got nothing more for 10 minutes while the sender's 100,000 were all
    // acknowledged by mosquitto. Either the broker stopped sending (mosquitto 2.0.13 fixed
    // in-flight quota accounting; Debian has 2.0.11) or this client stopped acknowledging: the
    // unacknowledged count printed tells which. A new connection of the same session makes the
    // broker send again what it holds; what it does not hold stays missing.
    if (reconnectIdleMs > 0 && got < count && now - lastAt >= milliseconds(reconnectIdleMs)) {
      std::cerr << "stalled: " << got << " of " << count << " after "
                << std::chrono::duration_cast<milliseconds>(now - lastAt).count()
                << " ms without a message, " << client->unacked()
                << " delivered and not yet acknowledged; connecting the session again\n";
      client->close();
      {
        std::lock_guard lock(mu);
        q.clear();  // their acknowledgements would belong to the closed connection
      }
      if (!open()) return 2;
      lastAt = steady_clock::now();
    }
    if (now >= deadline) {
      std::cerr << "timeout: " << got << " of " << count << "\n";
      std::cout.flush();
      return 3;
    }
  }
  client->close();
  if (summary) {
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double p) -> long long {
      if (lat.empty()) return -1;
      return lat[std::min(lat.size() - 1, static_cast<std::size_t>(p * static_cast<double>(lat.size())))];
    };
    std::cout << nlohmann::json{{"received", got}, {"first_us", firstUs}, {"last_us", lastUs},
                                {"lat_n", lat.size()}, {"lat_p50_us", pct(0.50)}, {"lat_p99_us", pct(0.99)},
                                {"lat_max_us", lat.empty() ? -1 : lat.back()}}
                     .dump()
              << std::endl;
  }
  std::cerr << "consumed " << got << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"MQTT test tool (ferry)"};
  app.require_subcommand(1);
  std::string host = "127.0.0.1", topic, filter, clientId;
  int port = 18830, qos = 1, topics = 1;
  long count = 0, first = 0, rate = 0, idleMs = 5000, timeoutMs = 300000;
  auto* pub = app.add_subcommand("publish", "publish sequence-numbered messages");
  pub->add_option("--host", host);
  pub->add_option("--port", port);
  pub->add_option("--topic", topic)->required();
  pub->add_option("--count", count)->required();
  pub->add_option("--first-seq", first);
  pub->add_option("--qos", qos);
  pub->add_option("--rate", rate);
  pub->add_option("--topics", topics);
  bool stamp = false, summary = false;
  pub->add_flag("--stamp", stamp);
  auto* con = app.add_subcommand("consume", "consume with a persistent session");
  con->add_option("--host", host);
  con->add_option("--port", port);
  con->add_option("--filter", filter)->required();
  con->add_option("--client-id", clientId)->required();
  con->add_option("--count", count)->required();
  con->add_option("--idle-ms", idleMs);
  con->add_option("--timeout-ms", timeoutMs);
  long reconnectIdleMs = 0;
  con->add_option("--reconnect-idle-ms", reconnectIdleMs);
  std::string distinctProp;
  con->add_option("--distinct-prop", distinctProp);
  con->add_flag("--summary", summary);
  CLI11_PARSE(app, argc, argv);
  if (pub->parsed()) return publish(host, port, topic, count, first, qos, rate, topics, stamp);
  return consume(host, port, filter, clientId, count, idleMs, timeoutMs, reconnectIdleMs, summary, distinctProp);
}
