// ferry connector SDK — error values.
//
// Status is the result of an operation that returns nothing; Result<T> carries a value or a
// Status. Both are [[nodiscard]]: ignoring an error is a compile warning (an error with -Werror).
// Errors are values at every module and plugin boundary: no exception crosses them.
//
// Thread-safety: values; safe to copy and move across threads, not to mutate concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace ferry {

// What kind of failure. retriable() below says which ones a caller may try again as they are.
enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,     // the input is wrong; retrying the same input fails again
  kNotFound,            // the named thing does not exist
  kAlreadyExists,       // a thing with that name exists
  kFailedPrecondition,  // the system is not in a state that allows the call (e.g. not stopped)
  kUnavailable,         // a peer or resource is down for now: retriable
  kTimeout,             // a deadline passed: retriable
  kResourceExhausted,   // a buffer or quota is full for now: retriable (backpressure)
  kRetriable,           // any other transient failure the callee marks as retriable
  kCancelled,           // the operation was stopped on purpose (shutdown)
  kDataLoss,            // stored data is damaged
  kIncompatible,        // a plugin or file built for another ABI / format version
  kInternal,            // a bug: an invariant did not hold
};

const char* statusCodeName(StatusCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() noexcept { return Status(); }
  static Status invalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status notFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status alreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status failedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status resourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status retriable(std::string m) { return {StatusCode::kRetriable, std::move(m)}; }
  static Status cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status dataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status incompatible(std::string m) { return {StatusCode::kIncompatible, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool isOk() const noexcept { return code_ == StatusCode::kOk; }
  explicit operator bool() const noexcept { return isOk(); }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // True for codes a caller may retry unchanged after a backoff.
  bool isRetriable() const noexcept {
    return code_ == StatusCode::kUnavailable || code_ == StatusCode::kTimeout ||
           code_ == StatusCode::kResourceExhausted || code_ == StatusCode::kRetriable;
  }

  // "InvalidArgument: message" (or "OK").
  std::string toString() const { return isOk() ? "OK" : std::string(statusCodeName(code_)) + ": " + message_; }

  // Returns a copy whose message is prefixed with `context: `.
  Status withContext(std::string_view context) const {
    if (isOk()) return *this;
    return Status(code_, std::string(context) + ": " + message_);
  }

  friend bool operator==(const Status& a, const Status& b) noexcept {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline const char* statusCodeName(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kTimeout: return "Timeout";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kRetriable: return "Retriable";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kIncompatible: return "Incompatible";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

}  // namespace ferry

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define FERRY_RETURN_IF_ERROR(expr)               \
  do {                                            \
    ::ferry::Status ferry_status_ = (expr);       \
    if (!ferry_status_.isOk()) return ferry_status_; \
  } while (0)
