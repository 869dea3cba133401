// Worker configuration (worker.properties): every key declared once in workerConfigDef().
//
// Unknown keys are refused at start-up with every error at once, so a typo never silently falls
// back to a default. Thread-safety: WorkerConfig is a value, read-only after parsing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/config.h"
#include "ferry/result.h"
#include "runtime/config_providers.h"

namespace ferry::runtime {

// The backbone topics of a cluster named N: its log kClusterTopicPrefix + N, and that name with
// "-snapshots" and "-offsets". The worker never shows them (GET /topics).
inline constexpr const char* kClusterTopicPrefix = "ferry-cluster-";

struct WorkerConfig {
  std::string workerId;              // default: <hostname>:<rest.port>
  std::string restHost = "127.0.0.1";
  int restPort = 8082;
  // REST transport: listeners and listeners.https.ssl.* as Kafka Connect names them.
  std::vector<std::string> restListeners;
  std::string restKeystoreLocation;
  std::string restKeystoreType = "PEM";
  std::string restKeyPassword;
  std::string restTruststoreLocation;
  std::string restClientAuthentication = "none";
  std::vector<std::string> restEnabledProtocols{"TLSv1.2", "TLSv1.3"};
  std::int64_t restHeaderTimeoutMs = 10000;
  std::int64_t restBodyTimeoutMs = 30000;
  std::int64_t restIdleTimeoutMs = 30000;
  std::int64_t restWriteTimeoutMs = 30000;
  std::int64_t restMaxConnections = 1024;
  std::int64_t restRequestQueueSize = 64;
  std::string dataDir = "ferry-data";
  std::vector<std::string> pluginPath;
  // The JVM connector host (jvm/README.md): started when plugin.path holds Java jars.
  std::string jvmJavaHome;                // jvm.java.home ("": $JAVA_HOME, else java on PATH)
  std::string jvmHeapMax;                 // jvm.heap.max ("": the JVM's default)
  std::vector<std::string> jvmOptions;    // jvm.options
  std::string jvmHostClasspath;           // jvm.host.classpath ("": as this build put it)
  bool jvmPluginIsolation = true;         // jvm.plugin.isolation
  // file.allowed.dirs: where connectors may open local files (empty: <dataDir>/files).
  std::vector<std::string> fileAllowedDirs;
  std::string webRoot;
  std::string logLevel = "info";

  // REST authentication and request checks (src/rest/request_policy.h).
  std::string restAuthUsersFile;           // rest.auth.users.file
  std::string restAuthTokensFile;          // rest.auth.tokens.file
  std::string restAuthMtlsDefaultRole;     // rest.auth.mtls.default.role ("" = refused)
  bool restAuthAllowUnauthenticated = false;
  std::vector<std::string> restAllowedHostNames;  // empty: the defaults
  std::string restAdvertisedHostName;             // rest.advertised.host.name; empty: none
  std::vector<std::string> accessControlAllowOrigin;
  std::string accessControlAllowMethods;

  std::string backbone = "embedded";
  std::int64_t embeddedSegmentBytes = 64ll << 20;
  std::string embeddedFsync = "always";
  std::int64_t embeddedFsyncIntervalMs = 1000;
  std::int64_t embeddedMaxRecordBytes = 16ll << 20;
  std::int64_t tasksMaxLimit = 1000;  // tasks.max.limit
  bool refuseUnknownConnectorKeys = false;   // config.unknown.keys=refuse (default accept)
  std::string clientOverridePolicy = "All";  // connector.client.config.override.policy
  bool restRocketmqCompat = false;           // rest.rocketmq.compat.enabled
  std::int64_t embeddedRetentionBytes = -1;
  std::int64_t embeddedRetentionMs = 7ll * 24 * 3600 * 1000;
  std::int32_t defaultQueues = 4;
  std::string rocketmqNamesrv = "127.0.0.1:9876";
  std::string rocketmqCluster;
  std::int64_t rocketmqMaxInflight = 1024;
  std::string rocketmqAccessKey;
  std::string rocketmqSecretKey;
  std::string kafkaBootstrapServers = "127.0.0.1:9092";
  std::int32_t kafkaReplicationFactor = -1;
  bool kafkaStaticMembership = true;
  std::int64_t kafkaSessionTimeoutMs = 10000;
  std::int64_t kafkaRequestTimeoutMs = 10000;
  StringMap kafkaClientConfig;    // backbone.kafka.client.* (librdkafka properties), prefix stripped
  StringMap kafkaProducerConfig;  // backbone.kafka.producer.*
  StringMap kafkaConsumerConfig;  // backbone.kafka.consumer.*

  // Exactly-once sources (kafka backbone): records and positions in one producer transaction,
  // positions in the offset.storage.topic instead of data.dir.
  bool exactlyOnceSource = false;
  std::string offsetStorageTopic = "ferry-offsets";
  // Where schemas travel by id (runtime/schema_registry.h); empty: they do not.
  std::string schemaStorageTopic = "ferry-schemas";
  std::int32_t offsetStoragePartitions = 5;

  // Distributed mode (ferry distributed).
  std::string clusterName = "ferry";
  std::int64_t clusterSessionTimeoutMs = 2000;
  std::int64_t clusterHeartbeatIntervalMs = 500;
  std::int64_t clusterLeaseMarginMs = 500;
  std::string clusterStrategy = "sticky-balanced";
  double clusterWorkerCapacity = 1.0;
  std::int64_t clusterSnapshotEvents = 2000;
  bool offsetStorageTopicSet = false;  // offset.storage.topic given explicitly

  std::int64_t offsetFlushIntervalMs = 1000;
  std::int64_t offsetFlushTimeoutMs = 5000;
  std::string keyConverter = "ByteArrayConverter";
  std::string valueConverter = "ByteArrayConverter";
  std::string headerConverter = "SimpleHeaderConverter";  // Kafka Connect's default
  StringMap keyConverterConfig;     // key.converter.* with the prefix stripped
  StringMap valueConverterConfig;   // value.converter.*
  StringMap headerConverterConfig;  // header.converter.*

  bool taskRestartEnable = true;
  std::int64_t taskRestartBackoffInitialMs = 1000;
  std::int64_t taskRestartBackoffMaxMs = 60000;
  std::int64_t taskMaxInflightRecords = 100000;
  std::int64_t taskMaxInflightBytes = 64ll << 20;
  std::int64_t taskPollBatch = 2000;
  int taskThreads = 0;  // task.threads: the executor's shared threads (0: one per core, at least 2)
  std::int64_t taskShutdownTimeoutMs = 5000;

  // config.providers (config_providers.h): resolves ${provider:...} references in connector
  // configs where they are used. Never null after parseWorkerConfig (empty when none enabled).
  std::shared_ptr<const ConfigProviders> configProviders;
};

const ConfigDef& workerConfigDef();
// Parses worker properties; InvalidArgument lists every bad or unknown key.
Result<WorkerConfig> parseWorkerConfig(const StringMap& props);

}  // namespace ferry::runtime
