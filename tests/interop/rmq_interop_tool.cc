// rmq_interop_tool: the ferry side of the RocketMQ interop tests (tests/interop), a CLI shaped
// like the Java one (tests/interop/java):
//
//   create-topic --namesrv A --topic T [--queues 4] [--cluster C (default: the only one listed)]
//       RocketmqClient::createTopic (UPDATE_AND_CREATE_TOPIC, then waits for the route).
//   produce --namesrv A --topic T --count N --seed S [--batch K] [--first-seq F]
//       N synchronous sends, each to the explicit queue (broker of the route, seq % queues), of
//       the deterministic message for seq (body interopBody(seed, seq), TAGS T<seq%3>, KEYS
//       k<seq>, user property seq=<seq>). With --batch K > 1: SEND_BATCH_MESSAGE, up to K
//       messages of one queue per batch (queues in turn, seqs ascending within a queue). One JSON
//       line per message on stdout: {"seq":..,"broker":..,"queue":..,"offset":..,"msg_id":..}.
//       --first-seq F sends seqs F .. F+N-1 instead of 0 .. N-1.
//   consume --namesrv A --topic T [--topic T2 ...] --group G [--tags "*"] [--from first|last]
//           [--count N] [--idle-ms 5000] [--timeout-ms 120000] [--commit true|false]
//       ferry's PullConsumer in group G. One JSON line per message on stdout (the Java tool's
//       fields): {"topic","broker","queue","offset","tags","keys","msg_id","props","body_hex"},
//       and "store_ts" (the broker's append time, ms).
//       Stops once N messages arrived and then none for --idle-ms (so duplicates past N still
//       show), or after --idle-ms without a message when no N is given, or at --timeout-ms (exit
//       3 if N was not reached). --exact stops at exactly N messages (no more are printed or
//       committed). With --commit (default) the next offsets are committed to the broker after
//       each printed batch and at the end.
//
//   latency --namesrv A --topic T [--queues 4] [--rate 2000] [--seconds 10]
//       Creates T, then sends rate x seconds messages at that pace (each carrying its send time)
//       and pulls them back in the same process; prints {"n","sent","failed","p50_ms","p99_ms",
//       "max_ms"}: the broker hop alone, for bench mqtt-bridge.
//
// FERRY_RMQ_ACCESS_KEY / FERRY_RMQ_SECRET_KEY in the environment sign every request (ACL).
// Diagnostics go to stderr. Single-threaded (the client runs its own io thread).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <chrono>
#include <atomic>
#include <thread>
#include <map>

#include "rocketmq/client.h"
#include "rocketmq/consumer.h"
#include "rocketmq/producer.h"

namespace {

using ferry::rocketmq::ClientOptions;
using ferry::rocketmq::OutgoingMessage;
using ferry::rocketmq::Producer;
using ferry::rocketmq::ProducerOptions;
using ferry::rocketmq::QueueSelection;
using ferry::rocketmq::RocketmqClient;

std::int64_t floorMod(std::int64_t a, std::int64_t m) {
  std::int64_t r = a % m;
  return r < 0 ? r + m : r;
}

// Same formula as Payload.body in the Java tool and expected_body in the Python test.
std::string interopBody(std::int64_t seed, std::int64_t seq) {
  std::int64_t len = 8 + floorMod(seq * 131 + seed, 97);
  std::string b(static_cast<std::size_t>(len), '\0');
  for (std::int64_t i = 0; i < len; ++i) {
    if (i % 5 != 0) {
      b[static_cast<std::size_t>(i)] = static_cast<char>(
          static_cast<unsigned char>(floorMod(seq * 31 + i * 17 + seed * 7, 256)));
    }
  }
  return b;
}

std::unique_ptr<RocketmqClient> connect(const std::string& namesrv) {
  ClientOptions o;
  o.namesrvAddrs = namesrv;
  o.requestTimeoutMs = 10000;
  // ACL credentials for a secured cluster, from the environment.
  if (const char* ak = std::getenv("FERRY_RMQ_ACCESS_KEY")) o.accessKey = ak;
  if (const char* sk = std::getenv("FERRY_RMQ_SECRET_KEY")) o.secretKey = sk;
  auto c = RocketmqClient::create(o);
  if (!c.isOk()) {
    std::cerr << "client: " << c.status().toString() << "\n";
    return nullptr;
  }
  auto info = (*c)->clusterInfo();
  if (!info.isOk()) {
    std::cerr << "NameServer " << namesrv << " unreachable: " << info.status().toString() << "\n";
    return nullptr;
  }
  return std::move(c).value();
}

int createTopic(const std::string& namesrv, const std::string& topic, int queues,
                const std::string& cluster) {
  auto client = connect(namesrv);
  if (!client) return 1;
  std::string target = cluster;
  if (target.empty()) {
    // Default: the NameServer's only cluster (each test cluster of scripts/services/rocketmq
    // has one, named after its broker).
    auto info = client->clusterInfo();
    if (!info.isOk() || info->clusters.size() != 1) {
      std::cerr << "createTopic " << topic << ": pass --cluster (the NameServer lists "
                << (info.isOk() ? std::to_string(info->clusters.size()) : "no") << " clusters)\n";
      return 1;
    }
    target = info->clusters.begin()->first;
  }
  ferry::Status s = client->createTopic(topic, queues, {target});
  if (!s.isOk()) {
    std::cerr << "createTopic " << topic << ": " << s.toString() << "\n";
    return 1;
  }
  return 0;
}

OutgoingMessage interopMessage(const std::string& topic, std::int64_t seed, std::int64_t seq) {
  OutgoingMessage m;
  m.topic = topic;
  m.body = interopBody(seed, seq);
  m.properties[ferry::rocketmq::kPropTags] = "T" + std::to_string(seq % 3);
  m.properties[ferry::rocketmq::kPropKeys] = "k" + std::to_string(seq);
  m.properties["seq"] = std::to_string(seq);
  return m;
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t p = s.find(',', start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

int produce(const std::string& namesrv, const std::string& topic, std::int64_t count,
            std::int64_t seed, std::int64_t batch,
            std::int64_t firstSeq) {
  auto client = connect(namesrv);
  if (!client) return 1;
  auto route = client->queryRoute(topic, /*refresh=*/true);
  if (!route.isOk()) {
    std::cerr << "route of " << topic << ": " << route.status().toString() << "\n";
    return 1;
  }
  auto queues = route->publishQueues();
  if (queues.empty()) {
    std::cerr << "topic " << topic << " has no writable queues\n";
    return 1;
  }
  // Same mapping as the Java tool: queue id seq % queues (on the first broker of the route; the
  // interop cluster has one).
  const std::string broker = queues.front().brokerName;
  std::int32_t queueCount = 0;
  for (const auto& q : queues) queueCount += q.brokerName == broker ? 1 : 0;

  ProducerOptions po;
  po.group = "ferry_interop_producer";
  po.sendTimeoutMs = 10000;
  Producer producer(*client, po);
  auto print = [](std::int64_t seq, const ferry::rocketmq::SendResult& r, std::int64_t offset,
                  const std::string& msgId) {
    nlohmann::json line = {{"seq", seq},
                           {"broker", r.brokerName},
                           {"queue", r.queueId},
                           {"offset", offset},
                           {"msg_id", msgId}};
    std::cout << line.dump() << '\n';
  };
  int rc = 0;
  if (batch <= 1) {
    for (std::int64_t seq = firstSeq; seq < firstSeq + count; ++seq) {
      auto qid = static_cast<std::int32_t>(seq % queueCount);
      auto r = producer.send(interopMessage(topic, seed, seq), QueueSelection::queue(broker, qid));
      if (!r.isOk()) {
        std::cerr << "seq " << seq << ": " << r.status().toString() << "\n";
        return 1;
      }
      print(seq, *r, r->queueOffset, r->msgId);
    }
  } else {
    // Rounds of batch * queueCount seqs: one batch per queue, its seqs ascending.
    const std::int64_t round = batch * queueCount;
    const std::int64_t end = firstSeq + count;
    for (std::int64_t base = firstSeq; base < end && rc == 0; base += round) {
      for (std::int32_t qid = 0; qid < queueCount && rc == 0; ++qid) {
        std::vector<OutgoingMessage> msgs;
        std::vector<std::int64_t> seqs;
        for (std::int64_t seq = base + floorMod(qid - base, queueCount); seq < std::min(end, base + round);
             seq += queueCount) {
          msgs.push_back(interopMessage(topic, seed, seq));
          seqs.push_back(seq);
        }
        if (msgs.empty()) continue;
        auto r = producer.sendBatch(std::move(msgs), QueueSelection::queue(broker, qid));
        if (!r.isOk()) {
          std::cerr << "batch from seq " << seqs.front() << ": " << r.status().toString() << "\n";
          rc = 1;
          break;
        }
        auto ids = splitComma(r->msgId);
        for (std::size_t i = 0; i < seqs.size(); ++i) {
          print(seqs[i], *r, r->queueOffset + static_cast<std::int64_t>(i),
                i < ids.size() ? ids[i] : std::string());
        }
      }
    }
  }
  std::cout.flush();
  return rc;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string prop(const std::map<std::string, std::string>& props, const char* name) {
  auto it = props.find(name);
  return it == props.end() ? std::string() : it->second;
}

int consume(const std::string& namesrv, const std::vector<std::string>& topics, const std::string& group,
            const std::string& tags, const std::string& from, std::int64_t count, std::int64_t idleMs,
            std::int64_t timeoutMs, bool commit, bool exact) {
  using Clock = std::chrono::steady_clock;
  auto client = connect(namesrv);
  if (!client) return 1;
  ferry::rocketmq::ConsumerOptions o;
  o.group = group;
  for (const auto& t : topics) o.subscriptions.push_back({t, tags});
  o.fromWhere = from == "last" ? ferry::rocketmq::ConsumeFromWhere::kLastOffset
                               : ferry::rocketmq::ConsumeFromWhere::kFirstOffset;
  o.pullBatchSize = 64;
  o.longPollingSuspendMs = 1000;
  o.pullTimeoutMs = 10000;
  ferry::rocketmq::PullConsumer consumer(*client, o);
  if (auto s = consumer.start(); !s.isOk()) {
    std::cerr << "consumer start: " << s.toString() << "\n";
    return 1;
  }
  std::map<ferry::rocketmq::MessageQueue, std::int64_t> next;
  std::int64_t received = 0;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  auto lastMessage = Clock::now();
  int rc = 0;
  while (true) {
    const auto now = Clock::now();
    if (now >= deadline) {
      if (count > 0 && received < count) {
        std::cerr << "consume: " << received << " of " << count << " messages before the timeout\n";
        rc = 3;
      }
      break;
    }
    const bool reached = count <= 0 || received >= count;
    if (reached && exact && count > 0) break;
    if (reached && now - lastMessage >= std::chrono::milliseconds(idleMs)) break;
    auto batch = consumer.poll(512, std::chrono::milliseconds(200));
    if (!batch.isOk()) {
      std::cerr << "poll: " << batch.status().toString() << "\n";
      rc = 1;
      break;
    }
    if (batch->empty()) continue;
    lastMessage = Clock::now();
    std::string out;
    for (const auto& pm : *batch) {
      if (exact && count > 0 && received >= count) break;
      const auto& m = pm.message;
      const std::string uniq = prop(m.properties, "UNIQ_KEY");
      nlohmann::json line = {{"topic", m.topic},
                             {"broker", pm.brokerName},
                             {"queue", m.queueId},
                             {"offset", m.queueOffset},
                             {"tags", prop(m.properties, "TAGS")},
                             {"keys", prop(m.properties, "KEYS")},
                             {"msg_id", uniq.empty() ? m.offsetMsgId : uniq},
                             {"props", m.properties},
                             {"store_ts", m.storeTimestamp},
                             {"body_hex", hex(m.body)}};
      out += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out += '\n';
      next[pm.queue()] = std::max(next[pm.queue()], m.queueOffset + 1);
      ++received;
    }
    std::cout << out;
    std::cout.flush();
    if (commit) {
      if (auto s = consumer.commit(next); !s.isOk()) std::cerr << "commit: " << s.toString() << "\n";
    }
  }
  if (commit && !next.empty()) {
    if (auto s = consumer.commit(next); !s.isOk()) {
      std::cerr << "final commit: " << s.toString() << "\n";
      rc = rc == 0 ? 1 : rc;
    }
  }
  consumer.close();
  std::cerr << "consume: " << received << " messages\n";
  return rc;
}

// One-process round trip through the broker at a fixed rate: each message carries its send time
// (steady clock ns); a PullConsumer of a fresh group (from the first offset) takes them back. The
// RocketMQ hop of the MQTT bridge with nothing of ferry's runtime around it: the broker's share
// of the bridge's latency (bench mqtt-bridge prints it beside mosquitto alone).
int latency(const std::string& namesrv, const std::string& topic, int queues, const std::string& cluster,
            std::int64_t rate, std::int64_t seconds) {
  using Clock = std::chrono::steady_clock;
  if (int rc = createTopic(namesrv, topic, queues, cluster); rc != 0) return rc;
  auto client = connect(namesrv);
  if (!client) return 1;
  ferry::rocketmq::ConsumerOptions o;
  o.group = "lat-" + topic;
  o.subscriptions.push_back({topic, "*"});
  o.fromWhere = ferry::rocketmq::ConsumeFromWhere::kFirstOffset;
  ferry::rocketmq::PullConsumer consumer(*client, o);
  if (auto st = consumer.start(); !st.isOk()) {
    std::cerr << "consumer start: " << st.toString() << "\n";
    return 1;
  }
  // Until every queue is assigned and being pulled (a message sent before would wait for it).
  const auto ready = Clock::now() + std::chrono::seconds(30);
  while (consumer.assignment().size() < static_cast<std::size_t>(queues) && Clock::now() < ready)
    (void)consumer.poll(1, std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  Producer producer(*client, ProducerOptions{});
  const std::int64_t n = rate * seconds;
  std::atomic<std::int64_t> failed{0};
  std::thread sender([&] {
    const auto t0 = Clock::now();
    for (std::int64_t i = 0; i < n; ++i) {
      std::this_thread::sleep_until(t0 + std::chrono::nanoseconds(i * 1000000000 / rate));
      OutgoingMessage m;
      m.topic = topic;
      m.body = std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
      producer.sendAsync(std::move(m), QueueSelection::roundRobin(), [&failed](ferry::Result<ferry::rocketmq::SendResult> r) {
        if (!r.isOk()) failed.fetch_add(1);
      });
    }
  });
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(n));
  auto last = Clock::now();
  while (static_cast<std::int64_t>(ms.size()) + failed.load() < n && Clock::now() - last < std::chrono::seconds(10)) {
    auto batch = consumer.poll(512, std::chrono::milliseconds(100));
    if (!batch.isOk()) break;
    const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    for (const auto& pm : *batch) {
      ms.push_back(static_cast<double>(now - std::stoll(pm.message.body)) / 1e6);
      last = Clock::now();
    }
  }
  sender.join();
  consumer.close();
  if (ms.empty()) {
    std::cerr << "latency: nothing came back\n";
    return 1;
  }
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(ms.size())))]; };
  nlohmann::json out = {{"n", ms.size()}, {"sent", n}, {"failed", failed.load()}, {"p50_ms", at(0.5)},
                        {"p99_ms", at(0.99)}, {"max_ms", ms.back()}};
  std::cout << out.dump() << std::endl;
  return static_cast<std::int64_t>(ms.size()) == n ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ferry side of the RocketMQ interop tests"};
  app.require_subcommand(1);
  std::string namesrv = "127.0.0.1:19876";
  std::string topic;
  std::string group;
  std::string cluster;  // empty: the NameServer's only cluster
  std::int64_t count = 0;
  std::int64_t seed = 0;
  std::int64_t timeoutMs = 60000;
  int queues = 4;

  auto* ct = app.add_subcommand("create-topic", "create a topic on a cluster");
  ct->add_option("--namesrv", namesrv);
  ct->add_option("--topic", topic)->required();
  ct->add_option("--queues", queues);
  ct->add_option("--cluster", cluster);

  auto* pr = app.add_subcommand("produce", "send the deterministic messages");
  pr->add_option("--namesrv", namesrv);
  pr->add_option("--topic", topic)->required();
  pr->add_option("--count", count)->required();
  pr->add_option("--seed", seed)->required();
  std::int64_t batch = 1;
  pr->add_option("--batch", batch, "messages per SEND_BATCH_MESSAGE (1: single sends)");

  std::int64_t firstSeq = 0;
  pr->add_option("--first-seq", firstSeq, "first sequence number (default 0)");

  auto* co = app.add_subcommand("consume", "read topics with ferry's PullConsumer");
  std::vector<std::string> topics;
  std::string tags = "*";
  std::string from = "first";
  std::int64_t idleMs = 5000;
  bool commit = true;
  bool exact = false;
  co->add_option("--namesrv", namesrv);
  co->add_option("--topic", topics)->required();
  co->add_option("--group", group)->required();
  co->add_option("--tags", tags);
  co->add_option("--from", from)->check(CLI::IsMember({"first", "last"}));
  co->add_option("--count", count);
  co->add_option("--idle-ms", idleMs);
  co->add_option("--timeout-ms", timeoutMs);
  co->add_option("--commit", commit);
  co->add_flag("--exact", exact, "stop at exactly --count messages");

  auto* la = app.add_subcommand("latency", "send-to-pull latency through the broker at a fixed rate");
  std::int64_t rate = 2000, seconds = 10;
  la->add_option("--namesrv", namesrv);
  la->add_option("--topic", topic)->required();
  la->add_option("--queues", queues);
  la->add_option("--cluster", cluster);
  la->add_option("--rate", rate);
  la->add_option("--seconds", seconds);

  CLI11_PARSE(app, argc, argv);
  if (la->parsed()) return latency(namesrv, topic, queues, cluster, rate, seconds);
  if (ct->parsed()) return createTopic(namesrv, topic, queues, cluster);
  if (pr->parsed()) return produce(namesrv, topic, count, seed, batch, firstSeq);
  return consume(namesrv, topics, group, tags, from, count, idleMs, timeoutMs, commit, exact);
}
