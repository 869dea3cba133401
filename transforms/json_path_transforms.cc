// JsonPathExtract (see json_path_transforms.h).
#include "transforms/json_path_transforms.h"

#include <cctype>

namespace ferry::transforms {
namespace {

std::string at(std::size_t pos) { return "at character " + std::to_string(pos + 1); }

// The path as far as `steps[0..n)`, for messages: $.a.b[0].
std::string prefixOf(const std::vector<JsonPathExtract::Step>& steps, std::size_t n) {
  std::string out = "$";
  for (std::size_t i = 0; i < n; ++i) {
    if (steps[i].index) out += "[" + std::to_string(*steps[i].index) + "]";
    else out += "." + steps[i].name;
  }
  return out;
}

}  // namespace

Result<std::vector<JsonPathExtract::Step>> JsonPathExtract::compile(std::string_view p) {
  std::vector<Step> steps;
  if (p.empty()) return Status::invalidArgument("the path is empty (use $ for the whole document)");
  std::size_t i = 0;
  bool needName = false;  // a bare name must come next (start without $, or after '.')
  if (p[0] == '$') {
    i = 1;
  } else {
    needName = true;
  }
  auto bareName = [&]() -> Status {
    const std::size_t start = i;
    while (i < p.size() && p[i] != '.' && p[i] != '[' && p[i] != ']') ++i;
    if (i == start) return Status::invalidArgument("expected a field name " + at(start));
    const std::string_view name = p.substr(start, i - start);
    if (name == "*" || name == "..") return Status::invalidArgument("wildcards are not supported " + at(start));
    steps.push_back(Step{std::string(name), std::nullopt});
    return Status::ok();
  };
  if (needName) FERRY_RETURN_IF_ERROR(bareName());
  while (i < p.size()) {
    const char c = p[i];
    if (c == '.') {
      ++i;
      if (i < p.size() && p[i] == '.') return Status::invalidArgument("recursive descent (..) is not supported " + at(i - 1));
      FERRY_RETURN_IF_ERROR(bareName());
    } else if (c == '[') {
      const std::size_t open = i++;
      if (i >= p.size()) return Status::invalidArgument("unterminated '[' " + at(open));
      if (p[i] == '\'' || p[i] == '"') {  // ['name'] / ["name"]
        const char quote = p[i++];
        std::string name;
        while (true) {
          if (i >= p.size()) return Status::invalidArgument("unterminated quoted name " + at(open));
          if (p[i] == '\\' && i + 1 < p.size() && (p[i + 1] == quote || p[i + 1] == '\\')) {
            name.push_back(p[i + 1]);
            i += 2;
            continue;
          }
          if (p[i] == quote) break;
          name.push_back(p[i++]);
        }
        ++i;  // the closing quote
        if (i >= p.size() || p[i] != ']') return Status::invalidArgument("expected ']' " + at(i));
        ++i;
        steps.push_back(Step{std::move(name), std::nullopt});
      } else {
        const std::size_t start = i;
        if (p[i] == '*') return Status::invalidArgument("wildcards are not supported " + at(i));
        if (p[i] == '-') return Status::invalidArgument("negative array indexes are not supported " + at(i));
        std::size_t index = 0;
        while (i < p.size() && std::isdigit(static_cast<unsigned char>(p[i]))) {
          if (index > 100'000'000) return Status::invalidArgument("array index too large " + at(start));
          index = index * 10 + static_cast<std::size_t>(p[i++] - '0');
        }
        if (i == start) return Status::invalidArgument("expected an array index or a quoted name " + at(start));
        if (i >= p.size() || p[i] != ']') return Status::invalidArgument("expected ']' " + at(i));
        ++i;
        steps.push_back(Step{{}, index});
      }
    } else {
      return Status::invalidArgument(std::string("expected '.' or '[' ") + at(i) + ", found '" + c + "'");
    }
  }
  return steps;
}

const ConfigDef& JsonPathExtract::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("path", ConfigType::kString, std::nullopt, Importance::kHigh,
             "What to extract: field names and 0-based array indexes, e.g. a.b[0].c or $.a.b, "
             "$['odd.name'] for names with dots; $ is the whole document.",
             [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
               const auto* s = std::get_if<std::string>(&v);
               if (!s) return name + ": must be a string";
               auto c = JsonPathExtract::compile(*s);
               if (!c.isOk()) return "Invalid value " + *s + " for configuration " + name + ": " + c.status().message();
               return std::nullopt;
             });
    d.define("field", ConfigType::kString, "", Importance::kMedium,
             "When set, the result is wrapped as {\"<field>\": result}; empty: the result itself (a "
             "string as its raw text).");
    d.define("missing", ConfigType::kString, "null", Importance::kMedium,
             "When the path selects nothing: null (the result is null), drop (drop the record) or fail "
             "(fail the record; errors.tolerance decides).",
             validators::oneOf({"null", "drop", "fail"}));
    return d;
  }();
  return def;
}

Status JsonPathExtract::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, name_));
  path_ = p.getString("path");
  auto steps = compile(path_);
  if (!steps.isOk())
    return Status::invalidArgument(name_ + ": path '" + path_ + "': " + steps.status().message());
  steps_ = std::move(*steps);
  field_ = p.getString("field");
  std::string m = p.getString("missing");
  for (auto& ch : m) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  missing_ = m == "drop" ? Missing::kDrop : m == "fail" ? Missing::kFail : Missing::kNull;
  return Status::ok();
}

Result<SchemaPtr> JsonPathExtract::resultSchema(const SchemaPtr& in) const {
  const char* side = onKey_ ? "key" : "value";
  SchemaPtr cur = in;
  bool mayMiss = false;  // the path may select nothing in data that matches the schema
  for (std::size_t n = 0; n < steps_.size(); ++n) {
    const Step& s = steps_[n];
    mayMiss = mayMiss || cur->optional();  // a null part: nothing below it
    const std::string where = prefixOf(steps_, n);
    if (s.index) {
      if (cur->type() != SchemaType::kArray)
        return Status::invalidArgument(name_ + ": path '" + path_ + "': " + where + " is " + cur->describe() +
                                       " in the " + side + "'s schema, not an array");
      cur = cur->valueSchema();
      mayMiss = true;  // an index past the end
    } else {
      if (cur->type() != SchemaType::kStruct)
        return Status::invalidArgument(name_ + ": path '" + path_ + "': " + where + " is " + cur->describe() +
                                       " in the " + side + "'s schema, not a struct");
      const SchemaField* f = cur->field(s.name);
      if (!f)
        return Status::invalidArgument(name_ + ": path '" + path_ + "': the " + side + "'s schema has no field '" +
                                       s.name + "' at " + where);
      cur = f->schema;
    }
  }
  if (mayMiss && missing_ == Missing::kNull && !cur->optional()) {
    FERRY_ASSIGN_OR_RETURN(cur, asOptional(*cur));
  }
  if (field_.empty()) return cur;
  return SchemaBuilder::structure().field(field_, cur).build();
}

Result<bool> JsonPathExtract::applyJson(Record& record, JsonCache& cache) {
  const Side target = onKey_ ? Side::kKey : Side::kValue;
  Bytes& b = onKey_ ? record.key : record.value;
  if (b.isNull()) return true;
  const char* side = onKey_ ? "key" : "value";
  SchemaPtr& schema = onKey_ ? record.keySchema : record.valueSchema;
  const bool typed = schema != nullptr;
  if (typed && (!steps_.empty() || !field_.empty())) {
    FERRY_ASSIGN_OR_RETURN(schema, memo_.get(schema, [&](const Schema&) { return resultSchema(schema); }));
  }
  Json* doc = cache.get(record, target);
  if (!doc)
    return Status::invalidArgument(name_ + ": the " + side + " of a record in topic '" + record.topic +
                                   "' is not JSON; path '" + path_ + "' needs it");
  Json* cur = doc;
  std::size_t n = 0;
  for (; n < steps_.size(); ++n) {
    const Step& s = steps_[n];
    if (s.index) {
      if (!cur->is_array() || *s.index >= cur->size()) break;
      cur = &(*cur)[*s.index];
    } else {
      if (!cur->is_object()) break;
      auto it = cur->find(s.name);
      if (it == cur->end()) break;
      cur = &*it;
    }
  }
  if (n < steps_.size()) {
    switch (missing_) {
      case Missing::kDrop: return false;
      case Missing::kFail:
        return Status::invalidArgument(name_ + ": path '" + path_ + "' selects nothing in the " + side +
                                       " of a record in topic '" + record.topic + "' (" + prefixOf(steps_, n) +
                                       " is a JSON " + cur->type_name() + " without " +
                                       (steps_[n].index ? "index " + std::to_string(*steps_[n].index)
                                                        : "field '" + steps_[n].name + "'") +
                                       ")");
      case Missing::kNull:
        if (field_.empty()) {
          cache.setBytes(record, target, Bytes());
        } else {
          Json out = Json::object();
          out[field_] = nullptr;
          cache.set(record, target, std::move(out));
        }
        return true;
    }
  }
  if (!field_.empty()) {
    Json out = Json::object();
    out[field_] = std::move(*cur);  // the document is replaced by `out`
    cache.set(record, target, std::move(out));
  } else if (cur->is_null()) {
    cache.setBytes(record, target, Bytes());  // as ExtractField: a null result is a null value
  } else if (cur->is_string() && !typed) {
    cache.setBytes(record, target, Bytes(cur->get<std::string>()));
  } else {
    Json out = std::move(*cur);
    cache.set(record, target, std::move(out));
  }
  return true;
}

}  // namespace ferry::transforms
