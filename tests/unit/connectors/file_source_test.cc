// FileStreamSource: line splitting, held-back partial lines, resume, rotation, truncation,
// several files, task splitting and config errors. No sleeps: every poll uses maxWait 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <future>

#include "connectors/file/file_source.h"
#include "test_util.h"

namespace ferry::connectors {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace testing;

class FileSourceTest : public ::testing::Test {
 protected:
  std::unique_ptr<FileStreamSourceTask> startTask(StringMap config) {
    config.emplace("topic", "lines");
    auto task = std::make_unique<FileStreamSourceTask>();
    Status s = task->start(config, ctx_);
    EXPECT_TRUE(s.isOk()) << s.toString();
    return task;
  }

  TempDir dir_;
  FakeSourceContext ctx_;
};

TEST_F(FileSourceTest, ReadsLinesAndHoldsBackAPartialLine) {
  const std::string path = dir_.file("in.txt");
  writeFile(path, "alpha\nbe ta\r\ngam");
  auto task = startTask({{"file", path}});
  auto got = pollAll(*task, 2);
  ASSERT_THAT(values(got), ElementsAre("alpha", "be ta"));
  EXPECT_EQ(got[0].topic, "lines");
  EXPECT_TRUE(got[0].key.isNull());
  EXPECT_GT(got[0].timestampMs, 0);
  EXPECT_EQ(got[0].position.partition, (StringMap{{"filename", path}}));
  EXPECT_EQ(got[0].position.offset, (StringMap{{"position", "6"}, {"inode", inodeOf(path)}}));
  EXPECT_EQ(got[1].position.offset.at("position"), "13");

  // The partial line stays back until its newline arrives.
  EXPECT_TRUE(pollAll(*task, 1, 2).empty());
  appendFile(path, "ma\n\n");
  got = pollAll(*task, 2);
  ASSERT_THAT(values(got), ElementsAre("gamma", ""));
  EXPECT_EQ(got[0].position.offset.at("position"), "19");
  EXPECT_EQ(got[1].position.offset.at("position"), "20");
}

TEST_F(FileSourceTest, ResumesExactlyFromTheCommittedPosition) {
  const std::string path = dir_.file("in.txt");
  writeFile(path, "one\ntwo\nthree\n");
  ctx_.committed[{{"filename", path}}] = {{"position", "4"}, {"inode", inodeOf(path)}};
  auto task = startTask({{"file", path}});
  EXPECT_GE(ctx_.lookups, 1);
  EXPECT_THAT(values(pollAll(*task, 2)), ElementsAre("two", "three"));
}

TEST_F(FileSourceTest, CommittedPositionOfAnotherInodeStartsAtZero) {
  const std::string path = dir_.file("in.txt");
  writeFile(path, "one\ntwo\n");
  ctx_.committed[{{"filename", path}}] = {{"position", "4"}, {"inode", "1"}};
  auto task = startTask({{"file", path}});
  EXPECT_THAT(values(pollAll(*task, 2)), ElementsAre("one", "two"));
}

TEST_F(FileSourceTest, CommittedPositionBeyondASmallerFileStartsAtZero) {
  const std::string path = dir_.file("in.txt");
  writeFile(path, "one\n");
  ctx_.committed[{{"filename", path}}] = {{"position", "400"}, {"inode", inodeOf(path)}};
  auto task = startTask({{"file", path}});
  EXPECT_THAT(values(pollAll(*task, 1)), ElementsAre("one"));
}

TEST_F(FileSourceTest, ReadFromEndSkipsExistingLinesWhenNothingWasCommitted) {
  const std::string path = dir_.file("in.txt");
  writeFile(path, "old\n");
  auto task = startTask({{"file", path}, {"read.from", "end"}});
  EXPECT_TRUE(pollAll(*task, 1, 1).empty());
  appendFile(path, "new\n");
  auto got = pollAll(*task, 1);
  ASSERT_THAT(values(got), ElementsAre("new"));
  EXPECT_EQ(got[0].position.offset.at("position"), "8");
}

TEST_F(FileSourceTest, FollowsRenameAndRecreateRotation) {
  const std::string path = dir_.file("app.log");
  writeFile(path, "1\n2\n");
  auto task = startTask({{"file", path}});
  EXPECT_THAT(values(pollAll(*task, 2)), ElementsAre("1", "2"));
  const std::string oldInode = inodeOf(path);
  // The writer adds more (one line unterminated), the file is rotated, a new one starts.
  appendFile(path, "3\ntail");
  ASSERT_EQ(::rename(path.c_str(), dir_.file("app.log.1").c_str()), 0);
  writeFile(path, "x\ny\n");
  ASSERT_NE(inodeOf(path), oldInode);
  auto got = pollAll(*task, 4);
  ASSERT_THAT(values(got), ElementsAre("3", "tail", "x", "y"));
  EXPECT_EQ(got[1].position.offset.at("inode"), oldInode);
  EXPECT_EQ(got[2].position.offset, (StringMap{{"position", "2"}, {"inode", inodeOf(path)}}));
  EXPECT_EQ(got[3].position.offset.at("position"), "4");
}

TEST_F(FileSourceTest, RotatedAwayFileWithoutReplacementKeepsBeingRead) {
  const std::string path = dir_.file("app.log");
  writeFile(path, "1\n");
  auto task = startTask({{"file", path}});
  EXPECT_THAT(values(pollAll(*task, 1)), ElementsAre("1"));
  ASSERT_EQ(::rename(path.c_str(), dir_.file("app.log.1").c_str()), 0);
  appendFile(dir_.file("app.log.1"), "2\n");
  EXPECT_THAT(values(pollAll(*task, 1)), ElementsAre("2"));
  writeFile(path, "3\n");
  EXPECT_THAT(values(pollAll(*task, 1)), ElementsAre("3"));
}

TEST_F(FileSourceTest, RereadsATruncatedFileFromTheStart) {
  const std::string path = dir_.file("in.txt");
  writeFile(path, "first line\nsecond line\n");
  auto task = startTask({{"file", path}});
  EXPECT_EQ(pollAll(*task, 2).size(), 2u);
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  appendFile(path, "again\n");
  auto got = pollAll(*task, 1);
  ASSERT_THAT(values(got), ElementsAre("again"));
  EXPECT_EQ(got[0].position.offset.at("position"), "6");
}

TEST_F(FileSourceTest, WaitsForAMissingFile) {
  const std::string path = dir_.file("later.txt");
  auto task = startTask({{"file", path}});
  std::vector<Record> out;
  auto n = task->poll(out, 10, std::chrono::milliseconds(0));
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  EXPECT_EQ(*n, 0u);
  writeFile(path, "here\n");
  EXPECT_THAT(values(pollAll(*task, 1)), ElementsAre("here"));
}

TEST_F(FileSourceTest, ReadsSeveralFilesWithTheirOwnPartitions) {
  const std::string a = dir_.file("a.txt"), b = dir_.file("b.txt");
  writeFile(a, "a1\na2\n");
  writeFile(b, "b1\n");
  auto task = startTask({{"files", a + "," + b}});
  auto got = pollAll(*task, 3);
  ASSERT_EQ(got.size(), 3u);
  std::map<std::string, std::vector<std::string>> byFile;
  for (const auto& r : got) byFile[r.position.partition.at("filename")].push_back(r.value.str());
  EXPECT_THAT(byFile[a], ElementsAre("a1", "a2"));
  EXPECT_THAT(byFile[b], ElementsAre("b1"));
}

TEST_F(FileSourceTest, BatchSizeBoundsOnePoll) {
  const std::string path = dir_.file("in.txt");
  writeFile(path, "1\n2\n3\n4\n5\n");
  auto task = startTask({{"file", path}, {"batch.size", "2"}});
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 4; ++i) {
    std::vector<Record> out;
    auto n = task->poll(out, 100, std::chrono::milliseconds(0));
    ASSERT_TRUE(n.isOk());
    sizes.push_back(*n);
  }
  EXPECT_THAT(sizes, ElementsAre(2u, 2u, 1u, 0u));
  std::vector<Record> out;
  ASSERT_TRUE(task->poll(out, 1, std::chrono::milliseconds(0)).isOk());  // maxRecords < batch
}

TEST_F(FileSourceTest, LinesAcrossManyChunksKeepExactPositions) {
  const std::string path = dir_.file("big.txt");
  std::string data;
  for (int i = 0; i < 20000; ++i) data += "line-" + std::to_string(i) + "-" + std::string(i % 37, 'z') + "\n";
  writeFile(path, data);
  auto task = startTask({{"file", path}, {"batch.size", "100000"}});
  auto got = pollAll(*task, 20000);
  ASSERT_EQ(got.size(), 20000u);
  EXPECT_EQ(got[12345].value.str(), "line-12345-" + std::string(12345 % 37, 'z'));
  EXPECT_EQ(got.back().position.offset.at("position"), std::to_string(data.size()));
}

TEST_F(FileSourceTest, TaskConfigsSplitFilesOverTasks) {
  FileStreamSourceConnector c;
  FakeConnectorContext cctx;
  ASSERT_TRUE(c.start({{"files", "/a,/b,/c"}, {"topic", "t"}, {"tasks.max", "2"}}, cctx).isOk());
  auto cfgs = c.taskConfigs(2);
  ASSERT_TRUE(cfgs.isOk());
  ASSERT_EQ(cfgs->size(), 2u);
  EXPECT_EQ((*cfgs)[0].at("task.files"), "/a,/c");
  EXPECT_EQ((*cfgs)[1].at("task.files"), "/b");
  auto one = c.taskConfigs(10);
  ASSERT_TRUE(one.isOk());
  EXPECT_EQ(one->size(), 3u);  // never more tasks than files

  // A task started with task.files reads only those.
  const std::string a = dir_.file("a.txt"), b = dir_.file("b.txt");
  writeFile(a, "from-a\n");
  writeFile(b, "from-b\n");
  auto task = startTask({{"files", a + "," + b}, {"task.files", b}});
  EXPECT_THAT(values(pollAll(*task, 2, 2)), ElementsAre("from-b"));
}

TEST_F(FileSourceTest, ConfigErrorsNameTheKeys) {
  FileStreamSourceConnector c;
  ConfigValidation v;
  c.validate({{"topic", "t"}}, v);
  ASSERT_EQ(v.errors.count("file"), 1u);
  ConfigValidation fine;
  c.validate({{"topic", "t"}, {"files", "/x"}}, fine);
  EXPECT_TRUE(fine.ok());

  FakeConnectorContext cctx;
  Status s = c.start({{"file", "/x"}}, cctx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("topic"));
  s = c.start({{"topic", "t"}}, cctx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = c.start({{"file", "/x"}, {"topic", "t"}, {"read.from", "middle"}, {"batch.size", "x"}}, cctx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("read.from"));
  EXPECT_THAT(s.message(), HasSubstr("batch.size"));

  // Framework keys in a task config are ignored.
  FileStreamSourceTask task;
  s = task.start({{"file", dir_.file("x")}, {"topic", "t"}, {"connector.class", "FileStreamSource"},
                  {"tasks.max", "1"}, {"errors.tolerance", "all"}},
                 ctx_);
  EXPECT_TRUE(s.isOk()) << s.toString();
}

// --- Nothing may wedge the task thread: non-regular files, endless lines, bounded polls. ----

// Regression: a FIFO blocked the task in open() inside start(), for ever when no writer came,
// and then every stop, delete and shutdown waited for it.
TEST_F(FileSourceTest, RefusesAFifoAtStartWithoutBlocking) {
  const std::string path = dir_.file("pipe");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto task = std::make_unique<FileStreamSourceTask>();
  auto started = std::async(std::launch::async, [&] { return task->start({{"file", path}, {"topic", "t"}}, ctx_); });
  if (started.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int unblock = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);  // let the blocked open() return
    started.wait();
    if (unblock >= 0) ::close(unblock);
    FAIL() << "start() blocked on a FIFO";
  }
  Status s = started.get();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.toString();
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("FIFO"));
  EXPECT_THAT(s.message(), HasSubstr("regular file"));
}

// Regression: /dev/zero was read for ever (no newline), its buffer growing without bound.
TEST_F(FileSourceTest, RefusesDevicesAndDirectories) {
  for (const auto& [path, what] : {std::pair<std::string, std::string>{"/dev/zero", "character device"},
                                   {dir_.path(), "directory"}}) {
    FileStreamSourceTask task;
    Status s = task.start({{"file", path}, {"topic", "t"}}, ctx_);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.toString();
    EXPECT_THAT(s.message(), HasSubstr(path));
    EXPECT_THAT(s.message(), HasSubstr(what));
  }
}

// A file that appears later as a FIFO is refused when it is opened, at a poll.
TEST_F(FileSourceTest, RefusesAFifoThatAppearsLater) {
  const std::string path = dir_.file("later");
  auto task = startTask({{"file", path}});
  EXPECT_TRUE(pollAll(*task, 1, 1).empty());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::vector<Record> out;
  auto n = task->poll(out, 10, std::chrono::milliseconds(0));
  ASSERT_FALSE(n.isOk());
  EXPECT_THAT(n.status().message(), HasSubstr("FIFO"));
}

TEST_F(FileSourceTest, ALineLongerThanMaxLineBytesFailsNamingFilePositionAndKey) {
  for (const std::string& tail : {std::string(""), std::string("\nafter\n")}) {  // newline not yet read / read
    const std::string path = dir_.file("long" + std::to_string(tail.size()) + ".txt");
    writeFile(path, "ok\n12345\n" + std::string(100, 'x') + tail);
    auto task = startTask({{"file", path}, {"max.line.bytes", "5"}});
    std::vector<Record> out;
    auto n = task->poll(out, 100, std::chrono::milliseconds(0));
    ASSERT_TRUE(n.isOk()) << n.status().toString();
    EXPECT_THAT(values(out), ElementsAre("ok", "12345"));  // a line of exactly max.line.bytes passes
    out.clear();
    n = task->poll(out, 100, std::chrono::milliseconds(0));
    ASSERT_FALSE(n.isOk());
    EXPECT_TRUE(out.empty());
    EXPECT_FALSE(n.status().isRetriable());
    EXPECT_THAT(n.status().message(), HasSubstr(path));
    EXPECT_THAT(n.status().message(), HasSubstr("byte 9 "));
    EXPECT_THAT(n.status().message(), HasSubstr("max.line.bytes=5"));
  }
}

// Regression: a line without end was searched again from its start after every read (O(n^2)),
// and one poll read until the line ended, so the task never returned to see a stop.
TEST_F(FileSourceTest, AnEndlessLineIsSearchedOnceAndEveryPollIsBounded) {
  const std::string path = dir_.file("endless.txt");
  const std::size_t size = 4 * 1024 * 1024;
  writeFile(path, std::string(size, 'x'));
  auto task = startTask({{"file", path}, {"max.line.bytes", std::to_string(16 * 1024 * 1024)},
                         {"max.poll.bytes", std::to_string(256 * 1024)}});
  std::uint64_t lastRead = 0;
  int polls = 0;
  while (task->bytesRead() < size) {
    std::vector<Record> out;
    auto n = task->poll(out, 100, std::chrono::milliseconds(0));
    ASSERT_TRUE(n.isOk()) << n.status().toString();
    EXPECT_EQ(*n, 0u);
    EXPECT_LE(task->bytesRead() - lastRead, 256u * 1024) << "one poll read more than max.poll.bytes";
    ASSERT_GT(task->bytesRead(), lastRead) << "a poll made no progress";
    lastRead = task->bytesRead();
    ASSERT_LT(++polls, 1000);
  }
  EXPECT_EQ(task->bytesScanned(), task->bytesRead()) << "bytes were searched for a newline twice";
  appendFile(path, "\nnext\n");
  auto got = pollAll(*task, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].value.size(), size);
  EXPECT_EQ(got[1].value.str(), "next");
  EXPECT_LE(task->bytesScanned(), task->bytesRead());
}

// A sparse 50 GB file of zero bytes: the default max.line.bytes stops it after about 1 MiB.
TEST_F(FileSourceTest, ASparseFileWithoutNewlineFailsAtTheDefaultLimit) {
  const std::string path = dir_.file("sparse.bin");
  writeFile(path, "first\n");
  ASSERT_EQ(::truncate(path.c_str(), 50LL * 1024 * 1024 * 1024), 0);
  auto task = startTask({{"file", path}});
  std::vector<Record> out;
  Status failure;
  for (int i = 0; i < 100 && failure.isOk(); ++i) {
    auto n = task->poll(out, 100, std::chrono::milliseconds(0));
    if (!n.isOk()) failure = n.status();
  }
  ASSERT_FALSE(failure.isOk()) << "no failure after 100 polls";
  EXPECT_THAT(values(out), ElementsAre("first"));
  EXPECT_THAT(failure.message(), HasSubstr("byte 6 of " + path));
  EXPECT_THAT(failure.message(), HasSubstr("max.line.bytes=1048576"));
  EXPECT_LE(task->bytesRead(), 2u * 1024 * 1024 + 64 * 1024);
}

}  // namespace
}  // namespace ferry::connectors
