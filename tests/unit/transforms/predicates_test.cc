// TopicNameMatches, HasHeaderKey, RecordIsTombstone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;

Owned<Predicate> predicate(const std::string& name, const StringMap& config) {
  auto p = create<Predicate>(name);
  EXPECT_NE(p, nullptr) << name;
  Status s = p->configure(config);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return p;
}

TEST(TopicNameMatches, MatchesTheWholeTopic) {
  auto p = predicate("TopicNameMatches", {{"pattern", "orders-.*"}});
  EXPECT_TRUE(*p->test(record("orders-eu", "v")));
  EXPECT_FALSE(*p->test(record("old-orders-eu", "v")));
  auto bad = create<Predicate>("org.apache.kafka.connect.transforms.predicates.TopicNameMatches");
  Status s = bad->configure({{"pattern", "*bad"}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("pattern"));
  EXPECT_FALSE(bad->configure({}).isOk());
}

TEST(HasHeaderKey, LooksForTheHeader) {
  auto p = predicate("org.apache.kafka.connect.transforms.predicates.HasHeaderKey", {{"name", "trace"}});
  Record r = record("t", "v");
  EXPECT_FALSE(*p->test(r));
  r.headers.add("trace", std::string_view(""));
  EXPECT_TRUE(*p->test(r));
  EXPECT_FALSE(create<Predicate>("HasHeaderKey")->configure({}).isOk());
}

TEST(RecordIsTombstone, TrueForNullValuesOnly) {
  auto p = predicate("RecordIsTombstone", {});
  EXPECT_TRUE(*p->test(record("t", std::nullopt)));
  EXPECT_FALSE(*p->test(record("t", "")));
}

}  // namespace
}  // namespace ferry::transforms
