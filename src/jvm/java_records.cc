// Records across the channel to the JVM host (java_records.h).
#include "jvm/java_records.h"

#include <string>

#include "transforms/connect_json.h"

namespace ferry::jvm {

Status SchemasIn::add(std::int32_t id, std::string_view json) {
  if (byId_.size() >= kMax && !byId_.count(id))
    return Status::resourceExhausted("the JVM host sent more than " + std::to_string(kMax) + " schemas for one task");
  auto parsed = transforms::Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::invalidArgument("JVM host answer: schema " + std::to_string(id) + " is not JSON");
  auto schema = transforms::readConnectSchema(parsed);
  if (!schema.isOk()) return schema.status().withContext("JVM host answer: schema " + std::to_string(id));
  byId_[id] = *schema;
  return Status::ok();
}

SchemaPtr SchemasIn::find(std::int32_t id) const {
  auto it = byId_.find(id);
  return it == byId_.end() ? nullptr : it->second;
}

std::int32_t SchemasOut::id(const SchemaPtr& schema, std::vector<std::pair<std::int32_t, SchemaPtr>>& fresh) {
  if (auto it = byPointer_.find(schema.get()); it != byPointer_.end()) return it->second;
  std::int32_t found = 0;
  auto [lo, hi] = byFingerprint_.equal_range(schema->fingerprint());
  for (auto it = lo; it != hi; ++it)
    if (*it->second.first == *schema) found = it->second.second;
  if (found == 0) {
    found = next_++;
    byFingerprint_.emplace(schema->fingerprint(), std::make_pair(schema, found));
    fresh.emplace_back(found, schema);
  }
  if (kept_.size() < 10000) {  // records of one table share one Schema object: the usual hit
    kept_.push_back(schema);
    byPointer_[schema.get()] = found;
  }
  return found;
}

namespace {

Result<Bytes> readData(Reader& r, const SchemasIn& schemas, SchemaPtr& schema) {
  FERRY_ASSIGN_OR_RETURN(auto kind, r.u8());
  switch (kind) {
    case 0:
      return Bytes();
    case 1:
      return r.bytes();
    case 2: {
      FERRY_ASSIGN_OR_RETURN(auto id, r.i32());
      schema = schemas.find(id);
      if (!schema) return Status::invalidArgument("JVM host answer: a record names schema " + std::to_string(id) + ", never sent");
      return r.bytes();
    }
    default:
      return Status::invalidArgument("JVM host answer: data kind " + std::to_string(kind));
  }
}

void writeData(Writer& w, const Bytes& data, const SchemaPtr& schema, std::int32_t id) {
  if (schema) {
    w.u8(2).i32(id).bytes(data);
  } else if (data.isNull()) {
    w.u8(0);
  } else {
    w.u8(1).bytes(data);
  }
}

}  // namespace

Result<std::size_t> readSourceBatch(std::string_view payload, SchemasIn& schemas, std::vector<Record>& out) {
  Reader r(payload);
  FERRY_ASSIGN_OR_RETURN(auto ns, r.count("schemas"));
  for (std::int32_t i = 0; i < ns; ++i) {
    FERRY_ASSIGN_OR_RETURN(auto id, r.i32());
    FERRY_ASSIGN_OR_RETURN(auto json, r.str("schema"));
    FERRY_RETURN_IF_ERROR(schemas.add(id, json));
  }
  FERRY_ASSIGN_OR_RETURN(auto n, r.count("records"));
  std::vector<Record> read;  // appended to `out` only once the whole batch parsed
  read.reserve(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i) {
    Record rec;
    FERRY_ASSIGN_OR_RETURN(rec.topic, r.str("topic"));
    if (rec.topic.empty()) return Status::invalidArgument("a Java source record has no topic");
    FERRY_ASSIGN_OR_RETURN(auto partition, r.i32());
    if (partition >= 0) rec.queue = partition;
    FERRY_ASSIGN_OR_RETURN(auto ts, r.i64());
    rec.timestampMs = ts > 0 ? ts : 0;
    FERRY_ASSIGN_OR_RETURN(rec.key, readData(r, schemas, rec.keySchema));
    FERRY_ASSIGN_OR_RETURN(rec.value, readData(r, schemas, rec.valueSchema));
    FERRY_ASSIGN_OR_RETURN(auto nh, r.count("headers"));
    rec.headers.reserve(static_cast<std::size_t>(nh));
    for (std::int32_t j = 0; j < nh; ++j) {
      FERRY_ASSIGN_OR_RETURN(auto key, r.str("header key"));
      FERRY_ASSIGN_OR_RETURN(auto value, r.bytes());
      rec.headers.add(std::move(key), std::move(value));
    }
    FERRY_ASSIGN_OR_RETURN(auto part, r.optMap("source partition"));
    FERRY_ASSIGN_OR_RETURN(auto offset, r.optMap("source offset"));
    if (part) rec.position.partition = std::move(*part);
    if (offset) rec.position.offset = std::move(*offset);
    read.push_back(std::move(rec));
  }
  if (r.left() != 0)
    return Status::invalidArgument("JVM host answer: " + std::to_string(r.left()) + " bytes after the records");
  if (out.empty()) {
    out = std::move(read);
  } else {
    for (auto& rec : read) out.push_back(std::move(rec));
  }
  return static_cast<std::size_t>(n);
}

void writeSinkBatch(Writer& w, const std::vector<Record>& records, SchemasOut& schemas) {
  std::vector<std::pair<std::int32_t, SchemaPtr>> fresh;
  std::vector<std::pair<std::int32_t, std::int32_t>> ids(records.size(), {0, 0});
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (records[i].keySchema) ids[i].first = schemas.id(records[i].keySchema, fresh);
    if (records[i].valueSchema) ids[i].second = schemas.id(records[i].valueSchema, fresh);
  }
  w.i32(static_cast<std::int32_t>(fresh.size()));
  for (const auto& [id, schema] : fresh) w.i32(id).str(transforms::connectSchemaJson(*schema));
  w.i32(static_cast<std::int32_t>(records.size()));
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    w.str(r.topic).i32(r.queue.value_or(0)).i64(r.offset).i64(r.timestampMs > 0 ? r.timestampMs : -1);
    writeData(w, r.key, r.keySchema, ids[i].first);
    writeData(w, r.value, r.valueSchema, ids[i].second);
    w.i32(static_cast<std::int32_t>(r.headers.size()));
    for (const auto& h : r.headers) w.str(h.key).bytes(h.value);
  }
}

Result<std::vector<SinkContextRequest>> readSinkContextRequests(Reader& r) {
  FERRY_ASSIGN_OR_RETURN(auto n, r.count("sink task requests"));
  std::vector<SinkContextRequest> out;
  for (std::int32_t i = 0; i < n; ++i) {
    SinkContextRequest q;
    FERRY_ASSIGN_OR_RETURN(auto kind, r.u8());
    if (kind > SinkContextRequest::kResume)
      return Status::invalidArgument("JVM host answer: sink task request of kind " + std::to_string(kind));
    q.kind = static_cast<SinkContextRequest::Kind>(kind);
    FERRY_ASSIGN_OR_RETURN(q.queue.topic, r.str("topic"));
    FERRY_ASSIGN_OR_RETURN(q.queue.queue, r.i32());
    FERRY_ASSIGN_OR_RETURN(q.offset, r.i64());
    if (q.queue.queue < 0 || (q.kind == SinkContextRequest::kSeek && q.offset < 0))
      return Status::invalidArgument("JVM host answer: sink task request for " + q.queue.toString() + " at offset " +
                                     std::to_string(q.offset));
    out.push_back(std::move(q));
  }
  return out;
}

Status applySinkContextRequests(const std::vector<SinkContextRequest>& requests, SinkTaskContext& context) {
  for (const auto& q : requests) {
    switch (q.kind) {
      case SinkContextRequest::kSeek: FERRY_RETURN_IF_ERROR(context.seek({{q.queue, q.offset}})); break;
      case SinkContextRequest::kPause: FERRY_RETURN_IF_ERROR(context.pause({q.queue})); break;
      case SinkContextRequest::kResume: FERRY_RETURN_IF_ERROR(context.resume({q.queue})); break;
    }
  }
  return Status::ok();
}

}  // namespace ferry::jvm
