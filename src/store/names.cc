// Names of target states and task/connector states (store.h). Pure functions, thread-safe.
#include <algorithm>
#include <cctype>
#include <string_view>

#include "store/store.h"

namespace ferry::store {

const char* targetStateName(TargetState s) noexcept {
  switch (s) {
    case TargetState::kStarted:
      return "STARTED";
    case TargetState::kPaused:
      return "PAUSED";
    case TargetState::kStopped:
      return "STOPPED";
  }
  return "STARTED";
}

std::optional<TargetState> parseTargetState(std::string_view s) noexcept {
  auto eq = [s](std::string_view name) {
    return s.size() == name.size() &&
           std::equal(s.begin(), s.end(), name.begin(), [](char a, char b) {
             return std::toupper(static_cast<unsigned char>(a)) == static_cast<unsigned char>(b);
           });
  };
  if (eq("STARTED") || eq("RUNNING")) return TargetState::kStarted;
  if (eq("PAUSED")) return TargetState::kPaused;
  if (eq("STOPPED")) return TargetState::kStopped;
  return std::nullopt;
}

const char* stateName(State s) noexcept {
  switch (s) {
    case State::kUnassigned:
      return "UNASSIGNED";
    case State::kRunning:
      return "RUNNING";
    case State::kPaused:
      return "PAUSED";
    case State::kStopped:
      return "STOPPED";
    case State::kFailed:
      return "FAILED";
    case State::kRestarting:
      return "RESTARTING";
    case State::kDestroyed:
      return "DESTROYED";
  }
  return "UNASSIGNED";
}

}  // namespace ferry::store
