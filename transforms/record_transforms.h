// Transforms on a record's topic and headers: RegexRouter, TimestampRouter, InsertHeader,
// DropHeaders, and Filter (drops every record it sees; the runtime applies it only where its
// predicate says so).
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "ferry/transform.h"

namespace ferry::transforms {

// regex, replacement: a topic the regex matches whole becomes the replacement ($1.. = groups).
class RegexRouter final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  std::regex regex_;
  std::string replacement_;
};

// topic.format (${topic}, ${timestamp}), timestamp.format (Java SimpleDateFormat letters
// y M d H m s S, 'quoted' text; UTC). A record without a timestamp uses the current time.
class TimestampRouter final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

  // A compiled timestamp pattern: literal text and (letter, count) fields.
  struct Token {
    char letter = 0;  // 0 = literal
    int count = 0;
    std::string text;
  };
  static Result<std::vector<Token>> compile(const std::string& pattern);
  static std::string format(const std::vector<Token>& tokens, std::int64_t epochMs);

 private:
  std::string topicFormat_;
  std::vector<Token> tokens_;
};

// header, value.literal: adds a header with a fixed value.
class InsertHeader final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  std::string header_;
  Bytes value_;
};

// headers: removes every header with one of these names.
class DropHeaders final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  std::vector<std::string> headers_;
};

class Filter final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;
};

}  // namespace ferry::transforms
