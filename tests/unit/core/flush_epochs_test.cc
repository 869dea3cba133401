// core::FlushEpochs: an awaiting flush is answered once every send started before it ended, and
// only those; sends started after it do not hold it back.
#include "core/flush_epochs.h"

#include <gtest/gtest.h>

namespace ferry::core {
namespace {

TEST(FlushEpochs, AnsweredWhenEverySendStartedBeforeItEnded) {
  FlushEpochs e;
  const auto a = e.started(2);
  int answers = 0;
  e.await([&](Status) { ++answers; });
  const auto b = e.started();  // after the flush: not covered
  EXPECT_NE(a, b);
  EXPECT_FALSE(e.takeIfDone());
  e.ended(a);
  EXPECT_FALSE(e.takeIfDone());  // one of the two still out
  e.ended(a);
  auto done = e.takeIfDone();
  ASSERT_TRUE(done);  // b is still out, and does not matter
  done(Status::ok());
  EXPECT_EQ(answers, 1);
  EXPECT_FALSE(e.takeIfDone());  // taken once
  e.ended(b);
}

TEST(FlushEpochs, NothingOutstandingAnswersAtOnceAndEarlierEpochsCount) {
  FlushEpochs e;
  e.await([](Status) {});
  EXPECT_TRUE(e.takeIfDone());
  const auto old = e.started();
  e.await([](Status) {});  // covers `old` too
  e.started();             // a later epoch
  EXPECT_FALSE(e.takeIfDone());
  e.ended(old);
  EXPECT_TRUE(e.takeIfDone());
  e.ended(12345);  // an unknown epoch is ignored
}

}  // namespace
}  // namespace ferry::core
