// The JVM host channel's encoding (src/jvm/wire.h): what the worker writes reads back; what a
// broken or hostile host sends is refused with a message, never read past its end.
#include "jvm/wire.h"

#include <gtest/gtest.h>

namespace ferry::jvm {
namespace {

// A frame's body (without its length prefix) as the reader sees it.
std::string_view bodyOf(const std::string& frame) { return std::string_view(frame).substr(4); }

TEST(JvmWire, FramesRoundTrip) {
  const std::string frame = Writer(7, kValidate)
                                .str("org.apache.kafka.connect.file.FileStreamSourceConnector")
                                .map({{"topic", "t"}, {"file", "/in"}})
                                .strings({"a", "", "ü"})
                                .nullStr()
                                .i64(-2)
                                .u8(1)
                                .finish();
  // The length prefix counts what follows it.
  ASSERT_GE(frame.size(), 4u);
  const auto length = (static_cast<unsigned char>(frame[0]) << 24) | (static_cast<unsigned char>(frame[1]) << 16) |
                      (static_cast<unsigned char>(frame[2]) << 8) | static_cast<unsigned char>(frame[3]);
  EXPECT_EQ(static_cast<std::size_t>(length), frame.size() - 4);
  auto split = splitFrame(bodyOf(frame));
  ASSERT_TRUE(split.isOk());
  EXPECT_EQ(split->first.id, 7u);
  EXPECT_EQ(split->first.type, kValidate);
  Reader r(split->second);
  EXPECT_EQ(*r.str("class"), "org.apache.kafka.connect.file.FileStreamSourceConnector");
  EXPECT_EQ(*r.map("config"), (StringMap{{"file", "/in"}, {"topic", "t"}}));
  EXPECT_EQ(*r.strings("list"), (std::vector<std::string>{"a", "", "ü"}));
  EXPECT_FALSE(r.optStr()->has_value());
  EXPECT_EQ(*r.i64(), -2);
  EXPECT_TRUE(*r.boolean());
  EXPECT_EQ(r.left(), 0u);
}

TEST(JvmWire, MalformedAnswersAreRefusedWithinTheirBytes) {
  auto bytes = [](std::initializer_list<int> b) {
    std::string s;
    for (int x : b) s.push_back(static_cast<char>(x));
    return s;
  };
  // Cut short.
  EXPECT_FALSE(Reader(bytes({0, 0})).i32().isOk());
  EXPECT_FALSE(Reader(bytes({0, 0, 0, 0, 0, 0, 0})).i64().isOk());
  EXPECT_FALSE(Reader("").u8().isOk());
  // A string longer than what is left, or of a negative length other than -1.
  EXPECT_FALSE(Reader(bytes({0, 0, 0, 9, 'a', 'b'})).optStr().isOk());
  EXPECT_FALSE(Reader(bytes({0xff, 0xff, 0xff, 0xfe})).optStr().isOk());
  EXPECT_FALSE(Reader(bytes({0xff, 0xff, 0xff, 0xff})).str("name").isOk());  // null where a value is needed
  // Counts that cannot be true for the bytes left (no allocation for them).
  EXPECT_FALSE(Reader(bytes({0x7f, 0xff, 0xff, 0xff})).strings("list").isOk());
  EXPECT_FALSE(Reader(bytes({0, 0, 0, 2, 0, 0, 0, 0})).map("map").isOk());
  EXPECT_FALSE(Reader(bytes({0x80, 0, 0, 0})).count("list").isOk());
  // A flag that is not 0 or 1.
  EXPECT_FALSE(Reader(bytes({2})).boolean().isOk());
  // A frame too short for its head; a failure answer cut short.
  EXPECT_FALSE(splitFrame("abcd").isOk());
  EXPECT_FALSE(readFailure(bytes({0, 0, 0, 3, 'a'})).isOk());
  auto f = readFailure(bodyOf(Writer(1, kFailed).str("java.lang.X").str("boom").str("at ...").finish()).substr(5));
  ASSERT_TRUE(f.isOk());
  EXPECT_EQ(f->exceptionClass, "java.lang.X");
  EXPECT_EQ(f->message, "boom");
  EXPECT_FALSE(f->retriable);  // no flag: not retriable
  // The host flags Kafka's RetriableExceptions; a flag that is not 0 or 1 is refused.
  auto retriable = readFailure(
      bodyOf(Writer(1, kFailed).str("org.apache.kafka.connect.errors.RetriableException").str("busy").str("").u8(1).finish())
          .substr(5));
  ASSERT_TRUE(retriable.isOk());
  EXPECT_TRUE(retriable->retriable);
  EXPECT_FALSE(readFailure(bodyOf(Writer(1, kFailed).str("X").str("m").str("").u8(7).finish()).substr(5)).isOk());
}

}  // namespace
}  // namespace ferry::jvm
