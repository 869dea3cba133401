// ferry connector SDK — Result<T>: a value or the Status that explains its absence.
//
// Thread-safety: a value type, like Status.
#pragma once

#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>

#include "ferry/status.h"

namespace ferry {

template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<T, Status>, "Result<Status> makes no sense");

 public:
  // A value.
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  // An error. Passing an OK status is a bug and becomes an Internal error.
  Result(Status status)  // NOLINT(google-explicit-constructor)
      : status_(status.isOk() ? Status::internal("Result built from an OK status") : std::move(status)) {}

  bool isOk() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return isOk(); }

  // OK when a value is present.
  const Status& status() const noexcept { return status_; }

  // Precondition: isOk().
  T& value() & { assert(isOk()); return *value_; }
  const T& value() const& { assert(isOk()); return *value_; }
  T&& value() && { assert(isOk()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T valueOr(T fallback) const& { return isOk() ? *value_ : std::move(fallback); }

 private:
  std::optional<T> value_;
  Status status_;  // OK iff value_ is present
};

}  // namespace ferry

#define FERRY_CONCAT_INNER_(a, b) a##b
#define FERRY_CONCAT_(a, b) FERRY_CONCAT_INNER_(a, b)

// `FERRY_ASSIGN_OR_RETURN(auto x, f());` declares x with f()'s value, or returns its Status.
#define FERRY_ASSIGN_OR_RETURN(lhs, expr) \
  FERRY_ASSIGN_OR_RETURN_IMPL_(FERRY_CONCAT_(ferry_result_, __LINE__), lhs, expr)
#define FERRY_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.isOk()) return tmp.status();              \
  lhs = std::move(tmp).value()
