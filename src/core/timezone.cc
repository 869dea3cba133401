// Zone files (timezone.h).
#include "core/timezone.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "core/civil_date.h"

namespace ferry::core {
namespace {

std::uint32_t be32(std::string_view b, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 3]));
}

std::int64_t be64(std::string_view b, std::size_t at) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(be32(b, at)) << 32) | be32(b, at + 4));
}

struct Header {
  std::uint32_t isut, isstd, leap, time, type, chars;
  char version;
};

bool header(std::string_view b, std::size_t at, Header& h) {
  if (b.size() < at + 44 || b.substr(at, 4) != "TZif") return false;
  h.version = b[at + 4];
  h.isut = be32(b, at + 20);
  h.isstd = be32(b, at + 24);
  h.leap = be32(b, at + 28);
  h.time = be32(b, at + 32);
  h.type = be32(b, at + 36);
  h.chars = be32(b, at + 40);
  // RFC 8536's limits keep the sizes below from overflowing.
  return h.type >= 1 && h.type <= 256 && h.time <= 1000000 && h.leap <= 100000 && h.chars <= 100000 &&
         (h.isut == 0 || h.isut == h.type) && (h.isstd == 0 || h.isstd == h.type);
}

std::size_t blockSize(const Header& h, std::size_t timeBytes) {
  return h.time * timeBytes + h.time + h.type * 6 + h.chars + h.leap * (timeBytes + 4) + h.isstd + h.isut;
}

Result<std::int32_t> fixedOffset(std::string_view s) {
  // "+HH:MM" or "-HH:MM" (also "+HHMM", "+HH").
  auto bad = [&] { return Status::invalidArgument("time zone '" + std::string(s) + "' is not a valid offset"); };
  if (s.size() < 3 || (s[0] != '+' && s[0] != '-')) return bad();
  std::string digits;
  for (char c : s.substr(1))
    if (c != ':') digits.push_back(c);
  if ((digits.size() != 2 && digits.size() != 4) ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return bad();
  const int hh = (digits[0] - '0') * 10 + (digits[1] - '0');
  const int mm = digits.size() == 4 ? (digits[2] - '0') * 10 + (digits[3] - '0') : 0;
  if (hh > 18 || mm > 59) return bad();
  const std::int32_t off = hh * 3600 + mm * 60;
  return s[0] == '-' ? -off : off;
}

// The POSIX TZ string of a TZif footer (RFC 8536 3.3, POSIX TZ with its extensions):
// "STD offset [DST [offset] [,start[/time],end[/time]]]". Offsets count west of UTC there; kept
// here east of UTC, as the file's types are.
struct PosixTz {
  struct Date {
    char kind = 'M';  // 'J': Julian day 1..365 without Feb 29; 'N': day 0..365; 'M': month.week.day
    int n = 0, month = 0, week = 0, weekday = 0;
    std::int32_t time = 7200;  // local seconds after midnight (-167..167 hours)
  };
  std::int32_t stdOff = 0, dstOff = 0;
  bool dst = false;
  Date start, end;
};

class PosixParser {
 public:
  explicit PosixParser(std::string_view s) : s_(s) {}
  bool parse(PosixTz& tz) {
    std::int32_t west = 0;
    if (!name() || !offset(west, 24)) return false;
    tz.stdOff = -west;
    if (done()) return true;
    tz.dst = true;
    if (!name()) return false;
    tz.dstOff = tz.stdOff + 3600;
    if (!done() && peek() != ',') {
      if (!offset(west, 24)) return false;
      tz.dstOff = -west;
    }
    if (done()) {  // no rule given: POSIX leaves it to the implementation; the US rule, as glibc
      tz.start = {'M', 0, 3, 2, 0, 7200};
      tz.end = {'M', 0, 11, 1, 0, 7200};
      return true;
    }
    return eat(',') && date(tz.start) && eat(',') && date(tz.end) && done();
  }

 private:
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  static bool alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  bool name() {
    const std::size_t from = i_;
    if (eat('<')) {
      while (!done() && (alpha(peek()) || digit(peek()) || peek() == '+' || peek() == '-')) ++i_;
      return i_ - from >= 4 && eat('>');
    }
    while (alpha(peek())) ++i_;
    return i_ - from >= 3;
  }
  bool number(int& out, int max) {
    if (!digit(peek())) return false;
    out = 0;
    while (digit(peek())) {
      out = out * 10 + (s_[i_++] - '0');
      if (out > max) return false;
    }
    return true;
  }
  // [+|-]hh[:mm[:ss]], hours at most `maxHours`.
  bool offset(std::int32_t& out, int maxHours) {
    const bool negative = eat('-');
    if (!negative) eat('+');
    int h = 0, m = 0, sec = 0;
    if (!number(h, maxHours)) return false;
    if (eat(':')) {
      if (!number(m, 59)) return false;
      if (eat(':') && !number(sec, 59)) return false;
    }
    out = (h * 3600 + m * 60 + sec) * (negative ? -1 : 1);
    return true;
  }
  bool date(PosixTz::Date& d) {
    if (eat('J')) {
      d.kind = 'J';
      if (!number(d.n, 365) || d.n < 1) return false;
    } else if (eat('M')) {
      d.kind = 'M';
      if (!number(d.month, 12) || d.month < 1 || !eat('.') || !number(d.week, 5) || d.week < 1 || !eat('.') ||
          !number(d.weekday, 6))
        return false;
    } else {
      d.kind = 'N';
      if (!number(d.n, 365)) return false;
    }
    d.time = 7200;
    if (eat('/') && !offset(d.time, 167)) return false;
    return true;
  }
  std::string_view s_;
  std::size_t i_ = 0;
};

// Local seconds (the zone's wall clock as if it were UTC) of a rule date in `year`.
std::int64_t localSecondsOf(const PosixTz::Date& d, std::int64_t year) {
  std::int64_t day = 0;
  if (d.kind == 'J') {
    day = daysFromCivil(year, 1, 1) + d.n - 1 + (leapYear(year) && d.n >= 60 ? 1 : 0);
  } else if (d.kind == 'N') {
    day = daysFromCivil(year, 1, 1) + d.n;
  } else {
    static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const std::int64_t first = daysFromCivil(year, d.month, 1);
    const int weekdayOfFirst = static_cast<int>(((first % 7) + 7 + 4) % 7);  // 1970-01-01 was a Thursday
    const int length = kDays[d.month - 1] + (d.month == 2 && leapYear(year) ? 1 : 0);
    int dom = 1 + (d.weekday - weekdayOfFirst + 7) % 7 + 7 * (d.week - 1);
    while (dom > length) dom -= 7;  // week 5: the last such day of the month
    day = first + dom - 1;
  }
  return day * 86400 + d.time;
}

// The year (proleptic Gregorian) of a UTC instant.
std::int64_t yearOf(std::int64_t seconds) { return yearOfDays(seconds / 86400 - (seconds % 86400 < 0 ? 1 : 0)); }

}  // namespace

Result<std::shared_ptr<const TimeZone>> TimeZone::fromTzif(std::string name, std::string_view b) {
  auto bad = [&](const std::string& why) {
    return Status::invalidArgument("time zone '" + name + "': not a valid zone file (" + why + ")");
  };
  Header h1{};
  if (!header(b, 0, h1)) return bad("no TZif header");
  if (h1.version < '2') return bad("version 1 files are not read");
  const std::size_t second = 44 + blockSize(h1, 4);
  Header h{};
  if (second > b.size() || !header(b, second, h)) return bad("no 64-bit part");
  std::size_t at = second + 44;
  if (b.size() < at + blockSize(h, 8)) return bad("truncated");
  std::shared_ptr<TimeZone> z(new TimeZone());
  z->name_ = std::move(name);
  std::vector<std::int64_t> times(h.time);
  for (std::uint32_t i = 0; i < h.time; ++i, at += 8) times[i] = be64(b, at);
  std::vector<std::uint8_t> index(h.time);
  for (std::uint32_t i = 0; i < h.time; ++i, ++at) index[i] = static_cast<std::uint8_t>(b[at]);
  std::vector<std::int32_t> utoff(h.type);
  for (std::uint32_t i = 0; i < h.type; ++i, at += 6) {
    utoff[i] = static_cast<std::int32_t>(be32(b, at));
    if (utoff[i] < -25 * 3600 || utoff[i] > 26 * 3600) return bad("an offset beyond a day");
  }
  for (std::uint32_t i = 0; i < h.time; ++i) {
    if (index[i] >= h.type) return bad("a transition to a type that does not exist");
    if (i > 0 && times[i] <= times[i - 1]) return bad("transitions out of order");
  }
  // Before the first transition: the first type (RFC 8536 3.2).
  z->offsets_.push_back(utoff[0]);
  z->transitions_ = std::move(times);
  z->after_.reserve(h.time);
  for (std::uint32_t i = 0; i < h.time; ++i) z->after_.push_back(utoff[index[i]]);
  // The footer's rule for the years after the last transition (RFC 8536 3.3): its transitions
  // through kLastRuleYear are added to the table; a footer that does not parse is refused.
  at = second + 44 + blockSize(h, 8);
  if (at < b.size() && b[at] == '\n') {
    const std::size_t close = b.find('\n', at + 1);
    if (close == std::string_view::npos || close - at - 1 > 255) return bad("a footer without its end");
    const std::string_view footer = b.substr(at + 1, close - at - 1);
    PosixTz tz;
    if (!footer.empty() && !PosixParser(footer).parse(tz)) return bad("a footer rule that does not parse");
    if (tz.dst) {
      if (tz.stdOff < -25 * 3600 || tz.stdOff > 26 * 3600 || tz.dstOff < -25 * 3600 || tz.dstOff > 26 * 3600)
        return bad("an offset beyond a day");
      const std::int64_t from = z->transitions_.empty() ? 1970 : yearOf(z->transitions_.back());
      for (std::int64_t y = from; y <= kLastRuleYear; ++y) {
        std::pair<std::int64_t, std::int32_t> change[2] = {
            {localSecondsOf(tz.start, y) - tz.stdOff, tz.dstOff},  // into DST, from standard time
            {localSecondsOf(tz.end, y) - tz.dstOff, tz.stdOff}};   // back, from DST
        if (change[1].first < change[0].first) std::swap(change[0], change[1]);  // southern zones
        for (const auto& [t, off] : change) {
          if (!z->transitions_.empty() && t < z->transitions_.back()) continue;
          if (!z->transitions_.empty() && t == z->transitions_.back()) {
            z->after_.back() = off;  // DST all year: the change back and the next one meet
            continue;
          }
          z->transitions_.push_back(t);
          z->after_.push_back(off);
        }
      }
    }
  }
  return std::shared_ptr<const TimeZone>(std::move(z));
}

Result<std::shared_ptr<const TimeZone>> TimeZone::load(std::string_view name) {
  if (name == "UTC" || name == "Z" || name == "GMT" || name == "Etc/UTC" || name == "UCT" || name == "Etc/GMT") {
    std::shared_ptr<TimeZone> z(new TimeZone());
    z->name_ = std::string(name);
    z->offsets_ = {0};
    return std::shared_ptr<const TimeZone>(std::move(z));
  }
  if (!name.empty() && (name[0] == '+' || name[0] == '-')) {
    FERRY_ASSIGN_OR_RETURN(auto off, fixedOffset(name));
    std::shared_ptr<TimeZone> z(new TimeZone());
    z->name_ = std::string(name);
    z->offsets_ = {off};
    return std::shared_ptr<const TimeZone>(std::move(z));
  }
  const std::string n(name);
  const bool plain = !n.empty() && n.size() <= 128 && n[0] != '/' && n.find("..") == std::string::npos &&
                     std::all_of(n.begin(), n.end(), [](char c) {
                       return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                              c == '_' || c == '-' || c == '+' || c == '/';
                     });
  if (!plain)
    return Status::invalidArgument("time zone '" + n.substr(0, 128) +
                                   "' is not a zone name (such as Europe/Paris), UTC or an offset such as +02:00");
  const char* dir = std::getenv("TZDIR");
  const std::string path = std::string(dir && *dir ? dir : "/usr/share/zoneinfo") + "/" + n;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::invalidArgument("time zone '" + n + "' is not known (no " + path + ")");
  std::string bytes;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    bytes.append(buf, static_cast<std::size_t>(in.gcount()));
    if (bytes.size() > (1u << 20)) return Status::invalidArgument("time zone '" + n + "': " + path + " is too large");
  }
  return fromTzif(n, bytes);
}

std::int32_t TimeZone::offsetAt(std::int64_t utc) const {
  auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc);
  if (it == transitions_.begin()) return offsets_[0];
  return after_[static_cast<std::size_t>(std::distance(transitions_.begin(), it) - 1)];
}

std::int64_t TimeZone::utcOfLocal(std::int64_t local) const {
  // An instant u fits when u + offsetAt(u) == local. The candidates are the offsets of the
  // transitions near this wall-clock time (offsets stay within a day, so within 26 hours); the
  // earliest fitting instant wins (an overlap's first).
  constexpr std::int64_t kNear = 26 * 3600;
  auto lo = std::lower_bound(transitions_.begin(), transitions_.end(), local - kNear);
  auto hi = std::upper_bound(transitions_.begin(), transitions_.end(), local + kNear);
  std::vector<std::int32_t> offs{offsetAt(local - kNear)};
  for (auto it = lo; it != hi; ++it) offs.push_back(after_[static_cast<std::size_t>(it - transitions_.begin())]);
  std::int64_t best = 0;
  bool found = false;
  for (std::int32_t off : offs) {
    const std::int64_t u = local - off;
    if (offsetAt(u) == off && (!found || u < best)) {
      best = u;
      found = true;
    }
  }
  if (found) return best;
  // A gap: the clock jumped over `local` at some transition T (local lies in [T + before,
  // T + after)). Read with the offset before the jump, it lands after T: the time moved forward
  // by the jump's length.
  for (auto it = lo; it != hi; ++it) {
    const std::size_t i = static_cast<std::size_t>(it - transitions_.begin());
    const std::int32_t before = i == 0 ? offsets_[0] : after_[i - 1];
    const std::int32_t after = after_[i];
    if (after > before && local >= *it + before && local < *it + after) return local - before;
  }
  return local - offsetAt(local);  // not reached for a well-formed zone
}

}  // namespace ferry::core
