// Proleptic Gregorian calendar arithmetic (Howard Hinnant's days_from_civil and its inverse, the
// year only), shared by the zone reader, the time transforms and the JDBC connectors' date
// parsing. Year 0 is 1 BC.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace ferry::core {

// Days since 1970-01-01 of the date y-m-d (m 1..12, d 1..31; not validated).
constexpr std::int64_t daysFromCivil(std::int64_t y, std::int64_t m, std::int64_t d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// The year of the day `days` since 1970-01-01.
constexpr std::int64_t yearOfDays(std::int64_t days) {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const std::int64_t doe = days - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  return yoe + era * 400 + (mp >= 10 ? 1 : 0);
}

constexpr bool leapYear(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static_assert(daysFromCivil(1970, 1, 1) == 0 && daysFromCivil(2000, 3, 1) == 11017);
static_assert(yearOfDays(0) == 1970 && yearOfDays(-1) == 1969 && yearOfDays(11016) == 2000);

}  // namespace ferry::core
