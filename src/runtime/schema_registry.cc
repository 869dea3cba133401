// The schema topic (schema_registry.h).
#include "runtime/schema_registry.h"

#include <vector>

#include "core/logging.h"
#include "transforms/connect_json.h"
#include "transforms/json_util.h"

namespace ferry::runtime {

std::string SchemaRegistry::idText(std::uint64_t fingerprint) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, fingerprint >>= 4) out[static_cast<std::size_t>(i)] = kHex[fingerprint & 0xf];
  return out;
}

Status SchemaRegistry::openLocked() {
  if (log_) return Status::ok();
  auto log = backbone_.openSharedLog(topic_);
  if (!log.isOk()) return log.status().withContext("schema topic " + topic_);
  log_ = std::move(*log);
  return Status::ok();
}

Status SchemaRegistry::refreshLocked() {
  FERRY_RETURN_IF_ERROR(openLocked());
  FERRY_ASSIGN_OR_RETURN(const std::int64_t end, log_->endOffset());
  std::vector<backbone::SharedLog::Entry> entries;
  while (next_ < end) {
    entries.clear();
    FERRY_ASSIGN_OR_RETURN(auto n, log_->read(next_, entries, 1000, std::chrono::milliseconds(0)));
    if (n == 0) break;
    for (const auto& e : entries) {
      next_ = e.offset + 1;
      // An entry that is not one (damaged, or written by something else) is skipped, not fatal:
      // its id stays unknown and the records naming it are reported by the reader.
      auto j = transforms::parseJson(e.value.view());
      if (!j || !j->is_object() || !j->contains("id") || !(*j)["id"].is_string() || !j->contains("schema")) {
        core::logger("runtime")->warn("schema topic {}: entry {} is not a schema entry; skipped", topic_, e.offset);
        continue;
      }
      std::string id = (*j)["id"].get<std::string>();
      auto schema = transforms::readConnectSchema((*j)["schema"]);
      if (!schema.isOk() || idText((*schema)->fingerprint()) != id) {
        core::logger("runtime")->warn("schema topic {}: entry {} (id {}) holds no schema of that id; skipped", topic_,
                                      e.offset, id.substr(0, 32));
        continue;
      }
      std::lock_guard lock(mu_);
      byId_.emplace(std::move(id), std::move(*schema));  // the first entry of an id wins
    }
  }
  return Status::ok();
}

Result<SchemaPtr> SchemaRegistry::cached(const std::string& id, const Schema* expected) {
  std::lock_guard lock(mu_);
  auto it = byId_.find(id);
  if (it == byId_.end()) return SchemaPtr();
  if (expected && !(*it->second == *expected))
    return Status::failedPrecondition("schema topic " + topic_ + ": id " + id +
                                      " is taken by another schema (a fingerprint collision): this schema cannot "
                                      "travel by id; use schemas.enable=true");
  return it->second;
}

Result<std::string> SchemaRegistry::idOf(const SchemaPtr& schema) {
  std::string id = idText(schema->fingerprint());
  FERRY_ASSIGN_OR_RETURN(auto known, cached(id, schema.get()));
  if (known) return id;
  std::lock_guard io(ioMu_);
  FERRY_RETURN_IF_ERROR(refreshLocked());
  FERRY_ASSIGN_OR_RETURN(known, cached(id, schema.get()));
  if (known) return id;
  std::string entry = "{\"id\":\"" + id + "\",\"schema\":" + transforms::connectSchemaJson(*schema) + "}";
  auto at = log_->append(Bytes(std::move(entry)), std::chrono::seconds(30));
  if (!at.isOk()) return at.status().withContext("schema topic " + topic_);
  // Read back through the log (another worker may have appended the same id first: its entry wins).
  FERRY_RETURN_IF_ERROR(refreshLocked());
  FERRY_ASSIGN_OR_RETURN(known, cached(id, schema.get()));
  if (!known) return Status::internal("schema topic " + topic_ + ": the schema appended at " + std::to_string(*at) +
                                      " was not read back");
  return id;
}

Result<SchemaPtr> SchemaRegistry::schemaOf(std::string_view id) {
  const std::string key(id);
  FERRY_ASSIGN_OR_RETURN(auto known, cached(key, nullptr));
  if (known) return known;
  std::lock_guard io(ioMu_);
  FERRY_RETURN_IF_ERROR(refreshLocked());
  FERRY_ASSIGN_OR_RETURN(known, cached(key, nullptr));
  if (known) return known;
  return Status::notFound("schema topic " + topic_ + " holds no schema with id '" + key.substr(0, 32) + "'");
}

}  // namespace ferry::runtime
