// RecordTemplate: text with placeholders filled from a record, for the names a sink derives from
// what it writes (a Redis key, an HTTP URL, a CloudEvent's id or subject).
//
//   ${topic}            the record's topic
//   ${key}              the key's bytes as text
//   ${value}            the value's bytes as text
//   ${value:<path>}     a field of the JSON value: a.b[0].c (a leading "$." is allowed); a string
//                       as its text, other scalars as JSON writes them, objects/arrays as JSON
//   ${queue} ${offset}  the backbone queue and offset (sink side; -1 when not known)
//   ${timestamp}        the record's timestamp, epoch milliseconds
//   ${header:<name>}    the last header of that name
//   $${                 a literal "${"
//
// A placeholder whose part is missing (no key, no such header, no such field, a value that is not
// JSON) makes render() fail with InvalidArgument naming it, unless the template was parsed with
// `missingAsEmpty`, when it renders as "". A template without placeholders renders as its text.
//
// Thread-safety: immutable after parse(); render() may be called from several threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::core {

class RecordTemplate {
 public:
  struct Options {
    bool missingAsEmpty = false;
  };
  // InvalidArgument naming an unknown placeholder, an unclosed "${" or a bad JSON path.
  static Result<RecordTemplate> parse(std::string_view text, Options options);
  static Result<RecordTemplate> parse(std::string_view text) { return parse(text, Options{}); }

  Result<std::string> render(const Record& record) const;
  // Appends to `out` (nothing is appended on error).
  Status renderTo(const Record& record, std::string& out) const;

  const std::string& text() const noexcept { return text_; }
  bool constant() const noexcept { return constant_; }
  // Whether the template reads the value (${value} or ${value:...}): callers that must parse the
  // value once for many templates can tell.
  bool readsValue() const noexcept { return readsValue_; }

 private:
  struct Step {
    std::string name;
    bool isIndex = false;
    std::size_t index = 0;
  };
  struct Part {
    enum class Kind { kText, kTopic, kKey, kValue, kValuePath, kQueue, kOffset, kTimestamp, kHeader };
    Kind kind = Kind::kText;
    std::string text;         // kText: literal; kHeader: the header name; kValuePath: the path
    std::vector<Step> steps;  // kValuePath
  };
  std::string text_;
  std::vector<Part> parts_;
  bool constant_ = true;
  bool readsValue_ = false;
  bool missingAsEmpty_ = false;
};

}  // namespace ferry::core
