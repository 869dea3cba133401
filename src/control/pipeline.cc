// Pipelines <-> connectors (see pipeline.h).
#include "control/pipeline.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "core/json_bounds.h"
#include "runtime/config_util.h"

namespace ferry::control {
namespace {

Status fieldError(const std::string& field, const std::string& message) {
  return Status::invalidArgument(field + ": " + message);
}

bool startsWith(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// Keys the pipeline itself sets in connector configs; a source, sink or transform giving them is
// refused, because what it gave would be overwritten or would break the materialisation.
Status checkReserved(const StringMap& config, const std::string& field, const std::vector<std::string>& keys,
                     const std::vector<std::string>& prefixes, const std::string& why) {
  for (const auto& [k, v] : config) {
    bool hit = std::find(keys.begin(), keys.end(), k) != keys.end();
    for (const auto& p : prefixes) hit = hit || startsWith(k, p);
    if (hit) return fieldError(field + "." + k, why);
  }
  return Status::ok();
}

std::string sinkName(const std::string& pipeline, std::size_t i) {
  return pipeline + "-sink-" + std::to_string(i + 1);
}

// The transforms of a connector: the filter rule (`filter` non-empty), the route rule (`route`
// non-empty), then the pipeline's transforms (when `withTransforms`).
void addTransforms(const PipelineSpec& spec, StringMap& out, const std::string& filter, const std::string& route,
                   bool withTransforms) {
  std::vector<PipelineTransform> all;
  if (!filter.empty())
    all.push_back({kFilterAlias, {{"type", "Rule"}, {"sql", filter}, {"unmatched", "drop"}, {"output", "unchanged"}}});
  if (!route.empty()) all.push_back({kRouteAlias, {{"type", "Rule"}, {"sql", route}, {"unmatched", "drop"}}});
  if (withTransforms) all.insert(all.end(), spec.transforms.begin(), spec.transforms.end());
  addAliasedKeys(all, "transforms", out);
}

// What a materialised connector's transforms say, back in the pipeline's terms.
struct ChainParts {
  std::vector<PipelineTransform> transforms;
  std::string filter, route;
};
ChainParts transformsOf(const StringMap& config) {
  ChainParts out;
  for (const auto& alias : runtime::configList(config, "transforms")) {
    StringMap c = runtime::configWithPrefix(config, "transforms." + alias + ".");
    if (alias == kFilterAlias) out.filter = runtime::configValue(c, "sql");
    else if (alias == kRouteAlias) out.route = runtime::configValue(c, "sql");
    else out.transforms.push_back({alias, std::move(c)});
  }
  return out;
}

StringMap without(const StringMap& config, const std::vector<std::string>& keys,
                  const std::vector<std::string>& prefixes) {
  StringMap out;
  for (const auto& [k, v] : config) {
    bool drop = std::find(keys.begin(), keys.end(), k) != keys.end();
    for (const auto& p : prefixes) drop = drop || startsWith(k, p);
    if (!drop) out.emplace(k, v);
  }
  return out;
}

const char* modeText(PipelineMode m) { return m == PipelineMode::kDirect ? "direct" : "backbone"; }

}  // namespace

Result<std::vector<PipelineTransform>> parseAliasedList(const Json& list, const std::string& field,
                                                        const std::string& defaultPrefix) {
  if (!list.is_array()) return fieldError(field, "must be a list of {\"alias\", \"type\", ...} objects");
  std::vector<PipelineTransform> out;
  std::set<std::string> aliases;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string item = field + "[" + std::to_string(i) + "]";
    FERRY_ASSIGN_OR_RETURN(StringMap cfg, core::jsonObjectToStringMap(list[i], item));
    PipelineTransform tr;
    if (auto a = cfg.find("alias"); a != cfg.end()) {
      tr.alias = a->second;
      cfg.erase(a);
    } else {
      tr.alias = defaultPrefix + std::to_string(i + 1);
    }
    if (tr.alias.empty() || tr.alias.find_first_of(", .") != std::string::npos)
      return fieldError(item + ".alias", "must be a non-empty name without ',', '.' or spaces");
    if (!aliases.insert(tr.alias).second) return fieldError(item + ".alias", "'" + tr.alias + "' is used twice");
    if (runtime::configValue(cfg, "type").empty()) return fieldError(item + ".type", "required (a class or alias)");
    tr.config = std::move(cfg);
    out.push_back(std::move(tr));
  }
  return out;
}

void addAliasedKeys(const std::vector<PipelineTransform>& items, const std::string& kind, StringMap& out) {
  if (items.empty()) return;
  std::string list;
  for (const auto& t : items) {
    list += (list.empty() ? "" : ",") + t.alias;
    for (const auto& [k, v] : t.config) out[kind + "." + t.alias + "." + k] = v;
  }
  out[kind] = list;
}

Status validatePipelineName(std::string_view name) {
  if (name.empty()) return Status::invalidArgument("pipeline name must not be empty");
  if (name.size() > 200) return Status::invalidArgument("pipeline name is longer than 200 characters");
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok)
      return Status::invalidArgument("pipeline name '" + std::string(name) +
                                     "' may hold only letters, digits, '.', '_' and '-' (it prefixes "
                                     "connector and topic names)");
  }
  return Status::ok();
}

Result<PipelineSpec> parsePipeline(std::string_view body, const std::optional<std::string>& pathName) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return Status::invalidArgument("a pipeline must be a JSON object; the text is empty");
  FERRY_ASSIGN_OR_RETURN(Json j, core::parseJsonBounded<Json>(body, core::kConfigJsonLimits));
  if (!j.is_object()) return Status::invalidArgument("a pipeline must be a JSON object");
  static const std::set<std::string> kFields = {"name", "mode", "source", "transforms", "sink", "sinks", "topic",
                                                "filter"};
  for (const auto& [k, v] : j.items())
    if (!kFields.count(k))
      return fieldError(k, "unknown pipeline field (known: name, mode, source, filter, transforms, sinks, sink, topic)");
  PipelineSpec spec;
  if (auto n = j.find("name"); n != j.end() && !n->is_null()) {
    if (!n->is_string()) return fieldError("name", "must be a string");
    spec.name = n->get<std::string>();
    if (pathName && spec.name != *pathName)
      return fieldError("name", "'" + spec.name + "' differs from the name in the path '" + *pathName + "'");
  } else if (pathName) {
    spec.name = *pathName;
  } else {
    return fieldError("name", "required");
  }
  FERRY_RETURN_IF_ERROR(validatePipelineName(spec.name).withContext("name"));

  if (auto m = j.find("mode"); m != j.end() && !m->is_null()) {
    const std::string mode = m->is_string() ? m->get<std::string>() : "";
    if (mode == "direct") spec.mode = PipelineMode::kDirect;
    else if (mode == "backbone") spec.mode = PipelineMode::kBackbone;
    else return fieldError("mode", "must be \"direct\" or \"backbone\"");
  }

  auto src = j.find("source");
  if (src == j.end() || src->is_null()) return fieldError("source", "required (a source connector's config)");
  FERRY_ASSIGN_OR_RETURN(spec.source, core::jsonObjectToStringMap(*src, "source"));
  if (runtime::configValue(spec.source, "connector.class").empty())
    return fieldError("source.connector.class", "required");

  if (auto t = j.find("transforms"); t != j.end() && !t->is_null()) {
    FERRY_ASSIGN_OR_RETURN(spec.transforms, parseAliasedList(*t, "transforms", "t"));
    for (std::size_t i = 0; i < spec.transforms.size(); ++i)
      if (spec.transforms[i].alias == kFilterAlias || spec.transforms[i].alias == kRouteAlias)
        return fieldError("transforms[" + std::to_string(i) + "].alias",
                          "'" + spec.transforms[i].alias + "' is reserved for the pipeline's filter and rules");
  }

  const auto one = j.find("sink");
  const auto many = j.find("sinks");
  const bool hasOne = one != j.end() && !one->is_null(), hasMany = many != j.end() && !many->is_null();
  if (hasOne && hasMany) return fieldError("sink", "give either \"sink\" or \"sinks\", not both");
  if (hasOne) {
    FERRY_ASSIGN_OR_RETURN(StringMap s, core::jsonObjectToStringMap(*one, "sink"));
    spec.sinks.push_back(std::move(s));
  } else if (hasMany) {
    if (!many->is_array() || many->empty()) return fieldError("sinks", "must be a non-empty list of sink configs");
    for (std::size_t i = 0; i < many->size(); ++i) {
      FERRY_ASSIGN_OR_RETURN(StringMap s, core::jsonObjectToStringMap((*many)[i], "sinks[" + std::to_string(i) + "]"));
      spec.sinks.push_back(std::move(s));
    }
  } else {
    return fieldError("sinks", "required (one sink config or more)");
  }
  for (std::size_t i = 0; i < spec.sinks.size(); ++i) {
    if (runtime::configValue(spec.sinks[i], "connector.class").empty())
      return fieldError("sinks[" + std::to_string(i) + "].connector.class", "required");
    std::string rule;
    if (auto r = spec.sinks[i].find("rule"); r != spec.sinks[i].end()) {
      if (r->second.empty()) return fieldError("sinks[" + std::to_string(i) + "].rule", "must be a non-empty rule");
      rule = r->second;
      spec.sinks[i].erase(r);
    }
    spec.sinkRules.push_back(std::move(rule));
  }
  if (auto f = j.find("filter"); f != j.end() && !f->is_null()) {
    if (!f->is_string() || f->get<std::string>().empty())
      return fieldError("filter", "must be a rule (SELECT ... FROM \"<topic filter>\" WHERE ...)");
    spec.filter = f->get<std::string>();
  }

  if (auto t = j.find("topic"); t != j.end() && !t->is_null()) {
    if (!t->is_string() || t->get<std::string>().empty()) return fieldError("topic", "must be a non-empty string");
    if (spec.mode != PipelineMode::kBackbone) return fieldError("topic", "only a backbone pipeline has a topic");
    spec.topic = t->get<std::string>();
  } else if (spec.mode == PipelineMode::kBackbone) {
    spec.topic = "pipeline-" + spec.name;
  }

  const std::string why = "is set by the pipeline (declare transforms in the pipeline's \"transforms\")";
  FERRY_RETURN_IF_ERROR(checkReserved(spec.source, "source", {"name", kPipelineKey, kPipelineRoleKey, "transforms",
                                                              "predicates", "sink.connector.class"},
                                      {"transforms.", "predicates.", "pipeline."}, why));
  if (spec.mode == PipelineMode::kDirect) {
    if (spec.sinks.size() != 1)
      return fieldError("sinks", "a direct pipeline has exactly one sink (a backbone pipeline may have several)");
    FERRY_RETURN_IF_ERROR(checkReserved(spec.source, "source", {}, {"sink."},
                                        "sink.* keys are given in the pipeline's \"sinks\""));
  } else if (spec.source.count("topic")) {
    return fieldError("source.topic", "is set by the pipeline (use the pipeline's \"topic\")");
  }
  for (std::size_t i = 0; i < spec.sinks.size(); ++i) {
    const std::string field = "sinks[" + std::to_string(i) + "]";
    FERRY_RETURN_IF_ERROR(checkReserved(spec.sinks[i], field,
                                        {"name", kPipelineKey, kPipelineRoleKey, "transforms", "predicates",
                                         "topics", "topics.regex"},
                                        {"transforms.", "predicates.", "pipeline."},
                                        "is set by the pipeline (transforms go in the pipeline's \"transforms\", "
                                        "the topic in its \"topic\")"));
  }
  return spec;
}

std::vector<PipelineConnector> materialisePipeline(const PipelineSpec& spec) {
  std::vector<PipelineConnector> out;
  if (spec.mode == PipelineMode::kDirect) {
    StringMap c = spec.source;
    for (const auto& [k, v] : spec.sinks.front()) c["sink." + k] = v;
    addTransforms(spec, c, spec.filter, spec.sinkRules.empty() ? "" : spec.sinkRules.front(), true);
    c[kPipelineKey] = spec.name;
    c[kPipelineRoleKey] = "direct";
    out.push_back({spec.name, std::move(c)});
    return out;
  }
  StringMap src = spec.source;
  src["topic"] = spec.topic;
  addTransforms(spec, src, spec.filter, "", false);
  src[kPipelineKey] = spec.name;
  src[kPipelineRoleKey] = "source";
  out.push_back({spec.name + "-source", std::move(src)});
  for (std::size_t i = 0; i < spec.sinks.size(); ++i) {
    StringMap s = spec.sinks[i];
    s["topics"] = spec.topic;
    addTransforms(spec, s, "", i < spec.sinkRules.size() ? spec.sinkRules[i] : "", true);
    s[kPipelineKey] = spec.name;
    s[kPipelineRoleKey] = "sink:" + std::to_string(i + 1);
    out.push_back({sinkName(spec.name, i), std::move(s)});
  }
  return out;
}

std::string pipelineField(const PipelineSpec& spec, const std::string& connector, const std::string& key) {
  if (startsWith(key, std::string("transforms.") + kFilterAlias + ".")) return "filter";
  if (startsWith(key, std::string("transforms.") + kRouteAlias + ".")) {
    if (spec.mode == PipelineMode::kDirect) return "sinks[0].rule";
    for (std::size_t i = 0; i < spec.sinks.size(); ++i)
      if (connector == sinkName(spec.name, i)) return "sinks[" + std::to_string(i) + "].rule";
  }
  if (startsWith(key, "transforms.")) return key;
  if (spec.mode == PipelineMode::kDirect) {
    if (startsWith(key, "sink.")) return "sinks[0]." + key.substr(5);
    return "source." + key;
  }
  if (connector == spec.name + "-source") return key == "topic" ? "topic" : "source." + key;
  for (std::size_t i = 0; i < spec.sinks.size(); ++i)
    if (connector == sinkName(spec.name, i))
      return key == "topics" ? "topic" : "sinks[" + std::to_string(i) + "]." + key;
  return connector + "." + key;
}

Result<PipelineSpec> pipelineFromConnectors(const std::string& name, const std::vector<PipelineConnector>& connectors) {
  PipelineSpec spec;
  spec.name = name;
  const PipelineConnector* direct = nullptr;
  const PipelineConnector* source = nullptr;
  std::vector<std::pair<int, const PipelineConnector*>> sinks;
  for (const auto& c : connectors) {
    const std::string role = runtime::configValue(c.config, kPipelineRoleKey);
    if (role == "direct") {
      direct = &c;
    } else if (role == "source") {
      source = &c;
    } else if (startsWith(role, "sink:")) {
      int i = 0;
      auto [p, ec] = std::from_chars(role.data() + 5, role.data() + role.size(), i);
      if (ec != std::errc() || p != role.data() + role.size() || i < 1)
        return Status::failedPrecondition("connector '" + c.name + "' of pipeline '" + name + "' has role '" + role +
                                          "'");
      sinks.emplace_back(i, &c);
    } else {
      return Status::failedPrecondition("connector '" + c.name + "' of pipeline '" + name +
                                        "' has no pipeline.role ('" + role + "')");
    }
  }
  const std::vector<std::string> own = {"name", kPipelineKey, kPipelineRoleKey, "transforms"};
  if (direct != nullptr) {
    if (source != nullptr || !sinks.empty() || connectors.size() != 1)
      return Status::failedPrecondition("pipeline '" + name + "' mixes a direct connector with others");
    spec.mode = PipelineMode::kDirect;
    ChainParts parts = transformsOf(direct->config);
    spec.transforms = std::move(parts.transforms);
    spec.filter = std::move(parts.filter);
    spec.source = without(direct->config, own, {"transforms.", "sink."});
    spec.sinks.push_back(runtime::configWithPrefix(direct->config, "sink."));
    spec.sinkRules.push_back(std::move(parts.route));
    return spec;
  }
  if (source == nullptr || sinks.empty())
    return Status::failedPrecondition("pipeline '" + name + "' is missing its " +
                                      (source == nullptr ? "source connector" : "sink connectors") +
                                      " (deleted by hand?); PUT the pipeline again or DELETE it");
  spec.mode = PipelineMode::kBackbone;
  spec.topic = runtime::configValue(source->config, "topic");
  spec.source = without(source->config, {"name", kPipelineKey, kPipelineRoleKey, "topic", "transforms"},
                        {"transforms."});
  spec.filter = transformsOf(source->config).filter;
  std::sort(sinks.begin(), sinks.end());
  spec.transforms = transformsOf(sinks.front().second->config).transforms;
  for (const auto& [i, c] : sinks) {
    spec.sinks.push_back(without(c->config, {"name", kPipelineKey, kPipelineRoleKey, "transforms", "topics"},
                                 {"transforms."}));
    spec.sinkRules.push_back(transformsOf(c->config).route);
  }
  return spec;
}

Json pipelineJson(const PipelineSpec& spec) {
  Json j = Json::object();
  j["name"] = spec.name;
  j["mode"] = modeText(spec.mode);
  j["source"] = spec.source;
  Json ts = Json::array();
  for (const auto& t : spec.transforms) {
    Json o = Json::object();
    o["alias"] = t.alias;
    for (const auto& [k, v] : t.config) o[k] = v;
    ts.push_back(std::move(o));
  }
  j["transforms"] = std::move(ts);
  if (!spec.filter.empty()) j["filter"] = spec.filter;
  Json sinks = Json::array();
  for (std::size_t i = 0; i < spec.sinks.size(); ++i) {
    Json s = spec.sinks[i];
    if (i < spec.sinkRules.size() && !spec.sinkRules[i].empty()) s["rule"] = spec.sinkRules[i];
    sinks.push_back(std::move(s));
  }
  j["sinks"] = std::move(sinks);
  if (spec.mode == PipelineMode::kBackbone) j["topic"] = spec.topic;
  return j;
}

}  // namespace ferry::control
