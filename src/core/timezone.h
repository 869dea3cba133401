// Named time zones from the system's zone database, for the JDBC connectors' db.timezone: the
// offset from UTC at an instant, and the instant of a local wall-clock time.
//
// Why our own reader: the C library's zone functions work on one process-wide zone (TZ), which
// tasks with different zones cannot share, and this compiler's standard library has no
// std::chrono::tzdb yet. A zone file (TZif, RFC 8536) is a small table of transitions; this reads
// its 64-bit part (version 2+).
//
// After a zone's last listed transition (2037 in Debian's files) the file's POSIX rule (its
// footer, e.g. "CET-1CEST,M3.5.0,M10.5.0/3") gives the changes, computed through kLastRuleYear;
// after that the last offset holds. Leap-second files (right/...) are read as their civil offsets.
//
// Thread-safety: a loaded TimeZone is immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry::core {

class TimeZone {
 public:
  static constexpr std::int64_t kLastRuleYear = 2200;
  // "UTC" (also "Z", "GMT", "Etc/UTC"), a fixed offset "+HH:MM" / "-HH:MM", or a zone name of the
  // database ("Europe/Paris") read from $TZDIR or /usr/share/zoneinfo. A name that is not a plain
  // relative path of letters, digits, '_', '-', '+' and '/' (no "..", no leading '/'), a file that
  // does not exist or is not a valid zone file is InvalidArgument naming it.
  static Result<std::shared_ptr<const TimeZone>> load(std::string_view name);
  // The zone a TZif image describes (exposed for tests and fuzzing): InvalidArgument when
  // `bytes` is not a well-formed version 2+ file.
  static Result<std::shared_ptr<const TimeZone>> fromTzif(std::string name, std::string_view bytes);

  const std::string& name() const { return name_; }
  bool isUtc() const { return transitions_.empty() && offsets_.size() == 1 && offsets_[0] == 0; }
  // Seconds east of UTC at `utcSeconds`.
  std::int32_t offsetAt(std::int64_t utcSeconds) const;
  // The instant of a wall-clock time (seconds since the epoch as if the wall clock were UTC).
  // Where the clock goes back (a time that happens twice) the earlier instant; where it jumps
  // forward (a time that never happens) the time is moved forward by the jump, as Java's
  // ZonedDateTime.ofLocal does.
  std::int64_t utcOfLocal(std::int64_t localSeconds) const;

 private:
  TimeZone() = default;
  std::string name_;
  std::vector<std::int64_t> transitions_;  // instants (UTC seconds), ascending
  std::vector<std::int32_t> after_;        // the offset from each transition on
  std::vector<std::int32_t> offsets_;      // [0]: the offset before the first transition
};

}  // namespace ferry::core
