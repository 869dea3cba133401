// The built-in connectors' plugin descriptor (see builtins.h). Everything here is constant
// initialised: no code runs before builtinPlugins() is called.
#include "connectors/builtins.h"

#include "connectors/common.h"
#include "connectors/datagen/datagen_source.h"
#include "connectors/file/file_sink.h"
#include "connectors/file/file_source.h"
#include "connectors/http/http_sink.h"
#include "connectors/http/http_source.h"
#include "connectors/jdbc/jdbc_sink.h"
#include "connectors/jdbc/jdbc_source.h"
#include "connectors/kafka/kafka_replicator.h"
#include "connectors/kafka/kafka_sink.h"
#include "connectors/kafka/kafka_source.h"
#include "connectors/log/log_sink.h"
#include "connectors/mqtt/bridge.h"
#include "connectors/mqtt/mqtt_sink.h"
#include "connectors/mqtt/mqtt_source.h"
#include "connectors/redis/redis_sink.h"
#include "connectors/redis/redis_source.h"
#include "connectors/rocketmq/replicator.h"
#include "connectors/rocketmq/rocketmq_sink.h"
#include "connectors/rocketmq/rocketmq_source.h"
#include "ferry/connector.h"
#include "ferry/transform.h"

namespace ferry::connectors {
namespace {

constexpr const char* kFileSourceAliases[] = {"org.apache.kafka.connect.file.FileStreamSourceConnector",
                                              "file-source", nullptr};
constexpr const char* kFileSinkAliases[] = {"org.apache.kafka.connect.file.FileStreamSinkConnector",
                                            "file-sink", nullptr};
constexpr const char* kDatagenAliases[] = {"datagen", nullptr};
constexpr const char* kLogAliases[] = {"log", "stdout", "StdoutSink", nullptr};
constexpr const char* kBlackholeAliases[] = {"blackhole", nullptr};
constexpr const char* kRocketMQSourceAliases[] = {"rocketmq-source", nullptr};
constexpr const char* kRocketMQSinkAliases[] = {"rocketmq-sink", nullptr};
constexpr const char* kKafkaSinkAliases[] = {"kafka-sink", nullptr};
constexpr const char* kKafkaSourceAliases[] = {"kafka-source", nullptr};
constexpr const char* kReplicatorAliases[] = {"rocketmq-replicator", nullptr};
constexpr const char* kKafkaReplicatorAliases[] = {"kafka-replicator", nullptr};
constexpr const char* kMQTTSourceAliases[] = {"mqtt-source", nullptr};
constexpr const char* kMQTTSinkAliases[] = {"mqtt-sink", nullptr};
constexpr const char* kBridgeAliases[] = {"mqtt-rocketmq-bridge", nullptr};
constexpr const char* kRedisSourceAliases[] = {"redis-source", nullptr};
constexpr const char* kRedisSinkAliases[] = {"redis-sink", nullptr};
constexpr const char* kJdbcSourceAliases[] = {"io.confluent.connect.jdbc.JdbcSourceConnector", "jdbc-source", nullptr};
constexpr const char* kHttpSourceAliases[] = {"http-source", "webhook", nullptr};
constexpr const char* kHttpSinkAliases[] = {"http-sink", nullptr};
constexpr const char* kJdbcSinkAliases[] = {"io.confluent.connect.jdbc.JdbcSinkConnector", "jdbc-sink", nullptr};

constexpr PluginEntry kEntries[] = {
    {"FileStreamSource", kFileSourceAliases, PluginKind::kSourceConnector, kVersion,
     "Tails text files line by line, following rotation",
     &pluginCreate<FileStreamSourceConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"FileStreamSink", kFileSinkAliases, PluginKind::kSinkConnector, kVersion,
     "Appends each record's value as a line to a file",
     &pluginCreate<FileStreamSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"JdbcSource", kJdbcSourceAliases, PluginKind::kSourceConnector, kVersion,
     "Reads PostgreSQL tables or a query (bulk, incrementing, timestamp, timestamp+incrementing)",
     &pluginCreate<JdbcSourceConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"JdbcSink", kJdbcSinkAliases, PluginKind::kSinkConnector, kVersion,
     "Writes typed records into PostgreSQL or MySQL/MariaDB tables (insert, upsert, update, delete)",
     &pluginCreate<JdbcSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"DatagenSource", kDatagenAliases, PluginKind::kSourceConnector, kVersion,
     "Generates sequence-numbered records (string, json or bytes) at a given rate",
     &pluginCreate<DatagenSourceConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"LogSink", kLogAliases, PluginKind::kSinkConnector, kVersion,
     "Writes each record as a line to stdout or the worker log",
     &pluginCreate<LogSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"BlackholeSink", kBlackholeAliases, PluginKind::kSinkConnector, kVersion,
     "Drops every record, counting records and bytes (benchmarks)",
     &pluginCreate<BlackholeSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"RocketMQSource", kRocketMQSourceAliases, PluginKind::kSourceConnector, kVersion,
     "Reads RocketMQ topics (pull consumer group, offsets committed to the broker)",
     &pluginCreate<RocketMQSourceConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"RocketMQSink", kRocketMQSinkAliases, PluginKind::kSinkConnector, kVersion,
     "Sends records to RocketMQ topics (async sends, acknowledged before commit)",
     &pluginCreate<RocketMQSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"RocketMQReplicator", kReplicatorAliases, PluginKind::kSourceConnector, kVersion,
     "Replicates RocketMQ topics cluster to cluster (direct; paired with RocketMQReplicatorSink)",
     &pluginCreate<RocketMQReplicatorConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"RocketMQReplicatorSink", nullptr, PluginKind::kSinkConnector, kVersion,
     "Target side of RocketMQReplicator (records carrying replicator headers)",
     &pluginCreate<RocketMQReplicatorSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"MQTTSource", kMQTTSourceAliases, PluginKind::kSourceConnector, kVersion,
     "Subscribes to MQTT topic filters (3.1.1/5, QoS 0-2, persistent and shared subscriptions; "
     "acknowledged once safe)",
     &pluginCreate<MQTTSourceConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"MQTTSink", kMQTTSinkAliases, PluginKind::kSinkConnector, kVersion,
     "Publishes records to MQTT (topic templates, QoS 0-2, retain, v5 properties from headers)",
     &pluginCreate<MQTTSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"KafkaSource", kKafkaSourceAliases, PluginKind::kSourceConnector, kVersion,
     "Reads Kafka topics (librdkafka consumer group, offsets committed once records are safe)",
     &pluginCreate<KafkaSourceConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"KafkaSink", kKafkaSinkAliases, PluginKind::kSinkConnector, kVersion,
     "Sends records to Kafka topics (librdkafka, idempotent, acknowledged before commit)",
     &pluginCreate<KafkaSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"KafkaReplicator", kKafkaReplicatorAliases, PluginKind::kSourceConnector, kVersion,
     "Replicates Kafka topics cluster to cluster (direct; paired with KafkaReplicatorSink)",
     &pluginCreate<KafkaReplicatorConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"KafkaReplicatorSink", nullptr, PluginKind::kSinkConnector, kVersion,
     "Target side of KafkaReplicator (partition-preserving copies, group offset sync)",
     &pluginCreate<KafkaReplicatorSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"RedisSource", kRedisSourceAliases, PluginKind::kSourceConnector, kVersion,
     "Reads Redis streams (consumer group, XACK once safe), lists (reliable queue) or pub/sub channels",
     &pluginCreate<RedisSourceConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"RedisSink", kRedisSinkAliases, PluginKind::kSinkConnector, kVersion,
     "Writes records to Redis: SET, HSET, XADD, PUBLISH, LPUSH or RPUSH (pipelined; standalone, TLS, cluster)",
     &pluginCreate<RedisSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"HttpSource", kHttpSourceAliases, PluginKind::kSourceConnector, kVersion,
     "HTTP webhook server (2xx only once the records are safe) or a polled HTTP API with a cursor",
     &pluginCreate<HttpSourceConnector, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"HttpSink", kHttpSinkAliases, PluginKind::kSinkConnector, kVersion,
     "POST/PUT records to a URL template (libcurl; batches, retries honouring Retry-After, order per key)",
     &pluginCreate<HttpSinkConnector, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"MqttRocketMQBridge", kBridgeAliases, PluginKind::kTransform, kVersion,
     "MQTT <-> RocketMQ mapping rules: MQTT topic levels to RocketMQ topic + tag and back",
     &pluginCreate<mqttc::MqttRocketMQBridge, Transform>, &pluginDestroy<Transform>},
};

}  // namespace

const PluginDescriptor& builtinPlugins() {
  static constexpr PluginDescriptor kDescriptor =
      makePluginDescriptor("ferry-builtin-connectors", kVersion, kEntries);
  return kDescriptor;
}

}  // namespace ferry::connectors
