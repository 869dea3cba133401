// FileStreamSink: appending, buffering until flush, cutting its unflushed writes at start,
// task count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

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
  // A task's whole life: start on `path`, put `values`, flush, stop.
  void writeFlushed(const std::string& path, const std::vector<std::string>& values) {
    FileStreamSinkTask task;
    ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
    std::vector<Record> batch;
    for (const auto& v : values) batch.push_back(rec(v));
    ASSERT_TRUE(task.put(batch).isOk());
    ASSERT_TRUE(task.flush().isOk());
    task.stop();
  }
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

TEST_F(FileSinkTest, NeverChangesAFileItDidNotWrite) {
  // A text file with an unterminated last line, and a binary file: they were there before the
  // sink; every byte stays, the sink's records start on a line of their own after them.
  std::string binary;
  for (int i = 0; i < 3924; ++i) binary.push_back(static_cast<char>((i * 7919) % 251 + 1));
  binary[100] = '\n';
  for (const std::string& before : {std::string("keep these 63 bytes of a file nobody asked the sink to touch.."),
                                    binary}) {
    const std::string path = dir_.file("existing.bin");
    writeFile(path, before);
    FakeSinkContext ctx;
    FileStreamSinkTask task;
    ASSERT_TRUE(task.start({{"file", path}}, ctx).isOk());
    EXPECT_EQ(readAll(path), before + "\n");
    std::vector<Record> batch{rec("0-3")};
    ASSERT_TRUE(task.put(batch).isOk());
    ASSERT_TRUE(task.flush().isOk());
    task.stop();
    EXPECT_EQ(readAll(path), before + "\n0-3\n");
  }
}

TEST_F(FileSinkTest, CutsOnlyTheTornLineItWroteItselfAfterItsLastFlush) {
  const std::string path = dir_.file("out.txt");
  writeFile(path, "theirs, no newline");
  {
    FileStreamSinkTask task;
    ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
    std::vector<Record> batch{rec("0-1"), rec("0-2")};
    ASSERT_TRUE(task.put(batch).isOk());
    ASSERT_TRUE(task.flush().isOk());
    // A crash after more writes and before the next flush: a whole line and a torn one. The
    // whole line stays (its record is delivered again: a duplicate, never a loss).
    std::vector<Record> more{rec("0-3")};
    ASSERT_TRUE(task.put(more).isOk());
    task.stop();
  }
  appendFile(path, "0-");
  FileStreamSinkTask task;
  ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
  EXPECT_EQ(readAll(path), "theirs, no newline\n0-1\n0-2\n0-3\n");
  task.stop();
  // Bytes past the flushed length without any newline: they go, never the part before.
  appendFile(path, "garbage without newline");
  FileStreamSinkTask later;
  ASSERT_TRUE(later.start({{"file", path}}, ctx_).isOk());
  EXPECT_EQ(readAll(path), "theirs, no newline\n0-1\n0-2\n0-3\n");
}

TEST_F(FileSinkTest, CutsFromAPageAPowerLossDidNotWriteBack) {
  // A power loss after writes that were never flushed (the 1 MiB threshold, or stop() without a
  // flush) may keep any subset of their pages: here a zeroed page, then a whole line written
  // back out of order. Nothing past the flushed length is committed (a commit flushes first), so
  // everything from the zeroed page on goes; the records are delivered again.
  const std::string path = dir_.file("out.txt");
  writeFlushed(path, {"0-1", "0-2"});
  appendFile(path, std::string(4096, '\0') + "0-4\n");
  FileStreamSinkTask task;
  ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
  EXPECT_EQ(readAll(path), "0-1\n0-2\n");
}

TEST_F(FileSinkTest, AReplacedOrShortenedFileIsNotItsOwn) {
  const std::string path = dir_.file("out.txt");
  writeFlushed(path, {"0-1", "0-2"});
  ASSERT_TRUE(ctx_.state.has_value());
  // Rotated: a new file under the same name.
  std::remove(path.c_str());
  writeFile(path, "new file 0-");
  {
    FileStreamSinkTask task;
    ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
    EXPECT_EQ(readAll(path), "new file 0-\n");
    task.stop();
  }
  // Truncated below what the sink wrote: someone else's doing, left alone.
  writeFile(path, "short 0-");
  FileStreamSinkTask task;
  ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
  EXPECT_EQ(readAll(path), "short 0-\n");
}

TEST_F(FileSinkTest, WithoutSavedStateNothingIsEverCut) {
  const std::string path = dir_.file("out.txt");
  FakeSinkContext ctx;
  ctx.stateless = true;
  writeFile(path, "0-1\n0-");
  FileStreamSinkTask task;
  Status started = task.start({{"file", path}}, ctx);
  ASSERT_TRUE(started.isOk()) << started.toString();
  EXPECT_EQ(readAll(path), "0-1\n0-\n");
}

TEST_F(FileSinkTest, StateIsSavedOnlyWhenTheFileGrew) {
  const std::string path = dir_.file("out.txt");
  FileStreamSinkTask task;
  ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
  const int atStart = ctx_.saves;
  EXPECT_EQ(atStart, 1);
  ASSERT_TRUE(task.flush().isOk());
  ASSERT_TRUE(task.flush().isOk());
  EXPECT_EQ(ctx_.saves, atStart);
  std::vector<Record> batch{rec("x")};
  ASSERT_TRUE(task.put(batch).isOk());
  ASSERT_TRUE(task.flush().isOk());
  EXPECT_EQ(ctx_.saves, atStart + 1);
  EXPECT_EQ(ctx_.state->at("length"), "2");
}

TEST_F(FileSinkTest, RepairPastCutsFromALostPageOrATornLineNeverBelowTheLength) {
  const std::string path = dir_.file("f.txt");
  auto cut = [&](std::uint64_t length) {
    const int fd = ::open(path.c_str(), O_RDWR);
    auto r = FileStreamSinkTask::repairPast(fd, path, length);
    ::close(fd);
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? *r : 0;
  };
  writeFile(path, "theirs\nwhole\n");
  EXPECT_EQ(cut(7), 0u);  // whole lines past the length stay
  EXPECT_EQ(cut(100), 0u);  // never grows a file
  EXPECT_EQ(readAll(path), "theirs\nwhole\n");
  writeFile(path, "theirs no newline, then ours torn");
  EXPECT_EQ(cut(18), 15u);
  EXPECT_EQ(readAll(path), "theirs no newline,");
  // The last newline lies more than 64 KiB before the end.
  writeFile(path, "keep\n" + std::string(200000, 'y'));
  EXPECT_EQ(cut(2), 200000u);
  EXPECT_EQ(readAll(path), "keep\n");
  // A lost page (zeros to a page boundary) in the middle: cut from the start of its line, even
  // though whole lines follow it.
  std::string page = "0-1\n0-2\n0-3";
  page += std::string(4096 - page.size(), '\0');
  writeFile(path, page + "0-9\n");
  EXPECT_EQ(cut(4), page.size() + 4 - 8);
  EXPECT_EQ(readAll(path), "0-1\n0-2\n");
  // Zeros that do not reach a page boundary are data, not a lost page.
  writeFile(path, std::string("a\n") + std::string(10, '\0') + "b\n");
  EXPECT_EQ(cut(2), 0u);
}

TEST_F(FileSinkTest, AStaleSavedLengthNeverCostsCommittedLines) {
  // The saved length can be older than the last flush: the position store fell back to its
  // previous copy. Lines past it were flushed and their offsets committed; they must stay.
  const std::string path = dir_.file("out.txt");
  {
    FileStreamSinkTask task;
    ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
    std::vector<Record> batch{rec("0-1")};
    ASSERT_TRUE(task.put(batch).isOk());
    ASSERT_TRUE(task.flush().isOk());
    const auto stale = ctx_.state;
    std::vector<Record> more{rec("0-2"), rec("0-3")};
    ASSERT_TRUE(task.put(more).isOk());
    ASSERT_TRUE(task.flush().isOk());
    task.stop();
    ctx_.state = stale;
  }
  FileStreamSinkTask task;
  ASSERT_TRUE(task.start({{"file", path}}, ctx_).isOk());
  EXPECT_EQ(readAll(path), "0-1\n0-2\n0-3\n");
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
