// Connector configuration: framework keys and whole-config validation (see connector_config.h).
#include "runtime/connector_config.h"

#include <algorithm>
#include <regex>
#include <set>

#include "runtime/config_util.h"

namespace ferry::runtime {
namespace {

using validators::atLeast;
using validators::oneOf;

ConfigDef commonDef() {
  ConfigDef d;
  d.define("name", ConfigType::kString, "", Importance::kHigh,
           "Connector name (taken from the request; optional inside config).");
  d.define("connector.class", ConfigType::kClass, std::nullopt, Importance::kHigh,
           "Connector class name or alias (GET /connector-plugins lists them).", validators::nonEmptyString());
  d.define("pipeline", ConfigType::kString, "", Importance::kLow,
           "The pipeline this connector belongs to (set by /pipelines; GET /pipelines/{name} shows it).");
  d.define("pipeline.role", ConfigType::kString, "", Importance::kLow,
           "This connector's part in its pipeline: direct, source or sink:<n> (set by /pipelines).");
  d.define("tasks.max", ConfigType::kInt, "1", Importance::kHigh, "Most tasks this connector runs.", atLeast(1));
  d.define("task.cost", ConfigType::kDouble, "1", Importance::kLow,
           "Declared cost of each task of this connector for the load-weighted assignment strategy "
           "(cluster.assignment.strategy=load-weighted; a task config may set its own).", atLeast(0));
  d.define("key.converter", ConfigType::kClass, "", Importance::kLow,
           "Converter for keys at the backbone boundary (default: the worker's).");
  d.define("value.converter", ConfigType::kClass, "", Importance::kLow,
           "Converter for values at the backbone boundary (default: the worker's).");
  d.define("header.converter", ConfigType::kClass, "", Importance::kLow,
           "Converter for every header value at the backbone boundary (default: the worker's, "
           "SimpleHeaderConverter unless set).");
  d.define("transforms", ConfigType::kList, "", Importance::kMedium,
           "Aliases of the transforms applied in order (transforms.<alias>.type=...).");
  d.define("predicates", ConfigType::kList, "", Importance::kMedium,
           "Aliases of predicates used by transforms (predicates.<alias>.type=...).");
  d.define("errors.tolerance", ConfigType::kString, "none", Importance::kMedium,
           "none: a record that fails conversion or a transform fails the task; all: skip it "
           "(logged, and sent to the dead-letter topic when one is set).",
           oneOf({"none", "all"}));
  d.define("errors.retry.timeout", ConfigType::kLong, "0", Importance::kMedium,
           "How long a retriable failure is retried (ms; -1 = forever).", atLeast(-1));
  d.define("errors.retry.delay.max.ms", ConfigType::kLong, "60000", Importance::kLow,
           "Largest delay between retries.", atLeast(1));
  d.define("errors.log.enable", ConfigType::kBool, "false", Importance::kLow, "Log every tolerated error.");
  d.define("errors.log.include.messages", ConfigType::kBool, "false", Importance::kLow,
           "Include the record in logged errors.");
  d.define("errors.deadletterqueue.topic.name", ConfigType::kString, "", Importance::kMedium,
           "Backbone topic that receives records skipped under errors.tolerance=all, with their "
           "original bytes and the reason in headers.");
  d.define("errors.deadletterqueue.topic.replication.factor", ConfigType::kInt, "1", Importance::kLow,
           "Accepted for Kafka Connect compatibility (the embedded backbone keeps one copy).");
  d.define("errors.deadletterqueue.context.headers.enable", ConfigType::kBool, "true", Importance::kLow,
           "Add __connect.errors.* headers (stage, reason, origin) to dead-letter records.");
  return d;
}

// Kafka Connect's groups for the framework keys (ConfigKeyInfo.group; validate lists them in
// `groups`), so UIs built for it lay the keys out the same way.
ConfigDef withKafkaGroups(const ConfigDef& in) {
  ConfigDef out;
  for (ConfigKey k : in.keys()) {
    const auto starts = [&](const char* p) { return k.name.rfind(p, 0) == 0; };
    if (starts("errors.")) k.group = "Error Handling";
    else if (k.name == "transforms") k.group = "Transforms";
    else if (k.name == "predicates") k.group = "Predicates";
    else if (starts("topic.creation.")) k.group = "Topic Creation";
    else if (starts("exactly.once.") || starts("transaction.")) k.group = "Exactly Once Support";
    else k.group = "Common";
    out.define(std::move(k));
  }
  for (const auto& p : in.allowedPrefixes()) out.allowPrefix(p);
  return out;
}

const ConfigDef& sourceDef() {
  static const ConfigDef d = [] {
    ConfigDef c = commonDef();
    // Kafka Connect's names (KIP-618); in effect when the worker has exactly.once.source.support=enabled.
    c.define("exactly.once.support", ConfigType::kString, "requested", Importance::kMedium,
             "requested or required: with exactly.once.source.support=enabled every ferry source runs "
             "exactly-once (records and positions in one transaction), so both mean the same; required "
             "makes the task fail when the worker does not have it enabled.",
             oneOf({"requested", "required"}));
    c.define("transaction.boundary", ConfigType::kString, "poll", Importance::kMedium,
             "Where an exactly-once source commits its transaction: poll (after every non-empty poll "
             "batch) or interval (every transaction.boundary.interval.ms). Kafka Connect's "
             "connector-defined boundaries are not supported.",
             oneOf({"poll", "interval"}));
    c.define("transaction.boundary.interval.ms", ConfigType::kLong, "-1", Importance::kLow,
             "Commit interval for transaction.boundary=interval (-1: the worker's "
             "offset.flush.interval.ms).", validators::atLeast(-1));
    // Kafka Connect's topic creation keys (KIP-158): accepted and stored; topic.creation.<group>.*
    // keys are open-ended (frameworkPrefixes). The backbone creates topics with its own defaults.
    c.define("topic.creation.groups", ConfigType::kList, "", Importance::kLow,
             "Kafka Connect's topic creation groups (accepted for compatibility; the backbone creates "
             "topics with backbone.topic.default.queues).");
    return withKafkaGroups(c);
  }();
  return d;
}
const ConfigDef& sinkDef() {
  static const ConfigDef d = [] {
    ConfigDef c = commonDef();
    // Kafka Connect's rule: exactly one of topics and topics.regex (checked in
    // validateConnectorConfig, since a validator sees one key only).
    c.define("topics", ConfigType::kList, "", Importance::kHigh,
             "Backbone topics to consume (this or topics.regex).");
    c.define("topics.regex", ConfigType::kString, "", Importance::kHigh,
             "A regular expression (ECMAScript syntax) naming the backbone topics to consume, matched "
             "against the topics that exist when a task starts (this or topics).");
    return withKafkaGroups(c);
  }();
  return d;
}
const ConfigDef& directDef() {
  static const ConfigDef d = [] {
    ConfigDef c = commonDef();
    c.define("sink.connector.class", ConfigType::kClass, std::nullopt, Importance::kHigh,
             "Sink connector class of a direct connector; sink.* keys configure it.",
             validators::nonEmptyString());
    return withKafkaGroups(c);
  }();
  return d;
}

std::string get(const StringMap& m, const std::string& k) { return configValue(m, k); }
StringMap withPrefix(const StringMap& m, const std::string& prefix) { return configWithPrefix(m, prefix); }
std::vector<std::string> listOf(const StringMap& m, const std::string& key) { return configList(m, key); }

void addError(ConfigValidation& v, const std::string& key, std::string msg) { v.errors[key].push_back(std::move(msg)); }

// Validates a plugin's own config (given with `prefix` in the connector config) against its
// ConfigDef; errors and unknown keys are reported under their full names.
void validatePluginKeys(const ConfigDef& def, const StringMap& own, const std::string& prefix,
                        const std::set<std::string>& reserved, ConfigValidation& out) {
  StringMap filtered;
  for (const auto& [k, v] : own)
    if (!reserved.count(k)) filtered.emplace(k, v);
  ConfigValidation v = def.validate(filtered);
  for (auto& [k, msgs] : v.errors)
    for (auto& m : msgs) addError(out, prefix + k, m);
  for (auto& k : v.unknownKeys) out.unknownKeys.push_back(prefix + k);
}

void validateChain(const PluginRegistry& registry, const StringMap& config, ConfigValidation& out) {
  const auto predicates = listOf(config, "predicates");
  std::set<std::string> predicateSet(predicates.begin(), predicates.end());
  for (const auto& alias : predicates) {
    const std::string prefix = "predicates." + alias + ".";
    const std::string type = get(config, prefix + "type");
    if (type.empty()) {
      addError(out, prefix + "type", "Missing required configuration \"" + prefix + "type\"");
      continue;
    }
    auto p = registry.createPredicate(type);
    if (!p.isOk()) {
      addError(out, prefix + "type", p.status().message());
      continue;
    }
    validatePluginKeys((*p)->configDef(), withPrefix(config, prefix), prefix, {"type"}, out);
  }
  const auto transforms = listOf(config, "transforms");
  for (const auto& alias : transforms) {
    const std::string prefix = "transforms." + alias + ".";
    const std::string type = get(config, prefix + "type");
    if (type.empty()) {
      addError(out, prefix + "type", "Missing required configuration \"" + prefix + "type\"");
      continue;
    }
    auto t = registry.createTransform(type);
    if (!t.isOk()) {
      addError(out, prefix + "type", t.status().message());
      continue;
    }
    const std::string pred = get(config, prefix + "predicate");
    if (!pred.empty() && !predicateSet.count(pred))
      addError(out, prefix + "predicate", "predicate '" + pred + "' is not listed in 'predicates'");
    const std::string negate = get(config, prefix + "negate");
    if (!negate.empty() && !ConfigDef::parseValue(ConfigType::kBool, negate).isOk())
      addError(out, prefix + "negate", "'" + negate + "' is not a boolean (true or false)");
    const std::size_t before = out.errorCount();
    validatePluginKeys((*t)->configDef(), withPrefix(config, prefix), prefix, {"type", "predicate", "negate"}, out);
    // Keys well-formed: let the transform check what only it understands (rules, templates, ...).
    if (out.errorCount() == before) {
      StringMap own = withPrefix(config, prefix);
      for (const char* k : {"type", "predicate", "negate"}) own.erase(k);
      if (Status st = (*t)->configure(own); !st.isOk()) {
        // "rule.a.mqtt.filter: ..." is reported against that key when it names one.
        const std::string& msg = st.message();
        const auto colon = msg.find(": ");
        const std::string named = colon == std::string::npos ? "" : msg.substr(0, colon);
        if (!named.empty() && (own.count(named) || (*t)->configDef().find(named)))
          addError(out, prefix + named, msg.substr(colon + 2));
        else
          addError(out, prefix + "type", msg);
      }
    }
  }
  // Keys under transforms./predicates. for aliases that are not listed.
  for (const auto& [k, v] : config) {
    for (const char* group : {"transforms.", "predicates."}) {
      const std::string g = group;
      if (k.compare(0, g.size(), g) != 0) continue;
      const std::string rest = k.substr(g.size());
      const std::string alias = rest.substr(0, rest.find('.'));
      const auto& listed = g == "transforms." ? transforms : predicates;
      if (std::find(listed.begin(), listed.end(), alias) == listed.end())
        addError(out, k, "'" + alias + "' is not listed in '" + g.substr(0, g.size() - 1) + "'");
    }
  }
  for (const char* side : {"key", "value", "header"}) {
    const std::string key = std::string(side) + ".converter";
    const std::string cls = get(config, key);
    if (cls.empty()) continue;
    auto c = registry.createConverter(cls);
    if (!c.isOk()) {
      addError(out, key, c.status().message());
      continue;
    }
    const std::size_t before = out.errorCount();
    const StringMap own = withPrefix(config, key + ".");
    validatePluginKeys((*c)->configDef(), own, key + ".", {}, out);
    // Keys well-formed: configure it as a task would, for what only the converter checks.
    if (out.errorCount() == before) {
      StringMap cfg = own;
      cfg["converter.type"] = side;
      if (Status st = (*c)->configure(cfg, std::string_view(side) == "key"); !st.isOk())
        addError(out, key, st.message());
    }
  }
}

}  // namespace

const char* connectorShapeName(ConnectorShape s) noexcept {
  switch (s) {
    case ConnectorShape::kSource: return "source";
    case ConnectorShape::kSink: return "sink";
    case ConnectorShape::kDirect: return "direct";
  }
  return "source";
}

const ConfigDef& frameworkConfigDef(ConnectorShape shape) {
  switch (shape) {
    case ConnectorShape::kSource: return sourceDef();
    case ConnectorShape::kSink: return sinkDef();
    case ConnectorShape::kDirect: return directDef();
  }
  return sourceDef();
}

std::vector<std::string> frameworkPrefixes(ConnectorShape shape) {
  std::vector<std::string> p{"transforms.", "predicates.", "key.converter.", "value.converter.",
                             "header.converter."};
  // Kafka Connect's client overrides, checked against the worker's
  // connector.client.config.override.policy (control/herder_common.cc).
  for (const char* o : kClientOverridePrefixes) p.push_back(o);
  if (shape != ConnectorShape::kSink) p.push_back("topic.creation.");
  if (shape == ConnectorShape::kDirect) p.push_back("sink.");
  return p;
}

StringMap sinkSideConfig(const StringMap& config) { return withPrefix(config, "sink."); }

StringMap expandDirectPair(const PluginRegistry& registry, const StringMap& config) {
  const std::string cls = get(config, "connector.class");
  if (cls.empty()) return config;
  const std::string sinkCls = registry.pairedSink(cls);
  if (sinkCls.empty()) return config;
  const std::string given = get(config, "sink.connector.class");
  if (!given.empty() && given != sinkCls) return config;  // the user's own pairing
  auto sink = registry.createConnector(sinkCls);
  if (!sink.isOk()) return config;
  StringMap out = config;
  out["sink.connector.class"] = sinkCls;
  for (const auto& k : (*sink)->configDef().keys()) {
    auto it = config.find(k.name);
    if (it != config.end()) out["sink." + k.name] = it->second;
  }
  return out;
}

Result<ConnectorValidation> validateConnectorConfig(const PluginRegistry& registry, const StringMap& given) {
  const StringMap config = expandDirectPair(registry, given);
  ConnectorValidation out;
  const std::string cls = get(config, "connector.class");
  if (cls.empty()) {
    // Report against the source framework keys so every other field is checked too.
    out.shape = ConnectorShape::kSource;
    for (const auto& k : sourceDef().keys()) out.keys.push_back(k);
    out.validation = sourceDef().validate(config, frameworkPrefixes(ConnectorShape::kSource));
    // Unknown keys cannot be told apart without a class: report only the framework errors.
    out.validation.unknownKeys.clear();
    return out;
  }
  auto info = registry.find(cls);
  if (!info.isOk()) return info.status();
  if (info->kind != PluginKind::kSourceConnector && info->kind != PluginKind::kSinkConnector)
    return Status::notFound("'" + cls + "' is a " + std::string(pluginKindName(info->kind)) +
                            ", not a connector class (GET /connector-plugins lists them)");
  out.connectorClass = info->className;
  const bool hasSinkClass = config.count("sink.connector.class") != 0;
  if (info->kind == PluginKind::kSinkConnector) {
    out.shape = ConnectorShape::kSink;
  } else {
    out.shape = hasSinkClass ? ConnectorShape::kDirect : ConnectorShape::kSource;
  }
  FERRY_ASSIGN_OR_RETURN(auto connector, registry.createConnector(cls));
  ConfigDef def = frameworkConfigDef(out.shape);
  def.include(connector->configDef());
  out.keys = def.keys();
  out.validation = def.validate(config, frameworkPrefixes(out.shape));
  connector->validate(config, out.validation);
  if (out.shape == ConnectorShape::kSink) {
    // Kafka Connect: exactly one of topics and topics.regex.
    const bool list = !get(config, "topics").empty(), regex = !get(config, "topics.regex").empty();
    if (list == regex)
      addError(out.validation, "topics",
               list ? "Must configure one of topics or topics.regex, not both"
                    : "Must configure one of topics or topics.regex");
    if (regex) {
      try {
        std::regex re(get(config, "topics.regex"));
      } catch (const std::regex_error& e) {
        addError(out.validation, "topics.regex",
                 "Invalid value " + get(config, "topics.regex") + " for configuration topics.regex: " + e.what());
      }
    }
  }
  if (hasSinkClass && out.shape == ConnectorShape::kSink)
    addError(out.validation, "sink.connector.class", "only a source connector can have a sink side");
  if (out.shape == ConnectorShape::kDirect) {
    const std::string sinkCls = get(config, "sink.connector.class");
    auto sinkInfo = registry.find(sinkCls);
    if (!sinkInfo.isOk()) return sinkInfo.status();
    if (sinkInfo->kind != PluginKind::kSinkConnector) {
      addError(out.validation, "sink.connector.class", "'" + sinkCls + "' is not a sink connector");
    } else {
      out.sinkClass = sinkInfo->className;
      FERRY_ASSIGN_OR_RETURN(auto sink, registry.createConnector(sinkCls));
      StringMap sinkCfg = sinkSideConfig(config);
      validatePluginKeys(sink->configDef(), sinkCfg, "sink.", {"connector.class"}, out.validation);
      ConfigValidation sinkOwn;
      sink->validate(sinkCfg, sinkOwn);
      for (auto& [k, msgs] : sinkOwn.errors)
        for (auto& m : msgs) addError(out.validation, "sink." + k, m);
      for (auto k : sink->configDef().keys()) {
        k.name = "sink." + k.name;
        out.keys.push_back(std::move(k));
      }
    }
  }
  validateChain(registry, config, out.validation);
  return out;
}

ErrorPolicy parseErrorPolicy(const StringMap& config) {
  ErrorPolicy p;
  auto parsed = sourceDef().parse(config, false);
  if (!parsed.isOk()) return p;
  p.tolerateAll = parsed->getString("errors.tolerance") == "all";
  p.retryTimeoutMs = parsed->getLong("errors.retry.timeout");
  p.retryDelayMaxMs = parsed->getLong("errors.retry.delay.max.ms");
  p.logErrors = parsed->getBool("errors.log.enable");
  p.logMessages = parsed->getBool("errors.log.include.messages");
  p.deadLetterTopic = parsed->getString("errors.deadletterqueue.topic.name");
  p.contextHeaders = parsed->getBool("errors.deadletterqueue.context.headers.enable");
  return p;
}

}  // namespace ferry::runtime
