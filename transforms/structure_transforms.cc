// Flatten and Cast (see structure_transforms.h).
#include "transforms/structure_transforms.h"

#include <algorithm>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace ferry::transforms {
namespace {

const char* const kTypes[] = {"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string"};

bool knownType(const std::string& t) {
  for (const char* k : kTypes)
    if (t == k) return true;
  return false;
}

// "type" or "f:type,g:type" -> (whole, fields); an error names the bad entry.
Status parseSpec(const std::string& spec, std::string& whole, std::vector<std::pair<std::string, std::string>>& fields) {
  whole.clear();
  fields.clear();
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = spec.find(',', start);
    std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      if (!knownType(item)) return Status::invalidArgument("unknown type '" + item + "' (int8 int16 int32 int64 float32 float64 boolean string)");
      if (!fields.empty() || !whole.empty() || comma != std::string::npos)
        return Status::invalidArgument("a whole-value cast ('" + item + "') cannot be combined with field casts");
      whole = item;
    } else {
      const std::string f = item.substr(0, colon), t = item.substr(colon + 1);
      if (f.empty()) return Status::invalidArgument("empty field name in '" + item + "'");
      if (!knownType(t)) return Status::invalidArgument("unknown type '" + t + "' for field " + f);
      if (!whole.empty()) return Status::invalidArgument("a whole-value cast cannot be combined with field casts");
      fields.emplace_back(f, t);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (whole.empty() && fields.empty()) return Status::invalidArgument("empty spec");
  return Status::ok();
}

int widthOf(const std::string& t) { return t == "int8" ? 8 : t == "int16" ? 16 : t == "int32" ? 32 : 64; }

std::int64_t wrap(std::int64_t v, int bits) {
  if (bits == 64) return v;
  const auto mask = (std::uint64_t{1} << bits) - 1;
  std::uint64_t u = static_cast<std::uint64_t>(v) & mask;
  if (u & (std::uint64_t{1} << (bits - 1))) u |= ~mask;  // sign-extend
  return static_cast<std::int64_t>(u);
}

// One JSON scalar to `type`; an error says why.
Result<Json> castTo(const Json& v, const std::string& type) {
  if (v.is_null()) return v;
  if (v.is_object() || v.is_array()) return Status::invalidArgument(std::string("cannot cast a JSON ") + v.type_name() + " to " + type);
  if (type == "string") return Json(v.is_string() ? v.get<std::string>() : v.dump());
  if (type == "boolean") {
    if (v.is_boolean()) return v;
    if (v.is_number()) return Json(v.get<double>() != 0);
    std::string s = v.get<std::string>();
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return Json(s == "true");
  }
  if (type == "float32" || type == "float64") {
    double d;
    if (v.is_boolean()) d = v.get<bool>() ? 1 : 0;
    else if (v.is_number()) d = v.get<double>();
    else {
      const std::string s = v.get<std::string>();
      char* end = nullptr;
      d = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size()) return Status::invalidArgument("'" + s + "' is not a number");
    }
    return Json(type == "float32" ? static_cast<double>(static_cast<float>(d)) : d);
  }
  const int bits = widthOf(type);
  if (v.is_boolean()) return Json(std::int64_t{v.get<bool>() ? 1 : 0});
  if (v.is_number_integer()) return Json(wrap(v.get<std::int64_t>(), bits));
  if (v.is_number()) {
    const double d = std::trunc(v.get<double>());
    if (!std::isfinite(d)) return Status::invalidArgument("cannot cast " + v.dump() + " to " + type);
    return Json(wrap(d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<std::int64_t>(d), bits));
  }
  const std::string s = v.get<std::string>();
  errno = 0;
  char* end = nullptr;
  const long long n = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || wrap(n, bits) != n)
    return Status::invalidArgument("'" + s + "' is not an " + type);
  return Json(static_cast<std::int64_t>(n));
}

void flattenInto(const Json& obj, const std::string& prefix, const std::string& delim, Json& out) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + delim + it.key();
    if (it->is_object() && !it->empty()) flattenInto(*it, name, delim, out);
    else out[name] = *it;
  }
}

// With a schema (Kafka's Flatten in its schema'd mode): only struct fields are flattened, guided
// by the schema (a map is a JSON object too, but stays a field); a nested field is optional when
// it or any struct above it is. Data and schema are built in one walk (the schema only when the
// memo does not have it yet: `b` null).
Status flattenTyped(const Schema& s, const Json* obj, const std::string& prefix, const std::string& delim,
                    bool optionalAbove, Json& out, SchemaBuilder* b) {
  for (const auto& f : s.fields()) {
    const std::string name = prefix.empty() ? f.name : prefix + delim + f.name;
    const Json* v = nullptr;
    if (obj && obj->is_object()) {
      auto it = obj->find(f.name);
      if (it != obj->end()) v = &*it;
    }
    if (f.schema->type() == SchemaType::kStruct) {
      FERRY_RETURN_IF_ERROR(
          flattenTyped(*f.schema, v, name, delim, optionalAbove || f.schema->optional(), out, b));
      continue;
    }
    if (b && optionalAbove && !f.schema->optional()) {
      FERRY_ASSIGN_OR_RETURN(auto fs, asOptional(*f.schema));
      b->field(name, fs);
    } else if (b) {
      b->field(name, f.schema);
    }
    out[name] = v ? *v : Json(nullptr);
  }
  return Status::ok();
}

SchemaType castSchemaType(const std::string& type) {
  if (type == "int8") return SchemaType::kInt8;
  if (type == "int16") return SchemaType::kInt16;
  if (type == "int32") return SchemaType::kInt32;
  if (type == "int64") return SchemaType::kInt64;
  if (type == "float32") return SchemaType::kFloat32;
  if (type == "float64") return SchemaType::kFloat64;
  if (type == "boolean") return SchemaType::kBoolean;
  return SchemaType::kString;
}

}  // namespace

const ConfigDef& Flatten::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("delimiter", ConfigType::kString, ".", Importance::kMedium,
             "Put between the names of the levels of a nested field.");
    return d;
  }();
  return def;
}

Status Flatten::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  delimiter_ = p.getString("delimiter");
  return Status::ok();
}

Result<bool> Flatten::applyJson(Record& record, JsonCache& cache) {
  Bytes& b = target(record);
  if (b.isNull()) return true;
  FERRY_ASSIGN_OR_RETURN(Json * doc, objectOf(record, cache));
  Json out = Json::object();
  if (const SchemaPtr& schema = targetSchema(record)) {
    FERRY_RETURN_IF_ERROR(needStruct(*schema, name_, side()));
    SchemaBuilder b = copyBasics(*schema, SchemaType::kStruct);
    FERRY_RETURN_IF_ERROR(flattenTyped(*schema, doc, "", delimiter_, false, out, memo_.knows(schema) ? nullptr : &b));
    // The data follows the schema record by record; the schema is the same for every record of
    // one input schema (memoised).
    FERRY_RETURN_IF_ERROR(updateSchema(record, [&](const Schema&) { return b.build(); }));
  } else {
    flattenInto(*doc, "", delimiter_, out);
  }
  cache.set(record, targetSide(), std::move(out));
  return true;
}

const ConfigDef& Cast::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("spec", ConfigType::kList, std::nullopt, Importance::kHigh,
             "'<type>' for the whole key/value, or 'field:<type>,...'; types: int8 int16 int32 int64 "
             "float32 float64 boolean string.",
             [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
               std::string joined;
               if (const auto* l = std::get_if<std::vector<std::string>>(&v)) {
                 for (const auto& s : *l) joined += (joined.empty() ? "" : ",") + s;
               } else if (const auto* s = std::get_if<std::string>(&v)) {
                 joined = *s;
               }
               std::string whole;
               std::vector<std::pair<std::string, std::string>> fields;
               if (Status s = parseSpec(joined, whole, fields); !s.isOk())
                 return "Invalid value " + joined + " for configuration " + name + ": " + s.message();
               return std::nullopt;
             });
    return d;
  }();
  return def;
}

Status Cast::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  std::string joined;
  for (const auto& s : p.getList("spec")) joined += (joined.empty() ? "" : ",") + s;
  if (Status s = parseSpec(joined, whole_, fields_); !s.isOk()) return Status::invalidArgument(name_ + ": spec: " + s.message());
  return Status::ok();
}

Result<bool> Cast::applyJson(Record& record, JsonCache& cache) {
  Bytes& b = target(record);
  if (b.isNull()) return true;
  auto fail = [&](const Status& s, const std::string& what) {
    return Status::invalidArgument(name_ + ": " + what + " of a record in topic '" + record.topic + "': " + s.message());
  };
  if (!whole_.empty()) {
    const Json* j = cache.get(record, targetSide());
    // Text that is not JSON is a string. get() flushed nothing: a null j means the bytes are
    // current (a pending document is always JSON).
    auto c = castTo(j ? *j : Json(std::string(b.view())), whole_);
    if (!c.isOk()) return fail(c.status(), std::string("the ") + side());
    // With a schema, a string stays in its JSON form (a payload, not raw text).
    FERRY_RETURN_IF_ERROR(updateSchema(record, [&](const Schema& old) -> Result<SchemaPtr> {
      if (!isPrimitive(old.type()))
        return Status::invalidArgument(name_ + ": cannot cast the " + side() + "'s " + old.describe());
      return SchemaBuilder(castSchemaType(whole_)).optional(old.optional()).build();
    }));
    if (c->is_string() && !targetSchema(record)) cache.setBytes(record, targetSide(), Bytes(c->get<std::string>()));
    else cache.set(record, targetSide(), std::move(*c));
    return true;
  }
  FERRY_ASSIGN_OR_RETURN(Json * doc, objectOf(record, cache));
  for (const auto& [field, type] : fields_) {
    auto it = doc->find(field);
    if (it == doc->end()) continue;
    auto c = castTo(*it, type);
    if (!c.isOk()) return fail(c.status(), "field " + field);
    *it = std::move(*c);
  }
  cache.changed(targetSide());
  // With a schema: the cast fields get the target type (optional as they were; a default is
  // dropped rather than cast).
  FERRY_RETURN_IF_ERROR(updateSchema(record, [&](const Schema& old) -> Result<SchemaPtr> {
    FERRY_RETURN_IF_ERROR(needStruct(old, name_, side()));
    return rebuildStruct(old, [&](SchemaBuilder& b) -> Status {
      for (const auto& f : old.fields()) {
        auto spec = std::find_if(fields_.begin(), fields_.end(), [&](const auto& x) { return x.first == f.name; });
        if (spec == fields_.end()) {
          b.field(f.name, f.schema);
          continue;
        }
        if (!isPrimitive(f.schema->type()))
          return Status::invalidArgument(name_ + ": cannot cast field '" + f.name + "' (" + f.schema->describe() + ")");
        FERRY_ASSIGN_OR_RETURN(auto fs, SchemaBuilder(castSchemaType(spec->second)).optional(f.schema->optional()).build());
        b.field(f.name, fs);
      }
      return Status::ok();
    });
  }));
  return true;
}

}  // namespace ferry::transforms
