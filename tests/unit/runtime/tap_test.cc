// Taps (src/runtime/tap.h): bounded by rate and size whatever a task offers, truncating large
// records, attached to tasks started before or after the tap, released on close, limited per worker.
#include <gtest/gtest.h>

#include "runtime/tap.h"

namespace ferry::runtime {
namespace {

Record recordOf(std::string value, std::string key = "k") {
  Record r;
  r.topic = "t";
  r.key = Bytes(std::move(key));
  r.value = Bytes(std::move(value));
  r.headers.add("h", std::string_view("v"));
  r.timestampMs = 1234;
  return r;
}

TEST(TapTest, NoTapNoWork) {
  TapHub hub;
  auto point = hub.point("c");
  EXPECT_FALSE(point->active());
  point->offer(0, recordOf("x"));  // nothing to take it
  ASSERT_TRUE(hub.open("id1", "other", {}).isOk());
  EXPECT_FALSE(point->active());  // a tap on another connector
  EXPECT_EQ(hub.point("c"), point);  // one point per connector while tasks hold it
}

TEST(TapTest, RateAndSizeBoundWhatATapTakes) {
  TapHub hub;
  auto point = hub.point("c");
  TapOptions o;
  o.recordsPerSecond = 10;
  o.capacity = 100;
  ASSERT_TRUE(hub.open("rate", "c", o).isOk());
  EXPECT_TRUE(point->active());
  for (int i = 0; i < 1000; ++i) point->offer(i % 3, recordOf(std::to_string(i)));
  auto b = hub.read("rate");
  ASSERT_TRUE(b.isOk());
  // A full bucket holds one second's worth; the loop takes well under the 100 ms that would add one.
  EXPECT_GE(b->records.size(), 10u);
  EXPECT_LE(b->records.size(), 12u);
  EXPECT_EQ(b->records.size() + b->sampledOut, 1000u);
  EXPECT_EQ(b->records.front().value.view(), "0");
  EXPECT_EQ(b->records.front().topic, "t");
  EXPECT_EQ(b->records.front().timestampMs, 1234);
  EXPECT_EQ(b->records.front().headers.size(), 1u);
  // A read takes what was there: the next one starts empty, its counters reset.
  auto again = hub.read("rate");
  ASSERT_TRUE(again.isOk());
  EXPECT_TRUE(again->records.empty());
  EXPECT_EQ(again->sampledOut, 0u);

  TapOptions small;
  small.recordsPerSecond = 100;
  small.capacity = 5;
  ASSERT_TRUE(hub.open("small", "c", small).isOk());
  for (int i = 0; i < 50; ++i) point->offer(0, recordOf(std::to_string(i)));
  auto s = hub.read("small");
  ASSERT_TRUE(s.isOk());
  ASSERT_EQ(s->records.size(), 5u);  // the newest five
  EXPECT_EQ(s->records.back().value.view(), "49");
  EXPECT_EQ(s->records.front().value.view(), "45");
  EXPECT_EQ(s->overflowed, 45u);
}

TEST(TapTest, LargeRecordsAreCutAndNullsStayNull) {
  TapHub hub;
  auto point = hub.point("c");
  ASSERT_TRUE(hub.open("big", "c", {}).isOk());
  Record r = recordOf(std::string(10000, 'v'), std::string(kTapInlineBytes, 'k'));
  point->offer(0, r);
  Record tomb;
  tomb.topic = "t";
  point->offer(1, tomb);
  auto b = hub.read("big");
  ASSERT_TRUE(b.isOk());
  ASSERT_EQ(b->records.size(), 2u);
  const auto& t = b->records[0];
  EXPECT_EQ(t.value.size(), kTapInlineBytes);
  EXPECT_TRUE(t.valueTruncated);
  EXPECT_EQ(t.valueSize, 10000u);
  EXPECT_NE(t.value.buffer(), r.value.buffer());  // a copied prefix, not the task's buffer
  EXPECT_FALSE(t.keyTruncated);                     // exactly the inline size: kept whole, shared
  EXPECT_EQ(t.key.buffer(), r.key.buffer());
  EXPECT_TRUE(b->records[1].valueNull);
  EXPECT_TRUE(b->records[1].keyNull);
  EXPECT_EQ(b->records[1].task, 1);
}

TEST(TapTest, ATapOpenedBeforeTheTasksStartIsAttachedToThem) {
  TapHub hub;
  ASSERT_TRUE(hub.open("early", "later", {}).isOk());
  auto point = hub.point("later");  // the connector's first task starts now
  EXPECT_TRUE(point->active());
  point->offer(0, recordOf("x"));
  auto b = hub.read("early");
  ASSERT_TRUE(b.isOk());
  EXPECT_EQ(b->records.size(), 1u);
  EXPECT_EQ(b->connector, "later");
}

TEST(TapTest, CloseReleasesAndTheWorkerHasALimit) {
  TapHub hub;
  auto point = hub.point("c");
  ASSERT_TRUE(hub.open("a", "c", {}).isOk());
  EXPECT_EQ(hub.open("a", "c", {}).code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(hub.close("a"));
  EXPECT_FALSE(hub.close("a"));
  EXPECT_FALSE(point->active());
  EXPECT_EQ(hub.read("a").status().code(), StatusCode::kNotFound);
  for (std::size_t i = 0; i < kMaxTaps; ++i) ASSERT_TRUE(hub.open("t" + std::to_string(i), "c", {}).isOk());
  EXPECT_EQ(hub.open("one-more", "c", {}).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(hub.openTaps(), kMaxTaps);
  TapOptions bad;
  bad.recordsPerSecond = 0;
  EXPECT_EQ(hub.open("x", "c", bad).code(), StatusCode::kInvalidArgument);
  bad.recordsPerSecond = kMaxTapRate + 1;
  EXPECT_EQ(hub.open("x", "c", bad).code(), StatusCode::kInvalidArgument);
  TapOptions cap;
  cap.capacity = kMaxTapCapacity + 1;
  EXPECT_EQ(hub.open("x", "c", cap).code(), StatusCode::kInvalidArgument);
}

TEST(TapTest, Utf8Check) {
  EXPECT_TRUE(tapValidUtf8(""));
  EXPECT_TRUE(tapValidUtf8("plain"));
  EXPECT_TRUE(tapValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(tapValidUtf8("\xc3"));                                 // cut short
  EXPECT_FALSE(tapValidUtf8("\xe2\x82"));
  EXPECT_FALSE(tapValidUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(tapValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(tapValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(tapValidUtf8("\xff"));
  EXPECT_FALSE(tapValidUtf8("a\x80" "b"));
}

}  // namespace
}  // namespace ferry::runtime
