// The schema topic (src/runtime/schema_registry.h) over the embedded backbone: ids written once and
// read back by a second registry (another worker, or this one after a restart), the first entry of
// an id winning over a later different one, entries that are not schemas skipped, unknown ids.
#include "runtime/schema_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "backbone/embedded/embedded.h"

namespace ferry::runtime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SchemaRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ferry-schema-registry-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    backbone::EmbeddedOptions o;
    o.dir = dir_;
    auto b = backbone::openEmbeddedBackbone(o);
    ASSERT_TRUE(b.isOk()) << b.status().toString();
    backbone_ = std::move(*b);
  }
  void TearDown() override {
    backbone_->close();
    backbone_.reset();
    fs::remove_all(dir_);
  }
  static SchemaPtr order(const std::string& extra = "") {
    SchemaBuilder b = SchemaBuilder::structure();
    b.name("shop.order");
    b.field("id", SchemaBuilder::int64().build().value());
    b.field("price", logical::decimal(2).optional().build().value());
    if (!extra.empty()) b.field(extra, SchemaBuilder::string().optional().build().value());
    return b.build().value();
  }
  std::size_t entries() {
    auto log = backbone_->openSharedLog("ferry-schemas");
    EXPECT_TRUE(log.isOk());
    return static_cast<std::size_t>((*log)->endOffset().value());
  }
  std::string dir_;
  std::unique_ptr<backbone::Backbone> backbone_;
};

TEST_F(SchemaRegistryTest, AnIdIsWrittenOnceAndReadByAnotherRegistry) {
  SchemaRegistry writer(*backbone_, "ferry-schemas");
  const SchemaPtr s = order();
  auto id = writer.idOf(s);
  ASSERT_TRUE(id.isOk()) << id.status().toString();
  EXPECT_EQ(*id, SchemaRegistry::idText(s->fingerprint()));
  EXPECT_EQ(id->size(), 16u);
  // The same schema again (also an equal copy built apart): no second entry.
  EXPECT_EQ(writer.idOf(s).value(), *id);
  EXPECT_EQ(writer.idOf(order()).value(), *id);
  EXPECT_EQ(entries(), 1u);
  // A second schema: a second entry.
  auto other = writer.idOf(order("note"));
  ASSERT_TRUE(other.isOk());
  EXPECT_NE(*other, *id);
  EXPECT_EQ(entries(), 2u);

  SchemaRegistry reader(*backbone_, "ferry-schemas");
  auto read = reader.schemaOf(*id);
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  EXPECT_TRUE(**read == *s) << (*read)->describe();
  EXPECT_EQ((*read)->field("price")->schema->decimalScale(), 2);
  // A reader that knows it does not write it again.
  EXPECT_EQ(reader.idOf(s).value(), *id);
  EXPECT_EQ(entries(), 2u);
}

TEST_F(SchemaRegistryTest, UnknownIdsAndForeignEntries) {
  SchemaRegistry r(*backbone_, "ferry-schemas");
  auto missing = r.schemaOf("0123456789abcdef");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto log = backbone_->openSharedLog("ferry-schemas");
  ASSERT_TRUE(log.isOk());
  const SchemaPtr s = order();
  const std::string id = SchemaRegistry::idText(s->fingerprint());
  // Not JSON, not an entry, an entry whose schema does not have its id: skipped.
  ASSERT_TRUE((*log)->append(Bytes(std::string("\xff not json")), std::chrono::seconds(5)).isOk());
  ASSERT_TRUE((*log)->append(Bytes(std::string("{\"id\":7}")), std::chrono::seconds(5)).isOk());
  ASSERT_TRUE((*log)->append(Bytes("{\"id\":\"" + id + "\",\"schema\":{\"type\":\"string\",\"optional\":false}}"),
                             std::chrono::seconds(5))
                  .isOk());
  EXPECT_EQ(r.schemaOf(id).status().code(), StatusCode::kNotFound);
  // The writer then appends the real one, and it is what the id reads as.
  SchemaRegistry writer(*backbone_, "ferry-schemas");
  ASSERT_TRUE(writer.idOf(s).isOk());
  auto read = r.schemaOf(id);
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  EXPECT_TRUE(**read == *s);
}

TEST_F(SchemaRegistryTest, AForgedEntryCannotTakeAnId) {
  // Someone who may write the topic appends an entry claiming a schema's id first, with another
  // schema: the id is checked against the entry's own schema, so the forged entry is skipped, the
  // real schema is appended after it and the id reads as the real one.
  const SchemaPtr real = order();
  const std::string id = SchemaRegistry::idText(real->fingerprint());
  auto log = backbone_->openSharedLog("ferry-schemas");
  ASSERT_TRUE(log.isOk());
  ASSERT_TRUE((*log)->append(Bytes("{\"id\":\"" + id + "\",\"schema\":{\"type\":\"struct\",\"optional\":false,"
                                   "\"fields\":[{\"field\":\"id\",\"type\":\"string\",\"optional\":false}],"
                                   "\"name\":\"shop.order\"}}"),
                             std::chrono::seconds(5))
                  .isOk());
  SchemaRegistry writer(*backbone_, "ferry-schemas");
  ASSERT_EQ(writer.idOf(real).value(), id);
  EXPECT_EQ(entries(), 2u);  // the forged one, then the real one
  SchemaRegistry reader(*backbone_, "ferry-schemas");
  auto read = reader.schemaOf(id);
  ASSERT_TRUE(read.isOk());
  EXPECT_TRUE(**read == *real);
  EXPECT_EQ((*read)->field("id")->schema->type(), SchemaType::kInt64);
}

}  // namespace
}  // namespace ferry::runtime
