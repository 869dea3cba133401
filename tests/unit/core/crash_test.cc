// The crash handler's report, in a child process per test (gtest death tests): the signal, the
// thread's name, a backtrace, and for an escaped exception its message.
#include "core/crash.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace ferry::core {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FERRY_CRASH_HANDLER_OFF 1  // the sanitizers keep their own handlers (crash.cc)
#endif

TEST(CrashHandlerDeathTest, SegfaultNamesTheSignalTheThreadAndABacktrace) {
#ifdef FERRY_CRASH_HANDLER_OFF
  GTEST_SKIP() << "the sanitizer's own handler reports crashes in this build";
#endif
  EXPECT_EXIT(
      {
        installCrashHandler();
        pthread_setname_np(pthread_self(), "crash-test");
        volatile std::uintptr_t address = 16;  // not known to the compiler: a real fault, not a trap
        *reinterpret_cast<volatile int*>(address) = 1;
      },
      ::testing::KilledBySignal(SIGSEGV),
      "ferry: fatal SIGSEGV \\(signal 11\\) in thread 'crash-test' \\(tid [0-9]+\\) at address 0x0+10; "
      "backtrace:\n.*ferry: end of backtrace");
}

TEST(CrashHandlerDeathTest, AbortIsReportedAndStillAborts) {
#ifdef FERRY_CRASH_HANDLER_OFF
  GTEST_SKIP() << "the sanitizer's own handler reports crashes in this build";
#endif
  EXPECT_EXIT(
      {
        installCrashHandler();
        std::abort();
      },
      ::testing::KilledBySignal(SIGABRT), "ferry: fatal SIGABRT \\(signal 6\\).*end of backtrace");
}

TEST(CrashHandlerDeathTest, AnExceptionEscapingAThreadIsNamed) {
#ifdef FERRY_CRASH_HANDLER_OFF
  GTEST_SKIP() << "the sanitizer's own handler reports crashes in this build";
#endif
  EXPECT_EXIT(
      {
        installCrashHandler();
        std::thread([] {
          pthread_setname_np(pthread_self(), "thrower");
          throw std::runtime_error("boom at offset 42");
        }).join();
      },
      ::testing::KilledBySignal(SIGABRT),
      "ferry: uncaught exception \\([^)]*runtime_error[^)]*\\): boom at offset 42\n"
      "ferry: fatal SIGABRT \\(signal 6\\) in thread 'thrower'");
}

}  // namespace
}  // namespace ferry::core
