// POST /rules/test (see rule_trial.h).
#include "rest/rule_trial.h"

#include "control/pipeline.h"

#include <set>

#include "core/json_bounds.h"

namespace ferry::rest {
namespace {

using control::addAliasedKeys;
using control::parseAliasedList;

Status fieldError(const std::string& field, const std::string& what) {
  return Status::invalidArgument(field + ": " + what);
}

// A key or value given as a string is the record's bytes; the rules and converters parse them as
// JSON, with the record bound. Text nested deeper than that is refused here, with the field named,
// rather than tried (it would only fail per record).
Result<Bytes> bytesOf(const Json& j, const std::string& field) {
  if (j.is_null()) return Bytes::null();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    const int limit = core::kRecordJsonLimits.maxDepth;
    if (core::jsonNesting(s, limit) > limit)
      return fieldError(field, "nested deeper than " + std::to_string(limit) +
                                   " levels (record values are parsed as JSON with that bound)");
    return Bytes(s);
  }
  return Bytes(dumpJson(j));
}

// The answer shows a JSON value as JSON, anything else as a string. Parsed with the record bound,
// so the answer's serialiser never meets a document deeper than that.
Json bytesJson(const Bytes& b) {
  if (b.isNull()) return nullptr;
  auto j = core::parseJsonBounded<Json>(b.view(), core::kRecordJsonLimits);
  if (j.isOk()) return std::move(*j);
  return std::string(b.view());
}

Json recordJson(const Record& r) {
  Json headers = Json::object();
  for (const auto& h : r.headers) headers[h.key] = std::string(h.value.view());
  return {{"topic", r.topic}, {"key", bytesJson(r.key)}, {"value", bytesJson(r.value)},
          {"headers", std::move(headers)}, {"timestamp", r.timestampMs}};
}

// [{"alias": "a", "type": "T", ...}, ...] -> <kind>=a,... and <kind>.a.type=T, ... (the pipelines' list).
Status addAliased(const Json& list, const std::string& kind, StringMap& out) {
  if (!list.is_array() || list.empty())
    return fieldError(kind, "must be a non-empty list of {\"alias\", \"type\", ...} objects");
  FERRY_ASSIGN_OR_RETURN(auto items, parseAliasedList(list, kind, kind.substr(0, 1)));
  addAliasedKeys(items, kind, out);
  return Status::ok();
}

Result<Record> recordOf(const Json& j, const std::string& field) {
  if (!j.is_object()) return fieldError(field, "must be an object with topic, key, value, headers, timestamp");
  static const std::set<std::string> kFields = {"topic", "mqtt_topic", "key", "value", "headers", "timestamp"};
  Record r;
  r.topic = "test";
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (!kFields.count(k))
      return fieldError(field + "." + k, "unknown record field (known: topic, mqtt_topic, key, value, headers, timestamp)");
    if (k == "topic" || k == "mqtt_topic") {
      if (!v.is_string() || v.get<std::string>().empty()) return fieldError(field + "." + k, "must be a non-empty string");
      if (k == "topic") r.topic = v.get<std::string>();
      else r.headers.set("mqtt.topic", Bytes(v.get<std::string>()));
    } else if (k == "key") {
      FERRY_ASSIGN_OR_RETURN(r.key, bytesOf(v, field + ".key"));
    } else if (k == "value") {
      FERRY_ASSIGN_OR_RETURN(r.value, bytesOf(v, field + ".value"));
    } else if (k == "timestamp") {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
        return fieldError(field + ".timestamp", "must be epoch milliseconds (a non-negative integer)");
      r.timestampMs = v.get<std::int64_t>();
    } else {  // headers
      if (!v.is_object()) return fieldError(field + ".headers", "must be an object of name -> string");
      for (auto h = v.begin(); h != v.end(); ++h) {
        if (!h->is_string()) return fieldError(field + ".headers." + h.key(), "must be a string");
        r.headers.add(h.key(), h->get<std::string>());
      }
    }
  }
  return r;
}

}  // namespace

Result<RuleTrial> parseRuleTrial(std::string_view body) {
  FERRY_ASSIGN_OR_RETURN(Json j, parseJson(body));
  if (!j.is_object()) return Status::invalidArgument("the body must be a JSON object with \"rule\" (or \"transforms\" or \"config\") and \"records\"");
  static const std::set<std::string> kFields = {"rule", "unmatched", "transforms", "predicates", "config", "records"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!kFields.count(it.key()))
      return fieldError(it.key(), "unknown field (known: rule, unmatched, transforms, predicates, config, records)");
  const int given = static_cast<int>(j.contains("rule")) + static_cast<int>(j.contains("transforms")) +
                    static_cast<int>(j.contains("config"));
  if (given != 1) return Status::invalidArgument("give exactly one of \"rule\", \"transforms\" and \"config\"");

  RuleTrial t;
  if (auto r = j.find("rule"); r != j.end()) {
    if (!r->is_string() || r->get<std::string>().empty()) return fieldError("rule", "must be a rule (SELECT ... FROM ...)");
    std::string unmatched = "drop";
    if (auto u = j.find("unmatched"); u != j.end()) {
      if (!u->is_string() || (*u != "drop" && *u != "pass")) return fieldError("unmatched", "must be \"drop\" or \"pass\"");
      unmatched = u->get<std::string>();
    }
    t.chainConfig = {{"transforms", "rule"}, {"transforms.rule.type", "Rule"},
                     {"transforms.rule.sql", r->get<std::string>()}, {"transforms.rule.unmatched", unmatched}};
  } else if (j.contains("unmatched")) {
    return fieldError("unmatched", "only goes with \"rule\"");
  }
  if (auto tr = j.find("transforms"); tr != j.end()) FERRY_RETURN_IF_ERROR(addAliased(*tr, "transforms", t.chainConfig));
  if (auto p = j.find("predicates"); p != j.end()) {
    if (!j.contains("transforms")) return fieldError("predicates", "only goes with \"transforms\"");
    FERRY_RETURN_IF_ERROR(addAliased(*p, "predicates", t.chainConfig));
  }
  if (auto c = j.find("config"); c != j.end()) {
    FERRY_ASSIGN_OR_RETURN(t.chainConfig, toStringMap(*c, "config"));
    if (t.chainConfig.find("transforms") == t.chainConfig.end())
      return fieldError("config.transforms", "required (the aliases of the chain, e.g. \"a,b\")");
  }

  auto recs = j.find("records");
  if (recs == j.end() || !recs->is_array() || recs->empty())
    return fieldError("records", "must be a non-empty list of records");
  if (recs->size() > kMaxTrialRecords)
    return fieldError("records", "at most " + std::to_string(kMaxTrialRecords) + " records per request");
  for (std::size_t i = 0; i < recs->size(); ++i) {
    FERRY_ASSIGN_OR_RETURN(Record r, recordOf((*recs)[i], "records[" + std::to_string(i) + "]"));
    t.records.push_back(std::move(r));
  }
  return t;
}

Json ruleTrialJson(const std::vector<std::vector<runtime::TransformChain::StepTrace>>& traces,
                   const std::vector<Record>& outputs) {
  Json out = Json::array();
  for (std::size_t i = 0; i < traces.size(); ++i) {
    Json steps = Json::array();
    std::string result = "kept";
    std::string error;
    for (const auto& s : traces[i]) {
      Json step = {{"alias", s.alias}, {"type", s.type}};
      if (!s.error.isOk()) {
        step["result"] = "error";
        step["error"] = s.error.message();
        result = "error";
        error = s.error.message();
      } else {
        step["result"] = s.skipped ? "skipped" : s.dropped ? "dropped" : "ok";
        if (s.dropped) result = "dropped";
        if (!s.dropped) step["record"] = recordJson(s.after);
      }
      steps.push_back(std::move(step));
    }
    Json r = {{"index", i}, {"result", result}};
    if (!error.empty()) r["error"] = error;
    if (result == "kept") r["output"] = recordJson(outputs[i]);
    r["steps"] = std::move(steps);
    out.push_back(std::move(r));
  }
  return {{"records", std::move(out)}};
}

}  // namespace ferry::rest
