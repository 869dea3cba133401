// Pure parts of the RocketMQ Replicator: topic selection, renaming, loop detection, properties,
// placement, record metadata and offset translation for checkpoints.
#include "connectors/rocketmq/replicator_logic.h"

#include <gtest/gtest.h>

#include "rocketmq/producer.h"

namespace ferry::connectors::repl {
namespace {

TEST(ReplicatorTopicFilter, ListRegexAndExclude) {
  auto f = TopicFilter::create({"orders", "audit"}, "sensor-.*", "sensor-tmp.*");
  ASSERT_TRUE(f.isOk());
  EXPECT_TRUE(f->matches("orders"));
  EXPECT_TRUE(f->matches("sensor-1"));
  EXPECT_FALSE(f->matches("sensor-tmp1"));  // excluded wins
  EXPECT_FALSE(f->matches("order"));        // whole-name match only
  EXPECT_FALSE(f->matches("xsensor-1"));
  auto bad = TopicFilter::create({}, "(", "");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("topics.regex"), std::string::npos);
  EXPECT_FALSE(TopicFilter::create({}, "", "[").isOk());
}

TEST(ReplicatorRename, FormatsAndValidation) {
  EXPECT_EQ(renameTopic("${topic}", "t", "A"), "t");
  EXPECT_EQ(renameTopic("${source.alias}.${topic}", "t", "A"), "A.t");
  EXPECT_EQ(renameTopic("x-${topic}-${topic}", "t", "A"), "x-t-t");
  EXPECT_TRUE(validateRenameFormat("${source.alias}_${topic}").isOk());
  EXPECT_FALSE(validateRenameFormat("fixed").isOk());
}

TEST(ReplicatorLoops, PathNamesEveryHop) {
  std::map<std::string, std::string> props{{"KEYS", "k"}};
  EXPECT_FALSE(cameFrom(props, "A"));
  auto once = replicatedProperties(props, "A");
  EXPECT_EQ(once.at(kPropPath), "A");
  EXPECT_TRUE(cameFrom(once, "A"));
  EXPECT_FALSE(cameFrom(once, "B"));
  auto twice = replicatedProperties(once, "B");
  EXPECT_EQ(twice.at(kPropPath), "A,B");
  EXPECT_TRUE(cameFrom(twice, "A"));
  EXPECT_TRUE(cameFrom(twice, "B"));
  EXPECT_FALSE(cameFrom(twice, "AB"));  // whole names only
  EXPECT_FALSE(cameFrom(twice, ""));
}

TEST(ReplicatorProperties, BrokerSetOnesAreDroppedUserOnesKept) {
  std::map<std::string, std::string> props{
      {"TAGS", "t"}, {"KEYS", "k1 k2"}, {"UNIQ_KEY", "u"}, {"user", "v"}, {"MIN_OFFSET", "0"},
      {"MAX_OFFSET", "9"}, {"DELAY", "3"}, {"TIMER_DELIVER_MS", "1"}, {"REAL_TOPIC", "x"},
      {"TRAN_MSG", "true"}, {"CLUSTER", "c"}, {"WAIT", "true"}};
  auto out = replicatedProperties(props, "A");
  for (const char* kept : {"TAGS", "KEYS", "UNIQ_KEY", "user", "WAIT"}) EXPECT_EQ(out.count(kept), 1u) << kept;
  for (const char* gone : {"MIN_OFFSET", "MAX_OFFSET", "DELAY", "TIMER_DELIVER_MS", "REAL_TOPIC", "TRAN_MSG", "CLUSTER"})
    EXPECT_EQ(out.count(gone), 0u) << gone;
  EXPECT_EQ(out.at("KEYS"), "k1 k2");
}

TEST(ReplicatorPlacement, PreserveAndHash) {
  EXPECT_EQ(placeQueue(true, 3, 8, "key"), 3);
  EXPECT_EQ(placeQueue(true, 9, 8, ""), 1);  // fewer target queues: modulo
  EXPECT_EQ(placeQueue(true, 3, 0, ""), 0);
  const int h = placeQueue(false, 3, 8, "order-17");
  EXPECT_EQ(h, static_cast<int>(rocketmq::keyHash("order-17") % 8));
  EXPECT_EQ(placeQueue(false, 5, 8, ""), 5);  // no key: the source index
  for (int i = 0; i < 50; ++i) {
    const int q = placeQueue(false, 0, 7, "k" + std::to_string(i));
    EXPECT_GE(q, 0);
    EXPECT_LT(q, 7);
  }
}

TEST(ReplicatorMeta, RoundTripAndRejects) {
  ReplicaMeta m{"topic-a", "broker-a", 3, 2, 8, 123456789012345, 7, 1700000000000};
  auto back = decodeMeta(encodeMeta(m));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, m);
  EXPECT_FALSE(decodeMeta("").has_value());
  EXPECT_FALSE(decodeMeta("t\nb\n1\n2\n3\n4\n5").has_value());         // a field short
  EXPECT_FALSE(decodeMeta("t\nb\n1\n2\n3\nx\n5\n6").has_value());      // not a number
  EXPECT_FALSE(decodeMeta("t\nb\n1\n-2\n3\n4\n5\n6").has_value());     // negative index
  EXPECT_FALSE(decodeMeta("t\nb\n99999999999\n2\n3\n4\n5\n6").has_value());  // int32 overflow
  EXPECT_FALSE(decodeMeta("\nb\n1\n2\n3\n4\n5\n6").has_value());       // no topic
}

TEST(ReplicatorOffsets, TranslateNeverSkipsUnconsumedMessages) {
  OffsetTranslator t(100);
  EXPECT_FALSE(t.translate("q", 5).has_value());
  // Source offsets 10..19 landed at target 100..109.
  for (int i = 0; i < 10; ++i) t.record("q", 10 + i, 100 + i);
  EXPECT_FALSE(t.translate("q", 10).has_value());  // nothing below 10 was replicated
  EXPECT_EQ(t.translate("q", 11), 101);            // consumed 10 -> resume after its copy
  EXPECT_EQ(t.translate("q", 15), 105);
  EXPECT_EQ(t.translate("q", 20), 110);
  EXPECT_EQ(t.translate("q", 500), 110);  // ahead of replication: resume after the newest copy
  EXPECT_FALSE(t.translate("other", 15).has_value());
  // A replay (restart) maps offsets to their newest copies.
  t.record("q", 15, 200);
  EXPECT_EQ(t.translate("q", 16), 201);
  EXPECT_EQ(t.translate("q", 14), 104);
  EXPECT_EQ(t.translate("q", 17), 201);  // 16..19 dropped from the history by the replay
}

TEST(ReplicatorOffsets, HistoryIsBoundedAndThinsOutOldPairsWithoutSkipping) {
  OffsetTranslator t(64);
  const int n = 100000;
  for (int i = 0; i < n; ++i) t.record("q", i, 1000 + i);
  EXPECT_EQ(t.queues(), 1u);
  EXPECT_EQ(t.translate("q", n - 1), 1000 + n - 1);  // recent: exact
  EXPECT_EQ(t.translate("q", n - 50), 1000 + n - 50);
  EXPECT_EQ(t.translate("q", n), 1000 + n);
  int translated = 0;
  for (int c = 1; c <= n; c += 97) {
    auto v = t.translate("q", c);
    if (!v) continue;
    ++translated;
    // Resuming at v re-reads copies of source offsets >= v - 1000 and never skips one below c.
    EXPECT_LE(*v, 1000 + c) << c;
  }
  EXPECT_GT(translated, (n / 97) * 9 / 10);  // far-behind groups still translate
  // ... re-reading at most a stride: 64 ladder pairs over ~100,000 offsets -> a spacing of 2,048.
  EXPECT_GE(*t.translate("q", 50000), 1000 + 50000 - 4096);
  EXPECT_TRUE(t.translate("q", 200).has_value());  // the oldest ladder pair stays
  // Stays bounded.
  for (int i = n; i < 2 * n; ++i) t.record("q", i, 1000 + i);
  EXPECT_LE(t.translate("q", 2 * n), 1000 + 2 * n);
}

}  // namespace
}  // namespace ferry::connectors::repl
