// Status and Result: codes, retriability, context, and the propagation macros.
#include "ferry/result.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

TEST(Status, OkAndErrors) {
  EXPECT_TRUE(Status::ok().isOk());
  EXPECT_EQ(Status::ok().toString(), "OK");
  Status s = Status::notFound("connector x");
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.toString(), "NotFound: connector x");
  EXPECT_EQ(s.withContext("lookup").message(), "lookup: connector x");
  EXPECT_TRUE(Status::ok().withContext("ignored").isOk());
}

TEST(Status, RetriableCodes) {
  EXPECT_TRUE(Status::unavailable("x").isRetriable());
  EXPECT_TRUE(Status::timeout("x").isRetriable());
  EXPECT_TRUE(Status::resourceExhausted("x").isRetriable());
  EXPECT_TRUE(Status::retriable("x").isRetriable());
  EXPECT_FALSE(Status::invalidArgument("x").isRetriable());
  EXPECT_FALSE(Status::dataLoss("x").isRetriable());
  EXPECT_FALSE(Status::incompatible("x").isRetriable());
}

Status failsWhenNegative(int v) {
  if (v < 0) return Status::invalidArgument("negative");
  return Status::ok();
}
Result<int> half(int v) {
  FERRY_RETURN_IF_ERROR(failsWhenNegative(v));
  if (v % 2) return Status::invalidArgument("odd");
  return v / 2;
}
Result<int> quarter(int v) {
  FERRY_ASSIGN_OR_RETURN(int h, half(v));
  FERRY_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

TEST(Result, ValuesErrorsAndMacros) {
  auto r = quarter(8);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(*r, 2);
  EXPECT_EQ(quarter(6).status().message(), "odd");
  EXPECT_EQ(quarter(-4).status().message(), "negative");
  EXPECT_EQ(quarter(6).valueOr(-1), -1);
}

TEST(Result, OkStatusIsABug) {
  Result<int> r{Status::ok()};
  EXPECT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace ferry
