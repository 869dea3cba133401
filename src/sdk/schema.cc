// Schemas (include/ferry/schema.h): names, the builder's checks, equality, the fingerprint.
#include "ferry/schema.h"

#include <array>
#include <charconv>

namespace ferry {
namespace {

constexpr std::array<const char*, 12> kJsonNames = {"int8",    "int16",  "int32",   "int64",
                                                    "float",   "double", "boolean", "string",
                                                    "bytes",   "array",  "map",     "struct"};

// FNV-1a, 64 bit.
struct Fnv {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  void byte(unsigned char c) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  void text(std::string_view s) {
    for (unsigned char c : s) byte(c);
    byte(0xff);  // a separator no UTF-8 text contains
  }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>(v >> (8 * i)));
  }
  void opt(const std::optional<std::string>& s) {
    byte(s ? 1 : 0);
    if (s) text(*s);
  }
};

std::uint64_t fingerprintOf(const Schema& s) {
  Fnv f;
  f.byte(static_cast<unsigned char>(s.type()));
  f.byte(s.optional() ? 1 : 0);
  f.opt(s.name());
  f.byte(s.version() ? 1 : 0);
  if (s.version()) f.u64(static_cast<std::uint32_t>(*s.version()));
  f.opt(s.doc());
  f.byte(s.parameters() ? 1 : 0);
  if (s.parameters()) {
    for (const auto& [k, v] : *s.parameters()) {
      f.text(k);
      f.text(v);
    }
    f.byte(0xfe);
  }
  f.opt(s.defaultJson());
  for (const auto& fl : s.fields()) {
    f.text(fl.name);
    f.u64(fl.schema->fingerprint());
  }
  f.byte(0xfd);
  if (s.keySchema()) f.u64(s.keySchema()->fingerprint());
  if (s.valueSchema()) f.u64(s.valueSchema()->fingerprint());
  return f.h;
}

bool sameChild(const SchemaPtr& a, const SchemaPtr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return *a == *b;
}

std::optional<std::int32_t> parseScale(const std::string& text) {
  std::int32_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

const char* schemaTypeJsonName(SchemaType type) noexcept {
  return kJsonNames[static_cast<std::size_t>(type)];
}

std::optional<SchemaType> schemaTypeFromJsonName(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kJsonNames.size(); ++i)
    if (name == kJsonNames[i]) return static_cast<SchemaType>(i);
  return std::nullopt;
}

bool isPrimitive(SchemaType type) noexcept {
  return type != SchemaType::kArray && type != SchemaType::kMap && type != SchemaType::kStruct;
}

const std::string* Schema::parameter(std::string_view key) const noexcept {
  if (!parameters_) return nullptr;
  for (const auto& [k, v] : *parameters_)
    if (k == key) return &v;
  return nullptr;
}

const SchemaField* Schema::field(std::string_view name) const noexcept {
  for (const auto& f : fields_)
    if (f.name == name) return &f;
  return nullptr;
}

std::string_view Schema::logicalName() const noexcept {
  if (!name_) return {};
  for (std::string_view n : {logical::kDecimal, logical::kDate, logical::kTime, logical::kTimestamp,
                             logical::kUuid, logical::kJson})
    if (*name_ == n) return n;
  return {};
}

std::optional<std::int32_t> Schema::decimalScale() const noexcept {
  if (logicalName() != logical::kDecimal) return std::nullopt;
  const std::string* s = parameter(logical::kDecimalScale);
  if (!s) return std::nullopt;
  return parseScale(*s);
}

bool operator==(const Schema& a, const Schema& b) noexcept {
  if (&a == &b) return true;
  if (a.fingerprint_ != b.fingerprint_) return false;
  if (a.type_ != b.type_ || a.optional_ != b.optional_ || a.name_ != b.name_ ||
      a.version_ != b.version_ || a.doc_ != b.doc_ || a.parameters_ != b.parameters_ ||
      a.default_ != b.default_ || a.fields_.size() != b.fields_.size())
    return false;
  for (std::size_t i = 0; i < a.fields_.size(); ++i)
    if (a.fields_[i].name != b.fields_[i].name || !sameChild(a.fields_[i].schema, b.fields_[i].schema))
      return false;
  return sameChild(a.keySchema_, b.keySchema_) && sameChild(a.valueSchema_, b.valueSchema_);
}

std::string Schema::describe() const {
  std::string out;
  switch (type_) {
    case SchemaType::kStruct:
      out = "struct{";
      for (std::size_t i = 0; i < fields_.size(); ++i) {
        if (i) out += ',';
        out += fields_[i].name + ':' + fields_[i].schema->describe();
      }
      out += '}';
      break;
    case SchemaType::kArray:
      out = "array<" + valueSchema_->describe() + ">";
      break;
    case SchemaType::kMap:
      out = "map<" + keySchema_->describe() + "," + valueSchema_->describe() + ">";
      break;
    default:
      out = schemaTypeJsonName(type_);
      if (auto l = logicalName(); !l.empty()) {
        out += '<';
        out += l.substr(l.rfind('.') + 1);
        if (auto sc = decimalScale()) out += " scale=" + std::to_string(*sc);
        out += '>';
      }
  }
  if (optional_) out += '?';
  return out;
}

SchemaBuilder::SchemaBuilder(SchemaType type) { s_.type_ = type; }

SchemaBuilder SchemaBuilder::array(SchemaPtr items) {
  SchemaBuilder b(SchemaType::kArray);
  b.s_.valueSchema_ = std::move(items);
  return b;
}

SchemaBuilder SchemaBuilder::map(SchemaPtr keys, SchemaPtr values) {
  SchemaBuilder b(SchemaType::kMap);
  b.s_.keySchema_ = std::move(keys);
  b.s_.valueSchema_ = std::move(values);
  return b;
}

SchemaBuilder& SchemaBuilder::parameter(std::string key, std::string value) {
  auto& params = s_.parameters_;
  if (!params) params.emplace();
  for (auto& [k, v] : *params) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  params->emplace_back(std::move(key), std::move(value));
  return *this;
}

SchemaBuilder& SchemaBuilder::emptyParameters() {
  if (!s_.parameters_) s_.parameters_.emplace();
  return *this;
}

SchemaBuilder& SchemaBuilder::field(std::string name, SchemaPtr schema) {
  s_.fields_.push_back({std::move(name), std::move(schema)});
  return *this;
}

Result<SchemaPtr> SchemaBuilder::build() const {
  const SchemaType type = s_.type_;
  const auto& fields = s_.fields_;
  const std::string what = std::string("schema (") + schemaTypeJsonName(type) +
                           (s_.name_ ? " '" + *s_.name_ + "'" : std::string()) + ")";
  if (type != SchemaType::kStruct && !fields.empty())
    return Status::invalidArgument(what + ": only a struct has fields");
  if (type == SchemaType::kArray && !s_.valueSchema_)
    return Status::invalidArgument(what + ": an array needs the schema of its elements");
  if (type == SchemaType::kMap && (!s_.keySchema_ || !s_.valueSchema_))
    return Status::invalidArgument(what + ": a map needs a key schema and a value schema");
  if (type != SchemaType::kMap && s_.keySchema_)
    return Status::invalidArgument(what + ": only a map has a key schema");
  if (type != SchemaType::kArray && type != SchemaType::kMap && s_.valueSchema_)
    return Status::invalidArgument(what + ": only an array or a map has a value schema");
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name.empty()) return Status::invalidArgument(what + ": a field without a name");
    if (!fields[i].schema)
      return Status::invalidArgument(what + ": field '" + fields[i].name + "' has no schema");
    for (std::size_t j = 0; j < i; ++j)
      if (fields[j].name == fields[i].name)
        return Status::invalidArgument(what + ": field '" + fields[i].name + "' appears twice");
  }
  if (s_.name_) {
    auto needs = [&](SchemaType t, std::string_view logicalName) -> Status {
      if (type == t) return Status::ok();
      return Status::invalidArgument(what + ": the logical type " + std::string(logicalName) + " is based on " +
                                     schemaTypeJsonName(t));
    };
    const std::string& n = *s_.name_;
    if (n == logical::kDecimal) {
      FERRY_RETURN_IF_ERROR(needs(SchemaType::kBytes, n));
      const std::string* sc = s_.parameter(logical::kDecimalScale);
      if (!sc || !parseScale(*sc))
        return Status::invalidArgument(what + ": a Decimal needs an integer parameter 'scale'");
    } else if (n == logical::kDate || n == logical::kTime) {
      FERRY_RETURN_IF_ERROR(needs(SchemaType::kInt32, n));
    } else if (n == logical::kTimestamp) {
      FERRY_RETURN_IF_ERROR(needs(SchemaType::kInt64, n));
    } else if (n == logical::kUuid || n == logical::kJson) {
      FERRY_RETURN_IF_ERROR(needs(SchemaType::kString, n));
    }
  }
  std::shared_ptr<Schema> out(new Schema(s_));
  out->fingerprint_ = fingerprintOf(*out);
  return SchemaPtr(std::move(out));
}

namespace logical {

SchemaBuilder decimal(std::int32_t scale) {
  SchemaBuilder b = SchemaBuilder::bytes();
  b.name(std::string(kDecimal)).version(1).parameter(std::string(kDecimalScale), std::to_string(scale));
  return b;
}
SchemaBuilder date() {
  SchemaBuilder b = SchemaBuilder::int32();
  b.name(std::string(kDate)).version(1);
  return b;
}
SchemaBuilder time() {
  SchemaBuilder b = SchemaBuilder::int32();
  b.name(std::string(kTime)).version(1);
  return b;
}
SchemaBuilder timestamp() {
  SchemaBuilder b = SchemaBuilder::int64();
  b.name(std::string(kTimestamp)).version(1);
  return b;
}
SchemaBuilder uuid() {
  SchemaBuilder b = SchemaBuilder::string();
  b.name(std::string(kUuid)).version(1);
  return b;
}
SchemaBuilder json() {
  SchemaBuilder b = SchemaBuilder::string();
  b.name(std::string(kJson)).version(1);
  return b;
}

}  // namespace logical
}  // namespace ferry
