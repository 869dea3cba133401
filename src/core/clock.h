// Time: wall-clock milliseconds, and a Clock interface so tests can inject time (no sleeps).
#pragma once

#include <chrono>
#include <cstdint>

namespace ferry::core {

inline std::int64_t nowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}
inline std::int64_t monotonicMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}
// The steady clock in nanoseconds (Record::receivedNs).
inline std::int64_t monotonicNs() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

// Thread-safe. The default implementation reads the system clocks.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::int64_t wallMs() const { return nowMs(); }
  virtual std::int64_t steadyMs() const { return monotonicMs(); }
  static Clock& system() {
    static Clock c;
    return c;
  }
};

}  // namespace ferry::core
