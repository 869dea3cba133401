// Worker configuration: defaults, typed errors all at once, unknown keys refused.
#include "runtime/worker_config.h"
#include "runtime/log_position_store.h"

#include <gtest/gtest.h>

namespace ferry::runtime {
namespace {

TEST(WorkerConfig, DefaultsAndOverrides) {
  auto c = parseWorkerConfig({{"rest.port", "9000"}, {"data.dir", "/tmp/x"}, {"worker.id", "w1"},
                              {"value.converter", "JsonConverter"}, {"value.converter.schemas.enable", "false"}});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->restPort, 9000);
  EXPECT_EQ(c->restHost, "127.0.0.1");
  EXPECT_EQ(c->dataDir, "/tmp/x");
  EXPECT_EQ(c->workerId, "w1");
  EXPECT_EQ(c->offsetFlushIntervalMs, 1000);
  EXPECT_EQ(c->valueConverter, "JsonConverter");
  EXPECT_EQ(c->valueConverterConfig.at("schemas.enable"), "false");
  EXPECT_EQ(c->keyConverter, "ByteArrayConverter");
  EXPECT_TRUE(c->taskRestartEnable);
}

TEST(WorkerConfig, JvmHostKeys) {
  auto c = parseWorkerConfig({{"jvm.java.home", "/usr/lib/jvm/java-17"}, {"jvm.heap.max", "512m"},
                              {"jvm.options", "-XX:+UseSerialGC,-Dx=y"}, {"jvm.plugin.isolation", "false"}});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->jvmJavaHome, "/usr/lib/jvm/java-17");
  EXPECT_EQ(c->jvmHeapMax, "512m");
  EXPECT_EQ(c->jvmOptions, (std::vector<std::string>{"-XX:+UseSerialGC", "-Dx=y"}));
  EXPECT_FALSE(c->jvmPluginIsolation);
  EXPECT_TRUE(parseWorkerConfig({})->jvmPluginIsolation);
  for (const char* good : {"", "2g", "1024", "64K"}) EXPECT_TRUE(parseWorkerConfig({{"jvm.heap.max", good}}).isOk()) << good;
  // A heap size is one size: no second option smuggled in, no unit the JVM does not know.
  for (const auto& bad : std::vector<std::string>{"2x", "g", "1g -Dx=y", "512mb", "-1g", "9999999999999g", std::string("1\0", 2)}) {
    auto r = parseWorkerConfig({{"jvm.heap.max", bad}});
    EXPECT_FALSE(r.isOk()) << bad;
    if (!r.isOk()) EXPECT_NE(r.status().message().find("jvm.heap.max"), std::string::npos);
  }
}

TEST(WorkerConfig, RestSecurityKeys) {
  auto d = parseWorkerConfig({});
  ASSERT_TRUE(d.isOk());
  EXPECT_TRUE(d->restAuthUsersFile.empty());
  EXPECT_TRUE(d->restAuthTokensFile.empty());
  EXPECT_FALSE(d->restAuthAllowUnauthenticated);
  EXPECT_TRUE(d->restAllowedHostNames.empty());
  EXPECT_TRUE(d->accessControlAllowOrigin.empty());
  auto c = parseWorkerConfig({{"rest.auth.users.file", "/etc/ferry/users"},
                              {"rest.auth.tokens.file", "/etc/ferry/tokens"},
                              {"rest.auth.mtls.default.role", "viewer"},
                              {"rest.auth.allow.unauthenticated", "true"},
                              {"rest.allowed.host.names", "a.example, b.example"},
                              {"access.control.allow.origin", "https://ui.example,http://localhost:3000"},
                              {"access.control.allow.methods", "GET,PUT"}});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->restAuthUsersFile, "/etc/ferry/users");
  EXPECT_EQ(c->restAuthTokensFile, "/etc/ferry/tokens");
  EXPECT_EQ(c->restAuthMtlsDefaultRole, "viewer");
  EXPECT_TRUE(c->restAuthAllowUnauthenticated);
  EXPECT_EQ(c->restAllowedHostNames, (std::vector<std::string>{"a.example", "b.example"}));
  EXPECT_EQ(c->accessControlAllowOrigin.size(), 2u);
  EXPECT_EQ(c->accessControlAllowMethods, "GET,PUT");
  EXPECT_FALSE(parseWorkerConfig({{"rest.auth.mtls.default.role", "root"}}).isOk());
  EXPECT_TRUE(d->restAdvertisedHostName.empty());
  auto adv = parseWorkerConfig({{"rest.advertised.host.name", "connect-1.internal"}});
  ASSERT_TRUE(adv.isOk());
  EXPECT_EQ(adv->restAdvertisedHostName, "connect-1.internal");
}

TEST(WorkerConfig, RestListenersTlsAndLimits) {
  auto c = parseWorkerConfig({{"listeners", "http://127.0.0.1:8082,https://127.0.0.1:8443"},
                              {"listeners.https.ssl.keystore.location", "/etc/ferry/ks.pem"},
                              {"listeners.https.ssl.key.password", "pw"},
                              {"listeners.https.ssl.client.authentication", "required"},
                              {"rest.request.header.timeout.ms", "2000"},
                              {"rest.max.connections", "10"}});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->restListeners, (std::vector<std::string>{"http://127.0.0.1:8082", "https://127.0.0.1:8443"}));
  EXPECT_EQ(c->restKeystoreLocation, "/etc/ferry/ks.pem");
  EXPECT_EQ(c->restKeystoreType, "PEM");
  EXPECT_EQ(c->restKeyPassword, "pw");
  EXPECT_EQ(c->restClientAuthentication, "required");
  EXPECT_EQ(c->restEnabledProtocols, (std::vector<std::string>{"TLSv1.2", "TLSv1.3"}));
  EXPECT_EQ(c->restHeaderTimeoutMs, 2000);
  EXPECT_EQ(c->restBodyTimeoutMs, 30000);
  EXPECT_EQ(c->restIdleTimeoutMs, 30000);
  EXPECT_EQ(c->restMaxConnections, 10);
  EXPECT_EQ(c->restRequestQueueSize, 64);
  // An https listener without a keystore, a keystore type other than PEM, an unknown client
  // authentication: refused, naming the key.
  auto noKs = parseWorkerConfig({{"listeners", "https://127.0.0.1:8443"}});
  ASSERT_FALSE(noKs.isOk());
  EXPECT_NE(noKs.status().message().find("listeners.https.ssl.keystore.location"), std::string::npos);
  auto jks = parseWorkerConfig({{"listeners.https.ssl.keystore.type", "JKS"}});
  ASSERT_FALSE(jks.isOk());
  EXPECT_NE(jks.status().message().find("listeners.https.ssl.keystore.type"), std::string::npos);
  auto auth = parseWorkerConfig({{"listeners.https.ssl.client.authentication", "maybe"}});
  ASSERT_FALSE(auth.isOk());
  EXPECT_NE(auth.status().message().find("listeners.https.ssl.client.authentication"), std::string::npos);
}

TEST(WorkerConfig, WorkerIdDefaultsToHostAndPort) {
  auto c = parseWorkerConfig({{"rest.port", "8123"}});
  ASSERT_TRUE(c.isOk());
  EXPECT_NE(c->workerId.find(":8123"), std::string::npos) << c->workerId;
  // With `listeners`, the first listener's port is the one clients reach.
  auto l = parseWorkerConfig({{"rest.port", "8123"},
                              {"listeners", "https://127.0.0.1:8443,http://127.0.0.1:8082"},
                              {"listeners.https.ssl.keystore.location", "/etc/ferry/ks.pem"}});
  ASSERT_TRUE(l.isOk()) << l.status().toString();
  EXPECT_EQ(l->workerId.substr(l->workerId.rfind(':')), ":8443") << l->workerId;
}

TEST(WorkerConfig, EveryErrorAtOnce) {
  auto c = parseWorkerConfig({{"rest.port", "eighty"}, {"offset.flush.interval.ms", "0"},
                              {"backbone.embedded.fsync", "sometimes"}, {"rest.prot", "1"}});
  ASSERT_FALSE(c.isOk());
  const std::string m = c.status().message();
  for (const char* needle : {"rest.port", "offset.flush.interval.ms", "backbone.embedded.fsync", "rest.prot"})
    EXPECT_NE(m.find(needle), std::string::npos) << needle << " missing from: " << m;
}

TEST(WorkerConfig, KafkaBackboneKeysAndClientPrefixes) {
  auto c = parseWorkerConfig({{"backbone", "kafka"},
                              {"backbone.kafka.bootstrap.servers", "127.0.0.1:19092"},
                              {"backbone.kafka.static.membership", "false"},
                              {"backbone.kafka.client.security.protocol", "SSL"},
                              {"backbone.kafka.producer.compression.type", "lz4"},
                              {"backbone.kafka.consumer.fetch.max.bytes", "1048576"}});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->backbone, "kafka");
  EXPECT_EQ(c->kafkaBootstrapServers, "127.0.0.1:19092");
  EXPECT_FALSE(c->kafkaStaticMembership);
  EXPECT_EQ(c->kafkaSessionTimeoutMs, 10000);
  EXPECT_EQ(c->kafkaReplicationFactor, -1);
  EXPECT_EQ(c->kafkaClientConfig.at("security.protocol"), "SSL");
  EXPECT_EQ(c->kafkaProducerConfig.at("compression.type"), "lz4");
  EXPECT_EQ(c->kafkaConsumerConfig.at("fetch.max.bytes"), "1048576");
  EXPECT_TRUE(c->kafkaProducerConfig.count("fetch.max.bytes") == 0);
}

TEST(WorkerConfig, KafkaBackboneBadValuesNamed) {
  auto c = parseWorkerConfig({{"backbone", "kafkaa"}, {"backbone.kafka.session.timeout.ms", "5"},
                              {"backbone.kafka.bootstrap.servers", ""}, {"backbone.kafka.replication.factor", "x"}});
  ASSERT_FALSE(c.isOk());
  const std::string m = c.status().message();
  for (const char* needle : {"backbone", "backbone.kafka.session.timeout.ms", "backbone.kafka.bootstrap.servers",
                             "backbone.kafka.replication.factor"})
    EXPECT_NE(m.find(needle), std::string::npos) << needle << " missing from: " << m;
}

TEST(WorkerConfig, ExactlyOnceSourcesNeedTheKafkaBackbone) {
  auto refused = parseWorkerConfig({{"exactly.once.source.support", "enabled"}});
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("exactly.once.source.support=enabled needs backbone=kafka"),
            std::string::npos)
      << refused.status().message();
  auto bad = parseWorkerConfig({{"backbone", "kafka"}, {"exactly.once.source.support", "yes"}});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("exactly.once.source.support"), std::string::npos);
  auto c = parseWorkerConfig({{"backbone", "kafka"}, {"exactly.once.source.support", "enabled"},
                              {"offset.storage.topic", "my-offsets"}});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_TRUE(c->exactlyOnceSource);
  EXPECT_EQ(c->offsetStorageTopic, "my-offsets");
  EXPECT_EQ(c->offsetStoragePartitions, 5);
  auto off = parseWorkerConfig({{"backbone", "kafka"}});
  ASSERT_TRUE(off.isOk());
  EXPECT_FALSE(off->exactlyOnceSource);
}

// Kafka Connect's offsets-topic key: ["<connector>", {partition}].
TEST(LogPositionStore, KeysAreKafkaConnectOffsetKeys) {
  const std::string k = LogPositionStore::encodeKey("gen", {{"datagen.task", "0"}, {"a", "b"}});
  EXPECT_EQ(k, R"(["gen",{"a":"b","datagen.task":"0"}])");
  auto back = LogPositionStore::decodeKey(k);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->first, "gen");
  EXPECT_EQ(back->second, (StringMap{{"datagen.task", "0"}, {"a", "b"}}));
  // Written by Kafka Connect: numbers and booleans become their JSON text.
  auto kc = LogPositionStore::decodeKey(R"(["file-source",{"filename":"/tmp/x","n":3,"b":true}])");
  ASSERT_TRUE(kc.has_value());
  EXPECT_EQ(kc->second.at("n"), "3");
  EXPECT_EQ(kc->second.at("b"), "true");
  for (const char* bad : {"", "not json", "[]", "[\"c\"]", "[1,{}]", "[\"c\",[1]]", "{\"c\":{}}", "[\"c\",{},3]"})
    EXPECT_FALSE(LogPositionStore::decodeKey(bad).has_value()) << bad;
}

}  // namespace
}  // namespace ferry::runtime
