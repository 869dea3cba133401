// The rule language's lexer and recursive-descent parser (see rule_parser.h).
#include "transforms/rules/rule_parser.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace ferry::transforms::rules {
namespace {

enum class Tok { kEnd, kName, kKeyword, kNumber, kString, kQuotedName, kSymbol };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // keywords upper-cased; symbols as written ("<=", "!=", ...)
  int line = 1;
  int column = 1;
};

const char* const kKeywords[] = {"SELECT", "FROM", "WHERE", "AS",   "AND",  "OR",     "NOT",  "CASE",
                                 "WHEN",   "THEN", "ELSE",  "END",  "TRUE", "FALSE",  "NULL", "FOREACH",
                                 "DO",     "INCASE", "DIV", "MOD"};

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Status errorAt(int line, int column, const std::string& what) {
  return Status::invalidArgument("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
}

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Result<std::vector<Token>> run() {
    std::vector<Token> out;
    for (;;) {
      skipSpace();
      Token t;
      t.line = line_;
      t.column = col_;
      if (i_ >= s_.size()) {
        out.push_back(t);
        return out;
      }
      const char c = s_[i_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::string word;
        while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) word += take();
        const std::string up = upper(word);
        bool kw = false;
        for (const char* k : kKeywords) kw = kw || up == k;
        t.kind = kw ? Tok::kKeyword : Tok::kName;
        t.text = kw ? up : word;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        std::string num;
        while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) num += take();
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
          num += take();
          if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) num += take();
          while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) num += take();
        }
        if (i_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
          return errorAt(t.line, t.column, "malformed number '" + num + s_[i_] + "'");
        t.kind = Tok::kNumber;
        t.text = num;
      } else if (c == '\'' || c == '"' || c == '`') {
        const char q = take();
        std::string v;
        for (;;) {
          if (i_ >= s_.size()) return errorAt(t.line, t.column, "unterminated string");
          char ch = take();
          if (ch == q) break;
          if (ch == '\\') {
            if (i_ >= s_.size()) return errorAt(t.line, t.column, "unterminated string");
            const char e = take();
            switch (e) {
              case 'n': ch = '\n'; break;
              case 't': ch = '\t'; break;
              case 'r': ch = '\r'; break;
              case '\\': case '\'': case '"': case '`': ch = e; break;
              default: return errorAt(line_, col_ - 2, std::string("unknown escape \\") + e);
            }
          }
          v += ch;
        }
        t.kind = q == '`' ? Tok::kQuotedName : Tok::kString;
        t.text = v;
      } else {
        static const char* const two[] = {"<=", ">=", "!=", "<>"};
        std::string sym(1, c);
        for (const char* p : two)
          if (s_.substr(i_, 2) == p) sym = p;
        if (sym.size() == 1 && std::string_view("+-*/%=<>(),.[]").find(c) == std::string_view::npos)
          return errorAt(t.line, t.column, std::string("unexpected character '") + c + "'");
        for (std::size_t k = 0; k < sym.size(); ++k) take();
        t.kind = Tok::kSymbol;
        t.text = sym == "<>" ? "!=" : sym;
      }
      out.push_back(std::move(t));
    }
  }

 private:
  char take() {
    const char c = s_[i_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  void skipSpace() {
    for (;;) {
      while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) take();
      if (s_.substr(i_, 2) == "--") {
        while (i_ < s_.size() && s_[i_] != '\n') take();
        continue;
      }
      return;
    }
  }
  std::string_view s_;
  std::size_t i_ = 0;
  int line_ = 1;
  int col_ = 1;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> t) : t_(std::move(t)) {}

  Result<Rule> rule() {
    Rule r;
    if (isKw("SELECT")) {
      next();
      FERRY_RETURN_IF_ERROR(selectList(r.select));
    } else if (isKw("FOREACH")) {
      next();
      r.foreach = true;
      FERRY_ASSIGN_OR_RETURN(r.foreachExpr, expr());
      if (isKw("AS")) {
        next();
        FERRY_ASSIGN_OR_RETURN(r.foreachAlias, name());
      }
      if (isKw("DO")) {
        next();
        FERRY_RETURN_IF_ERROR(selectList(r.select));
      }
      if (isKw("INCASE")) {
        next();
        FERRY_ASSIGN_OR_RETURN(r.incase, expr());
      }
    } else {
      return expected("SELECT or FOREACH");
    }
    if (!isKw("FROM")) return expected("FROM");
    next();
    for (;;) {
      if (peek().kind != Tok::kString) return expected("a topic filter in quotes");
      const Token f = next();
      if (Status s = checkFilter(f); !s.isOk()) return s;
      r.from.push_back(f.text);
      if (!isSym(",")) break;
      next();
    }
    if (isKw("WHERE")) {
      next();
      FERRY_ASSIGN_OR_RETURN(r.where, expr());
    }
    if (peek().kind != Tok::kEnd) return expected("the end of the rule");
    return r;
  }

 private:
  using NodeP = std::unique_ptr<Node>;

  const Token& peek() const { return t_[p_]; }
  Token next() { return t_[p_ < t_.size() - 1 ? p_++ : p_]; }
  bool isKw(const char* k) const { return peek().kind == Tok::kKeyword && peek().text == k; }
  bool isSym(const char* s) const { return peek().kind == Tok::kSymbol && peek().text == s; }
  Status expected(const std::string& what) const {
    const Token& t = peek();
    const std::string found = t.kind == Tok::kEnd ? "the end of the rule"
                              : t.kind == Tok::kString ? "'" + t.text + "' (a string)"
                                                       : "'" + t.text + "'";
    return errorAt(t.line, t.column, "expected " + what + ", found " + found);
  }
  static Status checkFilter(const Token& f) {
    if (f.text.empty()) return errorAt(f.line, f.column, "empty topic filter");
    std::size_t start = 0;
    for (;;) {
      const std::size_t slash = f.text.find('/', start);
      const std::string level = f.text.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      if (level.find_first_of("+#") != std::string::npos && level.size() != 1)
        return errorAt(f.line, f.column, "topic filter '" + f.text + "': + and # must fill a whole level");
      if (level == "#" && slash != std::string::npos)
        return errorAt(f.line, f.column, "topic filter '" + f.text + "': # must be the last level");
      if (slash == std::string::npos) return Status::ok();
      start = slash + 1;
    }
  }
  NodeP make(NodeKind k, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = at.line;
    n->column = at.column;
    return n;
  }
  Result<std::string> name() {
    if (peek().kind == Tok::kName || peek().kind == Tok::kQuotedName) return next().text;
    return expected("a name");
  }

  Status selectList(std::vector<SelectItem>& out) {
    for (;;) {
      SelectItem item;
      if (isSym("*")) {
        next();
      } else {
        FERRY_ASSIGN_OR_RETURN(item.expr, expr());
        if (isKw("AS")) {
          next();
          FERRY_ASSIGN_OR_RETURN(item.alias, name());
        } else {
          item.alias = derivedAlias(*item.expr);
        }
      }
      out.push_back(std::move(item));
      if (!isSym(",")) return Status::ok();
      next();
    }
  }
  static std::string derivedAlias(const Node& n) {
    if (n.kind == NodeKind::kName || n.kind == NodeKind::kField) return n.text;
    if (n.kind == NodeKind::kCall) return n.text;
    return "";  // the evaluator names it by position
  }

  // Nesting is bounded: rule text comes from outside (REST), and the parser recurses.
  static constexpr int kMaxDepth = 256;  // guards passed: ~3 per parenthesis, 1 per unary operator
  struct Depth {
    int& d;
    explicit Depth(int& depth) : d(++depth) {}
    ~Depth() { --d; }
  };
  Status tooDeep() const {
    return errorAt(peek().line, peek().column,
                   "expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
  }
  Result<NodeP> expr() {
    Depth guard(depth_);
    if (depth_ > kMaxDepth) return tooDeep();
    return orExpr();
  }
  // A binary operator: a keyword (AND, DIV, ...) or a symbol, and the name the tree uses.
  struct Op {
    bool keyword;
    const char* token;
    const char* name;
  };
  // One precedence level: sub (op sub)*, left-associative; `chained` false allows one operator
  // (comparisons: a < b < c is an error at the second '<').
  Result<NodeP> binaryLevel(Result<NodeP> (Parser::*sub)(), std::initializer_list<Op> ops, bool chained = true) {
    FERRY_ASSIGN_OR_RETURN(NodeP left, (this->*sub)());
    for (;;) {
      const Op* found = nullptr;
      for (const Op& o : ops)
        if (o.keyword ? isKw(o.token) : isSym(o.token)) found = &o;
      if (found == nullptr) return left;
      const Token at = next();
      FERRY_ASSIGN_OR_RETURN(NodeP right, (this->*sub)());
      NodeP n = make(NodeKind::kBinary, at);
      n->text = found->name;
      n->line = left->line;  // an expression is where it starts
      n->column = left->column;
      n->kids.push_back(std::move(left));
      n->kids.push_back(std::move(right));
      left = std::move(n);
      if (!chained) return left;
    }
  }
  Result<NodeP> orExpr() { return binaryLevel(&Parser::andExpr, {{true, "OR", "or"}}); }
  Result<NodeP> andExpr() { return binaryLevel(&Parser::notExpr, {{true, "AND", "and"}}); }
  Result<NodeP> notExpr() {
    Depth guard(depth_);
    if (depth_ > kMaxDepth) return tooDeep();
    if (isKw("NOT")) {
      const Token at = next();
      FERRY_ASSIGN_OR_RETURN(NodeP inner, notExpr());
      NodeP n = make(NodeKind::kUnary, at);
      n->text = "not";
      n->kids.push_back(std::move(inner));
      return n;
    }
    return comparison();
  }
  Result<NodeP> comparison() {
    return binaryLevel(&Parser::additive,
                       {{false, "=", "="}, {false, "!=", "!="}, {false, "<", "<"}, {false, "<=", "<="},
                        {false, ">", ">"}, {false, ">=", ">="}},
                       /*chained=*/false);
  }
  Result<NodeP> additive() { return binaryLevel(&Parser::multiplicative, {{false, "+", "+"}, {false, "-", "-"}}); }
  Result<NodeP> multiplicative() {
    return binaryLevel(&Parser::unary, {{false, "*", "*"}, {false, "/", "/"}, {false, "%", "%"}, {true, "DIV", "div"},
                                        {true, "MOD", "%"}});
  }
  Result<NodeP> unary() {
    Depth guard(depth_);
    if (depth_ > kMaxDepth) return tooDeep();
    if (isSym("-")) {
      const Token at = next();
      FERRY_ASSIGN_OR_RETURN(NodeP inner, unary());
      NodeP n = make(NodeKind::kUnary, at);
      n->text = "-";
      n->kids.push_back(std::move(inner));
      return n;
    }
    return postfix();
  }
  Result<NodeP> postfix() {
    FERRY_ASSIGN_OR_RETURN(NodeP n, primary());
    for (;;) {
      if (isSym(".")) {
        const Token at = next();
        FERRY_ASSIGN_OR_RETURN(std::string field, name());
        NodeP f = make(NodeKind::kField, at);
        f->line = n->line;  // a path is where it starts: payload.a.b at "payload"
        f->column = n->column;
        f->text = field;
        f->kids.push_back(std::move(n));
        n = std::move(f);
      } else if (isSym("[")) {
        const Token at = next();
        FERRY_ASSIGN_OR_RETURN(NodeP index, expr());
        if (!isSym("]")) return expected("]");
        next();
        NodeP f = make(NodeKind::kIndex, at);
        f->line = n->line;
        f->column = n->column;
        f->kids.push_back(std::move(n));
        f->kids.push_back(std::move(index));
        n = std::move(f);
      } else {
        return n;
      }
    }
  }
  Result<NodeP> primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::kNumber: {
        const Token at = next();
        NodeP n = make(NodeKind::kNumber, at);
        char* end = nullptr;
        n->number = std::strtod(at.text.c_str(), &end);
        if (end != at.text.c_str() + at.text.size()) return errorAt(at.line, at.column, "malformed number '" + at.text + "'");
        if (at.text.find_first_of(".eE") == std::string::npos) {
          errno = 0;
          n->integer = std::strtoll(at.text.c_str(), nullptr, 10);
          n->integral = errno == 0;
        }
        return n;
      }
      case Tok::kString: {
        const Token at = next();
        NodeP n = make(NodeKind::kString, at);
        n->text = at.text;
        return n;
      }
      case Tok::kName:
      case Tok::kQuotedName: {
        const Token at = next();
        if (at.kind == Tok::kName && isSym("(")) {
          next();
          NodeP call = make(NodeKind::kCall, at);
          call->text = at.text;
          if (!isSym(")")) {
            for (;;) {
              FERRY_ASSIGN_OR_RETURN(NodeP arg, expr());
              call->kids.push_back(std::move(arg));
              if (!isSym(",")) break;
              next();
            }
          }
          if (!isSym(")")) return expected(") or ,");
          next();
          return call;
        }
        NodeP n = make(NodeKind::kName, at);
        n->text = at.text;
        return n;
      }
      case Tok::kKeyword: {
        if (t.text == "TRUE" || t.text == "FALSE") {
          const Token at = next();
          NodeP n = make(NodeKind::kBool, at);
          n->boolean = at.text == "TRUE";
          return n;
        }
        if (t.text == "NULL") return make(NodeKind::kNull, next());
        if (t.text == "CASE") return caseExpr();
        return expected("an expression");
      }
      case Tok::kSymbol:
        if (t.text == "(") {
          next();
          FERRY_ASSIGN_OR_RETURN(NodeP inner, expr());
          if (!isSym(")")) return expected(")");
          next();
          return inner;
        }
        return expected("an expression");
      case Tok::kEnd:
        return expected("an expression");
    }
    return expected("an expression");
  }
  Result<NodeP> caseExpr() {
    NodeP n = make(NodeKind::kCase, next());
    if (!isKw("WHEN")) {
      FERRY_ASSIGN_OR_RETURN(NodeP subject, expr());
      n->hasSubject = true;
      n->kids.push_back(std::move(subject));
    }
    if (!isKw("WHEN")) return expected("WHEN");
    while (isKw("WHEN")) {
      next();
      FERRY_ASSIGN_OR_RETURN(NodeP when, expr());
      if (!isKw("THEN")) return expected("THEN");
      next();
      FERRY_ASSIGN_OR_RETURN(NodeP then, expr());
      n->kids.push_back(std::move(when));
      n->kids.push_back(std::move(then));
    }
    if (isKw("ELSE")) {
      next();
      FERRY_ASSIGN_OR_RETURN(NodeP otherwise, expr());
      n->hasElse = true;
      n->kids.push_back(std::move(otherwise));
    }
    if (!isKw("END")) return expected("END");
    next();
    return n;
  }

  std::vector<Token> t_;
  std::size_t p_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<Rule> parseRule(std::string_view text) {
  FERRY_ASSIGN_OR_RETURN(auto tokens, Lexer(text).run());
  return Parser(std::move(tokens)).rule();
}

}  // namespace ferry::transforms::rules
