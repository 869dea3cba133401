#include "control/pipeline_ops.h"

#include <map>
#include <set>

#include "runtime/secrets.h"

namespace ferry::control {

std::vector<PipelineConnector> pipelineConnectors(const Herder& herder, const std::string& name) {
  std::vector<PipelineConnector> out;
  for (const auto& c : herder.connectors()) {
    auto config = herder.connectorConfig(c);
    if (!config.isOk()) continue;  // deleted meanwhile
    auto it = config->find(kPipelineKey);
    if (it != config->end() && it->second == name) out.push_back({c, std::move(*config)});
  }
  return out;
}

std::vector<std::string> pipelineNames(const Herder& herder) {
  std::set<std::string> names;
  for (const auto& c : herder.connectors()) {
    auto config = herder.connectorConfig(c);
    if (!config.isOk()) continue;
    if (auto it = config->find(kPipelineKey); it != config->end() && !it->second.empty()) names.insert(it->second);
  }
  return {names.begin(), names.end()};
}

Status validatePipeline(const Herder& herder, const PipelineSpec& spec,
                        const std::vector<PipelineConnector>& connectors) {
  std::string errors;
  int count = 0;
  for (const auto& c : connectors) {
    auto report = herder.validateConfig(c.config.at("connector.class"), c.config);
    if (!report.isOk()) {
      // NotFound: an unknown class; say which field named it.
      const bool sinkSide = c.name != spec.name && c.name != spec.name + "-source";
      const std::string field = sinkSide ? pipelineField(spec, c.name, "connector.class") : "source.connector.class";
      return Status::invalidArgument(field + ": " + report.status().message());
    }
    for (const auto& k : report->keys)
      for (const auto& e : k.errors) {
        errors += "\n  " + pipelineField(spec, c.name, k.definition.name) + ": " + e;
        ++count;
      }
  }
  if (count == 0) return Status::ok();
  return Status::invalidArgument("pipeline '" + spec.name + "' is invalid (" + std::to_string(count) +
                                 (count == 1 ? " error" : " errors") + "):" + errors);
}

namespace {

// What apply changed, to be undone in reverse order when a later step fails.
struct Undo {
  std::vector<std::string> created;                    // delete these
  std::vector<PipelineConnector> replaced;             // put these configs back
  std::vector<PipelineConnector> deleted;              // re-create these

  // Undoes everything; returns "" or a sentence naming what could not be undone.
  std::string run(Herder& herder) const {
    std::string failed;
    auto note = [&](const std::string& what, const Status& s) {
      failed += (failed.empty() ? "" : "; ") + what + ": " + s.message();
    };
    for (auto it = created.rbegin(); it != created.rend(); ++it)
      if (auto s = herder.deleteConnector(*it); !s.isOk() && s.code() != StatusCode::kNotFound)
        note("deleting " + *it, s);
    for (const auto& c : replaced) {
      bool made = false;
      if (auto r = herder.putConnectorConfig(c.name, c.config, &made); !r.isOk()) note("restoring " + c.name, r.status());
    }
    for (const auto& c : deleted) {
      bool made = false;
      if (auto r = herder.putConnectorConfig(c.name, c.config, &made); !r.isOk()) note("re-creating " + c.name, r.status());
    }
    return failed;
  }
};

// The cause, with what could not be undone appended (the code stays the cause's).
Status undone(Herder& herder, const Undo& undo, const Status& cause) {
  const std::string left = undo.run(herder);
  if (left.empty()) return Status(cause.code(), cause.message() + " (the pipeline's other changes were undone)");
  return Status(cause.code(), cause.message() + " (undoing the pipeline's other changes failed: " + left + ")");
}

}  // namespace

Result<bool> applyPipeline(Herder& herder, const PipelineSpec& spec, PipelineWrite write) {
  const auto existing = pipelineConnectors(herder, spec.name);
  if (write == PipelineWrite::kCreate && !existing.empty())
    return Status::alreadyExists("pipeline " + spec.name + " already exists");
  const auto connectors = materialisePipeline(spec);
  std::map<std::string, const PipelineConnector*> mine;
  for (const auto& c : existing) mine[c.name] = &c;
  for (const auto& c : connectors)
    if (!mine.count(c.name) && herder.connectorInfo(c.name).isOk())
      return Status::alreadyExists("pipeline " + spec.name + " needs connector name '" + c.name +
                                   "', which another connector already has");
  FERRY_RETURN_IF_ERROR(validatePipeline(herder, spec, connectors));

  Undo undo;
  std::set<std::string> keep;
  for (const auto& c : connectors) keep.insert(c.name);
  for (const auto& c : existing) {
    if (keep.count(c.name)) continue;
    if (auto s = herder.deleteConnector(c.name); !s.isOk() && s.code() != StatusCode::kNotFound)
      return undone(herder, undo, s.withContext("removing connector " + c.name));
    undo.deleted.push_back(c);
  }
  for (const auto& c : connectors) {
    StringMap config = c.config;
    auto prev = mine.find(c.name);
    if (prev != mine.end()) config = runtime::restoreHidden(std::move(config), prev->second->config);
    bool created = false;
    // Creating: createConnector, so a connector someone else created meanwhile is not replaced.
    auto info = write == PipelineWrite::kCreate ? herder.createConnector(c.name, config, std::nullopt)
                                                : herder.putConnectorConfig(c.name, config, &created);
    if (write == PipelineWrite::kCreate) created = info.isOk();
    if (!info.isOk()) return undone(herder, undo, info.status().withContext("connector " + c.name));
    if (created)
      undo.created.push_back(c.name);
    else if (prev != mine.end())
      undo.replaced.push_back(*prev->second);
  }
  return existing.empty();
}

Status removePipeline(Herder& herder, const std::string& name) {
  const auto connectors = pipelineConnectors(herder, name);
  if (connectors.empty()) return Status::notFound("pipeline " + name + " not found");
  for (const auto& c : connectors)
    if (auto s = herder.deleteConnector(c.name); !s.isOk() && s.code() != StatusCode::kNotFound)
      return s.withContext("connector " + c.name);
  return Status::ok();
}

}  // namespace ferry::control
