// kafka_relay: the limit for Kafka -> Kafka replication on this machine, written directly on
// librdkafka with nothing else: one consumer on the source (fresh group, from the earliest
// offset), one idempotent producer (acks=all, linger.ms=5, as ferry's) on the target, each record
// to the same partition with key, value, headers and timestamp, no offset commits. Stops once
// --count records were acknowledged by the target and prints
//   {"records": N, "failed": F, "seconds": wall time from start to the last acknowledgement,
//    "peak_rss_kb": VmHWM}
// bench/kafka/kafka_replicate.py runs it beside ferry's KafkaReplicator and MirrorMaker 2.
#include <librdkafka/rdkafka.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>

namespace {

std::atomic<long> acked{0};
std::atomic<long> failed{0};

void onDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  if (m->err)
    failed.fetch_add(1);
  else
    acked.fetch_add(1);
}

bool set(rd_kafka_conf_t* c, const char* k, const std::string& v) {
  char err[512];
  if (rd_kafka_conf_set(c, k, v.c_str(), err, sizeof err) == RD_KAFKA_CONF_OK) return true;
  std::cerr << k << ": " << err << "\n";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Kafka -> Kafka relay on librdkafka (ferry benchmark limit)"};
  std::string source, target, topic, targetTopic;
  long count = 0;
  app.add_option("--source", source)->required();
  app.add_option("--target", target)->required();
  app.add_option("--topic", topic)->required();
  app.add_option("--target-topic", targetTopic)->required();
  app.add_option("--count", count)->required();
  CLI11_PARSE(app, argc, argv);

  const auto t0 = std::chrono::steady_clock::now();
  char err[512];
  rd_kafka_conf_t* cc = rd_kafka_conf_new();
  if (!set(cc, "bootstrap.servers", source) ||
      !set(cc, "group.id", "relay-" + std::to_string(t0.time_since_epoch().count())) ||
      !set(cc, "auto.offset.reset", "earliest") || !set(cc, "enable.auto.commit", "false"))
    return 2;
  rd_kafka_t* consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
  if (!consumer) {
    std::cerr << err << "\n";
    return 2;
  }
  rd_kafka_poll_set_consumer(consumer);
  rd_kafka_conf_t* pc = rd_kafka_conf_new();
  if (!set(pc, "bootstrap.servers", target) || !set(pc, "enable.idempotence", "true") || !set(pc, "acks", "all") ||
      !set(pc, "linger.ms", "5"))
    return 2;
  rd_kafka_conf_set_dr_msg_cb(pc, onDelivery);
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
  if (!producer) {
    std::cerr << err << "\n";
    return 2;
  }
  rd_kafka_topic_partition_list_t* subs = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(subs, topic.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(consumer, subs);
  rd_kafka_topic_partition_list_destroy(subs);

  long sent = 0;
  while (sent < count) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 100);
    rd_kafka_poll(producer, 0);
    if (!m) continue;
    if (m->err) {
      rd_kafka_message_destroy(m);
      continue;
    }
    rd_kafka_headers_t* hdrs = nullptr;
    rd_kafka_message_detach_headers(m, &hdrs);
    rd_kafka_timestamp_type_t tt;
    const int64_t ts = rd_kafka_message_timestamp(m, &tt);
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          producer, RD_KAFKA_V_TOPIC(targetTopic.c_str()), RD_KAFKA_V_PARTITION(m->partition),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(m->payload, m->len),
          RD_KAFKA_V_KEY(m->key, m->key_len), RD_KAFKA_V_TIMESTAMP(ts > 0 ? ts : 0), RD_KAFKA_V_HEADERS(hdrs),
          RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        std::cerr << "produce: " << rd_kafka_err2str(e) << "\n";
        return 1;
      }
      rd_kafka_poll(producer, 50);
    }
    rd_kafka_message_destroy(m);
    ++sent;
  }
  rd_kafka_flush(producer, 120000);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long hwmKb = 0;
  {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("VmHWM:", 0) == 0) hwmKb = std::stol(line.substr(6));
  }
  std::cout << "{\"records\": " << acked.load() << ", \"failed\": " << failed.load() << ", \"seconds\": " << s
            << ", \"peak_rss_kb\": " << hwmKb << "}" << std::endl;
  rd_kafka_destroy(producer);
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  return failed.load() == 0 && acked.load() >= count ? 0 : 1;
}
