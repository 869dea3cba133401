// Threads that carry a name (shown by top -H, perf and /proc/<pid>/task/*/comm).
#pragma once

#include <pthread.h>

#include <thread>
#include <utility>

namespace ferry::core {

// Starts a thread named `name` (at most 15 characters are kept) that runs `fn`.
template <typename Fn>
std::thread namedThread(const char* name, Fn&& fn) {
  return std::thread([name, fn = std::forward<Fn>(fn)]() mutable {
    pthread_setname_np(pthread_self(), name);
    fn();
  });
}

}  // namespace ferry::core
