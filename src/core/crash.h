// Last words of a worker that crashes: on SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT the process
// writes the signal, the thread's name and a backtrace to stderr (the worker's log when it runs
// under a supervisor or the test harness), then dies of the same signal (core dumps and exit
// statuses stay what they were). An exception that escapes a thread is named before the abort.
// Without it a crashed worker leaves a log that simply stops.
#pragma once

namespace ferry::core {

// Once, early in main(). Idempotent.
void installCrashHandler();

}  // namespace ferry::core
