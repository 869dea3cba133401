// Unit tests of run-time logger levels (src/core/logging.h): names a level may create are
// validated and bounded; existing loggers and root stay settable once the bound is reached.
#include "core/logging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace ferry::core {
namespace {

using ::testing::HasSubstr;

TEST(LoggerLevels, UnknownLevelIsRefused) {
  auto r = setLoggerLevel("worker", "loud");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("unknown log level"));
}

TEST(LoggerLevels, NewNamesAreValidated) {
  const std::size_t before = createdLoggerCount();
  for (const std::string& bad : {std::string(), std::string(256, 'a'), std::string("a b"),
                                std::string("a/b"), std::string("x\n"), std::string("é")}) {
    auto r = setLoggerLevel(bad, "debug");
    EXPECT_FALSE(r.isOk()) << bad;
  }
  EXPECT_EQ(createdLoggerCount(), before);
  EXPECT_TRUE(validateLoggerName("org.apache.kafka.connect.runtime.WorkerSourceTask$1").isOk());
  EXPECT_TRUE(validateLoggerName(std::string(255, 'a')).isOk());
}

TEST(LoggerLevels, CreatedNamesAreBoundedAndExistingOnesStaySettable) {
  logger("bounded-test-existing");  // created by code, not by a level: never counted
  const std::size_t before = createdLoggerCount();
  ASSERT_LE(before, kMaxCreatedLoggers);
  for (std::size_t i = before; i < kMaxCreatedLoggers; ++i) {
    auto r = setLoggerLevel("bounded.test.x" + std::to_string(i), "debug");
    ASSERT_TRUE(r.isOk()) << i << ": " << r.status().message();
  }
  EXPECT_EQ(createdLoggerCount(), kMaxCreatedLoggers);
  const std::size_t loggers = loggerLevels().size();
  for (int i = 0; i < 1000; ++i) {
    auto r = setLoggerLevel("bounded.test.more" + std::to_string(i), "info");
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("too many new logger names"));
  }
  EXPECT_EQ(loggerLevels().size(), loggers);  // nothing was registered by the refused requests
  // A name created earlier, a name the code made, and root all still take a level.
  auto again = setLoggerLevel("bounded.test.x" + std::to_string(kMaxCreatedLoggers - 1), "warn");
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(loggerLevels().at("bounded.test.x" + std::to_string(kMaxCreatedLoggers - 1)), "warning");
  ASSERT_TRUE(setLoggerLevel("bounded-test-existing", "error").isOk());
  EXPECT_EQ(loggerLevels().at("bounded-test-existing"), "error");
  ASSERT_TRUE(setLoggerLevel("root", "info").isOk());
  EXPECT_EQ(createdLoggerCount(), kMaxCreatedLoggers);
}

}  // namespace
}  // namespace ferry::core
