// Zone files (src/core/timezone.h): offsets at instants, wall-clock times to instants across
// daylight-saving changes (gaps and overlaps), fixed offsets, and names or files that are not
// zones. Reads the machine's zone database (Debian tzdata: a base dependency of the image).
#include "core/timezone.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace ferry::core {
namespace {

using ::testing::HasSubstr;

// Seconds since the epoch of a UTC wall-clock time.
std::int64_t at(int y, int mo, int d, int h, int mi) {
  // days from civil (Howard Hinnant's algorithm)
  y -= mo <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return (era * 146097 + doe - 719468) * 86400 + h * 3600 + mi * 60;
}

std::shared_ptr<const TimeZone> zone(const char* name) {
  auto z = TimeZone::load(name);
  EXPECT_TRUE(z.isOk()) << z.status().toString();
  return z.isOk() ? *z : nullptr;
}

TEST(TimeZone, OffsetsFollowDaylightSaving) {
  auto paris = zone("Europe/Paris");
  ASSERT_TRUE(paris);
  EXPECT_EQ(paris->offsetAt(at(2026, 1, 15, 12, 0)), 3600);
  EXPECT_EQ(paris->offsetAt(at(2026, 7, 15, 12, 0)), 7200);
  // 2026-03-29 01:00 UTC the clocks go 02:00 -> 03:00.
  EXPECT_EQ(paris->offsetAt(at(2026, 3, 29, 0, 59)), 3600);
  EXPECT_EQ(paris->offsetAt(at(2026, 3, 29, 1, 0)), 7200);
  auto ny = zone("America/New_York");
  ASSERT_TRUE(ny);
  EXPECT_EQ(ny->offsetAt(at(2026, 12, 6, 12, 0)), -5 * 3600);
  EXPECT_EQ(ny->offsetAt(at(2026, 6, 6, 12, 0)), -4 * 3600);
  EXPECT_EQ(ny->offsetAt(at(1900, 1, 1, 0, 0)), -5 * 3600);
}

TEST(TimeZone, WallClockTimesToInstantsAcrossGapsAndOverlaps) {
  auto paris = zone("Europe/Paris");
  ASSERT_TRUE(paris);
  EXPECT_EQ(paris->utcOfLocal(at(2026, 1, 15, 13, 0)), at(2026, 1, 15, 12, 0));
  EXPECT_EQ(paris->utcOfLocal(at(2026, 7, 15, 14, 0)), at(2026, 7, 15, 12, 0));
  // 02:30 on 2026-03-29 never happens: moved forward by the hour (03:30 CEST = 01:30 UTC).
  EXPECT_EQ(paris->utcOfLocal(at(2026, 3, 29, 2, 30)), at(2026, 3, 29, 1, 30));
  // 02:30 on 2026-10-25 happens twice (CEST, then CET): the earlier instant.
  EXPECT_EQ(paris->utcOfLocal(at(2026, 10, 25, 2, 30)), at(2026, 10, 25, 0, 30));
  EXPECT_EQ(paris->utcOfLocal(at(2026, 10, 25, 3, 30)), at(2026, 10, 25, 2, 30));
  // Round trips away from the changes, either side of the epoch.
  for (std::int64_t u : {at(1950, 5, 1, 10, 0), at(1970, 1, 1, 0, 0), at(2030, 8, 9, 23, 59)})
    EXPECT_EQ(paris->utcOfLocal(u + paris->offsetAt(u)), u);
}

TEST(TimeZone, YearsAfterTheListedTransitionsFollowTheFilesRule) {
  // Debian's files list transitions up to 2037; later ones come from the footer's POSIX rule.
  auto paris = zone("Europe/Paris");  // CET-1CEST,M3.5.0,M10.5.0/3
  ASSERT_TRUE(paris);
  EXPECT_EQ(paris->offsetAt(at(2040, 1, 15, 12, 0)), 3600);
  // 2040: the last Sundays of March (25th) and October (28th), at 01:00 UTC.
  EXPECT_EQ(paris->offsetAt(at(2040, 3, 25, 0, 59)), 3600);
  EXPECT_EQ(paris->offsetAt(at(2040, 3, 25, 1, 0)), 7200);
  EXPECT_EQ(paris->offsetAt(at(2040, 10, 28, 0, 59)), 7200);
  EXPECT_EQ(paris->offsetAt(at(2040, 10, 28, 1, 0)), 3600);
  // 2199: the last Sunday of March is the month's last day.
  EXPECT_EQ(paris->offsetAt(at(2199, 3, 31, 0, 59)), 3600);
  EXPECT_EQ(paris->offsetAt(at(2199, 3, 31, 1, 0)), 7200);
  EXPECT_EQ(paris->utcOfLocal(at(2040, 3, 25, 2, 30)), at(2040, 3, 25, 1, 30));  // the gap
  EXPECT_EQ(paris->utcOfLocal(at(2040, 10, 28, 2, 30)), at(2040, 10, 28, 0, 30));  // the overlap
  // After kLastRuleYear the last offset (standard time after October 2200) holds.
  EXPECT_EQ(paris->offsetAt(at(2300, 7, 1, 0, 0)), 3600);
  // A southern zone, its summer across the new year: AEST-10AEDT,M10.1.0,M4.1.0/3.
  auto sydney = zone("Australia/Sydney");
  ASSERT_TRUE(sydney);
  EXPECT_EQ(sydney->offsetAt(at(2045, 1, 15, 0, 0)), 11 * 3600);
  EXPECT_EQ(sydney->offsetAt(at(2045, 4, 1, 15, 59)), 11 * 3600);  // 2045-04-02 03:00 AEDT
  EXPECT_EQ(sydney->offsetAt(at(2045, 4, 1, 16, 0)), 10 * 3600);
  EXPECT_EQ(sydney->offsetAt(at(2045, 9, 30, 15, 59)), 10 * 3600);  // 2045-10-01 02:00 AEST
  EXPECT_EQ(sydney->offsetAt(at(2045, 9, 30, 16, 0)), 11 * 3600);
  // No daylight saving any more ("<-03>3"): the offset.
  auto saoPaulo = zone("America/Sao_Paulo");
  ASSERT_TRUE(saoPaulo);
  EXPECT_EQ(saoPaulo->offsetAt(at(2050, 1, 1, 0, 0)), -3 * 3600);
}

TEST(TimeZone, FooterRulesAreReadAsPosixSaysAndBadOnesRefused) {
  std::ifstream in("/usr/share/zoneinfo/Europe/Paris", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t open = bytes.substr(0, bytes.size() - 1).rfind('\n');
  ASSERT_NE(open, std::string::npos);
  auto with = [&](const std::string& rule) { return TimeZone::fromTzif("x", bytes.substr(0, open + 1) + rule + "\n"); };
  // A DST name without a rule: the US rule (second Sunday of March, first of November, 02:00).
  auto us = with("EST5EDT");
  ASSERT_TRUE(us.isOk()) << us.status().toString();
  EXPECT_EQ((*us)->offsetAt(at(2050, 7, 1, 0, 0)), -4 * 3600);
  EXPECT_EQ((*us)->offsetAt(at(2050, 1, 1, 0, 0)), -5 * 3600);
  EXPECT_EQ((*us)->offsetAt(at(2050, 3, 13, 6, 59)), -5 * 3600);  // 2050-03-13 02:00 EST
  EXPECT_EQ((*us)->offsetAt(at(2050, 3, 13, 7, 0)), -4 * 3600);
  // Julian days (J60 is March 1st, also in leap years), zero-based days, times past 24 hours,
  // quoted names and offsets with minutes.
  auto julian = with("<+0330>-3:30<+0430>,J60/0,300/25");
  ASSERT_TRUE(julian.isOk()) << julian.status().toString();
  EXPECT_EQ((*julian)->offsetAt(at(2048, 2, 29, 12, 0)), 3 * 3600 + 1800);
  EXPECT_EQ((*julian)->offsetAt(at(2048, 3, 1, 12, 0)), 4 * 3600 + 1800);
  // Day 300 of 2048 (a leap year) is October 27th; 25:00 local is the 28th 01:00, 20:30 UTC on the 27th.
  EXPECT_EQ((*julian)->offsetAt(at(2048, 10, 27, 20, 29)), 4 * 3600 + 1800);
  EXPECT_EQ((*julian)->offsetAt(at(2048, 10, 27, 20, 30)), 3 * 3600 + 1800);
  // Daylight saving all year (RFC 8536's example): the change back and the next one meet.
  auto always = with("EST5EDT,0/0,J365/25");
  ASSERT_TRUE(always.isOk()) << always.status().toString();
  for (int month = 1; month <= 12; ++month) EXPECT_EQ((*always)->offsetAt(at(2060, month, 1, 0, 0)), -4 * 3600);
  for (const char* bad : {"CET", "C-1", "CET-1CEST,M13.1.0,M10.5.0", "CET-1CEST,M3.6.0,M10.5.0",
                          "CET-1CEST,M3.5.7,M10.5.0", "CET-1CEST,M3.5.0", "CET-99", "CET-1CEST,M3.5.0/168,M10.5.0",
                          "<+03", "<+03>", "CET-1CEST,J0,J365", "CET-1CEST,366,1", "CET-1:60", "CET-1CEST,M3.5.0,M10.5.0x",
                          "CET-1CEST-26,M3.5.0,M10.5.0"}) {
    auto z = with(bad);
    EXPECT_FALSE(z.isOk()) << bad;
    if (!z.isOk()) {
      EXPECT_THAT(z.status().message(), HasSubstr("not a valid zone file")) << bad;
    }
  }
  // A footer that does not end.
  EXPECT_FALSE(TimeZone::fromTzif("x", bytes.substr(0, open + 1) + "CET-1CEST,M3.5.0,M10.5.0/3").isOk());
}

TEST(TimeZone, UtcAndFixedOffsets) {
  for (const char* n : {"UTC", "Etc/UTC", "Z", "GMT"}) {
    auto z = zone(n);
    ASSERT_TRUE(z);
    EXPECT_TRUE(z->isUtc()) << n;
    EXPECT_EQ(z->utcOfLocal(12345), 12345);
  }
  EXPECT_EQ(zone("+05:30")->offsetAt(0), 5 * 3600 + 1800);
  EXPECT_EQ(zone("-0800")->utcOfLocal(0), 8 * 3600);
  EXPECT_FALSE(zone("Europe/Paris")->isUtc());
}

TEST(TimeZone, NamesAndFilesThatAreNotZonesAreRefused) {
  for (const char* n : {"", "../../etc/passwd", "/etc/localtime", "Europe/../../etc/passwd", "Nowhere/Atlantis",
                        "Europe/Paris\n", "+25:00", "+1", "-12:60", "Europe"}) {
    auto z = TimeZone::load(n);
    EXPECT_FALSE(z.isOk()) << "'" << n << "'";
    if (!z.isOk()) {
      EXPECT_EQ(z.status().code(), StatusCode::kInvalidArgument) << n;
    }
  }
  // A real file cut anywhere before its footer's end, and bytes that are not one: refused, never
  // read past the end.
  std::ifstream in("/usr/share/zoneinfo/Europe/Paris", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 100u);
  ASSERT_TRUE(TimeZone::fromTzif("Europe/Paris", bytes).isOk());
  const std::size_t footer = bytes.size() - bytes.substr(0, bytes.size() - 1).rfind('\n');
  for (std::size_t cut = 0; cut + footer < bytes.size(); cut += 7)
    EXPECT_FALSE(TimeZone::fromTzif("x", bytes.substr(0, cut)).isOk()) << cut;
  std::string huge = bytes;
  huge[32] = '\x7f';  // a transition count of about 2 billion
  EXPECT_FALSE(TimeZone::fromTzif("x", huge).isOk());
  EXPECT_THAT(TimeZone::fromTzif("x", "TZif1 not really").status().message(), HasSubstr("not a valid zone file"));
}

}  // namespace
}  // namespace ferry::core
