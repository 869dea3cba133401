// Bytes, Headers, Record and the plugin descriptor.
#include "ferry/plugin.h"
#include "ferry/record.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

TEST(Bytes, NullIsNotEmptyAndCopiesShare) {
  Bytes null;
  Bytes empty(std::string{});
  EXPECT_TRUE(null.isNull());
  EXPECT_FALSE(empty.isNull());
  EXPECT_FALSE(null == empty);
  Bytes a("payload");
  Bytes b = a;
  EXPECT_EQ(a.buffer().get(), b.buffer().get()) << "copying a Bytes must not copy the payload";
  EXPECT_EQ(b.view(), "payload");
  EXPECT_TRUE(a == Bytes::copyOf("payload"));
}

TEST(Headers, RepeatLastWinsSetAndRemove) {
  Headers h;
  h.add("k", "1");
  h.add("k", "2");
  h.add("other", Bytes());
  EXPECT_EQ(h.size(), 3u);
  EXPECT_EQ(h.last("k")->value.str(), "2");
  EXPECT_TRUE(h.last("other")->value.isNull());
  h.set("k", Bytes("3"));
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.last("k")->value.str(), "3");
  EXPECT_EQ(h.remove("k"), 1u);
  EXPECT_FALSE(h.has("k"));
}

TEST(Record, CopiesShareBytesAndPositionsCompare) {
  Record r;
  r.topic = "t";
  r.value = Bytes(std::string(1000, 'x'));
  r.position = Position{{{"file", "/a"}}, {{"pos", "10"}}};
  Record c = r;
  EXPECT_EQ(c.value.buffer().get(), r.value.buffer().get());
  EXPECT_EQ(c.position, r.position);
  EXPECT_GE(r.sizeBytes(), 1000u);
  EXPECT_TRUE(Position{}.empty());
  TopicQueue a{"t", 1}, b{"t", 2};
  EXPECT_LT(a, b);
  EXPECT_EQ(a.toString(), "t-1");
}

int made = 0;
struct Thing {
  Thing() { ++made; }
  virtual ~Thing() { --made; }
};
const PluginEntry kEntries[] = {
    {"Thing", nullptr, PluginKind::kTransform, "1", "a thing", &pluginCreate<Thing, Thing>, &pluginDestroy<Thing>}};

TEST(PluginDescriptor, CarriesAbiAndSizes) {
  constexpr PluginDescriptor d = makePluginDescriptor("p", "1.0", kEntries);
  EXPECT_EQ(d.abiVersion, kAbiVersion);
  EXPECT_EQ(d.descriptorSize, sizeof(PluginDescriptor));
  EXPECT_EQ(d.entrySize, sizeof(PluginEntry));
  EXPECT_EQ(d.entryCount, 1u);
  void* p = d.entries[0].create();
  EXPECT_EQ(made, 1);
  d.entries[0].destroy(p);
  EXPECT_EQ(made, 0);
}

}  // namespace
}  // namespace ferry
