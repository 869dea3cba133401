// LogSink line format and output; BlackholeSink counting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "connectors/log/log_sink.h"
#include "test_util.h"

namespace ferry::connectors {
namespace {

using namespace testing;

TEST(LogSink, FormatsTopicQueueOffsetKeyAndValue) {
  Record r;
  r.topic = "orders";
  r.queue = 2;
  r.offset = 41;
  r.key = Bytes(std::string("k1"));
  r.value = Bytes(std::string("a\tb\\c\x01"));
  EXPECT_EQ(LogSinkTask::format(r, 1024), "orders[2]@41 key=k1 value=a\\x09b\\\\c\\x01");
  Record n;
  n.topic = "t";
  EXPECT_EQ(LogSinkTask::format(n, 1024), "t[-]@-1 key=null value=null");
  n.value = Bytes(std::string(10, 'x'));
  EXPECT_EQ(LogSinkTask::format(n, 4), "t[-]@-1 key=null value=xxxx...(10 bytes)");
}

TEST(LogSink, WritesOneLinePerRecord) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  LogSinkTask task(f);
  FakeSinkContext ctx;
  ASSERT_TRUE(task.start({{"log.max.bytes", "3"}, {"topics", "t"}}, ctx).isOk());
  std::vector<Record> batch(2);
  batch[0].topic = "t";
  batch[0].value = Bytes(std::string("hello"));
  batch[1].topic = "t";
  batch[1].queue = 0;
  batch[1].offset = 7;
  ASSERT_TRUE(task.put(batch).isOk());
  ASSERT_TRUE(task.flush().isOk());
  std::rewind(f);
  char buf[256] = {};
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  EXPECT_EQ(std::string(buf, n), "t[-]@-1 key=null value=hel...(5 bytes)\nt[0]@7 key=null value=null\n");
}

TEST(LogSink, RejectsAnUnknownDestination) {
  LogSinkTask task;
  FakeSinkContext ctx;
  Status s = task.start({{"log.to", "printer"}}, ctx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("log.to"));
}

TEST(BlackholeSink, CountsRecordsAndBytes) {
  BlackholeSinkTask task;
  FakeSinkContext ctx;
  ASSERT_TRUE(task.start({}, ctx).isOk());
  std::vector<Record> batch(3);
  batch[0].value = Bytes(std::string("abc"));
  batch[1].key = Bytes(std::string("k"));
  batch[1].value = Bytes(std::string("de"));
  ASSERT_TRUE(task.put(batch).isOk());
  ASSERT_TRUE(task.flush().isOk());
  EXPECT_EQ(task.records(), 3u);
  EXPECT_EQ(task.bytes(), 6u);
  task.stop();
}

}  // namespace
}  // namespace ferry::connectors
