// PushHandoff: bounded by records and bytes until acknowledged; the outside system is
// acknowledged only when the runtime says the record is safe; close() releases what is queued.
#include "ferry/push_source.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace ferry {
namespace {

using namespace std::chrono_literals;

Record rec(const std::string& v) {
  Record r;
  r.topic = "t";
  r.value = Bytes(v);
  return r;
}

TEST(PushHandoff, BoundedUntilAcknowledged) {
  PushHandoff h(2, 1 << 20);
  int safe = 0;
  ASSERT_TRUE(h.offer(rec("a"), [&] { ++safe; }, nullptr, 0ms).isOk());
  ASSERT_TRUE(h.offer(rec("b"), [&] { ++safe; }, nullptr, 0ms).isOk());
  EXPECT_EQ(h.offer(rec("c"), nullptr, nullptr, 0ms).code(), StatusCode::kResourceExhausted);
  std::vector<Record> out;
  EXPECT_EQ(h.drain(out, 10, 0ms), 2u);
  // Drained is not safe: capacity comes back only on ack.
  EXPECT_EQ(h.offer(rec("c"), nullptr, nullptr, 0ms).code(), StatusCode::kResourceExhausted);
  out[0].acknowledger->ack();
  EXPECT_EQ(safe, 1);
  EXPECT_EQ(h.inFlightRecords(), 1u);
  EXPECT_TRUE(h.offer(rec("c"), nullptr, nullptr, 0ms).isOk());
  out[0].acknowledger->ack();  // a second ack changes nothing
  EXPECT_EQ(safe, 1);
}

TEST(PushHandoff, BytesBoundAndAlwaysOneRecord) {
  PushHandoff h(100, 10);
  // A record bigger than the byte bound still passes when nothing is in flight.
  ASSERT_TRUE(h.offer(rec(std::string(100, 'x')), nullptr, nullptr, 0ms).isOk());
  EXPECT_EQ(h.offer(rec("y"), nullptr, nullptr, 0ms).code(), StatusCode::kResourceExhausted);
}

TEST(PushHandoff, BlockedOfferResumesOnAck) {
  PushHandoff h(1, 1 << 20);
  ASSERT_TRUE(h.offer(rec("a"), nullptr, nullptr, 0ms).isOk());
  std::atomic<bool> offered{false};
  std::thread producer([&] {
    EXPECT_TRUE(h.offer(rec("b"), nullptr, nullptr, 30s).isOk());
    offered = true;
  });
  std::vector<Record> out;
  ASSERT_EQ(h.drain(out, 1, 0ms), 1u);
  out[0].acknowledger->ack();
  producer.join();
  EXPECT_TRUE(offered);
  out.clear();
  EXPECT_EQ(h.drain(out, 1, 0ms), 1u);
  EXPECT_EQ(out[0].value.str(), "b");
}

TEST(PushHandoff, DroppedRecordsAreReleasedNotAcknowledged) {
  PushHandoff h(10, 1 << 20);
  int safe = 0, redeliver = 0, delivered = 0;
  auto onDropped = [&](bool d) { d ? ++delivered : ++redeliver; };
  ASSERT_TRUE(h.offer(rec("a"), [&] { ++safe; }, onDropped, 0ms).isOk());
  ASSERT_TRUE(h.offer(rec("b"), [&] { ++safe; }, onDropped, 0ms).isOk());
  std::vector<Record> out;
  ASSERT_EQ(h.drain(out, 1, 0ms), 1u);
  out[0].acknowledger->release(true);  // e.g. dropped by a filter: done, no redelivery
  h.close();                          // "b" was still queued: released for redelivery
  EXPECT_EQ(safe, 0);
  EXPECT_EQ(delivered, 1);
  EXPECT_EQ(redeliver, 1);
  EXPECT_EQ(h.inFlightRecords(), 0u);
  EXPECT_EQ(h.offer(rec("c"), nullptr, nullptr, 0ms).code(), StatusCode::kCancelled);
}

TEST(PushHandoff, ForgottenRecordsGiveCapacityBack) {
  PushHandoff h(1, 1 << 20);
  ASSERT_TRUE(h.offer(rec("a"), nullptr, nullptr, 0ms).isOk());
  {
    std::vector<Record> out;
    ASSERT_EQ(h.drain(out, 1, 0ms), 1u);
  }  // the record (and its acknowledger) is gone without an ack
  EXPECT_EQ(h.inFlightRecords(), 0u);
  EXPECT_TRUE(h.offer(rec("b"), nullptr, nullptr, 0ms).isOk());
}

}  // namespace
}  // namespace ferry
