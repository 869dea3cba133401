// The transform chain: steps in order, predicates, errors naming the alias, and parse-once /
// write-once of JSON values across consecutive JSON steps (transforms/json_cache.h).
#include "runtime/transform_chain.h"

#include <gtest/gtest.h>

namespace ferry::runtime {
namespace {

class TransformChainTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registerBuiltins(registry_).isOk()); }
  std::unique_ptr<TransformChain> build(const StringMap& config) {
    auto c = TransformChain::build(registry_, config);
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c.isOk() ? std::move(*c) : nullptr;
  }
  static Record record(std::string value, std::string topic = "sensors/d1/data") {
    Record r;
    r.topic = std::move(topic);
    r.value = Bytes(std::move(value));
    return r;
  }
  PluginRegistry registry_;
};

const StringMap kJsonChain = {
    {"transforms", "rename,insert,mask,cast,rule"},
    {"transforms.rename.type", "ReplaceField$Value"},
    {"transforms.rename.renames", "temperature:temp"},
    {"transforms.insert.type", "InsertField$Value"},
    {"transforms.insert.static.field", "site"},
    {"transforms.insert.static.value", "plant-3"},
    {"transforms.mask.type", "MaskField$Value"},
    {"transforms.mask.fields", "secret"},
    {"transforms.cast.type", "Cast$Value"},
    {"transforms.cast.spec", "seq:string"},
    {"transforms.rule.type", "Rule"},
    {"transforms.rule.sql", "SELECT payload.temp AS t, payload.site AS site, payload.seq AS seq, payload.secret AS s "
                            "FROM \"sensors/+/data\" WHERE payload.temp > 30"},
};

TEST_F(TransformChainTest, JsonStepsParseOnceAndWriteOnce) {
  auto chain = build(kJsonChain);
  ASSERT_TRUE(chain);
  Record hot = record(R"({"temperature":31.5,"seq":7,"secret":"pw"})");
  auto kept = chain->apply(hot);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  ASSERT_TRUE(*kept);
  EXPECT_EQ(hot.value.str(), R"({"t":31.5,"site":"plant-3","seq":"7","s":""})");
  EXPECT_EQ(chain->jsonParses(), 1u);
  EXPECT_EQ(chain->jsonWrites(), 1u);

  Record cold = record(R"({"temperature":12,"seq":8,"secret":"pw"})");
  kept = chain->apply(cold);
  ASSERT_TRUE(kept.isOk());
  EXPECT_FALSE(*kept);                  // WHERE failed: dropped
  EXPECT_EQ(chain->jsonParses(), 2u);   // parsed once more, never written
  EXPECT_EQ(chain->jsonWrites(), 1u);
}

TEST_F(TransformChainTest, SameResultAsEachStepOnItsOwn) {
  auto chain = build(kJsonChain);
  ASSERT_TRUE(chain);
  // The same five transforms, each in a chain of its own (so each parses and writes).
  Record chained = record(R"({"temperature":40,"seq":1,"secret":{"k":1},"x":[1,2]})");
  Record alone = chained;
  ASSERT_TRUE(chain->apply(chained).isOk());
  for (const char* alias : {"rename", "insert", "mask", "cast", "rule"}) {
    StringMap one{{"transforms", alias}};
    const std::string prefix = std::string("transforms.") + alias + ".";
    for (const auto& [k, v] : kJsonChain)
      if (k.rfind(prefix, 0) == 0) one[k] = v;
    auto c = build(one);
    ASSERT_TRUE(c);
    auto kept = c->apply(alone);
    ASSERT_TRUE(kept.isOk()) << alias << ": " << kept.status().toString();
    ASSERT_TRUE(*kept) << alias;
    EXPECT_EQ(c->jsonWrites(), 1u) << alias;
  }
  EXPECT_EQ(chained.value.str(), alone.value.str());
  EXPECT_EQ(chained.value.str(), R"({"t":40,"site":"plant-3","seq":"1","s":{}})");
}

TEST_F(TransformChainTest, ByteStepsInBetweenSeeCurrentBytes) {
  // InsertHeader and RegexRouter know nothing of the cache: the chain writes the value before
  // them, and the document stays valid after them (no second parse).
  auto chain = build({{"transforms", "insert,hdr,route,hoist,extract"},
                      {"transforms.insert.type", "InsertField$Value"},
                      {"transforms.insert.static.field", "a"},
                      {"transforms.insert.static.value", "1"},
                      {"transforms.hdr.type", "InsertHeader"},
                      {"transforms.hdr.header", "h"},
                      {"transforms.hdr.value.literal", "v"},
                      {"transforms.route.type", "RegexRouter"},
                      {"transforms.route.regex", "(.*)"},
                      {"transforms.route.replacement", "out-$1"},
                      {"transforms.hoist.type", "HoistField$Value"},
                      {"transforms.hoist.field", "wrapped"},
                      {"transforms.extract.type", "ExtractField$Value"},
                      {"transforms.extract.field", "wrapped"}});
  ASSERT_TRUE(chain);
  Record r = record(R"({"b":2})", "t");
  auto kept = chain->apply(r);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  EXPECT_EQ(r.value.str(), R"({"b":2,"a":"1"})");
  EXPECT_EQ(r.topic, "out-t");
  ASSERT_NE(r.headers.last("h"), nullptr);
  EXPECT_EQ(chain->jsonParses(), 1u);
  EXPECT_EQ(chain->jsonWrites(), 2u);  // before the byte steps, and at the end
}

TEST_F(TransformChainTest, BytesReplacedByAStepAreParsedAgain) {
  // DecodePayload replaces the bytes: the Rule after it reads the decoded JSON, not the old one.
  auto chain = build({{"transforms", "ins,dec,rule"},
                      {"transforms.ins.type", "Cast$Value"},  // a JSON step that leaves text as it is
                      {"transforms.ins.spec", "string"},
                      {"transforms.dec.type", "DecodePayload$Value"},
                      {"transforms.rule.type", "Rule"},
                      {"transforms.rule.sql", "SELECT payload.n AS n FROM \"#\""}});
  ASSERT_TRUE(chain);
  Record r = record("eyJuIjo0Mn0=");  // base64 of {"n":42}
  auto kept = chain->apply(r);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  ASSERT_TRUE(*kept);
  EXPECT_EQ(r.value.str(), R"({"n":42})");
}

TEST_F(TransformChainTest, PredicateSkipsAndErrorsNameTheStep) {
  auto chain = build({{"transforms", "mask,extract"},
                      {"transforms.mask.type", "MaskField$Value"},
                      {"transforms.mask.fields", "p"},
                      {"transforms.mask.predicate", "isA"},
                      {"transforms.extract.type", "ExtractField$Value"},
                      {"transforms.extract.field", "p"},
                      {"predicates", "isA"},
                      {"predicates.isA.type", "TopicNameMatches"},
                      {"predicates.isA.pattern", "a"}});
  ASSERT_TRUE(chain);
  Record a = record(R"({"p":5})", "a");
  Record b = record(R"({"p":5})", "b");
  ASSERT_TRUE(chain->apply(a).isOk());
  ASSERT_TRUE(chain->apply(b).isOk());
  EXPECT_EQ(a.value.str(), "0");  // masked, then extracted
  EXPECT_EQ(b.value.str(), "5");  // mask skipped

  Record bad = record("not json", "a");
  auto r = chain->apply(bad);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("transform mask"), std::string::npos) << r.status().toString();
  EXPECT_EQ(bad.value.str(), "not json");  // nothing half-written
}

TEST_F(TransformChainTest, PredicatesThatReadNoBytesDoNotForceAWrite) {
  auto chain = build({{"transforms", "insert,mask,tomb"},
                      {"transforms.insert.type", "InsertField$Value"},
                      {"transforms.insert.static.field", "a"},
                      {"transforms.insert.static.value", "1"},
                      {"transforms.mask.type", "MaskField$Value"},
                      {"transforms.mask.fields", "p"},
                      {"transforms.mask.predicate", "isA"},
                      {"transforms.tomb.type", "Filter"},
                      {"transforms.tomb.predicate", "isTombstone"},
                      {"predicates", "isA,isTombstone"},
                      {"predicates.isA.type", "TopicNameMatches"},
                      {"predicates.isA.pattern", "a"},
                      {"predicates.isTombstone.type", "RecordIsTombstone"}});
  ASSERT_TRUE(chain);
  Record r = record(R"({"p":5})", "a");
  auto kept = chain->apply(r);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  ASSERT_TRUE(*kept);
  EXPECT_EQ(r.value.str(), R"({"p":0,"a":"1"})");
  EXPECT_EQ(chain->jsonParses(), 1u);
  EXPECT_EQ(chain->jsonWrites(), 1u);  // the predicates between the steps wrote nothing
}

TEST_F(TransformChainTest, TraceReportsEveryStep) {
  auto chain = build(kJsonChain);
  ASSERT_TRUE(chain);
  Record r = record(R"({"temperature":35,"seq":2,"secret":"x"})");
  auto steps = chain->trace(r);
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].alias, "rename");
  EXPECT_EQ(steps[0].type, "ReplaceField$Value");
  EXPECT_EQ(steps[0].after.value.str(), R"({"temp":35,"seq":2,"secret":"x"})");  // renamed in place
  EXPECT_EQ(steps[1].after.value.str(), R"({"temp":35,"seq":2,"secret":"x","site":"plant-3"})");
  EXPECT_EQ(steps[4].after.value.str(), R"({"t":35,"site":"plant-3","seq":"2","s":""})");
  for (const auto& s : steps) EXPECT_TRUE(s.error.isOk() && !s.dropped && !s.skipped);

  Record bad = record(R"({"temperature":35,"seq":"x2","secret":"x"})");
  StringMap cfg = kJsonChain;
  cfg["transforms.cast.spec"] = "seq:int32";
  auto failing = build(cfg);
  ASSERT_TRUE(failing);
  steps = failing->trace(bad);
  ASSERT_EQ(steps.size(), 4u);  // stops at the failing step
  EXPECT_FALSE(steps[3].error.isOk());
  EXPECT_NE(steps[3].error.message().find("transform cast"), std::string::npos);
}

}  // namespace
}  // namespace ferry::runtime
