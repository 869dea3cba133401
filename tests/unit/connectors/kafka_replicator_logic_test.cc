// KafkaReplicator's broker-free logic: naming, selection, loop prevention, offset translation,
// and the configuration checks.
#include "connectors/kafka/kafka_replicator_logic.h"

#include <gtest/gtest.h>

#include "connectors/kafka/kafka_replicator.h"

namespace ferry::connectors {
namespace {

using krepl::Naming;
using krepl::OffsetSyncs;
using krepl::Policy;
using krepl::TopicSelector;

TEST(KafkaReplicatorNaming, PrefixAndIdentity) {
  Naming n{Policy::kPrefix, "A", "B", "."};
  EXPECT_EQ(n.targetTopic("orders"), "A.orders");
  EXPECT_TRUE(n.cameFromTarget("B.orders"));
  EXPECT_FALSE(n.cameFromTarget("A.orders"));
  EXPECT_FALSE(n.cameFromTarget("B."));
  EXPECT_FALSE(n.cameFromTarget("Borders"));
  Naming i{Policy::kIdentity, "A", "B", "."};
  EXPECT_EQ(i.targetTopic("orders"), "orders");
  EXPECT_FALSE(i.cameFromTarget("B.orders"));  // identity relies on the path header
}

TEST(KafkaReplicatorNaming, ReplicationPath) {
  EXPECT_EQ(krepl::pathAppend("", "A"), "A");
  EXPECT_EQ(krepl::pathAppend("A", "B"), "A,B");
  EXPECT_TRUE(krepl::pathHas("A,B", "B"));
  EXPECT_TRUE(krepl::pathHas("A,B", "A"));
  EXPECT_FALSE(krepl::pathHas("AB,C", "A"));
  EXPECT_FALSE(krepl::pathHas("", "A"));
}

TEST(KafkaReplicatorSelection, IncludeExcludeWholeNames) {
  auto s = TopicSelector::make({"orders.*", "audit"}, {"__.*", ".*\\.internal"});
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_TRUE(s->selected("orders"));
  EXPECT_TRUE(s->selected("orders-eu"));
  EXPECT_TRUE(s->selected("audit"));
  EXPECT_FALSE(s->selected("audit2"));  // whole name
  EXPECT_FALSE(s->selected("orders.internal"));
  EXPECT_FALSE(s->selected("__consumer_offsets"));
  auto bad = TopicSelector::make({"("}, {});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("topics"), std::string::npos);
}

TEST(KafkaOffsetSyncs, TranslatesToTheCopyAfterTheLastSyncedRecordBelow) {
  OffsetSyncs s(/*every=*/10, /*keep=*/100);
  EXPECT_FALSE(s.translate(5).has_value());
  for (std::int64_t i = 0; i < 100; ++i) s.record(i, 1000 + i);  // source i copied at target 1000+i
  EXPECT_EQ(s.translate(100), 1100);  // everything read: after the newest copy
  // A group that read up to 55: the newest kept pair below 55 is at most 54 -> at most 1055.
  auto t = s.translate(55);
  ASSERT_TRUE(t.has_value());
  EXPECT_LE(*t, 1055);
  EXPECT_GE(*t, 1045);  // kept every 10 offsets: at most 10 re-read
  EXPECT_FALSE(s.translate(0).has_value());  // read nothing: no translation
}

TEST(KafkaOffsetSyncs, RunsAfterARestartNeverSkipARecord) {
  // Copies 0..49 at 0..49, then a crash; the restarted replicator re-copies from 30 at 50.. .
  OffsetSyncs s(5, 100);
  for (std::int64_t i = 0; i < 50; ++i) s.record(i, i);
  for (std::int64_t i = 30; i < 60; ++i) s.record(i, 50 + (i - 30));
  // A group that read source 0..44: every record from 45 on has a copy at or after the answer.
  // Source 45..49 have copies at 45..49 (first run) and 65..69; 50..59 only at 70..79.
  auto t = s.translate(45);
  ASSERT_TRUE(t.has_value());
  EXPECT_LE(*t, 70);  // never past the only copy of source 50
  // A group that read everything: past the last copy.
  EXPECT_EQ(s.translate(60), 80);
}

TEST(KafkaOffsetSyncs, BoundedMemory) {
  OffsetSyncs s(1, 50);
  for (std::int64_t i = 0; i < 10000; ++i) s.record(i, i);
  EXPECT_LE(s.size(), 51u);
  EXPECT_EQ(s.translate(10000), 10000);
  EXPECT_FALSE(s.translate(10).has_value());  // that far back is forgotten: no translation, no guess
}

TEST(KafkaReplicatorConfig, ChecksAliasesRegexesAndPolicy) {
  ConfigValidation v;
  validateKafkaReplicatorConfig({{"source.bootstrap.servers", "a:1"}, {"target.bootstrap.servers", "a:1"},
                                 {"source.alias", "x"}, {"target.alias", "x"}, {"topics", "("},
                                 {"groups", "[z"}, {"replication.policy", "identity"}},
                                v);
  for (const char* k : {"target.alias", "topics", "groups", "replication.policy"})
    EXPECT_TRUE(v.errors.count(k)) << k << " not reported: " << v.summary();
  ConfigValidation ok;
  validateKafkaReplicatorConfig({{"source.bootstrap.servers", "a:1"}, {"target.bootstrap.servers", "b:1"},
                                 {"source.alias", "A"}, {"target.alias", "B"}},
                                ok);
  EXPECT_TRUE(ok.errors.empty()) << ok.summary();
  ConfigValidation badAlias;
  validateKafkaReplicatorConfig({{"source.bootstrap.servers", "a:1"}, {"target.bootstrap.servers", "b:1"},
                                 {"source.alias", "eu west"}, {"target.alias", "B"}},
                                badAlias);
  EXPECT_TRUE(badAlias.errors.count("source.alias")) << badAlias.summary();
}

}  // namespace
}  // namespace ferry::connectors
