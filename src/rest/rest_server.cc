#include "rest/rest_server.h"

#include <httplib.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <atomic>
#include <cstdio>
#include <random>
#include <set>

#include "core/logging.h"
#include "rest/json_mapping.h"
#include "rest/pipeline.h"
#include "rest/rule_trial.h"
#include "rest/prometheus.h"

namespace ferry::rest {
namespace {

// An unexpected failure: the details (an exception's text may name files, hosts or values) go
// to the log under a short id; the answer carries only the id.
std::string internalError(std::string_view request, std::string_view detail) {
  static std::atomic<std::uint32_t> counter{std::random_device{}()};
  char id[16];
  std::snprintf(id, sizeof id, "%08x", counter.fetch_add(0x9E3779B9u));
  core::logger("rest")->error("internal error {}: {} failed: {}", id, request, detail);
  return std::string("internal error (id ") + id + "): the worker log has the details";
}

using httplib::Request;
using httplib::Response;
using Params = std::vector<std::string>;

constexpr std::size_t kMaxBodyBytes = 8 * 1024 * 1024;

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes one path segment. httplib decodes the whole path before splitting, which would
// turn a connector name containing %2F into two segments; we split the raw target instead.
std::string decodeSegment(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = hexDigit(s[i + 1]), lo = hexDigit(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<std::string> splitTarget(std::string_view target) {
  target = target.substr(0, target.find('?'));
  std::vector<std::string> out;
  std::size_t start = 0;
  if (!target.empty() && target[0] == '/') start = 1;
  while (start <= target.size()) {
    auto slash = target.find('/', start);
    auto end = slash == std::string_view::npos ? target.size() : slash;
    out.push_back(decodeSegment(target.substr(start, end - start)));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  // "/" -> no segments; "/connectors/" -> ["connectors"] (a trailing slash is tolerated).
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

void sendJson(Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(dumpJson(body), "application/json");
}

void sendError(Response& res, int status, std::string_view message) {
  sendJson(res, status, errorJson(status, message));
}

void sendStatus(Response& res, const Status& s) {
  sendError(res, httpStatusFor(s.code()), s.message());
}

// Creating or replacing a connector: NotFound can only mean its connector.class is unknown,
// which is a bad request (Kafka Connect answers 400 too), not a missing resource.
void sendWriteStatus(Response& res, const Status& s) {
  sendError(res, s.code() == StatusCode::kNotFound ? 400 : httpStatusFor(s.code()), s.message());
}

Result<bool> boolParam(const Request& req, const char* name, bool fallback) {
  if (!req.has_param(name)) return fallback;
  std::string v = req.get_param_value(name);
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "true" || v.empty()) return true;
  if (v == "false") return false;
  return Status::invalidArgument(std::string("query parameter '") + name +
                                 "' must be true or false, not '" + req.get_param_value(name) +
                                 "'");
}

Result<int> taskId(const std::string& text) {
  int id = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size() || id < 0)
    return Status::invalidArgument("task id must be a non-negative integer, not '" + text + "'");
  return id;
}

std::string levelText(std::string spdlogLevel) {
  if (spdlogLevel == "warning") return "WARN";
  if (spdlogLevel == "critical") return "FATAL";
  for (auto& c : spdlogLevel) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return spdlogLevel;
}

}  // namespace

// The route table and its handlers. Handlers run on the request pool threads; the only state
// they touch is the Herder (thread-safe) and core logging (thread-safe); the table itself is
// built in the constructor and read-only afterwards.
class RestServer::Routes {
 public:
  using Handler = void (Routes::*)(const Request&, Response&, const Params&);

  Routes(control::Herder& herder, const RestOptions& options) : herder_(herder), options_(options) {
    add("GET", "", &Routes::root);
    add("GET", "health", &Routes::health);
    add("GET", "metrics", &Routes::metrics);
    add("GET", "cluster", &Routes::cluster);
    add("GET", "connectors", &Routes::listConnectors);
    add("POST", "connectors", &Routes::createConnector);
    add("GET", "connectors/*", &Routes::getConnector);
    add("DELETE", "connectors/*", &Routes::deleteConnector);
    add("GET", "connectors/*/config", &Routes::getConfig);
    add("PUT", "connectors/*/config", &Routes::putConfig);
    add("PATCH", "connectors/*/config", &Routes::patchConfig);
    add("GET", "connectors/*/status", &Routes::connectorStatus);
    add("POST", "connectors/*/restart", &Routes::restartConnector);
    add("PUT", "connectors/*/pause", &Routes::pause);
    add("PUT", "connectors/*/resume", &Routes::resume);
    add("PUT", "connectors/*/stop", &Routes::stopConnector);
    add("GET", "connectors/*/tasks", &Routes::taskConfigs);
    add("GET", "connectors/*/tasks/*/status", &Routes::taskStatus);
    add("POST", "connectors/*/tasks/*/restart", &Routes::restartTask);
    add("GET", "connectors/*/offsets", &Routes::getOffsets);
    add("PATCH", "connectors/*/offsets", &Routes::alterOffsets);
    add("DELETE", "connectors/*/offsets", &Routes::resetOffsets);
    add("GET", "connectors/*/topics", &Routes::topics);
    add("PUT", "connectors/*/topics/reset", &Routes::resetTopics);
    add("GET", "pipelines", &Routes::listPipelines);
    add("POST", "pipelines", &Routes::createPipeline);
    add("GET", "pipelines/*", &Routes::getPipeline);
    add("PUT", "pipelines/*", &Routes::putPipeline);
    add("DELETE", "pipelines/*", &Routes::deletePipeline);
    add("POST", "rules/test", &Routes::testRules);
    add("GET", "connector-plugins", &Routes::plugins);
    add("GET", "connector-plugins/*/config", &Routes::pluginConfig);
    add("PUT", "connector-plugins/*/config/validate", &Routes::validate);
    add("GET", "admin/loggers", &Routes::loggers);
    add("GET", "admin/loggers/*", &Routes::getLogger);
    add("PUT", "admin/loggers/*", &Routes::putLogger);
    // RocketMQ Connect paths. Literal segments win over '*', so GET /connectors/list lists.
    add("GET", "getClusterInfo", &Routes::clusterInfo);
    add("GET", "connectors/list", &Routes::rmqList);
    add("POST", "connectors/*", &Routes::rmqCreate);
    add("GET", "allocated/connectors", &Routes::allocatedConnectors);
    add("GET", "allocated/tasks", &Routes::allocatedTasks);
    add("GET", "plugin/list", &Routes::pluginList);
    add("GET", "plugin/reload", &Routes::pluginReload);
    add("POST", "plugin/reload", &Routes::pluginReload);
  }

  void dispatch(const Request& req, Response& res) {
    auto segments = splitTarget(req.target);
    std::string method = req.method == "HEAD" ? "GET" : req.method;
    const Route* best = nullptr;
    int bestLiterals = -1;
    Params bestParams;
    std::set<std::string> allowed;
    for (const auto& r : routes_) {
      Params params;
      if (!matches(r, segments, params)) continue;
      allowed.insert(r.method);
      if (r.method == method && r.literals > bestLiterals) {
        best = &r;
        bestLiterals = r.literals;
        bestParams = std::move(params);
      }
    }
    std::string path = req.target.substr(0, req.target.find('?'));
    if (best == nullptr) {
      if (allowed.empty()) {
        sendError(res, 404, "no such resource: " + req.method + " " + path);
        return;
      }
      std::string allow;
      for (const auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
      res.set_header("Allow", allow);
      if (method == "OPTIONS") {
        res.status = 204;
        return;
      }
      sendError(res, 405, "method " + req.method + " is not allowed on " + path + "; use " + allow);
      return;
    }
    try {
      (this->*(best->handler))(req, res, bestParams);
    } catch (const std::exception& e) {
      sendError(res, 500, internalError(req.method + " " + path, e.what()));
    }
  }

 private:
  struct Route {
    std::string method;
    std::vector<std::string> pattern;
    int literals = 0;
    Handler handler;
  };

  void add(std::string method, std::string_view pattern, Handler handler) {
    Route r{std::move(method), splitTarget(pattern), 0, handler};
    for (const auto& s : r.pattern) r.literals += s != "*";
    routes_.push_back(std::move(r));
  }

  static bool matches(const Route& r, const std::vector<std::string>& segments, Params& params) {
    if (r.pattern.size() != segments.size()) return false;
    for (std::size_t i = 0; i < segments.size(); ++i) {
      if (r.pattern[i] == "*") {
        if (segments[i].empty()) return false;
        params.push_back(segments[i]);
      } else if (r.pattern[i] != segments[i]) {
        return false;
      }
    }
    return true;
  }

  // --- root, health, metrics

  void root(const Request& req, Response& res, const Params&) {
    if (!options_.webRoot.empty() &&
        req.get_header_value("Accept").find("text/html") != std::string::npos) {
      res.set_redirect("/ui/");
      return;
    }
    sendJson(res, 200,
             {{"version", options_.version},
              {"commit", options_.commit},
              {"kafka_cluster_id", options_.clusterId},
              {"worker_id", herder_.workerId()},
              {"product", "ferry"}});
  }

  void health(const Request&, Response& res, const Params&) {
    std::string problem = herder_.healthProblem();
    if (problem.empty()) {
      sendJson(res, 200,
               {{"status", "healthy"},
                {"message", "Worker has completed startup and is ready to handle requests."},
                {"worker_id", herder_.workerId()}});
      return;
    }
    Json body = errorJson(503, problem);
    body["status"] = "unhealthy";
    sendJson(res, 503, body);
  }

  // Distributed mode: members, assignment and log position; 404 on a standalone worker.
  void cluster(const Request&, Response& res, const Params&) {
    auto j = herder_.clusterJson();
    if (!j.isOk()) return sendStatus(res, j.status());
    res.status = 200;
    res.set_content(*j, "application/json");
  }

  void metrics(const Request&, Response& res, const Params&) {
    auto samples = herder_.metrics();
    auto process = processMetrics();
    samples.insert(samples.end(), process.begin(), process.end());
    res.status = 200;
    res.set_content(renderPrometheus(samples), "text/plain; version=0.0.4; charset=utf-8");
  }

  // --- connectors

  void listConnectors(const Request& req, Response& res, const Params&) {
    bool status = false, info = false;
    for (std::size_t i = 0; i < req.get_param_value_count("expand"); ++i) {
      auto v = req.get_param_value("expand", i);
      status |= v == "status";
      info |= v == "info";
    }
    auto names = herder_.connectors();
    if (!status && !info) {
      sendJson(res, 200, names);
      return;
    }
    Json out = Json::object();
    for (const auto& name : names) {
      Json entry = Json::object();
      if (status) {
        auto s = herder_.connectorStatus(name);
        if (!s.isOk()) continue;  // deleted meanwhile
        entry["status"] = connectorStatusJson(*s);
      }
      if (info) {
        auto i = herder_.connectorInfo(name);
        if (!i.isOk()) continue;
        entry["info"] = connectorInfoJson(*i);
      }
      out[name] = std::move(entry);
    }
    sendJson(res, 200, out);
  }

  void createConnector(const Request& req, Response& res, const Params&) {
    auto parsed = parseCreateConnector(req.body);
    if (!parsed.isOk()) return sendStatus(res, parsed.status());
    auto created = herder_.createConnector(parsed->name, parsed->config, parsed->initialState);
    if (!created.isOk()) return sendWriteStatus(res, created.status());
    res.set_header("Location", "/connectors/" + parsed->name);
    sendJson(res, 201, connectorInfoJson(*created));
  }

  void rmqCreate(const Request& req, Response& res, const Params& p) {
    if (auto s = validateConnectorName(p[0]); !s.isOk()) return sendStatus(res, s);
    auto config = parseConfigMap(req.body);
    if (!config.isOk()) return sendStatus(res, config.status());
    if (auto s = checkConfigName(p[0], *config); !s.isOk()) return sendStatus(res, s);
    auto created = herder_.createConnector(p[0], *config, std::nullopt);
    if (!created.isOk()) return sendWriteStatus(res, created.status());
    res.set_header("Location", "/connectors/" + p[0]);
    sendJson(res, 201, connectorInfoJson(*created));
  }

  void getConnector(const Request&, Response& res, const Params& p) {
    auto info = herder_.connectorInfo(p[0]);
    if (!info.isOk()) return sendStatus(res, info.status());
    sendJson(res, 200, connectorInfoJson(*info));
  }

  void deleteConnector(const Request&, Response& res, const Params& p) {
    if (auto s = herder_.deleteConnector(p[0]); !s.isOk()) return sendStatus(res, s);
    res.status = 204;
  }

  // --- pipelines (pipeline.h): a source + transforms + sinks materialised as connectors

  // The connectors whose `pipeline` key is `name`, with their configs.
  std::vector<PipelineConnector> pipelineConnectors(const std::string& name) const {
    std::vector<PipelineConnector> out;
    for (const auto& c : herder_.connectors()) {
      auto config = herder_.connectorConfig(c);
      if (!config.isOk()) continue;  // deleted meanwhile
      auto it = config->find(kPipelineKey);
      if (it != config->end() && it->second == name) out.push_back({c, std::move(*config)});
    }
    return out;
  }

  void listPipelines(const Request&, Response& res, const Params&) {
    std::set<std::string> names;
    for (const auto& c : herder_.connectors()) {
      auto config = herder_.connectorConfig(c);
      if (!config.isOk()) continue;
      if (auto it = config->find(kPipelineKey); it != config->end() && !it->second.empty()) names.insert(it->second);
    }
    sendJson(res, 200, Json(std::vector<std::string>(names.begin(), names.end())));
  }

  // The pipeline as declared plus its connectors and their states.
  Json pipelineView(const PipelineSpec& spec) const {
    Json j = pipelineJson(spec);
    Json cs = Json::array();
    for (const auto& c : materialisePipeline(spec)) {
      Json o = {{"name", c.name}};
      if (auto s = herder_.connectorStatus(c.name); s.isOk()) {
        o["state"] = stateText(s->state);
        Json tasks = Json::array();
        for (const auto& t : s->tasks) tasks.push_back({{"id", t.id}, {"state", stateText(t.state)}});
        o["tasks"] = std::move(tasks);
      } else {
        o["state"] = "MISSING";
      }
      cs.push_back(std::move(o));
    }
    j["connectors"] = std::move(cs);
    return j;
  }

  // Validates every connector of the pipeline before any is created, so a bad pipeline leaves
  // nothing behind. Errors are named in the pipeline's terms (source.x, sinks[1].y, transforms.z).
  Status validatePipeline(const PipelineSpec& spec, const std::vector<PipelineConnector>& connectors) const {
    std::string errors;
    int count = 0;
    for (const auto& c : connectors) {
      auto report = herder_.validateConfig(c.config.at("connector.class"), c.config);
      if (!report.isOk()) {
        // NotFound: an unknown class; say which field named it.
        const bool sinkSide = c.name != spec.name && c.name != spec.name + "-source";
        const std::string field = sinkSide ? pipelineField(spec, c.name, "connector.class")
                                           : "source.connector.class";
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

  void createPipeline(const Request& req, Response& res, const Params&) {
    auto spec = parsePipeline(req.body, std::nullopt);
    if (!spec.isOk()) return sendStatus(res, spec.status());
    if (!pipelineConnectors(spec->name).empty())
      return sendError(res, 409, "pipeline " + spec->name + " already exists");
    auto connectors = materialisePipeline(*spec);
    for (const auto& c : connectors)
      if (herder_.connectorInfo(c.name).isOk())
        return sendError(res, 409, "pipeline " + spec->name + " needs connector name '" + c.name +
                                       "', which another connector already has");
    if (auto s = validatePipeline(*spec, connectors); !s.isOk()) return sendStatus(res, s);
    std::vector<std::string> made;
    for (const auto& c : connectors) {
      auto created = herder_.createConnector(c.name, c.config, std::nullopt);
      if (!created.isOk()) {
        for (const auto& m : made) (void)herder_.deleteConnector(m);  // leave nothing half made
        return sendWriteStatus(res, created.status().withContext("connector " + c.name));
      }
      made.push_back(c.name);
    }
    res.set_header("Location", "/pipelines/" + spec->name);
    sendJson(res, 201, pipelineView(*spec));
  }

  void getPipeline(const Request&, Response& res, const Params& p) {
    auto connectors = pipelineConnectors(p[0]);
    if (connectors.empty()) return sendError(res, 404, "pipeline " + p[0] + " not found");
    auto spec = pipelineFromConnectors(p[0], connectors);
    if (!spec.isOk()) return sendStatus(res, spec.status());
    sendJson(res, 200, pipelineView(*spec));
  }

  void putPipeline(const Request& req, Response& res, const Params& p) {
    if (auto s = validatePipelineName(p[0]); !s.isOk()) return sendStatus(res, s);
    auto spec = parsePipeline(req.body, p[0]);
    if (!spec.isOk()) return sendStatus(res, spec.status());
    const auto existing = pipelineConnectors(p[0]);
    auto connectors = materialisePipeline(*spec);
    std::set<std::string> mine;
    for (const auto& c : existing) mine.insert(c.name);
    for (const auto& c : connectors)
      if (!mine.count(c.name) && herder_.connectorInfo(c.name).isOk())
        return sendError(res, 409, "pipeline " + spec->name + " needs connector name '" + c.name +
                                       "', which another connector already has");
    if (auto s = validatePipeline(*spec, connectors); !s.isOk()) return sendStatus(res, s);
    std::set<std::string> keep;
    for (const auto& c : connectors) keep.insert(c.name);
    for (const auto& c : existing)
      if (!keep.count(c.name))
        if (auto s = herder_.deleteConnector(c.name); !s.isOk() && s.code() != StatusCode::kNotFound)
          return sendStatus(res, s.withContext("removing connector " + c.name));
    for (const auto& c : connectors) {
      bool created = false;
      auto info = herder_.putConnectorConfig(c.name, c.config, &created);
      if (!info.isOk()) return sendWriteStatus(res, info.status().withContext("connector " + c.name));
    }
    if (existing.empty()) res.set_header("Location", "/pipelines/" + spec->name);
    sendJson(res, existing.empty() ? 201 : 200, pipelineView(*spec));
  }

  void deletePipeline(const Request&, Response& res, const Params& p) {
    auto connectors = pipelineConnectors(p[0]);
    if (connectors.empty()) return sendError(res, 404, "pipeline " + p[0] + " not found");
    for (const auto& c : connectors)
      if (auto s = herder_.deleteConnector(c.name); !s.isOk() && s.code() != StatusCode::kNotFound)
        return sendStatus(res, s.withContext("connector " + c.name));
    res.status = 204;
  }

  void getConfig(const Request&, Response& res, const Params& p) {
    auto config = herder_.connectorConfig(p[0]);
    if (!config.isOk()) return sendStatus(res, config.status());
    sendJson(res, 200, *config);
  }

  static Status checkConfigName(const std::string& name, const StringMap& config) {
    if (auto it = config.find("name"); it != config.end() && it->second != name)
      return Status::invalidArgument("config 'name' (" + it->second +
                                     ") does not match the connector name in the URL (" + name +
                                     ")");
    return Status::ok();
  }

  void putConfig(const Request& req, Response& res, const Params& p) {
    if (auto s = validateConnectorName(p[0]); !s.isOk()) return sendStatus(res, s);
    auto config = parseConfigMap(req.body);
    if (!config.isOk()) return sendStatus(res, config.status());
    if (auto s = checkConfigName(p[0], *config); !s.isOk()) return sendStatus(res, s);
    bool created = false;
    auto info = herder_.putConnectorConfig(p[0], *config, &created);
    if (!info.isOk()) return sendWriteStatus(res, info.status());
    if (created) res.set_header("Location", "/connectors/" + p[0]);
    sendJson(res, created ? 201 : 200, connectorInfoJson(*info));
  }

  void patchConfig(const Request& req, Response& res, const Params& p) {
    auto patch = parsePatch(req.body);
    if (!patch.isOk()) return sendStatus(res, patch.status());
    if (auto it = patch->find("name"); it != patch->end() && it->second != p[0])
      return sendError(res, 400,
                       "a PATCH cannot rename connector " + p[0] + " (or remove its name)");
    auto info = herder_.patchConnectorConfig(p[0], *patch);
    // Unlike create/replace, NotFound here means the connector itself is missing: 404.
    if (!info.isOk()) return sendStatus(res, info.status());
    sendJson(res, 200, connectorInfoJson(*info));
  }

  void connectorStatus(const Request&, Response& res, const Params& p) {
    auto s = herder_.connectorStatus(p[0]);
    if (!s.isOk()) return sendStatus(res, s.status());
    sendJson(res, 200, connectorStatusJson(*s));
  }

  void restartConnector(const Request& req, Response& res, const Params& p) {
    auto includeTasks = boolParam(req, "includeTasks", false);
    if (!includeTasks.isOk()) return sendStatus(res, includeTasks.status());
    auto onlyFailed = boolParam(req, "onlyFailed", false);
    if (!onlyFailed.isOk()) return sendStatus(res, onlyFailed.status());
    if (auto s = herder_.restartConnector(p[0], *includeTasks, *onlyFailed); !s.isOk())
      return sendStatus(res, s);
    // Kafka Connect: the plain restart answers 204; with either flag set it answers 202 and the
    // connector's status as the restart began.
    if (!*includeTasks && !*onlyFailed) {
      res.status = 204;
      return;
    }
    auto s = herder_.connectorStatus(p[0]);
    if (!s.isOk()) {
      res.status = 202;
      return;
    }
    sendJson(res, 202, connectorStatusJson(*s));
  }

  void pause(const Request&, Response& res, const Params& p) {
    targetChange(res, herder_.pauseConnector(p[0]));
  }
  void resume(const Request&, Response& res, const Params& p) {
    targetChange(res, herder_.resumeConnector(p[0]));
  }
  void stopConnector(const Request&, Response& res, const Params& p) {
    targetChange(res, herder_.stopConnector(p[0]));
  }
  static void targetChange(Response& res, const Status& s) {
    if (!s.isOk()) return sendStatus(res, s);
    res.status = 202;
  }

  void taskConfigs(const Request&, Response& res, const Params& p) {
    auto tasks = herder_.taskConfigs(p[0]);
    if (!tasks.isOk()) return sendStatus(res, tasks.status());
    sendJson(res, 200, taskConfigsJson(p[0], *tasks));
  }

  void taskStatus(const Request&, Response& res, const Params& p) {
    auto id = taskId(p[1]);
    if (!id.isOk()) return sendStatus(res, id.status());
    auto s = herder_.taskStatus(p[0], *id);
    if (!s.isOk()) return sendStatus(res, s.status());
    sendJson(res, 200, taskStatusJson(*s));
  }

  void restartTask(const Request&, Response& res, const Params& p) {
    auto id = taskId(p[1]);
    if (!id.isOk()) return sendStatus(res, id.status());
    if (auto s = herder_.restartTask(p[0], *id); !s.isOk()) return sendStatus(res, s);
    res.status = 204;
  }

  void getOffsets(const Request&, Response& res, const Params& p) {
    auto offsets = herder_.offsets(p[0]);
    if (!offsets.isOk()) return sendStatus(res, offsets.status());
    sendJson(res, 200, positionsJson(*offsets));
  }

  void alterOffsets(const Request& req, Response& res, const Params& p) {
    auto positions = parseOffsets(req.body);
    if (!positions.isOk()) return sendStatus(res, positions.status());
    if (auto s = herder_.alterOffsets(p[0], *positions); !s.isOk()) return sendStatus(res, s);
    sendJson(res, 200,
             {{"message", "The offsets for this connector have been altered successfully"}});
  }

  void resetOffsets(const Request&, Response& res, const Params& p) {
    if (auto s = herder_.resetOffsets(p[0]); !s.isOk()) return sendStatus(res, s);
    sendJson(res, 200,
             {{"message", "The offsets for this connector have been reset successfully"}});
  }

  void topics(const Request&, Response& res, const Params& p) {
    auto topics = herder_.activeTopics(p[0]);
    if (!topics.isOk()) return sendStatus(res, topics.status());
    sendJson(res, 200, {{p[0], {{"topics", *topics}}}});
  }

  void resetTopics(const Request&, Response& res, const Params& p) {
    if (auto s = herder_.resetActiveTopics(p[0]); !s.isOk()) return sendStatus(res, s);
    res.status = 202;
  }

  // --- plugins

  void plugins(const Request& req, Response& res, const Params&) {
    auto connectorsOnly = boolParam(req, "connectorsOnly", true);
    if (!connectorsOnly.isOk()) return sendStatus(res, connectorsOnly.status());
    Json out = Json::array();
    for (const auto& p : herder_.plugins()) {
      bool connector =
          p.kind == PluginKind::kSourceConnector || p.kind == PluginKind::kSinkConnector;
      if (*connectorsOnly && !connector) continue;
      out.push_back(pluginJson(p));
    }
    sendJson(res, 200, out);
  }

  void pluginConfig(const Request&, Response& res, const Params& p) {
    auto keys = herder_.pluginConfig(p[0]);
    if (!keys.isOk()) return sendStatus(res, keys.status());
    sendJson(res, 200, configKeysJson(*keys));
  }

  void validate(const Request& req, Response& res, const Params& p) {
    auto config = parseConfigMap(req.body);
    if (!config.isOk()) return sendStatus(res, config.status());
    config->try_emplace("connector.class", p[0]);
    auto report = herder_.validateConfig(p[0], *config);
    if (!report.isOk()) return sendStatus(res, report.status());
    sendJson(res, 200, configReportJson(*report));
  }

  // --- rules

  void testRules(const Request& req, Response& res, const Params&) {
    auto trial = parseRuleTrial(req.body);
    if (!trial.isOk()) return sendStatus(res, trial.status());
    auto chain = herder_.buildTransformChain(trial->chainConfig);
    if (!chain.isOk()) return sendError(res, 400, chain.status().message());
    std::vector<std::vector<runtime::TransformChain::StepTrace>> traces;
    for (auto& r : trial->records) traces.push_back((*chain)->trace(r));
    sendJson(res, 200, ruleTrialJson(traces, trial->records));
  }

  // --- loggers

  void loggers(const Request&, Response& res, const Params&) {
    Json out = Json::object();
    for (const auto& [name, level] : core::loggerLevels())
      out[name] = {{"level", levelText(level)}};
    sendJson(res, 200, out);
  }

  void getLogger(const Request&, Response& res, const Params& p) {
    auto levels = core::loggerLevels();
    auto it = levels.find(p[0]);
    if (it == levels.end()) return sendError(res, 404, "no logger named '" + p[0] + "'");
    sendJson(res, 200, {{"level", levelText(it->second)}});
  }

  void putLogger(const Request& req, Response& res, const Params& p) {
    auto level = parseLoggerLevel(req.body);
    if (!level.isOk()) return sendStatus(res, level.status());
    auto changed = core::setLoggerLevel(p[0], *level);
    if (!changed.isOk()) return sendError(res, 400, changed.status().message());
    sendJson(res, 200, *changed);
  }

  // --- RocketMQ Connect paths

  void clusterInfo(const Request&, Response& res, const Params&) {
    std::set<std::string> workers{herder_.workerId()};
    for (const auto& name : herder_.connectors()) {
      auto s = herder_.connectorStatus(name);
      if (!s.isOk()) continue;
      if (!s->workerId.empty()) workers.insert(s->workerId);
      for (const auto& t : s->tasks)
        if (!t.workerId.empty()) workers.insert(t.workerId);
    }
    sendJson(res, 200,
             {{"cluster_id", options_.clusterId},
              {"worker_id", herder_.workerId()},
              {"workers", workers}});
  }

  void rmqList(const Request&, Response& res, const Params&) {
    Json out = Json::object();
    for (const auto& name : herder_.connectors()) {
      auto config = herder_.connectorConfig(name);
      auto status = herder_.connectorStatus(name);
      if (!config.isOk() || !status.isOk()) continue;
      out[name] = {{"config", *config}, {"status", connectorStatusJson(*status)}};
    }
    sendJson(res, 200, out);
  }

  void allocatedConnectors(const Request&, Response& res, const Params&) {
    Json out = Json::object();
    const std::string me = herder_.workerId();
    for (const auto& name : herder_.connectors()) {
      auto status = herder_.connectorStatus(name);
      if (!status.isOk() || status->workerId != me) continue;
      auto config = herder_.connectorConfig(name);
      if (config.isOk()) out[name] = *config;
    }
    sendJson(res, 200, out);
  }

  void allocatedTasks(const Request&, Response& res, const Params&) {
    Json out = Json::array();
    const std::string me = herder_.workerId();
    for (const auto& name : herder_.connectors()) {
      auto status = herder_.connectorStatus(name);
      if (!status.isOk()) continue;
      auto configs = herder_.taskConfigs(name);
      for (const auto& t : status->tasks) {
        if (t.workerId != me) continue;
        Json task = {{"connector", name},
                     {"task", t.id},
                     {"state", stateText(t.state)},
                     {"config", Json::object()}};
        if (configs.isOk())
          for (const auto& c : *configs)
            if (c.id == t.id) task["config"] = c.config;
        out.push_back(std::move(task));
      }
    }
    sendJson(res, 200, out);
  }

  void pluginList(const Request&, Response& res, const Params&) {
    Json out = Json::array();
    for (const auto& p : herder_.plugins()) out.push_back(pluginJson(p, /*detailed=*/true));
    sendJson(res, 200, out);
  }

  void pluginReload(const Request&, Response& res, const Params&) {
    sendError(res, 501,
              "plugin reload is not supported in this version: restart the worker to load new "
              "plugins from plugin.path");
  }

  control::Herder& herder_;
  const RestOptions& options_;
  std::vector<Route> routes_;
};

RestServer::RestServer(control::Herder& herder, RestOptions options)
    : herder_(herder),
      options_(std::move(options)),
      routes_(std::make_unique<Routes>(herder_, options_)) {}

RestServer::~RestServer() { stop(); }

int RestServer::port() const { return port_.load(); }

Status RestServer::start() {
  if (server_) return Status::failedPrecondition("the REST server is already started");
  auto server = std::make_unique<httplib::Server>();
  server->new_task_queue = [] { return new httplib::ThreadPool(kRequestThreads); };
  server->set_payload_max_length(kMaxBodyBytes);
  // httplib's default sets SO_REUSEPORT, which lets a second worker bind the same port and
  // silently share its connections. SO_REUSEADDR alone allows a quick restart but refuses that.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
  });
  server->set_keep_alive_timeout(2);  // bounds how long stop() waits for idle keep-alive clients
  httplib::Server::Handler handler = [this](const Request& req, Response& res) {
    routes_->dispatch(req, res);
  };
  // One catch-all per method: our own router decides between 404 and 405.
  server->Get(".*", handler);
  server->Post(".*", handler);
  server->Put(".*", handler);
  server->Patch(".*", handler);
  server->Delete(".*", handler);
  server->Options(".*", handler);
  // Errors httplib produces itself (bad request line, body too large) get our error shape too.
  server->set_error_handler(httplib::Server::HandlerWithResponse([](const Request&, Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message =
        res.status == 413
            ? "request body too large (limit " + std::to_string(kMaxBodyBytes) + " bytes)"
            : "request failed with HTTP status " + std::to_string(res.status);
    sendError(res, res.status, message);
    return httplib::Server::HandlerResponse::Handled;
  }));
  server->set_exception_handler([](const Request& req, Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    sendError(res, 500, internalError(req.method + " " + req.path, what));
  });
  server->set_logger([](const Request& req, const Response& res) {
    core::logger("rest")->debug("{} {} -> {}", req.method, req.target, res.status);
  });
  if (!options_.webRoot.empty() && !server->set_mount_point("/ui", options_.webRoot))
    core::logger("rest")->warn("web console folder {} does not exist; /ui is not served",
                               options_.webRoot);

  errno = 0;
  int bound = options_.port;
  bool ok = options_.port == 0 ? (bound = server->bind_to_any_port(options_.host)) > 0
                               : server->bind_to_port(options_.host, options_.port);
  if (!ok) {
    int err = errno;
    return Status::unavailable("cannot listen on " + options_.host + ":" +
                               std::to_string(options_.port) + ": " +
                               (err ? std::strerror(err) : "bind failed") +
                               " (is another process using the port? choose another one)");
  }
  port_ = bound;
  server_ = std::move(server);
  listener_ = std::thread([s = server_.get()] { s->listen_after_bind(); });
  // stop() only acts once the listener runs, so wait for it (it starts in microseconds).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_->is_running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  core::logger("rest")->info("REST server listening on {}:{}", options_.host, bound);
  return Status::ok();
}

void RestServer::stop() {
  if (!server_) return;
  server_->stop();
  if (listener_.joinable()) listener_.join();
  server_.reset();
  port_ = 0;
}

}  // namespace ferry::rest
