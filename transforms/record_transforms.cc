// Topic and header transforms (see record_transforms.h).
#include "transforms/record_transforms.h"

#include <ctime>

#include "core/clock.h"
#include "transforms/json_util.h"

namespace ferry::transforms {
namespace {

const char* const kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                               "July",    "August",   "September", "October", "November", "December"};

void appendPadded(std::string& out, long long v, int width) {
  std::string digits = std::to_string(v);
  if (static_cast<int>(digits.size()) < width) out.append(width - digits.size(), '0');
  out += digits;
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// RegexRouter

const ConfigDef& RegexRouter::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("regex", ConfigType::kString, std::nullopt, Importance::kHigh,
             "Regular expression (ECMAScript) matched against the whole topic name.",
             regexValidator());
    d.define("replacement", ConfigType::kString, std::nullopt, Importance::kHigh,
             "The new topic name; $1, $2, ... insert the regex's groups.");
    return d;
  }();
  return def;
}

Status RegexRouter::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "RegexRouter"));
  try {
    regex_ = std::regex(p.getString("regex"));
  } catch (const std::regex_error& e) {
    return Status::invalidArgument("RegexRouter: regex is not a valid regular expression: " +
                                   std::string(e.what()));
  }
  replacement_ = p.getString("replacement");
  return Status::ok();
}

Result<bool> RegexRouter::apply(Record& record) {
  try {
    std::smatch m;
    if (std::regex_match(record.topic, m, regex_)) record.topic = m.format(replacement_);
  } catch (const std::regex_error& e) {  // e.g. error_complexity on a pathological topic
    return Status::invalidArgument("RegexRouter: matching topic '" + record.topic + "' failed: " +
                                   e.what());
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// TimestampRouter

const ConfigDef& TimestampRouter::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("topic.format", ConfigType::kString, "${topic}-${timestamp}", Importance::kHigh,
             "The new topic: ${topic} is the old topic, ${timestamp} the formatted timestamp.");
    d.define("timestamp.format", ConfigType::kString, "yyyyMMdd", Importance::kHigh,
             "Java SimpleDateFormat pattern for ${timestamp}, in UTC (letters y M d H m s S; "
             "'quoted' text is literal).",
             [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
               const auto* s = std::get_if<std::string>(&v);
               if (!s) return name + ": must be a string";
               auto c = TimestampRouter::compile(*s);
               if (!c.isOk()) return "Invalid value " + *s + " for configuration " + name + ": " +
                                     c.status().message();
               return std::nullopt;
             });
    return d;
  }();
  return def;
}

Result<std::vector<TimestampRouter::Token>> TimestampRouter::compile(const std::string& pattern) {
  std::vector<Token> out;
  auto literal = [&](char c) {
    if (out.empty() || out.back().letter != 0) out.push_back(Token{});
    out.back().text.push_back(c);
  };
  for (std::size_t i = 0; i < pattern.size();) {
    const char c = pattern[i];
    if (c == '\'') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '\'') {  // '' is a quote
        literal('\'');
        i += 2;
        continue;
      }
      // Quoted text up to the closing quote; '' inside it is a quote too.
      std::size_t k = i + 1;
      while (true) {
        if (k >= pattern.size()) return Status::invalidArgument("unterminated quote");
        if (pattern[k] == '\'') {
          if (k + 1 < pattern.size() && pattern[k + 1] == '\'') {
            literal('\'');
            k += 2;
            continue;
          }
          break;
        }
        literal(pattern[k++]);
      }
      i = k + 1;
      continue;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      if (std::string_view("yMdHmsS").find(c) == std::string_view::npos)
        return Status::invalidArgument(std::string("pattern letter '") + c +
                                       "' is not supported (use y M d H m s S)");
      std::size_t j = i;
      while (j < pattern.size() && pattern[j] == c) ++j;
      out.push_back(Token{c, static_cast<int>(j - i), {}});
      i = j;
      continue;
    }
    literal(c);
    ++i;
  }
  return out;
}

std::string TimestampRouter::format(const std::vector<Token>& tokens, std::int64_t epochMs) {
  std::int64_t secs = epochMs / 1000;
  std::int64_t ms = epochMs % 1000;
  if (ms < 0) {
    ms += 1000;
    --secs;
  }
  const std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::string out;
  for (const Token& tok : tokens) {
    switch (tok.letter) {
      case 0: out += tok.text; break;
      case 'y':
        if (tok.count == 2) appendPadded(out, (tm.tm_year + 1900) % 100, 2);
        else appendPadded(out, tm.tm_year + 1900, tok.count);
        break;
      case 'M':
        if (tok.count >= 4) out += kMonths[tm.tm_mon];
        else if (tok.count == 3) out += std::string(kMonths[tm.tm_mon], 3);
        else appendPadded(out, tm.tm_mon + 1, tok.count);
        break;
      case 'd': appendPadded(out, tm.tm_mday, tok.count); break;
      case 'H': appendPadded(out, tm.tm_hour, tok.count); break;
      case 'm': appendPadded(out, tm.tm_min, tok.count); break;
      case 's': appendPadded(out, tm.tm_sec, tok.count); break;
      case 'S': appendPadded(out, ms, tok.count); break;
      default: break;
    }
  }
  return out;
}

Status TimestampRouter::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "TimestampRouter"));
  topicFormat_ = p.getString("topic.format");
  FERRY_ASSIGN_OR_RETURN(tokens_, compile(p.getString("timestamp.format")));
  return Status::ok();
}

Result<bool> TimestampRouter::apply(Record& record) {
  const std::int64_t ts = record.timestampMs > 0 ? record.timestampMs : core::nowMs();
  std::string topic = topicFormat_;
  replaceAll(topic, "${timestamp}", format(tokens_, ts));
  replaceAll(topic, "${topic}", record.topic);
  record.topic = std::move(topic);
  return true;
}

// ---------------------------------------------------------------------------------------------
// InsertHeader, DropHeaders, Filter

const ConfigDef& InsertHeader::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("header", ConfigType::kString, std::nullopt, Importance::kHigh,
             "The name of the header to add.", validators::nonEmptyString());
    d.define("value.literal", ConfigType::kString, std::nullopt, Importance::kHigh,
             "The header's value (text).");
    return d;
  }();
  return def;
}

Status InsertHeader::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "InsertHeader"));
  header_ = p.getString("header");
  value_ = Bytes(p.getString("value.literal"));
  return Status::ok();
}

Result<bool> InsertHeader::apply(Record& record) {
  record.headers.add(header_, value_);
  return true;
}

const ConfigDef& DropHeaders::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("headers", ConfigType::kList, std::nullopt, Importance::kHigh,
             "Names of the headers to remove.", validators::nonEmptyList());
    return d;
  }();
  return def;
}

Status DropHeaders::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "DropHeaders"));
  headers_ = p.getList("headers");
  return Status::ok();
}

Result<bool> DropHeaders::apply(Record& record) {
  for (const auto& h : headers_) record.headers.remove(h);
  return true;
}

const ConfigDef& Filter::definition() {
  static const ConfigDef def;
  return def;
}

Status Filter::configure(const StringMap& config) {
  (void)config;
  return Status::ok();
}

Result<bool> Filter::apply(Record& record) {
  (void)record;
  return false;
}

}  // namespace ferry::transforms
