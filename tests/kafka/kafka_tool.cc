// kafka_tool: the Kafka end of ferry's Kafka integration tests, on librdkafka.
//
//   consume --bootstrap B --topic T --count N [--timeout-ms 120000]
//       A fresh consumer group reads T from the earliest offset until N records arrived (or the
//       timeout: exit 3); one JSON line per record:
//       {"partition","offset","key_hex","value_hex","headers":{name: value},"ts"}
//   produce --bootstrap B --topic T --count N [--first-seq F]
//       N records, value "<seq>", key "k<seq>", header seq=<seq>, idempotent, acks=all; exit 0
//       once every one was acknowledged. Prints one JSON summary line.
//
// Diagnostics on stderr.
#include <librdkafka/rdkafka.h>

#include <CLI/CLI.hpp>
#include <sys/types.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

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

int consume(const std::string& bootstrap, const std::string& topic, long count, long timeoutMs) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::string group =
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
  rd_kafka_topic_partition_list_add(subs, topic.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(rk, subs);
  rd_kafka_topic_partition_list_destroy(subs);
  long got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  while (got < count && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
    if (m == nullptr) continue;
    if (m->err) {
      if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
        std::cerr << "consume: " << rd_kafka_message_errstr(m) << "\n";
      rd_kafka_message_destroy(m);
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
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  if (got < count) {
    std::cerr << "timeout: " << got << " of " << count << "\n";
    return 3;
  }
  return 0;
}

int produce(const std::string& bootstrap, const std::string& topic, long count, long first) {
  char err[512];
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
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_VALUE(const_cast<char*>(seq.data()), seq.size()),
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
  long first = 0;
  auto* pro = app.add_subcommand("produce", "produce sequence-numbered records");
  pro->add_option("--bootstrap", bootstrap);
  pro->add_option("--topic", topic)->required();
  pro->add_option("--count", count)->required();
  pro->add_option("--first-seq", first);
  CLI11_PARSE(app, argc, argv);
  if (pro->parsed()) return produce(bootstrap, topic, count, first);
  return consume(bootstrap, topic, count, timeoutMs);
}
