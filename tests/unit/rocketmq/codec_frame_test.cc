// Frames and both header encodings (spec §1.2-§1.5, Appendix A.1/A.2, Appendix C items 1-2).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "rocketmq/remoting.h"
#include "codec_test_util.h"

namespace ferry::rocketmq {
namespace {

using testing::BeWriter;
using testing::fromHex;

constexpr char kA1Header[] =
    R"({"code":105,"extFields":{"topic":"TestTopic"},"flag":0,"language":"CPP","opaque":1,)"
    R"("serializeTypeCurrentRPC":"JSON","version":479})";

RemotingCommand routeRequest() {
  RemotingCommand c;
  c.code = 105;
  c.opaque = 1;
  c.extFields["topic"] = "TestTopic";
  return c;
}

std::string a2Frame() {
  return fromHex(
      "00 00 00 2d 01 00 00 29 00 69 01 01 df 00 00 00"
      "01 00 00 00 00 00 00 00 00 00 00 00 14 00 05 74"
      "6f 70 69 63 00 00 00 09 54 65 73 74 54 6f 70 69"
      "63");
}

void expectSameCommand(const RemotingCommand& a, const RemotingCommand& b) {
  EXPECT_EQ(a.code, b.code);
  EXPECT_EQ(a.language, b.language);
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.opaque, b.opaque);
  EXPECT_EQ(a.flag, b.flag);
  EXPECT_EQ(a.remark, b.remark);
  EXPECT_EQ(a.extFields, b.extFields);
  EXPECT_EQ(a.body, b.body);
}

TEST(CodecFrame, A1JsonHeaderEncodesByteForByte) {
  std::string header = encodeJsonHeader(routeRequest());
  EXPECT_EQ(header, kA1Header);
  ASSERT_EQ(header.size(), 130u);
  std::string frame = encodeFrame(routeRequest(), SerializeType::kJson);
  ASSERT_EQ(frame.size(), 138u);
  EXPECT_EQ(frame.substr(0, 8), fromHex("00 00 00 86 00 00 00 82"));
  EXPECT_EQ(frame.substr(8), kA1Header);
}

TEST(CodecFrame, A1JsonFrameDecodes) {
  std::string frame = fromHex("00 00 00 86 00 00 00 82") + kA1Header;
  FrameDecode d = decodeFrame(frame);
  ASSERT_EQ(d.state, FrameDecode::State::kOk) << d.error;
  EXPECT_EQ(d.type, SerializeType::kJson);
  EXPECT_EQ(d.consumed, 138u);
  expectSameCommand(d.command, routeRequest());
  EXPECT_EQ(d.command.ext("topic"), "TestTopic");
  EXPECT_FALSE(d.command.isResponse());
}

TEST(CodecFrame, A2BinaryFrameEncodesByteForByte) {
  EXPECT_EQ(encodeFrame(routeRequest(), SerializeType::kRocketmq), a2Frame());
}

TEST(CodecFrame, A2BinaryFrameDecodes) {
  FrameDecode d = decodeFrame(a2Frame());
  ASSERT_EQ(d.state, FrameDecode::State::kOk) << d.error;
  EXPECT_EQ(d.type, SerializeType::kRocketmq);
  EXPECT_EQ(d.consumed, 49u);
  expectSameCommand(d.command, routeRequest());
}

TEST(CodecFrame, BothHeaderTypesRoundTripAFullCommand) {
  RemotingCommand c;
  c.code = 11;
  c.language = 9;  // GO
  c.version = 401;
  c.opaque = -123456;
  c.flag = kFlagResponse | kFlagOneway;
  c.remark = "no message found, offset=7";
  c.extFields = {{"queueId", "3"}, {"consumerGroup", "g1"}, {"properties", "A\x01" "b\x02"}};
  c.body = std::string("\x00\x01\xff body", 8);
  for (auto type : {SerializeType::kJson, SerializeType::kRocketmq}) {
    std::string frame = encodeFrame(c, type);
    FrameDecode d = decodeFrame(frame + "trailing bytes of the next frame");
    ASSERT_EQ(d.state, FrameDecode::State::kOk) << d.error;
    EXPECT_EQ(d.type, type);
    EXPECT_EQ(d.consumed, frame.size());
    expectSameCommand(d.command, c);
    EXPECT_TRUE(d.command.isResponse());
    EXPECT_TRUE(d.command.isOneway());
  }
}

TEST(CodecFrame, EmptyCommandRoundTrips) {
  RemotingCommand c;
  c.language = 0;
  c.version = 0;
  for (auto type : {SerializeType::kJson, SerializeType::kRocketmq}) {
    FrameDecode d = decodeFrame(encodeFrame(c, type));
    ASSERT_EQ(d.state, FrameDecode::State::kOk) << d.error;
    expectSameCommand(d.command, c);
  }
}

TEST(CodecFrame, SplitAtEveryByteNeedsMoreUntilComplete) {
  RemotingCommand c = routeRequest();
  c.body = "0123456789";
  for (auto type : {SerializeType::kJson, SerializeType::kRocketmq}) {
    std::string frame = encodeFrame(c, type);
    for (std::size_t cut = 0; cut < frame.size(); ++cut) {
      FrameDecode d = decodeFrame(std::string_view(frame).substr(0, cut));
      EXPECT_EQ(d.state, FrameDecode::State::kNeedMore) << "cut at " << cut;
    }
    FrameDecode whole = decodeFrame(frame);
    ASSERT_EQ(whole.state, FrameDecode::State::kOk);
    EXPECT_EQ(whole.command.body, "0123456789");
  }
}

TEST(CodecFrame, TwoFramesBackToBack) {
  RemotingCommand a = routeRequest();
  RemotingCommand b = routeRequest();
  b.opaque = 2;
  std::string stream = encodeFrame(a) + encodeFrame(b, SerializeType::kRocketmq);
  FrameDecode first = decodeFrame(stream);
  ASSERT_EQ(first.state, FrameDecode::State::kOk);
  FrameDecode second = decodeFrame(std::string_view(stream).substr(first.consumed));
  ASSERT_EQ(second.state, FrameDecode::State::kOk);
  EXPECT_EQ(first.command.opaque, 1);
  EXPECT_EQ(second.command.opaque, 2);
  EXPECT_EQ(first.consumed + second.consumed, stream.size());
}

TEST(CodecFrame, OversizeFrameIsInvalidBeforeItArrives) {
  // 4 + frameLength = 16 MiB + 1.
  FrameDecode d = decodeFrame(BeWriter().i32((16 << 20) - 3).bytes());
  EXPECT_EQ(d.state, FrameDecode::State::kInvalid);
  EXPECT_FALSE(d.error.empty());
  // Exactly 16 MiB is allowed (still incomplete here).
  EXPECT_EQ(decodeFrame(BeWriter().i32((16 << 20) - 4).i32(0).bytes()).state,
            FrameDecode::State::kNeedMore);
  // Negative lengths (a first byte >= 0x80) are invalid too.
  EXPECT_EQ(decodeFrame(fromHex("ff ff ff ff")).state, FrameDecode::State::kInvalid);
}

TEST(CodecFrame, FrameShorterThanHeaderWordIsInvalid) {
  EXPECT_EQ(decodeFrame(fromHex("00 00 00 03 00 00 00")).state, FrameDecode::State::kInvalid);
}

TEST(CodecFrame, UnknownSerializeTypeIsInvalid) {
  EXPECT_EQ(decodeFrame(fromHex("00 00 00 04 02")).state, FrameDecode::State::kInvalid);
  EXPECT_EQ(decodeFrame(fromHex("00 00 00 04 80 00 00 00")).state, FrameDecode::State::kInvalid);
}

TEST(CodecFrame, HeaderLongerThanFrameIsInvalid) {
  FrameDecode d = decodeFrame(fromHex("00 00 00 08 00 00 00 05 7b 7d 20 20"));
  EXPECT_EQ(d.state, FrameDecode::State::kInvalid);
  EXPECT_NE(d.error.find("header length"), std::string::npos);
}

TEST(CodecFrame, GarbageHeadersAreInvalid) {
  auto frameWith = [](std::uint8_t type, std::string_view header) {
    return BeWriter()
        .i32(static_cast<std::int32_t>(4 + header.size()))
        .i32(static_cast<std::int32_t>((type << 24) | header.size()))
        .raw(header)
        .bytes();
  };
  EXPECT_EQ(decodeFrame(frameWith(0, "not json")).state, FrameDecode::State::kInvalid);
  EXPECT_EQ(decodeFrame(frameWith(0, "[1,2]")).state, FrameDecode::State::kInvalid);
  EXPECT_EQ(decodeFrame(frameWith(0, "")).state, FrameDecode::State::kInvalid);
  EXPECT_EQ(decodeFrame(frameWith(0, R"({"code":"x"})")).state, FrameDecode::State::kInvalid);
  EXPECT_EQ(decodeFrame(frameWith(0, R"({"code":1,"extFields":5})")).state,
            FrameDecode::State::kInvalid);
  EXPECT_EQ(decodeFrame(frameWith(0, "{\"remark\":\"\xff\"}")).state,
            FrameDecode::State::kInvalid);  // not UTF-8
  EXPECT_EQ(decodeFrame(frameWith(1, "short")).state, FrameDecode::State::kInvalid);
}

TEST(CodecBinaryHeader, LengthsAreBoundedByTheHeader) {
  std::string base = BeWriter().i16(105).u8(1).i16(479).i32(1).i32(0).bytes();
  RemotingCommand out;
  // Remark longer than the header.
  EXPECT_FALSE(decodeBinaryHeader(BeWriter().raw(base).i32(100).raw("abc").i32(0).bytes(), out)
                   .isOk());
  // Negative remark length.
  EXPECT_FALSE(decodeBinaryHeader(BeWriter().raw(base).i32(-1).i32(0).bytes(), out).isOk());
  // Ext map longer than the header.
  EXPECT_FALSE(decodeBinaryHeader(BeWriter().raw(base).i32(0).i32(50).bytes(), out).isOk());
  // Entry whose value overruns the map.
  std::string map = BeWriter().i16(1).raw("k").i32(10).raw("v").bytes();
  EXPECT_FALSE(decodeBinaryHeader(
                   BeWriter().raw(base).i32(0).i32(static_cast<std::int32_t>(map.size()))
                       .raw(map).bytes(),
                   out)
                   .isOk());
  // Missing ext length.
  EXPECT_FALSE(decodeBinaryHeader(BeWriter().raw(base).i32(0).bytes(), out).isOk());
}

TEST(CodecBinaryHeader, ZeroLengthsDecodeAsAbsent) {
  std::string map = BeWriter().i16(1).raw("a").i32(0).i16(1).raw("b").i32(1).raw("x").bytes();
  std::string header = BeWriter()
                           .i16(1).u8(0).i16(0).i32(0).i32(1)
                           .i32(0)
                           .i32(static_cast<std::int32_t>(map.size()))
                           .raw(map)
                           .bytes();
  RemotingCommand out;
  ASSERT_TRUE(decodeBinaryHeader(header, out).isOk());
  EXPECT_FALSE(out.remark.has_value());
  EXPECT_EQ(out.extFields, (std::map<std::string, std::string>{{"b", "x"}}));
  EXPECT_EQ(out.language, 0);
  EXPECT_TRUE(out.isResponse());
}

TEST(CodecBinaryHeader, SignedFieldsSignExtend) {
  RemotingCommand c;
  c.code = -1;
  c.version = -5;
  c.opaque = INT32_MIN;
  c.flag = -1;
  RemotingCommand out;
  ASSERT_TRUE(decodeBinaryHeader(encodeBinaryHeader(c), out).isOk());
  EXPECT_EQ(out.code, -1);
  EXPECT_EQ(out.version, -5);
  EXPECT_EQ(out.opaque, INT32_MIN);
  EXPECT_EQ(out.flag, -1);
}

TEST(CodecJsonHeader, ControlCharactersAreEscaped) {
  RemotingCommand c;
  c.extFields["properties"] = "TAGS\x01TagA\x02WAIT\x01true\x02";
  c.remark = "line1\nline2\t\"q\"";
  std::string header = encodeJsonHeader(c);
  EXPECT_NE(header.find(R"("TAGS\u0001TagA\u0002WAIT\u0001true\u0002")"), std::string::npos)
      << header;
  for (char ch : header) EXPECT_GE(static_cast<unsigned char>(ch), 0x20) << header;
  RemotingCommand out;
  ASSERT_TRUE(decodeJsonHeader(header, out).isOk());
  EXPECT_EQ(out.extFields, c.extFields);
  EXPECT_EQ(out.remark, c.remark);
}

// The plain path (direct writing) and the full one (a json object) give the same bytes for every
// ASCII header: every control character, quotes, backslashes, DEL, empty strings, a remark or none.
TEST(CodecJsonHeader, PlainAndFullEncodingsAgreeOnAsciiHeaders) {
  std::mt19937 rng(1234);
  auto text = [&](std::size_t max) {
    std::string s(rng() % (max + 1), ' ');
    for (char& ch : s) ch = static_cast<char>(rng() % 0x80);
    return s;
  };
  for (int i = 0; i < 2000; ++i) {
    RemotingCommand c;
    c.code = static_cast<std::int32_t>(rng()) - (1 << 30);
    c.language = static_cast<std::int32_t>(rng() % 20) - 2;
    c.version = static_cast<std::int32_t>(rng() % 1000);
    c.opaque = static_cast<std::int32_t>(rng());
    c.flag = static_cast<std::int32_t>(rng() % 4);
    if (rng() % 3 != 0) c.remark = text(12);
    for (std::size_t n = rng() % 6; n > 0; --n) c.extFields[text(6)] = text(40);
    auto plain = encodeJsonHeaderPlain(c);
    ASSERT_TRUE(plain.has_value());
    ASSERT_EQ(*plain, encodeJsonHeaderFull(c)) << i;
  }
  RemotingCommand send;  // a real send header: properties separated by \x01 and \x02
  send.code = 310;
  send.extFields["a"] = "ProducerGroup";
  send.extFields["i"] = "TAGS\x01TagA\x02UNIQ_KEY\x01" "AC11\x02\x7f";
  EXPECT_EQ(encodeJsonHeader(send), encodeJsonHeaderFull(send));
}

// Anything beyond ASCII takes the full path (UTF-8 kept, invalid sequences replaced).
TEST(CodecJsonHeader, NonAsciiTakesTheFullPath) {
  RemotingCommand c;
  c.extFields["k"] = "caf\xc3\xa9";
  EXPECT_FALSE(encodeJsonHeaderPlain(c).has_value());
  EXPECT_NE(encodeJsonHeader(c).find("caf\xc3\xa9"), std::string::npos);
  RemotingCommand bad;
  bad.remark = "x\xff";
  EXPECT_FALSE(encodeJsonHeaderPlain(bad).has_value());
  EXPECT_NE(encodeJsonHeader(bad).find("x\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

TEST(CodecJsonHeader, LenientInput) {
  RemotingCommand out;
  ASSERT_TRUE(decodeJsonHeader(
                  R"({"serializeTypeCurrentRPC":"JSON","opaque":9,"code":0,"future":{"x":[1]},)"
                  R"("extFields":{"queueId":3,"offset":-9007199254740993,"ok":true,"n":null,)"
                  R"("f":1.5,"msgId":"ABC"}})",
                  out)
                  .isOk());
  EXPECT_EQ(out.opaque, 9);
  EXPECT_EQ(out.language, 0);  // missing -> JAVA
  EXPECT_EQ(out.version, 0);   // missing -> 0
  EXPECT_EQ(out.flag, 0);
  EXPECT_FALSE(out.remark.has_value());
  EXPECT_EQ(out.ext("queueId"), "3");
  EXPECT_EQ(out.extInt("queueId"), 3);
  EXPECT_EQ(out.extInt("offset"), -9007199254740993LL);  // exact beyond 2^53
  EXPECT_EQ(out.ext("ok"), "true");
  EXPECT_FALSE(out.ext("n").has_value());
  EXPECT_EQ(out.ext("f"), "1.5");
  EXPECT_EQ(out.ext("msgId"), "ABC");
  EXPECT_FALSE(out.extInt("msgId").has_value());
  EXPECT_FALSE(out.ext("absent").has_value());
}

TEST(CodecJsonHeader, FastjsonQuirksAndLanguageNames) {
  RemotingCommand out;
  ASSERT_TRUE(decodeJsonHeader("{code:'17',language:'GO',flag:1,extFields:{a:'b',},}", out)
                  .isOk());
  EXPECT_EQ(out.code, 17);
  EXPECT_EQ(out.language, 9);
  EXPECT_TRUE(out.isResponse());
  EXPECT_EQ(out.ext("a"), "b");
  ASSERT_TRUE(decodeJsonHeader(R"({"language":"SOMETHING_NEW"})", out).isOk());
  EXPECT_EQ(out.language, 7);  // OTHER
  ASSERT_TRUE(decodeJsonHeader(R"({"language":12})", out).isOk());
  EXPECT_EQ(out.language, 12);  // RUST, given as a number
  ASSERT_TRUE(decodeJsonHeader(R"({"language":200})", out).isOk());
  EXPECT_EQ(out.language, 7);
  EXPECT_FALSE(decodeJsonHeader(R"({"opaque":4294967296})", out).isOk());
  EXPECT_FALSE(decodeJsonHeader(R"({"flag":1.5})", out).isOk());
}

TEST(CodecJsonHeader, EmptyRemarkAndEmptyExtAreOmitted) {
  RemotingCommand c;
  c.remark = "";
  std::string header = encodeJsonHeader(c);
  EXPECT_EQ(header.find("remark"), std::string::npos);
  EXPECT_EQ(header.find("extFields"), std::string::npos);
  EXPECT_NE(header.find(R"("language":"CPP")"), std::string::npos);
}

// The JSON header's fast path takes what brokers write and agrees with the full parser; anything
// it does not know goes to the full parser, with the same result as before it existed.
TEST(CodecFrame, JsonHeaderFastPathAgreesWithTheFullParser) {
  const std::string brokerPull =
      R"({"code":0,"extFields":{"maxOffset":"12","minOffset":"0","nextBeginOffset":"12",)"
      R"("suggestWhichBrokerId":"0"},"flag":1,"language":"JAVA","opaque":7,)"
      R"("serializeTypeCurrentRPC":"JSON","version":453})";
  RemotingCommand fast, full;
  ASSERT_TRUE(decodeJsonHeaderFast(brokerPull, fast));
  ASSERT_TRUE(decodeJsonHeaderFull(brokerPull, full).isOk());
  EXPECT_EQ(fast.code, 0);
  EXPECT_EQ(fast.flag, 1);
  EXPECT_EQ(fast.opaque, 7);
  EXPECT_EQ(fast.version, 453);
  EXPECT_EQ(fast.language, 0);
  EXPECT_EQ(fast.extFields, full.extFields);
  EXPECT_EQ(fast.extFields.at("nextBeginOffset"), "12");
  // Our own encoding reads back through the fast path too.
  RemotingCommand ours;
  ours.code = 11;
  ours.opaque = -3;
  ours.remark = "a remark";
  ours.extFields = {{"topic", "t"}, {"queueId", "2"}};
  RemotingCommand back;
  ASSERT_TRUE(decodeJsonHeaderFast(encodeJsonHeader(ours), back));
  EXPECT_EQ(back.code, 11);
  EXPECT_EQ(back.opaque, -3);
  EXPECT_EQ(back.remark, ours.remark);
  EXPECT_EQ(back.extFields, ours.extFields);

  // Accepted by the fast path: scalars of every kind, whitespace, numbers as strings, nulls.
  for (const std::string h : {
           R"({})",
           R"( { "code" : "17" , "language" : 3 , "remark" : 12 , "flag" : null } )",
           R"({"extFields":{"a":null,"b":true,"c":-5,"d":false,"e":"","f":0},"opaque":2147483647})",
           R"({"language":"CPP","remark":"","extFields":null,"unknown":"x","other":7})",
           R"({"language":99,"remark":true})",
       }) {
    RemotingCommand a, b;
    ASSERT_TRUE(decodeJsonHeaderFast(h, a)) << h;
    ASSERT_TRUE(decodeJsonHeaderFull(h, b).isOk()) << h;
    EXPECT_EQ(a.code, b.code) << h;
    EXPECT_EQ(a.language, b.language) << h;
    EXPECT_EQ(a.version, b.version) << h;
    EXPECT_EQ(a.opaque, b.opaque) << h;
    EXPECT_EQ(a.flag, b.flag) << h;
    EXPECT_EQ(a.remark, b.remark) << h;
    EXPECT_EQ(a.extFields, b.extFields) << h;
  }
  // Left to the full parser: repeated keys, escapes, non-ASCII, floats, big or odd numbers,
  // nested values, fastjson's dialect, out-of-range or non-integer fields, trailing bytes.
  for (const std::string h : {
           R"({"code":1,"code":2})",
           R"({"extFields":{"k":"v","k":null}})",
           R"({"remark":"a\"b"})",
           "{\"remark\":\"caf\xc3\xa9\"}",
           R"({"extFields":{"x":1.5}})",
           R"({"opaque":-0})",
           R"({"opaque":01})",
           R"({"opaque":2147483648})",
           R"({"opaque":"2147483648"})",
           R"({"flag":true})",
           R"({"version":18446744073709551615})",
           R"({"extFields":{"x":[1]}})",
           R"({"extFields":"x"})",
           R"({code:1})",
           R"({'code':1})",
           R"({"code":1}x)",
           R"({"code":1,})",
           R"({"code":1)",
       }) {
    RemotingCommand untouched;
    untouched.code = 4242;
    EXPECT_FALSE(decodeJsonHeaderFast(h, untouched)) << h;
    EXPECT_EQ(untouched.code, 4242) << h;
  }
}

}  // namespace
}  // namespace ferry::rocketmq
