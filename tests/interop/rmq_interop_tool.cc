// rmq_interop_tool: the ferry side of the RocketMQ interop tests (tests/interop), a CLI shaped
// like the Java one (tests/interop/java):
//
//   create-topic --namesrv A --topic T [--queues 4] [--cluster ferry-a]
//       RocketmqClient::createTopic (UPDATE_AND_CREATE_TOPIC, then waits for the route).
//   produce --namesrv A --topic T --count N --seed S [--batch K]
//       N synchronous sends, each to the explicit queue (broker of the route, seq % queues), of
//       the deterministic message for seq (body interopBody(seed, seq), TAGS T<seq%3>, KEYS
//       k<seq>, user property seq=<seq>). With --batch K > 1: SEND_BATCH_MESSAGE, up to K
//       messages of one queue per batch (queues in turn, seqs ascending within a queue). One JSON
//       line per message on stdout: {"seq":..,"broker":..,"queue":..,"offset":..,"msg_id":..}.
//   consume ...
//       Not yet: ferry's consumer is being written; exits 2.
//
// Diagnostics go to stderr. Single-threaded (the client runs its own io thread).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rocketmq/client.h"
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
  ferry::Status s = client->createTopic(topic, queues, {cluster});
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
            std::int64_t seed, std::int64_t batch) {
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
    for (std::int64_t seq = 0; seq < count; ++seq) {
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
    for (std::int64_t base = 0; base < count && rc == 0; base += round) {
      for (std::int32_t qid = 0; qid < queueCount && rc == 0; ++qid) {
        std::vector<OutgoingMessage> msgs;
        std::vector<std::int64_t> seqs;
        for (std::int64_t seq = base + qid; seq < std::min(count, base + round);
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ferry side of the RocketMQ interop tests"};
  app.require_subcommand(1);
  std::string namesrv = "127.0.0.1:19876";
  std::string topic;
  std::string group;
  std::string cluster = "ferry-a";
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

  auto* co = app.add_subcommand("consume", "not yet: ferry's consumer is not written yet");
  co->add_option("--namesrv", namesrv);
  co->add_option("--topic", topic);
  co->add_option("--group", group);
  co->add_option("--count", count);
  co->add_option("--timeout-ms", timeoutMs);

  CLI11_PARSE(app, argc, argv);
  if (ct->parsed()) return createTopic(namesrv, topic, queues, cluster);
  if (pr->parsed()) return produce(namesrv, topic, count, seed, batch);
  // TODO(interop): implement with src/backbone/rocketmq/consumer.h once it exists.
  std::cerr << "consume: not yet (ferry's RocketMQ consumer is not written yet)\n";
  return 2;
}
