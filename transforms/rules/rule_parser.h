#pragma once
// Parses rule text into a Rule. Errors name the line and column (1-based) of the offending token:
//   "line 2, column 14: expected FROM, found 'WHER'"
// Keywords are case-insensitive; strings are '...' or "..." with \-escapes; names may be quoted
// with backquotes (`a b`). Comments: -- to the end of the line.
#include <string_view>

#include "ferry/result.h"
#include "transforms/mqtt_topic.h"
#include "transforms/rules/rule_ast.h"

namespace ferry::transforms::rules {

Result<Rule> parseRule(std::string_view text);

using transforms::topicMatches;  // transforms/mqtt_topic.h

}  // namespace ferry::transforms::rules
