#pragma once
// The rule language's syntax tree (see transforms/rules/README.md):
//   SELECT <expr> [AS name], ... FROM "<topic filter>"[, ...] [WHERE <cond>]
//   FOREACH <expr> [AS name] [DO <expr> [AS name], ...] [INCASE <cond>] FROM ... [WHERE <cond>]
// Every node keeps the line and column (1-based) where it starts, for error messages.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ferry::transforms::rules {

enum class NodeKind {
  kNull,
  kBool,
  kNumber,   // number: integral when `integral`
  kString,
  kName,     // a bare name: payload, topic, clientid, ... or an alias of FOREACH
  kField,    // kids[0].name
  kIndex,    // kids[0][kids[1]]
  kCall,     // name(kids...)
  kUnary,    // op kids[0]: "-" or "not"
  kBinary,   // kids[0] op kids[1]: + - * / % = != < <= > >= and or
  kCase,     // CASE [subject] WHEN.. THEN.. [ELSE ..] END: kids = [subject?] (when, then)* [else?]
};

struct Node {
  NodeKind kind = NodeKind::kNull;
  std::string text;        // name, string value, operator, function name
  double number = 0;
  std::int64_t integer = 0;
  bool integral = false;
  bool boolean = false;
  bool hasSubject = false;  // kCase
  bool hasElse = false;     // kCase
  int line = 1;
  int column = 1;
  std::vector<std::unique_ptr<Node>> kids;
  // Set by compilation (rule_eval.cc), so evaluation looks nothing up by name: kName's index in
  // the list of names (the FOREACH alias after them), kCall's function.
  int nameId = -1;
  const void* function = nullptr;
};

struct SelectItem {
  std::unique_ptr<Node> expr;  // null for '*'
  std::string alias;           // AS name, or derived from the expression (payload.a.b -> "b")
};

struct Rule {
  bool foreach = false;
  std::vector<SelectItem> select;  // SELECT list, or FOREACH's DO list (empty: the element itself)
  std::unique_ptr<Node> foreachExpr;
  std::string foreachAlias = "item";
  std::unique_ptr<Node> incase;     // FOREACH ... INCASE
  std::vector<std::string> from;    // topic filters (MQTT wildcards + and #)
  std::unique_ptr<Node> where;
};

}  // namespace ferry::transforms::rules
