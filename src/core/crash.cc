#include "core/crash.h"

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <typeinfo>

namespace ferry::core {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
std::atomic<bool> installed{false};
std::atomic<bool> dying{false};

void put(const char* s) {
  const std::size_t n = std::strlen(s);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(STDERR_FILENO, s + done, n - done);
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}

// Decimal without the allocator (async-signal-safe).
void putNumber(long v) {
  char buf[24];
  int i = sizeof buf - 1;
  buf[i] = '\0';
  const bool neg = v < 0;
  unsigned long u = neg ? static_cast<unsigned long>(-v) : static_cast<unsigned long>(v);
  do {
    buf[--i] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0 && i > 1);
  if (neg) buf[--i] = '-';
  put(buf + i);
}

const char* signalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
  }
}

void onFatal(int sig, siginfo_t* info, void*) {
  if (!dying.exchange(true)) {  // a second crash while reporting: just die
    char name[32] = "?";
    pthread_getname_np(pthread_self(), name, sizeof name);
    put("ferry: fatal ");
    put(signalName(sig));
    put(" (signal ");
    putNumber(sig);
    put(") in thread '");
    put(name);
    put("' (tid ");
    putNumber(static_cast<long>(gettid()));
    put(")");
    // The faulting address, when the kernel raised it (si_code > 0; raise() and kill() carry none).
    if ((sig == SIGSEGV || sig == SIGBUS) && info != nullptr && info->si_code > 0) {
      put(" at address 0x");
      char hex[2 * sizeof(void*) + 1];
      auto a = reinterpret_cast<unsigned long>(info->si_addr);
      for (int i = static_cast<int>(sizeof hex) - 2; i >= 0; --i, a >>= 4) hex[i] = "0123456789abcdef"[a & 0xf];
      hex[sizeof hex - 1] = '\0';
      put(hex);
    }
    put("; backtrace:\n");
    void* frames[64];
    const int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    put("ferry: end of backtrace\n");
  }
  // Die of the same signal: the default action (core dump, exit status) as without the handler.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, sig);
  pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
  raise(sig);
}

void onTerminate() {
  // An exception escaped (a thread function, a noexcept boundary): name it, then abort (whose
  // handler prints the backtrace).
  if (auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      put("ferry: uncaught exception (");
      put(typeid(ex).name());
      put("): ");
      put(ex.what());
      put("\n");
    } catch (...) {
      put("ferry: uncaught exception of an unknown type\n");
    }
  } else {
    put("ferry: std::terminate called without an exception\n");
  }
  std::abort();
}

}  // namespace

void installCrashHandler() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return;  // the sanitizers install handlers that report more than this one would
#endif
  if (installed.exchange(true)) return;
  // backtrace() loads libgcc on first use, which may allocate: not inside a signal handler.
  void* warm[2];
  (void)backtrace(warm, 2);
  // A stack overflow's SIGSEGV needs a stack of its own (this thread's; others print on theirs).
  static char altStack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = altStack;
  ss.ss_size = sizeof altStack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = onFatal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : kSignals) sigaction(sig, &sa, nullptr);
  std::set_terminate(onTerminate);
}

}  // namespace ferry::core
