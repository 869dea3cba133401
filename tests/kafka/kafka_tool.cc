// kafka_tool: the Kafka end of ferry's Kafka integration tests, on librdkafka.
//
//   consume --bootstrap B --topic T --count N [--timeout-ms 120000] [--group G] [--max M]
//           [--idle-ms I] [--values-out FILE]
//       A consumer group (fresh, or G) reads T from the earliest offset (or G's committed
//       offsets) until N records arrived (or the timeout: exit 3); with --count 0, until no record
//       came for I ms (default 5000). --max stops after M records. One JSON line per record:
//       {"partition","offset","key_hex","value_hex","headers":{name: value},"ts"}, or with
//       --values-out only the values, one per line, into FILE and a JSON summary on stdout.
//       With --group the offsets of the records read are committed before exit; --partition P
//       reads only partition P from its start.
//   produce --bootstrap B --topic T --count N [--first-seq F] [--partitions P]
//       N records, value "<seq>", key "k<seq>", header seq=<seq>, idempotent, acks=all; exit 0
//       once every one was acknowledged. --partitions creates T with P partitions first;
//       --payload pads values with spaces to that many bytes. Prints
//       one JSON summary line.
//   topics --bootstrap B
//       {"topic": partitions, ...} of every topic.
//   ends --bootstrap B --topic T
//       {"partitions": P, "end": sum of the partitions' high watermarks} (0 partitions: missing).
//   grow --bootstrap B --topic T --partitions P
//   delete --bootstrap B --topic T
//       Adds partitions to T up to P.
//   create --bootstrap B --topic T --partitions P [--config k=v ...]
//       Creates T with P partitions and the topic configs given (e.g.
//       message.timestamp.type=LogAppendTime, so each record's timestamp is the broker's append
//       time); a topic that exists already is left as it is.
//
// Diagnostics on stderr.
#include <librdkafka/rdkafka.h>

#include <CLI/CLI.hpp>
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "kafka/rdkafka_util.h"

namespace {

using ferry::StringMap;

std::string hex(const void* p, std::size_t n) {
  static const char* k = "0123456789abcdef";
  std::string out;
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(k[b[i] >> 4]);
    out.push_back(k[b[i] & 15]);
  }
  return out;
}

struct ConsumeOptions {
  std::string group;
  long max = -1;
  long idleMs = 5000;
  std::string valuesOut;
  int partition = -1;  // >= 0: read only this partition from its start (assigned, no group join)
};

int consume(const std::string& bootstrap, const std::string& topic, long count, long timeoutMs,
            const ConsumeOptions& o) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::string group = !o.group.empty() ? o.group :
      "kafka-tool-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  for (auto [k, v] : {std::pair<const char*, std::string>{"bootstrap.servers", bootstrap},
                      {"group.id", group},
                      {"auto.offset.reset", "earliest"},
                      {"enable.auto.commit", "false"}}) {
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      std::cerr << k << ": " << err << "\n";
      return 2;
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) {
    std::cerr << "consumer: " << err << "\n";
    return 2;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* subs = rd_kafka_topic_partition_list_new(1);
  if (o.partition >= 0) {
    rd_kafka_topic_partition_list_add(subs, topic.c_str(), o.partition)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, subs);
  } else {
    rd_kafka_topic_partition_list_add(subs, topic.c_str(), RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, subs);
  }
  rd_kafka_topic_partition_list_destroy(subs);
  long got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  auto lastRecord = std::chrono::steady_clock::now();
  std::ofstream values;
  if (!o.valuesOut.empty()) values.open(o.valuesOut, std::ios::trunc);
  while ((count == 0 || got < count) && (o.max < 0 || got < o.max) && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
    if (m == nullptr) {
      if (count == 0 && std::chrono::steady_clock::now() - lastRecord > std::chrono::milliseconds(o.idleMs)) break;
      continue;
    }
    lastRecord = std::chrono::steady_clock::now();
    if (m->err) {
      if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
        std::cerr << "consume: " << rd_kafka_message_errstr(m) << "\n";
      rd_kafka_message_destroy(m);
      continue;
    }
    if (values.is_open()) {
      values.write(static_cast<const char*>(m->payload ? m->payload : ""), static_cast<std::streamsize>(m->len));
      values.put('\n');
      rd_kafka_message_destroy(m);
      ++got;
      continue;
    }
    nlohmann::json headers = nlohmann::json::object();
    rd_kafka_headers_t* hdrs = nullptr;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* name;
      const void* val;
      size_t size;
      for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i)
        headers[name] = val ? std::string(static_cast<const char*>(val), size) : std::string();
    }
    rd_kafka_timestamp_type_t tt;
    std::cout << nlohmann::json{{"partition", m->partition},
                                {"offset", m->offset},
                                {"key_hex", m->key ? hex(m->key, m->key_len) : ""},
                                {"value_hex", m->payload ? hex(m->payload, m->len) : ""},
                                {"headers", headers},
                                {"ts", rd_kafka_message_timestamp(m, &tt)}}
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
    rd_kafka_message_destroy(m);
    ++got;
  }
  std::cout.flush();
  if (values.is_open()) {
    values.close();
    std::cout << nlohmann::json{{"records", got}}.dump() << std::endl;
  }
  if (!o.group.empty() && got > 0) {
    rd_kafka_resp_err_t e = rd_kafka_commit(rk, nullptr, 0);  // the offsets of the records returned
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) std::cerr << "commit: " << rd_kafka_err2str(e) << "\n";
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  if (count > 0 && got < count && (o.max < 0 || got < o.max)) {
    std::cerr << "timeout: " << got << " of " << count << "\n";
    return 3;
  }
  return 0;
}

int produce(const std::string& bootstrap, const std::string& topic, long count, long first, int partitions,
            long payload) {
  char err[512];
  if (partitions > 0) {
    StringMap settings = {{"bootstrap.servers", bootstrap}};
    auto admin = ferry::kafka::newAdminHandle({{&settings, ""}});
    if (!admin.isOk()) {
      std::cerr << admin.status().toString() << "\n";
      return 2;
    }
    ferry::Status s = ferry::kafka::createTopic(*admin, topic, partitions, -1, 10000);
    ferry::kafka::destroy(*admin);
    if (!s.isOk()) {
      std::cerr << s.toString() << "\n";
      return 2;
    }
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (auto [k, v] : {std::pair<const char*, const char*>{"bootstrap.servers", bootstrap.c_str()},
                      {"enable.idempotence", "true"},
                      {"acks", "all"},
                      {"linger.ms", "5"}}) {
    if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
      std::cerr << k << ": " << err << "\n";
      return 2;
    }
  }
  static long failed = 0;
  rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void*) {
    if (m->err && failed++ == 0) std::cerr << "delivery: " << rd_kafka_err2str(m->err) << "\n";
  });
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) {
    std::cerr << "producer: " << err << "\n";
    return 2;
  }
  for (long i = 0; i < count; ++i) {
    const std::string seq = std::to_string(first + i), key = "k" + seq;
    std::string value = seq;
    if (payload > static_cast<long>(value.size())) value.append(static_cast<std::size_t>(payload) - value.size(), ' ');
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
          RD_KAFKA_V_KEY(const_cast<char*>(key.data()), key.size()),
          RD_KAFKA_V_HEADER("seq", seq.data(), static_cast<ssize_t>(seq.size())), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        std::cerr << "produce: " << rd_kafka_err2str(e) << "\n";
        return 1;
      }
      rd_kafka_poll(rk, 100);
    }
    rd_kafka_poll(rk, 0);
  }
  rd_kafka_resp_err_t e = rd_kafka_flush(rk, 60000);
  rd_kafka_destroy(rk);
  std::cout << nlohmann::json{{"produced", count}, {"failed", failed}}.dump() << std::endl;
  return e == RD_KAFKA_RESP_ERR_NO_ERROR && failed == 0 ? 0 : 1;
}

// topics / ends / grow: small admin requests through ferry's librdkafka helpers.
int admin(const std::string& bootstrap, const std::string& what, const std::string& topic, int partitions,
          const StringMap& configs = {}) {
  StringMap settings = {{"bootstrap.servers", bootstrap}};
  auto rk = ferry::kafka::newAdminHandle({{&settings, ""}});
  if (!rk.isOk()) {
    std::cerr << rk.status().toString() << "\n";
    return 2;
  }
  int rc = 0;
  if (what == "create") {
    ferry::Status s = ferry::kafka::createTopic(*rk, topic, partitions, -1, 10000, configs);
    if (!s.isOk()) {
      std::cerr << s.toString() << "\n";
      rc = 1;
    }
  } else if (what == "delete") {
    ferry::Status s = ferry::kafka::deleteTopic(*rk, topic, 10000);
    if (!s.isOk()) {
      std::cerr << s.toString() << "\n";
      rc = 1;
    }
  } else if (what == "grow") {
    ferry::Status s = ferry::kafka::createPartitions(*rk, topic, partitions, 10000);
    if (!s.isOk()) {
      std::cerr << s.toString() << "\n";
      rc = 1;
    }
  } else {
    auto all = ferry::kafka::topicPartitions(*rk, 10000);
    if (!all.isOk()) {
      std::cerr << all.status().toString() << "\n";
      rc = 1;
    } else if (what == "topics") {
      std::cout << nlohmann::json(*all).dump() << std::endl;
    } else {
      const int parts = all->count(topic) ? (*all)[topic] : 0;
      std::int64_t end = 0;
      for (int p = 0; p < parts && rc == 0; ++p) {
        // A topic auto-created a moment ago has no leader yet ("Not leader for partition"):
        // retry for a while as Kafka's own tools do for retriable errors.
        auto w = ferry::kafka::watermarks(*rk, topic, p, 10000);
        for (int tries = 0; !w.isOk() && tries < 40; ++tries) {
          std::this_thread::sleep_for(std::chrono::milliseconds(250));
          w = ferry::kafka::watermarks(*rk, topic, p, 10000);
        }
        if (!w.isOk()) {
          std::cerr << w.status().toString() << "\n";
          rc = 1;
        } else {
          end += w->second;
        }
      }
      if (rc == 0) std::cout << nlohmann::json{{"partitions", parts}, {"end", end}}.dump() << std::endl;
    }
  }
  ferry::kafka::destroy(*rk);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Kafka test tool (ferry)"};
  app.require_subcommand(1);
  std::string bootstrap = "127.0.0.1:19092", topic;
  long count = 0, timeoutMs = 120000;
  auto* con = app.add_subcommand("consume", "read a topic from the earliest offset");
  con->add_option("--bootstrap", bootstrap);
  con->add_option("--topic", topic)->required();
  con->add_option("--count", count)->required();
  con->add_option("--timeout-ms", timeoutMs);
  ConsumeOptions co;
  con->add_option("--group", co.group);
  con->add_option("--max", co.max);
  con->add_option("--idle-ms", co.idleMs);
  con->add_option("--values-out", co.valuesOut);
  con->add_option("--partition", co.partition, "read only this partition, from its start");
  long first = 0;
  int partitions = 0;
  long payload = 0;
  auto* pro = app.add_subcommand("produce", "produce sequence-numbered records");
  pro->add_option("--bootstrap", bootstrap);
  pro->add_option("--topic", topic)->required();
  pro->add_option("--count", count)->required();
  pro->add_option("--first-seq", first);
  pro->add_option("--partitions", partitions);
  pro->add_option("--payload", payload, "pad values with spaces to this many bytes");
  auto* tops = app.add_subcommand("topics", "every topic and its partition count");
  tops->add_option("--bootstrap", bootstrap);
  auto* ends = app.add_subcommand("ends", "sum of a topic's high watermarks");
  ends->add_option("--bootstrap", bootstrap);
  ends->add_option("--topic", topic)->required();
  auto* grow = app.add_subcommand("grow", "add partitions to a topic");
  grow->add_option("--bootstrap", bootstrap);
  grow->add_option("--topic", topic)->required();
  grow->add_option("--partitions", partitions)->required();
  auto* del = app.add_subcommand("delete", "delete a topic (a missing one is fine)");
  del->add_option("--bootstrap", bootstrap);
  del->add_option("--topic", topic)->required();
  std::vector<std::string> configPairs;
  auto* create = app.add_subcommand("create", "create a topic with topic configs");
  create->add_option("--bootstrap", bootstrap);
  create->add_option("--topic", topic)->required();
  create->add_option("--partitions", partitions)->required();
  create->add_option("--config", configPairs, "k=v, repeatable");
  CLI11_PARSE(app, argc, argv);
  if (create->parsed()) {
    StringMap configs;
    for (const auto& kv : configPairs) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos) {
        std::cerr << "--config " << kv << ": expected k=v\n";
        return 2;
      }
      configs[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return admin(bootstrap, "create", topic, partitions, configs);
  }
  if (tops->parsed()) return admin(bootstrap, "topics", topic, 0);
  if (ends->parsed()) return admin(bootstrap, "ends", topic, 0);
  if (grow->parsed()) return admin(bootstrap, "grow", topic, partitions);
  if (del->parsed()) return admin(bootstrap, "delete", topic, 0);
  if (pro->parsed()) return produce(bootstrap, topic, count, first, partitions, payload);
  return consume(bootstrap, topic, count, timeoutMs, co);
}
