#include "redis/resp.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry::redis {
namespace {

std::optional<Reply> parseAll(ReplyReader& r, const std::string& bytes) {
  EXPECT_TRUE(r.feed(bytes.data(), bytes.size()).isOk());
  auto next = r.next();
  EXPECT_TRUE(next.isOk()) << next.status().toString();
  return next.isOk() ? std::move(next.value()) : std::nullopt;
}

TEST(RespTest, ParsesEveryReplyType) {
  ReplyReader r;
  auto s = parseAll(r, "+OK\r\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->type, Reply::Type::kStatus);
  EXPECT_EQ(s->str, "OK");
  auto e = parseAll(r, "-MOVED 3999 127.0.0.1:6381\r\n");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->isError());
  EXPECT_EQ(e->errorPrefix(), "MOVED");
  auto i = parseAll(r, ":-42\r\n");
  ASSERT_TRUE(i);
  EXPECT_EQ(i->integer, -42);
  auto n = parseAll(r, "$-1\r\n");
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->isNil());
  auto b = parseAll(r, std::string("$5\r\na\0b\r\n\r\n", 11));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->str, std::string("a\0b\r\n", 5));
}

TEST(RespTest, NestedArraysAsStreamEntriesComeOut) {
  // An XREADGROUP answer: [[stream, [[id, [f, v]]]]].
  ReplyReader r;
  auto a = parseAll(r, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$5\r\nvalue\r\n$2\r\nhi\r\n");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->isArray());
  const Reply& entry = a->elements[0].elements[1].elements[0];
  EXPECT_EQ(entry.elements[0].str, "1-0");
  EXPECT_EQ(entry.elements[1].elements[1].str, "hi");
  auto empty = parseAll(r, "*0\r\n");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->isArray());
  EXPECT_TRUE(empty->elements.empty());
  auto nilArray = parseAll(r, "*-1\r\n");
  ASSERT_TRUE(nilArray);
  EXPECT_TRUE(nilArray->isNil());
}

TEST(RespTest, RepliesSplitAcrossReadsAndSeveralInOneRead) {
  ReplyReader r;
  const std::string bytes = "*2\r\n$3\r\nfoo\r\n:7\r\n+PONG\r\n";
  for (char c : bytes) ASSERT_TRUE(r.feed(&c, 1).isOk());
  auto first = r.next();
  ASSERT_TRUE(first.isOk());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->elements[0].str, "foo");
  EXPECT_EQ((*first)->elements[1].integer, 7);
  auto second = r.next();
  ASSERT_TRUE(second.isOk());
  ASSERT_TRUE(second->has_value());
  EXPECT_EQ((*second)->str, "PONG");
  auto none = r.next();
  ASSERT_TRUE(none.isOk());
  EXPECT_FALSE(none->has_value());
}

TEST(RespTest, AHostileArrayLengthIsRefusedBeforeAllocating) {
  ReplyReader r(ReplyReader::Limits{1 << 20, 1000});
  const std::string bytes = "*2000000000\r\n";
  ASSERT_TRUE(r.feed(bytes.data(), bytes.size()).isOk());
  auto next = r.next();
  ASSERT_FALSE(next.isOk());
  EXPECT_NE(next.status().message().find("longer than 1000"), std::string::npos) << next.status().message();
  // A nested one too.
  ReplyReader r2(ReplyReader::Limits{1 << 20, 1000});
  const std::string nested = "*1\r\n*1001\r\n";
  ASSERT_TRUE(r2.feed(nested.data(), nested.size()).isOk());
  EXPECT_FALSE(r2.next().isOk());
}

TEST(RespTest, AReplyBeyondTheBufferLimitIsRefused) {
  ReplyReader r(ReplyReader::Limits{64, 1000});
  const std::string head = "$1000000\r\n";
  ASSERT_TRUE(r.feed(head.data(), head.size()).isOk());
  const std::string body(100, 'x');
  Status s = r.feed(body.data(), body.size());
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("larger than 64"), std::string::npos) << s.message();
}

TEST(RespTest, MalformedInputIsAProtocolError) {
  for (const std::string bad : {"?what\r\n", "$abc\r\n", ":12x\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n"}) {
    ReplyReader r;
    ASSERT_TRUE(r.feed(bad.data(), bad.size()).isOk());
    auto next = r.next();
    EXPECT_FALSE(next.isOk()) << bad;
    if (!next.isOk()) {
      EXPECT_NE(next.status().message().find("protocol error"), std::string::npos);
    }
    // Once out of sync, the reader stays refused.
    EXPECT_FALSE(r.feed("+OK\r\n", 5).isOk()) << bad;
  }
}

TEST(RespTest, CommandsAreArraysOfBulkStrings) {
  std::string out;
  appendCommand(out, {"SET", "k", std::string("a\r\nb", 4)});
  appendCommand(out, {"PING"});
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n*1\r\n$4\r\nPING\r\n");
  // And read back by the reply parser, byte for byte.
  ReplyReader r;
  auto back = parseAll(r, out);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->elements[2].str, std::string("a\r\nb", 4));
}

TEST(RespTest, KeySlotsFollowTheClusterSpec) {
  EXPECT_EQ(keySlot("123456789"), 12739);  // CRC16/XMODEM check value 0x31C3
  EXPECT_EQ(keySlot("foo"), 12182);
  EXPECT_EQ(keySlot("{user1000}.following"), keySlot("{user1000}.followers"));
  EXPECT_EQ(keySlot("{user1000}.following"), keySlot("user1000"));
  EXPECT_EQ(keySlot("foo{}{bar}"), keySlot("foo{}{bar}"));  // empty tag: the whole key
  EXPECT_NE(keySlot("foo{}{bar}"), keySlot("bar"));
  EXPECT_EQ(keySlot("foo{{bar}}zap"), keySlot("{bar"));
  EXPECT_LT(keySlot(""), 16384);
}

}  // namespace
}  // namespace ferry::redis
