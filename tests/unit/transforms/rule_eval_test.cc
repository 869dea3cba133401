// The rule language's evaluator: names, operators, functions, CASE, FOREACH, FROM/WHERE, and
// errors at compile time and at run time, each with a position.
#include "transforms/rules/rule_eval.h"

#include <gtest/gtest.h>

namespace ferry::transforms::rules {
namespace {

Record mqttRecord(const std::string& topic, const std::string& payload, int qos = 1) {
  Record r;
  r.topic = "backbone-topic";
  r.value = Bytes::copyOf(payload);
  r.key = Bytes::copyOf(std::string_view("k1"));
  r.timestampMs = 1700000000123;
  r.headers.add("mqtt.topic", std::string_view(topic));
  r.headers.add("mqtt.qos", std::string_view(std::to_string(qos)));
  r.headers.add("mqtt.client.id", std::string_view("dev-7"));
  return r;
}

Value one(const std::string& rule, const Record& r) {
  auto c = CompiledRule::compile(rule);
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  if (!c.isOk()) return Value("compile error");
  auto out = c->evaluate(r);
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  if (!out.isOk() || !out->matched || out->rows.size() != 1) return Value("no row");
  return out->rows[0];
}

std::string compileError(const std::string& rule) {
  auto c = CompiledRule::compile(rule);
  return c.isOk() ? "OK" : c.status().message();
}

std::string runError(const std::string& rule, const Record& r) {
  auto c = CompiledRule::compile(rule);
  if (!c.isOk()) return "compile: " + c.status().message();
  auto out = c->evaluate(r);
  return out.isOk() ? "OK" : out.status().message();
}

TEST(RuleEval, TheIssuesTypicalRule) {
  const std::string rule = R"(SELECT payload.temp AS t, topic FROM "sensors/+/data" WHERE payload.temp > 30)";
  auto c = CompiledRule::compile(rule);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto hot = c->evaluate(mqttRecord("sensors/k1/data", R"({"temp": 31.5, "hum": 40})"));
  ASSERT_TRUE(hot.isOk());
  ASSERT_TRUE(hot->matched);
  EXPECT_EQ(hot->rows[0], Value::parse(R"({"t": 31.5, "topic": "sensors/k1/data"})"));
  auto cold = c->evaluate(mqttRecord("sensors/k1/data", R"({"temp": 20})"));
  ASSERT_TRUE(cold.isOk());
  EXPECT_FALSE(cold->matched);
  auto other = c->evaluate(mqttRecord("sensors/k1/status", R"({"temp": 99})"));
  ASSERT_TRUE(other.isOk());
  EXPECT_FALSE(other->matched) << "FROM does not match";
  auto missing = c->evaluate(mqttRecord("sensors/k1/data", R"({"hum": 1})"));
  ASSERT_TRUE(missing.isOk());
  EXPECT_FALSE(missing->matched) << "a missing field compares false";
}

TEST(RuleEval, RecordNamesAndStar) {
  const auto r = mqttRecord("a/b/c", R"({"x": [10, 20, {"y": "z"}]})", 2);
  EXPECT_EQ(one(R"(SELECT qos, clientid, key, timestamp, levels, payload.x[3].y AS y, payload.x[9] AS none,
                    headers.`mqtt.qos` AS hq FROM "#")", r),
            Value::parse(R"({"qos": 2, "clientid": "dev-7", "key": "k1", "timestamp": 1700000000123,
                             "levels": ["a", "b", "c"], "y": "z", "none": null, "hq": "2"})"));
  auto star = one(R"(SELECT * FROM "a/#")", r);
  EXPECT_EQ(star["topic"], "a/b/c");
  EXPECT_EQ(star["payload"]["x"][0], 10);
  Record plain;
  plain.topic = "orders";
  plain.value = Bytes::copyOf(std::string_view("not json"));
  EXPECT_EQ(one(R"(SELECT payload, topic, qos FROM "orders")", plain),
            Value::parse(R"({"payload": "not json", "topic": "orders", "qos": null})"));
}

TEST(RuleEval, ArithmeticComparisonLogic) {
  const auto r = mqttRecord("t", R"({"a": 7, "b": 2, "f": 1.5, "s": "abc"})");
  EXPECT_EQ(one(R"(SELECT payload.a + payload.b AS s, payload.a - 10 AS d, payload.a * payload.f AS m,
                    payload.a / payload.b AS q, payload.a div payload.b AS i, payload.a % payload.b AS r,
                    -payload.a AS n, 'x' + payload.s AS c FROM "t")", r),
            Value::parse(R"({"s": 9, "d": -3, "m": 10.5, "q": 3.5, "i": 3, "r": 1, "n": -7, "c": "xabc"})"));
  EXPECT_EQ(one(R"(SELECT payload.a > 5 and payload.s = 'abc' AS x, not payload.a < 5 AS y,
                    payload.missing = null AS z, 'b' < payload.s AS w, payload.a = 7.0 AS e,
                    payload.a != 'seven' AS ne FROM "t")", r),
            Value::parse(R"({"x": true, "y": true, "z": true, "w": false, "e": true, "ne": true})"));
}

TEST(RuleEval, FunctionsAndCase) {
  const auto r = mqttRecord("dev/42/up", R"({"name": "  Pump ", "v": "12.5", "list": [3, 4], "n": -2.6})");
  EXPECT_EQ(one(R"(SELECT upper(trim(payload.name)) AS u, lower('AB') AS l, concat(topic, '#', 1) AS c,
                    substr('abcdef', 2, 3) AS s, replace('a-b-c', '-', '+') AS rp, split(topic, '/') AS sp,
                    nth(2, levels) AS id, strlen('abc') AS n, length(payload.list) AS len,
                    float(payload.v) * 2 AS f, int('7') AS i, bool('true') AS b, str(12) AS st,
                    abs(payload.n) AS ab, round(payload.n) AS ro, floor(2.5) AS fl, ceil(2.1) AS ce,
                    power(2, 10) AS pw, coalesce(payload.none, 'dflt') AS co, is_null(payload.none) AS isn,
                    regex_match(topic, '^dev/[0-9]+/up$') AS re, json_encode(payload.list) AS je,
                    json_decode('{"a":1}').a AS jd, unix_ts_to_rfc3339(1700000000123) AS ts FROM "dev/#")", r),
            Value::parse(R"({"u": "PUMP", "l": "ab", "c": "dev/42/up#1", "s": "cde", "rp": "a+b+c",
                             "sp": ["dev", "42", "up"], "id": "42", "n": 3, "len": 2, "f": 25.0, "i": 7,
                             "b": true, "st": "12", "ab": 2.6, "ro": -3, "fl": 2, "ce": 3, "pw": 1024,
                             "co": "dflt", "isn": true, "re": true, "je": "[3,4]", "jd": 1,
                             "ts": "2023-11-14T22:13:20.123Z"})"));
  EXPECT_EQ(one(R"(SELECT CASE WHEN payload.list[1] > 3 THEN 'big' WHEN payload.list[1] = 3 THEN 'three'
                    ELSE 'small' END AS a, CASE nth(2, levels) WHEN '41' THEN 1 WHEN '42' THEN 2 END AS b,
                    CASE WHEN false THEN 1 END AS c FROM "dev/+/up")", r),
            Value::parse(R"({"a": "three", "b": 2, "c": null})"));
}

TEST(RuleEval, ForeachDoIncase) {
  const auto r = mqttRecord("gw/1/batch", R"({"sensors": [{"id": "a", "v": 5}, {"id": "b", "v": -1},
                                                          {"id": "c", "v": 9}]})");
  auto c = CompiledRule::compile(R"(FOREACH payload.sensors AS s DO s.id AS id, s.v * 10 AS v, clientid
                                    INCASE s.v > 0 FROM "gw/+/batch")");
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto out = c->evaluate(r);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_TRUE(out->matched);
  ASSERT_EQ(out->rows.size(), 2u);
  EXPECT_EQ(out->rows[0], Value::parse(R"({"id": "a", "v": 50, "clientid": "dev-7"})"));
  EXPECT_EQ(out->rows[1], Value::parse(R"({"id": "c", "v": 90, "clientid": "dev-7"})"));
  auto bare = CompiledRule::compile(R"(FOREACH payload.sensors FROM "gw/#")");
  ASSERT_TRUE(bare.isOk());
  auto all = bare->evaluate(r);
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(all->rows.size(), 3u);
  EXPECT_EQ(all->rows[1]["id"], "b");
}

TEST(RuleEval, CompileErrorsHavePositions) {
  EXPECT_EQ(compileError(R"(SELECT uper(topic) FROM "t")"), "line 1, column 8: unknown function 'uper'");
  EXPECT_EQ(compileError(R"(SELECT substr(topic) FROM "t")"), "line 1, column 8: substr takes 2 to 3 argument(s), not 1");
  EXPECT_EQ(compileError("SELECT topic\nFROM \"t\" WHERE paylod.x > 1"),
            "line 2, column 16: unknown name 'paylod' (payload, topic, levels, key, headers, timestamp, qos, clientid)");
  EXPECT_EQ(compileError(R"(SELECT s.v FROM "t")"), "line 1, column 8: unknown name 's' (payload, topic, levels, key, headers, timestamp, qos, clientid)")
      << "the FOREACH alias exists only in FOREACH";
  EXPECT_EQ(compileError(R"(SELECT now_timestamp(1) FROM "t")"), "line 1, column 8: now_timestamp takes 0 argument(s), not 1");
}

TEST(RuleEval, RunTimeErrorsHavePositions) {
  const auto r = mqttRecord("t", R"({"s": "abc", "n": 0, "list": 5})");
  EXPECT_EQ(runError(R"(SELECT payload.s * 2 FROM "t")", r), "line 1, column 8: '*' needs numbers, got a string and a number");
  EXPECT_EQ(runError(R"(SELECT int(payload.s) FROM "t")", r), "line 1, column 8: cannot cast a string abc to int");
  EXPECT_EQ(runError(R"(SELECT 1 / payload.n FROM "t")", r), "line 1, column 8: division by zero");
  EXPECT_EQ(runError(R"(FOREACH payload.list FROM "t")", r), "line 1, column 9: FOREACH needs an array, got a number");
  EXPECT_EQ(runError(R"(SELECT regex_match(topic, '(') FROM "t")", r).rfind(
                "line 1, column 8: regex_match: bad regular expression '('", 0),
            0u);
  EXPECT_EQ(runError(R"(SELECT upper(payload.n) FROM "t")", r), "line 1, column 8: upper needs a string, got a number");
}

// A payload nested 200,000 levels took the worker's stack (the document path parsed it without a
// bound, then copied it). It is this record's error now; a payload at the bound still evaluates.
TEST(RuleEval, PayloadNestedDeeperThanTheRecordBoundIsTheRecordsError) {
  auto c = CompiledRule::compile(R"(SELECT payload AS p FROM "#")");
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto out = c->evaluate(mqttRecord("a/b", deep));
  ASSERT_FALSE(out.isOk());
  EXPECT_NE(out.status().message().find("nesting deeper than 128"), std::string::npos)
      << out.status().message();
  auto decoded = CompiledRule::compile(R"(SELECT json_decode(payload.s) AS d FROM "#")");
  ASSERT_TRUE(decoded.isOk());
  const std::string wrapped = "{\"s\": \"" + std::string(300, '[') + std::string(300, ']') + "\"}";
  EXPECT_FALSE(decoded->evaluate(mqttRecord("a/b", wrapped)).isOk());
  const std::string atBound = std::string(128, '[') + std::string(128, ']');
  EXPECT_EQ(one(R"(SELECT payload AS p FROM "#")", mqttRecord("a/b", atBound))["p"].dump(), atBound);
}

}  // namespace
}  // namespace ferry::transforms::rules

#include "transforms/rules/rule_transform.h"

namespace ferry::transforms {
namespace {

TEST(RuleTransform, FiltersSelectsAndPassesUnmatchedTopics) {
  RuleTransform t;
  ASSERT_TRUE(t.configure({{"sql", R"(SELECT payload.temp AS t, topic FROM "sensors/+/data" WHERE payload.temp > 30)"}}).isOk());
  Record hot;
  hot.topic = "sensors/k1/data";
  hot.value = Bytes::copyOf(std::string_view(R"({"temp": 31})"));
  auto kept = t.apply(hot);
  ASSERT_TRUE(kept.isOk());
  EXPECT_TRUE(*kept);
  EXPECT_EQ(hot.value.view(), R"({"t":31,"topic":"sensors/k1/data"})");
  Record cold = hot;
  cold.value = Bytes::copyOf(std::string_view(R"({"temp": 3})"));
  EXPECT_FALSE(*t.apply(cold)) << "WHERE false drops";
  Record other;
  other.topic = "elsewhere";
  other.value = Bytes::copyOf(std::string_view("raw"));
  EXPECT_TRUE(*t.apply(other)) << "FROM unmatched passes";
  EXPECT_EQ(other.value.view(), "raw");
  RuleTransform strict;
  ASSERT_TRUE(strict.configure({{"sql", R"(SELECT * FROM "a")"}, {"unmatched", "drop"}}).isOk());
  EXPECT_FALSE(*strict.apply(other));
  Record bad = hot;
  RuleTransform failing;
  ASSERT_TRUE(failing.configure({{"sql", R"(SELECT payload.temp * 'x' FROM "#")"}}).isOk());
  auto err = failing.apply(bad);
  ASSERT_FALSE(err.isOk());
  EXPECT_NE(err.status().message().find("line 1, column 8"), std::string::npos) << err.status().message();
}

TEST(RuleTransform, ForeachWritesAnArrayAndConfigErrorsNamePositions) {
  RuleTransform t;
  ASSERT_TRUE(t.configure({{"sql", R"(FOREACH payload.s AS x DO x.v AS v INCASE x.v > 1 FROM "#")"}}).isOk());
  Record r;
  r.topic = "t";
  r.value = Bytes::copyOf(std::string_view(R"({"s": [{"v": 1}, {"v": 2}, {"v": 3}]})"));
  ASSERT_TRUE(*t.apply(r));
  EXPECT_EQ(r.value.view(), R"([{"v":2},{"v":3}])");
  r.value = Bytes::copyOf(std::string_view(R"({"s": [{"v": 0}]})"));
  EXPECT_FALSE(*t.apply(r)) << "nothing left: dropped";
  RuleTransform bad;
  auto s = bad.configure({{"sql", "SELECT a\nFROM \"t\""}});
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message().find("line 1, column 8: unknown name 'a'") != std::string::npos ||
                s.message().find("Invalid rule") != std::string::npos,
            true)
      << s.message();
}

}  // namespace
}  // namespace ferry::transforms
