// The transform chain (see transform_chain.h).
#include "runtime/transform_chain.h"

#include <map>

#include "runtime/config_util.h"
#include "transforms/json_cache.h"

namespace ferry::runtime {
namespace {

StringMap withPrefix(const StringMap& m, const std::string& prefix, std::initializer_list<const char*> skip) {
  StringMap out;
  for (const auto& [k, v] : m) {
    if (k.size() <= prefix.size() || k.compare(0, prefix.size(), prefix) != 0) continue;
    std::string key = k.substr(prefix.size());
    bool skipped = false;
    for (const char* s : skip) skipped = skipped || key == s;
    if (!skipped) out.emplace(std::move(key), v);
  }
  return out;
}

std::vector<std::string> listOf(const StringMap& m, const std::string& key) { return configList(m, key); }

}  // namespace

TransformChain::~TransformChain() {
  for (auto& s : steps_) s.transform->close();
}

Result<std::unique_ptr<TransformChain>> TransformChain::build(const PluginRegistry& registry, const StringMap& config) {
  auto chain = std::unique_ptr<TransformChain>(new TransformChain());
  std::map<std::string, Predicate*> byAlias;
  for (const auto& alias : listOf(config, "predicates")) {
    const std::string prefix = "predicates." + alias + ".";
    auto typeIt = config.find(prefix + "type");
    if (typeIt == config.end()) return Status::invalidArgument(prefix + "type is missing");
    FERRY_ASSIGN_OR_RETURN(auto p, registry.createPredicate(typeIt->second));
    FERRY_RETURN_IF_ERROR(p->configure(withPrefix(config, prefix, {"type"})).withContext("predicate " + alias));
    byAlias[alias] = p.get();
    chain->predicates_.push_back(std::move(p));
  }
  for (const auto& alias : listOf(config, "transforms")) {
    const std::string prefix = "transforms." + alias + ".";
    auto typeIt = config.find(prefix + "type");
    if (typeIt == config.end()) return Status::invalidArgument(prefix + "type is missing");
    FERRY_ASSIGN_OR_RETURN(auto t, registry.createTransform(typeIt->second));
    FERRY_RETURN_IF_ERROR(
        t->configure(withPrefix(config, prefix, {"type", "predicate", "negate"})).withContext("transform " + alias));
    Step step{alias, typeIt->second, std::move(t), nullptr, false};
    if (auto it = config.find(prefix + "predicate"); it != config.end() && !it->second.empty()) {
      auto p = byAlias.find(it->second);
      if (p == byAlias.end())
        return Status::invalidArgument("transform " + alias + ": predicate '" + it->second + "' is not defined");
      step.predicate = p->second;
    }
    if (auto it = config.find(prefix + "negate"); it != config.end()) step.negate = it->second == "true";
    chain->steps_.push_back(std::move(step));
  }
  return chain;
}

Result<bool> TransformChain::apply(Record& record) {
  // One cache per record: JSON steps share its parsed value; the bytes are written at most once
  // per run of consecutive JSON steps (json_cache.h).
  transforms::JsonCache cache;
  auto result = run(record, cache, nullptr);
  if (result.isOk() && *result) FERRY_RETURN_IF_ERROR(cache.flush(record));
  jsonParses_ += cache.parses();
  jsonWrites_ += cache.writes();
  return result;
}

std::vector<TransformChain::StepTrace> TransformChain::trace(Record& record) {
  std::vector<StepTrace> out;
  transforms::JsonCache cache;
  (void)run(record, cache, &out);
  return out;
}

Result<bool> TransformChain::run(Record& record, TransformCache& cache, std::vector<StepTrace>* trace) {
  for (auto& step : steps_) {
    StepTrace* t = nullptr;
    if (trace) {
      trace->push_back(StepTrace{step.alias, step.type, false, false, Status::ok(), Record{}});
      t = &trace->back();
    }
    if (step.predicate) {
      // A pending parsed value is written first only for a predicate that reads bytes. (Whether
      // the value is null is always current: a step that makes it null writes that at once.)
      if (step.predicate->readsKeyOrValueBytes()) FERRY_RETURN_IF_ERROR(cache.flush(record));
      auto matches = step.predicate->test(record);
      if (!matches.isOk()) {
        Status s = matches.status().withContext("predicate of transform " + step.alias);
        if (t) t->error = s;
        return s;
      }
      if (*matches == step.negate) {  // the predicate says: skip this transform
        if (t) {
          t->skipped = true;
          t->after = record;
        }
        continue;
      }
    }
    Result<bool> kept = [&]() -> Result<bool> {
      try {
        return step.transform->apply(record, cache);
      } catch (const std::exception& e) {
        return Status::internal(std::string("exception: ") + e.what());
      }
    }();
    if (!kept.isOk()) {
      Status s = kept.status().withContext("transform " + step.alias);
      if (t) t->error = s;
      return s;
    }
    if (t) {
      FERRY_RETURN_IF_ERROR(cache.flush(record));
      t->dropped = !*kept;
      t->after = record;
    }
    if (!*kept) return false;
  }
  return true;
}

}  // namespace ferry::runtime
