// FileStreamSink: appending, buffering until flush, torn-tail repair at start, task count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "connectors/file/file_sink.h"
#include "test_util.h"

namespace ferry::connectors {
namespace {

using ::testing::HasSubstr;
using namespace testing;

Record rec(const std::string& value) {
  Record r;
  r.topic = "t";
  r.value = Bytes(value);
  return r;
}

class FileSinkTest : public ::testing::Test {
 protected:
  TempDir dir_;
  FakeSinkContext ctx_;
};

TEST_F(FileSinkTest, AppendsValuesAsLinesOnFlush) {
  const std::string path = dir_.file("out.txt");
  writeFile(path, "existing\n");
  FileStreamSinkTask task;
  ASSERT_TRUE(task.start({{"file", path}, {"topics", "t"}, {"connector.class", "x"}}, ctx_).isOk());
  std::vector<Record> batch{rec("a"), rec("b c"), Record{}, rec("")};
  batch[2].topic = "t";  // null value: skipped
  ASSERT_TRUE(task.put(batch).isOk());
  EXPECT_EQ(readAll(path), "existing\n");  // buffered, not yet written
  ASSERT_TRUE(task.flush().isOk());
  EXPECT_EQ(readAll(path), "existing\na\nb c\n\n");
  std::vector<Record> more{rec("{\"k\":1}")};
  ASSERT_TRUE(task.put(more).isOk());
  ASSERT_TRUE(task.flush().isOk());
  EXPECT_EQ(readAll(path), "existing\na\nb c\n\n{\"k\":1}\n");
  task.stop();
}

TEST_F(FileSinkTest, WritesOnceTheBufferPassesOneMebibyte) {
  const std::string path = dir_.file("out.txt");
  FileStreamSinkTask task;
  ASSERT_TRUE(task.start({{"file", path}, {"fsync", "false"}}, ctx_).isOk());
  std::vector<Record> batch;
  const std::string value(1023, 'v');
  for (int i = 0; i < 1100; ++i) batch.push_back(rec(value));  // 1100 * 1024 bytes > 1 MiB
  ASSERT_TRUE(task.put(batch).isOk());
  EXPECT_EQ(readAll(path).size(), 1100u * 1024u);
  ASSERT_TRUE(task.flush().isOk());
}

TEST_F(FileSinkTest, StopWritesWhatIsBuffered) {
  const std::string path = dir_.file("out.txt");
  {
    FileStreamSinkTask task;
    ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
    std::vector<Record> batch{rec("x")};
    ASSERT_TRUE(task.put(batch).isOk());
    task.stop();
  }
  EXPECT_EQ(readAll(path), "x\n");
}

TEST_F(FileSinkTest, TruncatesATornLastLineAtStart) {
  const std::string path = dir_.file("out.txt");
  writeFile(path, "0-1\n0-2\n0-");
  FileStreamSinkTask task;
  ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
  EXPECT_EQ(readAll(path), "0-1\n0-2\n");
  std::vector<Record> batch{rec("0-3")};
  ASSERT_TRUE(task.put(batch).isOk());
  ASSERT_TRUE(task.flush().isOk());
  EXPECT_EQ(readAll(path), "0-1\n0-2\n0-3\n");
}

TEST_F(FileSinkTest, RepairHandlesEdgeCases) {
  const std::string path = dir_.file("f.txt");
  auto dropped = FileStreamSinkTask::repairTornTail(path);  // missing
  ASSERT_TRUE(dropped.isOk());
  EXPECT_EQ(*dropped, 0u);
  writeFile(path, "no newline at all");
  dropped = FileStreamSinkTask::repairTornTail(path);
  ASSERT_TRUE(dropped.isOk());
  EXPECT_EQ(*dropped, 17u);
  EXPECT_EQ(readAll(path), "");
  writeFile(path, "whole\n");
  dropped = FileStreamSinkTask::repairTornTail(path);
  ASSERT_TRUE(dropped.isOk());
  EXPECT_EQ(*dropped, 0u);
  EXPECT_EQ(readAll(path), "whole\n");
  // The last newline lies more than one scan chunk (64 KiB) before the end.
  writeFile(path, "keep\n" + std::string(200000, 'y'));
  dropped = FileStreamSinkTask::repairTornTail(path);
  ASSERT_TRUE(dropped.isOk());
  EXPECT_EQ(*dropped, 200000u);
  EXPECT_EQ(readAll(path), "keep\n");
}

TEST_F(FileSinkTest, OneTaskAndRequiredFile) {
  FileStreamSinkConnector c;
  FakeConnectorContext cctx;
  Status s = c.start({{"topics", "t"}}, cctx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("file"));
  ASSERT_TRUE(c.start({{"file", dir_.file("o")}, {"topics", "t"}}, cctx).isOk());
  auto cfgs = c.taskConfigs(4);
  ASSERT_TRUE(cfgs.isOk());
  EXPECT_EQ(cfgs->size(), 1u);
  s = c.start({{"file", dir_.file("o")}, {"fsync", "maybe"}}, cctx);
  EXPECT_THAT(s.message(), HasSubstr("fsync"));
}

TEST_F(FileSinkTest, UnwritableFileFailsAtStart) {
  FileStreamSinkTask task;
  Status s = task.start({{"file", dir_.file("no/such/dir/out.txt")}}, ctx_);
  EXPECT_FALSE(s.isOk());
  EXPECT_THAT(s.message(), HasSubstr("no/such/dir"));
}

}  // namespace
}  // namespace ferry::connectors
