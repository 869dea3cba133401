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
  // A real file cut anywhere before its footer (the POSIX rule text, not read), and bytes that are
  // not one: refused, never read past the end.
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
