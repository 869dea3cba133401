// "Evaluated without allocation on the common path": the typical rule on a record it filters out
// allocates nothing once the thread's JSON parser is warm; a record it keeps allocates only its
// output (the row and the value written). Counted by replacing the global operator new in this
// test binary (its own executable, so no other test is affected).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <new>
#include <vector>

#include "transforms/rules/rule_eval.h"
#include "transforms/rules/rule_transform.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

// This operator new is malloc, so free is the matching release (GCC cannot see that).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace ferry::transforms {
namespace {

long allocationsDuring(const std::function<void()>& f) {
  allocations = 0;
  counting = true;
  f();
  counting = false;
  return allocations.load();
}

Record sensor(const std::string& value) {
  Record r;
  r.topic = "mqtt-in";
  r.headers.add("mqtt.topic", std::string_view("sensors/dev-00042/data"));
  r.value = Bytes(value);
  return r;
}

const char* kRule = "SELECT payload.temp AS t, topic FROM \"sensors/+/data\" WHERE payload.temp > 30";
const char* kCold =
    R"({"device":"dev-00042","site":"plant-3","temp":21.5,"hum":55.2,"ts":1764800000123,"status":"ok","fw":"1.4.2","seq":42})";
const char* kHot =
    R"({"device":"dev-00042","site":"plant-3","temp":35.5,"hum":55.2,"ts":1764800000123,"status":"ok","fw":"1.4.2","seq":42})";

TEST(RuleAllocation, EvaluatingARecordTheRuleDropsAllocatesNothing) {
  auto rule = rules::CompiledRule::compile(kRule);
  ASSERT_TRUE(rule.isOk());
  Record cold = sensor(kCold);
  ASSERT_TRUE(rule->evaluate(cold).isOk());  // warms the thread's parser
  bool matched = true;
  const long n = allocationsDuring([&] {
    for (int i = 0; i < 100; ++i) matched = matched && rule->evaluate(cold)->matched;
  });
  EXPECT_FALSE(matched);
  EXPECT_EQ(n, 0) << "allocations in 100 evaluations of a record WHERE drops";
}

TEST(RuleAllocation, TheRuleTransformDropsWithoutAllocating) {
  RuleTransform t;
  ASSERT_TRUE(t.configure({{"sql", kRule}}).isOk());
  Record warm = sensor(kCold);
  ASSERT_TRUE(t.apply(warm).isOk());
  long kept = 0;
  std::vector<Record> records(100, sensor(kCold));  // built before counting
  const long m = allocationsDuring([&] {
    for (auto& r : records) kept += *t.apply(r) ? 1 : 0;
  });
  EXPECT_EQ(kept, 0);
  EXPECT_EQ(m, 0) << "allocations applying the Rule transform to 100 records it drops";
}

TEST(RuleAllocation, AKeptRecordAllocatesForItsOutputNotItsInput) {
  RuleTransform t;
  ASSERT_TRUE(t.configure({{"sql", kRule}}).isOk());
  // The same reading with 40 more fields, nested ones among them: no document is built, so the
  // allocations are those of the output (the row, its topic string, the text written).
  std::string big = std::string(kHot).substr(0, std::string(kHot).size() - 1);
  for (int i = 0; i < 40; ++i)
    big += ",\"extra" + std::to_string(i) + "\":{\"a\":[1,2,3],\"s\":\"some longer text than sso\"}";
  big += "}";
  for (const std::string& v : {std::string(kHot), big}) {
    Record warm = sensor(v);
    ASSERT_TRUE(t.apply(warm).isOk());
  }
  long counts[2] = {0, 0};
  int i = 0;
  for (const std::string& v : {std::string(kHot), big}) {
    Record hot = sensor(v);
    counts[i++] = allocationsDuring([&] { ASSERT_TRUE(*t.apply(hot)); });
    EXPECT_EQ(hot.value.str(), R"({"t":35.5,"topic":"sensors/dev-00042/data"})");
  }
  EXPECT_GT(counts[0], 0);
  EXPECT_EQ(counts[0], counts[1]) << "a larger payload must not cost more allocations";
  EXPECT_LE(counts[0], 12);
}

}  // namespace
}  // namespace ferry::transforms
