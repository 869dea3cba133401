// The rule language's parser: every construct, operator precedence, positions in errors, and
// MQTT topic filters.
#include "transforms/rules/rule_parser.h"

#include <gtest/gtest.h>

namespace ferry::transforms::rules {
namespace {

// A compact rendering of a tree, to compare shapes: (op a b), name, 1, 'str', f(x), a.b, a[i].
std::string show(const Node& n) {
  switch (n.kind) {
    case NodeKind::kNull: return "null";
    case NodeKind::kBool: return n.boolean ? "true" : "false";
    case NodeKind::kNumber: return n.integral ? std::to_string(n.integer) : std::to_string(n.number);
    case NodeKind::kString: return "'" + n.text + "'";
    case NodeKind::kName: return n.text;
    case NodeKind::kField: return show(*n.kids[0]) + "." + n.text;
    case NodeKind::kIndex: return show(*n.kids[0]) + "[" + show(*n.kids[1]) + "]";
    case NodeKind::kCall: {
      std::string s = n.text + "(";
      for (std::size_t i = 0; i < n.kids.size(); ++i) s += (i ? "," : "") + show(*n.kids[i]);
      return s + ")";
    }
    case NodeKind::kUnary: return "(" + n.text + " " + show(*n.kids[0]) + ")";
    case NodeKind::kBinary: return "(" + n.text + " " + show(*n.kids[0]) + " " + show(*n.kids[1]) + ")";
    case NodeKind::kCase: {
      std::string s = "case";
      for (const auto& k : n.kids) s += " " + show(*k);
      return s + (n.hasSubject ? " S" : "") + (n.hasElse ? " E" : "");
    }
  }
  return "?";
}

std::string errorOf(std::string_view text) {
  auto r = parseRule(text);
  return r.isOk() ? "OK" : r.status().message();
}

TEST(RuleParser, TheIssuesExampleRule) {
  auto r = parseRule(R"(SELECT payload.temp AS t, topic FROM "sensors/+/data" WHERE payload.temp > 30)");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->select.size(), 2u);
  EXPECT_EQ(show(*r->select[0].expr), "payload.temp");
  EXPECT_EQ(r->select[0].alias, "t");
  EXPECT_EQ(show(*r->select[1].expr), "topic");
  EXPECT_EQ(r->select[1].alias, "topic");
  EXPECT_EQ(r->from, (std::vector<std::string>{"sensors/+/data"}));
  ASSERT_TRUE(r->where);
  EXPECT_EQ(show(*r->where), "(> payload.temp 30)");
  EXPECT_FALSE(r->foreach);
}

TEST(RuleParser, PrecedenceAndAssociativity) {
  auto r = parseRule(R"(SELECT 1 + 2 * 3 - 4 / 2 AS a, -x % 3, (1 + 2) * 3, a div b mod c FROM "t"
                        WHERE not a = 1 or b < 2 and c >= 3 AND d <> 'x')");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(show(*r->select[0].expr), "(- (+ 1 (* 2 3)) (/ 4 2))");
  EXPECT_EQ(show(*r->select[1].expr), "(% (- x) 3)");
  EXPECT_EQ(show(*r->select[2].expr), "(* (+ 1 2) 3)");
  EXPECT_EQ(show(*r->select[3].expr), "(% (div a b) c)");
  EXPECT_EQ(show(*r->where), "(or (not (= a 1)) (and (and (< b 2) (>= c 3)) (!= d 'x')))");
}

TEST(RuleParser, JsonAccessCallsCaseAndLiterals) {
  auto r = parseRule(R"(SELECT payload.arr[1].v, payload.`odd key`, upper(clientid), now(),
      concat(topic, '/', "x\"y"), CASE WHEN qos = 0 THEN 'at most' WHEN qos = 1 THEN 'at least' ELSE 'once' END AS q,
      CASE payload.kind WHEN 'a' THEN 1 END, true, false, null, 1.5e2, 7
      FROM "a/#", "b" -- a comment
      )");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(show(*r->select[0].expr), "payload.arr[1].v");
  EXPECT_EQ(show(*r->select[1].expr), "payload.odd key");
  EXPECT_EQ(show(*r->select[2].expr), "upper(clientid)");
  EXPECT_EQ(r->select[2].alias, "upper");
  EXPECT_EQ(show(*r->select[3].expr), "now()");
  EXPECT_EQ(show(*r->select[4].expr), "concat(topic,'/','x\"y')");
  EXPECT_EQ(show(*r->select[5].expr), "case (= qos 0) 'at most' (= qos 1) 'at least' 'once' E");
  EXPECT_EQ(r->select[5].alias, "q");
  EXPECT_EQ(show(*r->select[6].expr), "case payload.kind 'a' 1 S");
  EXPECT_EQ(show(*r->select[7].expr), "true");
  EXPECT_EQ(show(*r->select[9].expr), "null");
  EXPECT_DOUBLE_EQ(r->select[10].expr->number, 150.0);
  EXPECT_FALSE(r->select[10].expr->integral);
  EXPECT_TRUE(r->select[11].expr->integral);
  EXPECT_EQ(r->from, (std::vector<std::string>{"a/#", "b"}));
  EXPECT_FALSE(r->where);
}

TEST(RuleParser, SelectStarAndForeach) {
  auto star = parseRule(R"(select * from "t/#" where topic = 't/1')");
  ASSERT_TRUE(star.isOk()) << star.status().toString();
  ASSERT_EQ(star->select.size(), 1u);
  EXPECT_FALSE(star->select[0].expr);

  auto f = parseRule(R"(FOREACH payload.sensors AS s DO s.name AS n, s.v * 2 AS v INCASE s.v > 0
                        FROM "devices/+/batch" WHERE clientid != 'test')");
  ASSERT_TRUE(f.isOk()) << f.status().toString();
  EXPECT_TRUE(f->foreach);
  EXPECT_EQ(show(*f->foreachExpr), "payload.sensors");
  EXPECT_EQ(f->foreachAlias, "s");
  ASSERT_EQ(f->select.size(), 2u);
  EXPECT_EQ(show(*f->select[1].expr), "(* s.v 2)");
  EXPECT_EQ(show(*f->incase), "(> s.v 0)");
  EXPECT_EQ(show(*f->where), "(!= clientid 'test')");

  auto bare = parseRule(R"(FOREACH payload.list FROM "x")");
  ASSERT_TRUE(bare.isOk()) << bare.status().toString();
  EXPECT_EQ(bare->foreachAlias, "item");
  EXPECT_TRUE(bare->select.empty());
}

TEST(RuleParser, ErrorsNameLineAndColumn) {
  EXPECT_EQ(errorOf("SELECT a FORM \"t\""), "line 1, column 10: expected FROM, found 'FORM'");
  EXPECT_EQ(errorOf("SELECT a,\n  FROM \"t\""), "line 2, column 3: expected an expression, found 'FROM'");
  EXPECT_EQ(errorOf("SELECT (a + 1 FROM \"t\""), "line 1, column 15: expected ), found 'FROM'");
  EXPECT_EQ(errorOf("SELECT a FROM t"), "line 1, column 15: expected a topic filter in quotes, found 't'");
  EXPECT_EQ(errorOf("SELECT a FROM \"t\" WHERE"), "line 1, column 24: expected an expression, found the end of the rule");
  EXPECT_EQ(errorOf("SELECT a FROM \"t\" extra"), "line 1, column 19: expected the end of the rule, found 'extra'");
  EXPECT_EQ(errorOf("SELECT 'abc FROM \"t\""), "line 1, column 8: unterminated string");
  EXPECT_EQ(errorOf("SELECT a ; FROM \"t\""), "line 1, column 10: unexpected character ';'");
  EXPECT_EQ(errorOf("SELECT 12abc FROM \"t\""), "line 1, column 8: malformed number '12a'");
  EXPECT_EQ(errorOf("SELECT 1.2.3 FROM \"t\""), "line 1, column 8: malformed number '1.2.3'");
  EXPECT_EQ(errorOf("SELECT CASE WHEN a THEN 1 FROM \"t\""), "line 1, column 27: expected END, found 'FROM'");
  EXPECT_EQ(errorOf("SELECT f(a b) FROM \"t\""), "line 1, column 12: expected ) or ,, found 'b'");
  EXPECT_EQ(errorOf("SELECT a FROM \"s/x#\""), "line 1, column 15: topic filter 's/x#': + and # must fill a whole level");
  EXPECT_EQ(errorOf("SELECT a FROM \"#/s\""), "line 1, column 15: topic filter '#/s': # must be the last level");
  EXPECT_EQ(errorOf("UPDATE x"), "line 1, column 1: expected SELECT or FOREACH, found 'UPDATE'");
  EXPECT_EQ(errorOf(""), "line 1, column 1: expected SELECT or FOREACH, found the end of the rule");
  EXPECT_EQ(errorOf("SELECT 'a\\q' FROM \"t\""), "line 1, column 10: unknown escape \\q");
}

TEST(RuleParser, NestingIsBounded) {
  const std::string deep = "SELECT " + std::string(1000, '(') + "1" + std::string(1000, ')') + " FROM \"t\"";
  EXPECT_NE(errorOf(deep).find("nested too deeply"), std::string::npos) << errorOf(deep);
  std::string minus;
  for (int i = 0; i < 5000; ++i) minus += "- ";  // "--" would start a comment
  EXPECT_NE(errorOf("SELECT " + minus + "1 FROM \"t\"").find("nested too deeply"), std::string::npos);
  EXPECT_EQ(errorOf("SELECT " + std::string(50, '(') + "1" + std::string(50, ')') + " FROM \"t\""), "OK");
}

TEST(RuleParser, MqttTopicFilters) {
  EXPECT_TRUE(topicMatches("sensors/+/data", "sensors/k1/data"));
  EXPECT_FALSE(topicMatches("sensors/+/data", "sensors/k1/x/data"));
  EXPECT_FALSE(topicMatches("sensors/+/data", "sensors/k1"));
  EXPECT_TRUE(topicMatches("sensors/#", "sensors"));
  EXPECT_TRUE(topicMatches("sensors/#", "sensors/a/b/c"));
  EXPECT_TRUE(topicMatches("#", "anything/at/all"));
  EXPECT_TRUE(topicMatches("+", "one"));
  EXPECT_FALSE(topicMatches("+", "one/two"));
  EXPECT_TRUE(topicMatches("a/b", "a/b"));
  EXPECT_FALSE(topicMatches("a/b", "a/b/c"));
  EXPECT_FALSE(topicMatches("a/b/c", "a/b"));
  EXPECT_TRUE(topicMatches("+/+", "/x"));  // an empty first level is a level
}

}  // namespace
}  // namespace ferry::transforms::rules
