// Message encodings: properties (§4.1), stored messages (§4.4, A.3), batch bodies (§4.6, A.4),
// compression (§4.8), CRC, tag hash (§4.9, A.5) and UNIQ_KEY (§4.7).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "rocketmq/remoting.h"
#include "codec_test_util.h"

namespace ferry::rocketmq {
namespace {

using testing::BeWriter;
using testing::fromHex;
using testing::StoredSpec;
using testing::storedRecord;

const std::string kA3 = fromHex(
    "00 00 00 be da a3 20 a7 36 10 a6 86 00 00 00 02"
    "00 00 00 00 00 00 00 00 00 00 00 07 00 00 00 00"
    "00 00 10 00 00 00 00 00 00 00 01 8b cf e5 68 00"
    "7f 00 00 01 00 00 d4 31 00 00 01 8b cf e5 68 7b"
    "7f 00 00 01 00 00 2a 9f 00 00 00 00 00 00 00 00"
    "00 00 00 00 00 00 00 05 68 65 6c 6c 6f 09 54 65"
    "73 74 54 6f 70 69 63 00 55 54 41 47 53 01 54 61"
    "67 41 02 55 4e 49 51 5f 4b 45 59 01 37 46 30 30"
    "30 30 30 31 30 30 30 31 30 30 30 30 30 30 30 30"
    "30 30 30 30 30 30 30 41 30 30 30 30 02 57 41 49"
    "54 01 74 72 75 65 02 43 4c 55 53 54 45 52 01 44"
    "65 66 61 75 6c 74 43 6c 75 73 74 65 72 02");

const std::string kA4 = fromHex(
    "00 00 00 30 00 00 00 00 00 00 00 00 00 00 00 00"
    "00 00 00 02 6d 31 00 18 55 4e 49 51 5f 4b 45 59"
    "01 41 41 41 41 02 57 41 49 54 01 74 72 75 65 02"
    "00 00 00 30 00 00 00 00 00 00 00 00 00 00 00 00"
    "00 00 00 02 6d 32 00 18 55 4e 49 51 5f 4b 45 59"
    "01 42 42 42 42 02 57 41 49 54 01 74 72 75 65 02");

const std::map<std::string, std::string> kA3Props = {
    {"TAGS", "TagA"},
    {"UNIQ_KEY", "7F0000010001000000000000000A0000"},
    {"WAIT", "true"},
    {"CLUSTER", "DefaultCluster"}};

std::string a3Properties() {
  return std::string("TAGS\x01TagA\x02UNIQ_KEY\x01" "7F0000010001000000000000000A0000\x02"
                     "WAIT\x01true\x02" "CLUSTER\x01" "DefaultCluster\x02");
}

StoredSpec a3Spec() {
  StoredSpec s;
  s.bodyCrc = 0x3610a686;
  s.properties = a3Properties();
  return s;
}

// --- properties ---------------------------------------------------------------------------------

TEST(CodecProperties, RoundTrip) {
  std::map<std::string, std::string> p = {{"KEYS", "k1 k2"}, {"TAGS", "TagA"}, {"a", "\xc3\xa9"}};
  std::string enc = encodeProperties(p);
  EXPECT_EQ(enc, std::string("KEYS\x01k1 k2\x02TAGS\x01TagA\x02" "a\x01\xc3\xa9\x02"));
  EXPECT_EQ(decodeProperties(enc), p);
  EXPECT_EQ(encodeProperties({}), "");
  EXPECT_TRUE(decodeProperties("").empty());
}

TEST(CodecProperties, EmptyValuesAndKeysAreDroppedOnParse) {
  auto p = decodeProperties(std::string("A\x01\x02" "\x01v\x02" "B\x01x\x02" "noSep\x02" "\x02"));
  EXPECT_EQ(p, (std::map<std::string, std::string>{{"B", "x"}}));
}

TEST(CodecProperties, LastPairWithoutTerminatorAndValueWithSeparator) {
  auto p = decodeProperties(std::string("A\x01" "1\x02" "B\x01x\x01y"));
  EXPECT_EQ(p, (std::map<std::string, std::string>{{"A", "1"}, {"B", "x\x01y"}}));
}

TEST(CodecProperties, DuplicateKeysLastWins) {
  auto p = decodeProperties(std::string("A\x01" "1\x02" "A\x01" "2\x02"));
  EXPECT_EQ(p.at("A"), "2");
}

TEST(CodecProperties, EncoderSkipsPairsThatCannotSurvive) {
  std::map<std::string, std::string> p = {
      {"EMPTY", ""}, {"", "v"}, {"BAD", std::string("x\x02y")}, {std::string("K\x01"), "v"},
      {"OK", "1"}, {"SEP", std::string("a\x01" "b")}};
  std::string enc = encodeProperties(p);
  EXPECT_EQ(enc, std::string("OK\x01" "1\x02" "SEP\x01" "a\x01" "b\x02"));
  EXPECT_EQ(decodeProperties(enc).at("SEP"), std::string("a\x01" "b"));
}

// --- stored messages ------------------------------------------------------------------------------

TEST(CodecStored, TestWriterReproducesA3) { EXPECT_EQ(storedRecord(a3Spec()), kA3); }

TEST(CodecStored, A3Decodes) {
  StoredDecode d = decodeStoredMessages(kA3);
  ASSERT_TRUE(d.complete) << d.error;
  ASSERT_EQ(d.messages.size(), 1u);
  const StoredMessage& m = d.messages[0];
  EXPECT_EQ(m.topic, "TestTopic");
  EXPECT_EQ(m.queueId, 2);
  EXPECT_EQ(m.flag, 0);
  EXPECT_EQ(m.queueOffset, 7);
  EXPECT_EQ(m.commitLogOffset, 4096);
  EXPECT_EQ(m.sysFlag, 0);
  EXPECT_EQ(m.bornTimestamp, 1700000000000);
  EXPECT_EQ(m.bornHost, "127.0.0.1:54321");
  EXPECT_EQ(m.storeTimestamp, 1700000000123);
  EXPECT_EQ(m.storeHost, "127.0.0.1:10911");
  EXPECT_EQ(m.reconsumeTimes, 0);
  EXPECT_EQ(m.preparedTransactionOffset, 0);
  EXPECT_EQ(m.bodyCrc, 907060870u);
  EXPECT_EQ(m.bodyCrc, bodyCrc(m.body));
  EXPECT_EQ(m.body, "hello");
  EXPECT_EQ(m.properties, kA3Props);
  EXPECT_EQ(m.offsetMsgId, "7F00000100002A9F0000000000001000");
}

TEST(CodecStored, TwoRecordsBackToBack) {
  StoredSpec second = a3Spec();
  second.queueOffset = 8;
  second.physicalOffset = 4096 + 190;
  second.body = "world!";
  second.bodyCrc = bodyCrc("world!");
  StoredDecode d = decodeStoredMessages(kA3 + storedRecord(second));
  ASSERT_TRUE(d.complete) << d.error;
  ASSERT_EQ(d.messages.size(), 2u);
  EXPECT_EQ(d.messages[1].queueOffset, 8);
  EXPECT_EQ(d.messages[1].body, "world!");
  EXPECT_EQ(d.messages[1].offsetMsgId, "7F00000100002A9F00000000000010BE");
}

TEST(CodecStored, TruncatedTailKeepsEarlierRecords) {
  std::string two = kA3 + kA3;
  for (std::size_t cut = kA3.size() + 1; cut < two.size(); ++cut) {
    StoredDecode d = decodeStoredMessages(std::string_view(two).substr(0, cut));
    EXPECT_FALSE(d.complete) << cut;
    EXPECT_FALSE(d.error.empty());
    ASSERT_EQ(d.messages.size(), 1u) << cut;
    EXPECT_EQ(d.messages[0].body, "hello");
  }
  StoredDecode empty = decodeStoredMessages("");
  EXPECT_TRUE(empty.complete);
  EXPECT_TRUE(empty.messages.empty());
}

TEST(CodecStored, MalformedRecordStopsDecoding) {
  std::string badMagic = kA3;
  badMagic[4] = '\x00';
  StoredDecode d = decodeStoredMessages(kA3 + badMagic + kA3);
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(d.messages.size(), 1u);

  // A body length that runs past the record's own TOTALSIZE.
  std::string longBody = kA3;
  longBody[87] = '\x7f';
  d = decodeStoredMessages(longBody);
  EXPECT_FALSE(d.complete);
  EXPECT_TRUE(d.messages.empty());

  // TOTALSIZE below the minimum, and negative.
  d = decodeStoredMessages(BeWriter().i32(20).raw(std::string(40, '\0')).bytes());
  EXPECT_FALSE(d.complete);
  d = decodeStoredMessages(BeWriter().i32(-1).raw(std::string(200, '\0')).bytes());
  EXPECT_FALSE(d.complete);
}

TEST(CodecStored, TotalSizeDecidesWhereTheNextRecordStarts) {
  // Trailing bytes inside a record (beyond its properties) are skipped, not parsed.
  std::string padded = kA3 + std::string(6, '\x55');
  padded[3] = static_cast<char>(0xbe + 6);
  StoredDecode d = decodeStoredMessages(padded + kA3);
  ASSERT_TRUE(d.complete) << d.error;
  EXPECT_EQ(d.messages.size(), 2u);
}

TEST(CodecStored, Ipv6Hosts) {
  StoredSpec s = a3Spec();
  s.sysFlag = 0x10 | 0x20;
  s.bornIp = fromHex("20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01");
  s.storeIp = fromHex("00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01");
  std::string rec = storedRecord(s);
  EXPECT_EQ(rec.size(), 190u + 24u);
  StoredDecode d = decodeStoredMessages(rec);
  ASSERT_TRUE(d.complete) << d.error;
  ASSERT_EQ(d.messages.size(), 1u);
  EXPECT_EQ(d.messages[0].bornHost, "[2001:db8::1]:54321");
  EXPECT_EQ(d.messages[0].storeHost, "[::1]:10911");
  EXPECT_EQ(d.messages[0].offsetMsgId,
            "00000000000000000000000000000001" "00002A9F" "0000000000001000");
  EXPECT_EQ(d.messages[0].offsetMsgId.size(), 56u);
  EXPECT_EQ(d.messages[0].properties, kA3Props);

  // Only the born host IPv6.
  s.sysFlag = 0x10;
  s.storeIp = std::string("\x0a\x00\x00\x05", 4);
  d = decodeStoredMessages(storedRecord(s));
  ASSERT_TRUE(d.complete) << d.error;
  EXPECT_EQ(d.messages[0].storeHost, "10.0.0.5:10911");
}

TEST(CodecStored, V2MagicWithLongTopic) {
  StoredSpec s = a3Spec();
  s.v2 = true;
  s.topic = std::string(200, 't');
  StoredDecode d = decodeStoredMessages(storedRecord(s) + kA3);
  ASSERT_TRUE(d.complete) << d.error;
  ASSERT_EQ(d.messages.size(), 2u);
  EXPECT_EQ(d.messages[0].topic, std::string(200, 't'));
  EXPECT_EQ(d.messages[0].body, "hello");
  EXPECT_EQ(d.messages[1].topic, "TestTopic");
}

TEST(CodecStored, CompressedBodiesAreInflated) {
  std::string plain;
  for (int i = 0; i < 500; ++i) plain += "payload-" + std::to_string(i) + ";";
  auto packed = compressZlib(plain);
  ASSERT_TRUE(packed.isOk());
  ASSERT_LT(packed->size(), plain.size());
  for (std::int32_t sysFlag : {0x1, 0x301}) {
    StoredSpec s = a3Spec();
    s.sysFlag = sysFlag;
    s.body = *packed;
    s.bodyCrc = bodyCrc(*packed);  // the CRC covers the compressed bytes
    StoredDecode d = decodeStoredMessages(storedRecord(s));
    ASSERT_TRUE(d.complete) << d.error;
    ASSERT_EQ(d.messages.size(), 1u);
    EXPECT_EQ(d.messages[0].body, plain);
    EXPECT_EQ(d.messages[0].sysFlag, sysFlag & ~0x1);
    EXPECT_EQ(d.messages[0].bodyCrc, bodyCrc(*packed));
  }
}

TEST(CodecStored, UnsupportedOrCorruptCompressionStops) {
  StoredSpec s = a3Spec();
  s.sysFlag = 0x1 | (1 << 8);  // LZ4
  StoredDecode d = decodeStoredMessages(kA3 + storedRecord(s));
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(d.messages.size(), 1u);
  EXPECT_NE(d.error.find("LZ4"), std::string::npos);
  s.sysFlag = 0x1;
  s.body = "definitely not zlib";
  d = decodeStoredMessages(storedRecord(s));
  EXPECT_FALSE(d.complete);
  EXPECT_TRUE(d.messages.empty());
}

TEST(CodecStored, InnerBatchIsExpanded) {
  std::vector<OutgoingMessage> entries(3);
  for (int i = 0; i < 3; ++i) {
    entries[i].flag = i;
    entries[i].body = "m" + std::to_string(i);
    entries[i].properties = {{"UNIQ_KEY", "K" + std::to_string(i)}};
  }
  StoredSpec s = a3Spec();
  s.sysFlag = 0x80 | 0x40;
  s.queueOffset = 100;
  s.body = encodeBatchBody(entries);
  StoredDecode d = decodeStoredMessages(storedRecord(s) + kA3);
  ASSERT_TRUE(d.complete) << d.error;
  ASSERT_EQ(d.messages.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    const StoredMessage& m = d.messages[i];
    EXPECT_EQ(m.queueOffset, 100 + i);
    EXPECT_EQ(m.flag, i);
    EXPECT_EQ(m.body, "m" + std::to_string(i));
    EXPECT_EQ(m.properties.at("UNIQ_KEY"), "K" + std::to_string(i));
    EXPECT_EQ(m.topic, "TestTopic");
    EXPECT_EQ(m.storeHost, "127.0.0.1:10911");
    EXPECT_EQ(m.bornTimestamp, 1700000000000);
    EXPECT_EQ(m.bodyCrc, bodyCrc(m.body));
  }
  EXPECT_EQ(d.messages[3].queueOffset, 7);

  // Only one of the two flags: the body stays as it is.
  s.sysFlag = 0x80;
  d = decodeStoredMessages(storedRecord(s));
  ASSERT_EQ(d.messages.size(), 1u);
  EXPECT_EQ(d.messages[0].body, s.body);

  // A compressed inner batch is inflated first.
  auto packed = compressZlib(encodeBatchBody(entries));
  ASSERT_TRUE(packed.isOk());
  s.sysFlag = 0xC0 | 0x1;
  s.body = *packed;
  d = decodeStoredMessages(storedRecord(s));
  ASSERT_TRUE(d.complete) << d.error;
  EXPECT_EQ(d.messages.size(), 3u);

  // A malformed inner batch stops decoding.
  s.sysFlag = 0xC0;
  s.body = "garbage";
  d = decodeStoredMessages(storedRecord(s));
  EXPECT_FALSE(d.complete);
}

// --- batch body --------------------------------------------------------------------------------

std::vector<OutgoingMessage> a4Messages() {
  std::vector<OutgoingMessage> v(2);
  v[0].body = "m1";
  v[0].properties = {{"UNIQ_KEY", "AAAA"}, {"WAIT", "true"}};
  v[1].body = "m2";
  v[1].properties = {{"UNIQ_KEY", "BBBB"}, {"WAIT", "true"}};
  return v;
}

TEST(CodecBatch, A4EncodesByteForByte) {
  EXPECT_EQ(encodeBatchBody(a4Messages()), kA4);
  EXPECT_EQ(kA4.size(), 96u);
}

TEST(CodecBatch, A4Decodes) {
  auto d = decodeBatchBody(kA4);
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  ASSERT_EQ(d->size(), 2u);
  auto expected = a4Messages();
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*d)[i].body, expected[i].body);
    EXPECT_EQ((*d)[i].flag, 0);
    EXPECT_EQ((*d)[i].properties, expected[i].properties);
  }
}

TEST(CodecBatch, RoundTripWithFlagsAndBinaryBodies) {
  std::vector<OutgoingMessage> v(3);
  v[0].flag = -7;
  v[0].body = std::string("\x00\x01\x02", 3);
  v[1].body = "";
  v[1].properties = {{"TAGS", "x"}};
  v[2].flag = 42;
  v[2].body = std::string(5000, 'z');
  auto d = decodeBatchBody(encodeBatchBody(v));
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  ASSERT_EQ(d->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*d)[i].flag, v[i].flag);
    EXPECT_EQ((*d)[i].body, v[i].body);
    EXPECT_EQ((*d)[i].properties, v[i].properties);
  }
  auto empty = decodeBatchBody("");
  ASSERT_TRUE(empty.isOk());
  EXPECT_TRUE(empty->empty());
}

TEST(CodecBatch, MalformedBodiesAreErrors) {
  for (std::size_t cut = 1; cut < kA4.size(); ++cut) {
    if (cut == 48) continue;  // a whole first entry
    EXPECT_FALSE(decodeBatchBody(std::string_view(kA4).substr(0, cut)).isOk()) << cut;
  }
  std::string bad = kA4;
  bad[19] = '\x40';  // body length overruns the entry
  EXPECT_FALSE(decodeBatchBody(bad).isOk());
  EXPECT_FALSE(decodeBatchBody(BeWriter().i32(4).bytes()).isOk());
}

// --- compression, CRC, tag hash, ids ------------------------------------------------------------

TEST(CodecCompression, ZlibRoundTripAndKnownStream) {
  // zlib stream of "hello" produced by zlib's compress() at the default level.
  std::string known = fromHex("78 9c cb 48 cd c9 c9 07 00 06 2c 02 15");
  auto plain = decompressBody(known, 0x1);
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  EXPECT_EQ(*plain, "hello");
  auto plain3 = decompressBody(known, 0x301);
  ASSERT_TRUE(plain3.isOk());
  EXPECT_EQ(*plain3, "hello");

  std::string big(100000, 'a');
  auto packed = compressZlib(big, 5);
  ASSERT_TRUE(packed.isOk());
  EXPECT_EQ(static_cast<unsigned char>((*packed)[0]), 0x78);  // zlib format, not raw deflate
  auto back = decompressBody(*packed, 0x1);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(*back, big);
}

TEST(CodecCompression, BadInputIsAnError) {
  std::string known = fromHex("78 9c cb 48 cd c9 c9 07 00 06 2c 02 15");
  EXPECT_FALSE(decompressBody(known.substr(0, 8), 0x1).isOk());  // truncated
  EXPECT_FALSE(decompressBody("", 0x1).isOk());
  EXPECT_FALSE(decompressBody("garbage", 0x1).isOk());
  auto lz4 = decompressBody(known, 0x101);
  ASSERT_FALSE(lz4.isOk());
  EXPECT_EQ(lz4.status().code(), StatusCode::kIncompatible);
  EXPECT_EQ(decompressBody(known, 0x201).status().code(), StatusCode::kIncompatible);
  EXPECT_EQ(decompressBody(known, 0x501).status().code(), StatusCode::kIncompatible);
}

TEST(CodecCrc, MaskedCrc32) {
  EXPECT_EQ(bodyCrc("hello"), 907060870u);
  EXPECT_EQ(bodyCrc(""), 0u);
  // crc32("123456789") = 0xCBF43926; masked to 31 bits.
  EXPECT_EQ(bodyCrc("123456789"), 0xCBF43926u & 0x7FFFFFFFu);
}

TEST(CodecTagHash, JavaStringHashCode) {
  EXPECT_EQ(tagHash("TagA"), 2598919);
  EXPECT_EQ(tagHash("TagB"), 2598920);
  EXPECT_EQ(tagHash("*"), 42);
  EXPECT_EQ(tagHash("a"), 97);
  EXPECT_EQ(tagHash("hello world"), 1794106052);
  EXPECT_EQ(tagHash(""), 0);
  // Wraps to negative like a Java int: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
  EXPECT_EQ(tagHash("polygenelubricants"), INT32_MIN);
  // Non-ASCII counts UTF-16 units: "é" is U+00E9 (233); U+1F600 is the surrogate pair
  // D83D DE00 -> 0xD83D * 31 + 0xDE00 = 1772899.
  EXPECT_EQ(tagHash("\xc3\xa9"), 233);
  EXPECT_EQ(tagHash("\xf0\x9f\x98\x80"), 55357 * 31 + 56832);
  EXPECT_EQ(tagHash("\xff"), 0xFFFD);  // invalid UTF-8 -> U+FFFD
}

TEST(CodecUniqKey, FormatAndUniqueness) {
  std::set<std::string> seen;
  for (int i = 0; i < 5000; ++i) {
    std::string k = newUniqKey();
    ASSERT_EQ(k.size(), 32u);
    for (char c : k) ASSERT_TRUE((c >= '0' && c <= '9') || (c >= 'A' && c <= 'F')) << k;
    EXPECT_TRUE(seen.insert(k).second) << "duplicate " << k;
  }
  // The first 20 hex digits (ip, pid, random) are fixed for the process.
  std::string a = newUniqKey(), b = newUniqKey();
  EXPECT_EQ(a.substr(0, 20), b.substr(0, 20));
}

}  // namespace
}  // namespace ferry::rocketmq
