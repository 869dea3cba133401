// The chain's JSON cache (see json_cache.h).
#include "transforms/json_cache.h"

namespace ferry::transforms {

bool JsonCache::current(const Record& record, Side side) const {
  const Slot& s = slot(side);
  return s.from != nullptr && s.from == bytesOf(record, side).buffer();
}

bool JsonCache::hasDocument(const Record& record, Side side) const {
  return current(record, side) && slot(side).doc.has_value();
}

Json* JsonCache::get(Record& record, Side side) {
  Slot& s = slot(side);
  const Bytes& b = bytesOf(record, side);
  if (b.isNull()) {
    s = Slot{};
    return nullptr;
  }
  if (!current(record, side)) {
    s.from = b.buffer();
    s.doc = parseJson(b.view());
    ++parses_;
    s.dirty = false;
  }
  return s.doc ? &*s.doc : nullptr;
}

void JsonCache::set(Record& record, Side side, Json doc) {
  Slot& s = slot(side);
  Bytes& b = bytesOf(record, side);
  if (b.isNull()) b = Bytes(std::string());  // a placeholder buffer the document stands for
  s.from = b.buffer();
  s.doc = std::move(doc);
  s.dirty = true;
}

void JsonCache::setBytes(Record& record, Side side, Bytes bytes) {
  bytesOf(record, side) = std::move(bytes);
  slot(side) = Slot{};
}

void JsonCache::flush(Record& record, Side side) {
  Slot& s = slot(side);
  if (!s.dirty) return;
  s.dirty = false;
  if (!current(record, side) || !s.doc) return;  // the bytes were replaced after the change
  Bytes& b = bytesOf(record, side);
  b = toBytes(*s.doc);
  s.from = b.buffer();
  ++writes_;
}

Status JsonCache::flush(Record& record) {
  flush(record, Side::kKey);
  flush(record, Side::kValue);
  return Status::ok();
}

Result<bool> JsonTransform::apply(Record& record) {
  JsonCache cache;
  auto kept = applyJson(record, cache);
  if (!kept.isOk()) return kept;
  FERRY_RETURN_IF_ERROR(cache.flush(record));
  return kept;
}

Result<bool> JsonTransform::apply(Record& record, TransformCache& cache) {
  if (auto* json = dynamic_cast<JsonCache*>(&cache)) return applyJson(record, *json);
  FERRY_RETURN_IF_ERROR(cache.flush(record));
  return apply(record);
}

}  // namespace ferry::transforms
