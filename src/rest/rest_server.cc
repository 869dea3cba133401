#include "rest/rest_server.h"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "core/logging.h"
#include "rest/http_server.h"
#include "rest/json_mapping.h"
#include "control/pipeline.h"
#include "control/pipeline_ops.h"
#include "rest/rule_trial.h"
#include "rest/prometheus.h"
#include "runtime/secrets.h"

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

using http::Request;
using http::Response;
using Params = std::vector<std::string>;
using control::materialisePipeline;
using control::parsePipeline;
using control::pipelineFromConnectors;
using control::pipelineJson;
using control::PipelineSpec;
using control::validatePipelineName;

// Percent-decodes one path segment. Decoding the whole path before splitting would turn a
// connector name containing %2F into two segments; we split the raw target instead.
std::string decodeSegment(std::string_view s) { return http::percentDecode(s, false); }

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

// GET /topics/{name}/records: at most this many records per request.
constexpr unsigned kMaxTopicRecords = 100;

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

// What the request policy needs to know of a request; peerName is the verified client
// certificate's CN on an https listener (empty otherwise).
AuthRequest authRequestOf(const Request& req, const std::string& path) {
  AuthRequest a;
  a.method = req.method;
  a.path = path;
  a.httpVersion = req.version == 10 ? "HTTP/1.0" : "HTTP/1.1";
  if (req.has_header("Host")) a.host = req.get_header_value("Host");
  if (req.has_header("Content-Type")) a.contentType = req.get_header_value("Content-Type");
  if (req.has_header("Origin")) a.origin = req.get_header_value("Origin");
  a.accessControlRequestMethod = req.get_header_value("Access-Control-Request-Method");
  a.authorization = req.get_header_value("Authorization");
  const std::string length = req.get_header_value("Content-Length");
  a.hasBody = !req.body.empty() || req.has_header("Transfer-Encoding") || (!length.empty() && length != "0");
  a.remoteAddr = req.remote_addr;
  a.peerName = req.peer_name;
  std::string with = req.get_header_value("X-Requested-With");
  for (auto& c : with) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  a.scripted = with == "xmlhttprequest";
  return a;
}

}  // namespace

// The route table and its handlers. Handlers run on the request pool threads; the only state
// they touch is the Herder (thread-safe) and core logging (thread-safe); the table itself is
// built in the constructor and read-only afterwards.
class RestServer::Routes {
 public:
  using Handler = void (Routes::*)(const Request&, Response&, const Params&);

  Routes(control::Herder& herder, const RestOptions& options, RequestPolicy& policy)
      : herder_(herder), options_(options), policy_(policy) {
    add("GET", "", &Routes::root, Role::kViewer);
    add("GET", "health", &Routes::health, Role::kOpen);
    add("GET", "whoami", &Routes::whoami, Role::kViewer);
    add("GET", "metrics", &Routes::metrics, Role::kViewer);
    add("GET", "cluster", &Routes::cluster, Role::kViewer);
    add("GET", "connectors", &Routes::listConnectors, Role::kViewer);
    add("POST", "connectors", &Routes::createConnector, Role::kAdmin);
    add("GET", "connectors/*", &Routes::getConnector, Role::kViewer);
    add("DELETE", "connectors/*", &Routes::deleteConnector, Role::kAdmin);
    add("GET", "connectors/*/config", &Routes::getConfig, Role::kViewer);
    add("PUT", "connectors/*/config", &Routes::putConfig, Role::kAdmin);
    add("PATCH", "connectors/*/config", &Routes::patchConfig, Role::kAdmin);
    add("GET", "connectors/*/status", &Routes::connectorStatus, Role::kViewer);
    add("POST", "connectors/*/restart", &Routes::restartConnector, Role::kOperator);
    add("PUT", "connectors/*/pause", &Routes::pause, Role::kOperator);
    add("PUT", "connectors/*/resume", &Routes::resume, Role::kOperator);
    add("PUT", "connectors/*/stop", &Routes::stopConnector, Role::kOperator);
    add("GET", "connectors/*/tasks", &Routes::taskConfigs, Role::kViewer);
    add("GET", "connectors/*/tasks/*/status", &Routes::taskStatus, Role::kViewer);
    add("POST", "connectors/*/tasks/*/restart", &Routes::restartTask, Role::kOperator);
    add("GET", "connectors/*/offsets", &Routes::getOffsets, Role::kViewer);
    add("PATCH", "connectors/*/offsets", &Routes::alterOffsets, Role::kAdmin);
    add("DELETE", "connectors/*/offsets", &Routes::resetOffsets, Role::kAdmin);
    add("GET", "connectors/*/topics", &Routes::topics, Role::kViewer);
    add("GET", "connectors/*/metrics/history", &Routes::metricsHistory, Role::kViewer);
    add("PUT", "connectors/*/topics/reset", &Routes::resetTopics, Role::kAdmin);
    add("GET", "pipelines", &Routes::listPipelines, Role::kViewer);
    add("POST", "pipelines", &Routes::createPipeline, Role::kAdmin);
    add("GET", "pipelines/*", &Routes::getPipeline, Role::kViewer);
    add("PUT", "pipelines/*", &Routes::putPipeline, Role::kAdmin);
    add("DELETE", "pipelines/*", &Routes::deletePipeline, Role::kAdmin);
    add("POST", "rules/test", &Routes::testRules, Role::kAdmin);
    // Taps show record contents: operators', as the data itself is more than status (viewers).
    add("POST", "connectors/*/tap", &Routes::openTap, Role::kOperator);
    add("GET", "taps/*", &Routes::readTap, Role::kOperator);
    add("GET", "taps/*/events", &Routes::tapEvents, Role::kOperator);
    add("DELETE", "taps/*", &Routes::closeTap, Role::kOperator);
    add("GET", "topics", &Routes::listTopics, Role::kViewer);
    add("GET", "topics/*/records", &Routes::topicRecords, Role::kOperator);  // record contents too
    add("GET", "connector-plugins", &Routes::plugins, Role::kViewer);
    add("GET", "connector-plugins/*/config", &Routes::pluginConfig, Role::kViewer);
    add("PUT", "connector-plugins/*/config/validate", &Routes::validate, Role::kAdmin);
    add("GET", "admin/loggers", &Routes::loggers, Role::kViewer);
    add("GET", "admin/loggers/*", &Routes::getLogger, Role::kViewer);
    add("PUT", "admin/loggers/*", &Routes::putLogger, Role::kAdmin);
    // RocketMQ Connect's read-only paths. Literal segments win over '*', so GET /connectors/list
    // lists.
    add("GET", "getClusterInfo", &Routes::clusterInfo, Role::kViewer);
    add("GET", "connectors/list", &Routes::rmqList, Role::kViewer);
    add("GET", "allocated/connectors", &Routes::allocatedConnectors, Role::kViewer);
    add("GET", "allocated/tasks", &Routes::allocatedTasks, Role::kViewer);
    add("GET", "plugin/list", &Routes::pluginList, Role::kViewer);
    // RocketMQ Connect's dialect with writes (worker key rest.rocketmq.compat.enabled, off by
    // default): its GET-verb operations change state, so any link or web page could trigger
    // them. Each GET-verb write needs the role of the write it performs, not a GET's viewer.
    if (options.rocketmqCompat) {
      add("POST", "connectors/*", &Routes::rmqCreate, Role::kAdmin);  // create or update
      add("GET", "connectors/*/stop", &Routes::rmqStop, Role::kOperator);
      add("GET", "connectors/*/pause", &Routes::rmqPause, Role::kOperator);
      add("GET", "connectors/*/resume", &Routes::rmqResume, Role::kOperator);
      add("GET", "connectors/*/restart", &Routes::rmqRestart, Role::kOperator);
      add("GET", "connectors/*/tasks/*/restart", &Routes::rmqRestartTask, Role::kOperator);
      add("GET", "connectors/stop/all", &Routes::rmqStopAll, Role::kOperator);
      add("GET", "connectors/pause/all", &Routes::rmqPauseAll, Role::kOperator);
      add("GET", "connectors/resume/all", &Routes::rmqResumeAll, Role::kOperator);
      add("GET", "plugin/list/connectors", &Routes::rmqConnectorPlugins, Role::kViewer);
      add("GET", "plugin/config", &Routes::rmqPluginConfig, Role::kViewer);
      // Validate is admin, as PUT /connector-plugins/{plugin}/config/validate.
      add("GET", "plugin/config/validate", &Routes::rmqValidate, Role::kAdmin);
      add("POST", "plugin/config/validate", &Routes::rmqValidate, Role::kAdmin);
      add("GET", "plugin/reload", &Routes::pluginReload, Role::kAdmin);
      add("POST", "plugin/reload", &Routes::pluginReload, Role::kAdmin);
    }
  }

  void setHistory(MetricsHistory* history) { history_ = history; }

  std::vector<RouteSpec> table() const {
    std::vector<RouteSpec> out;
    for (const auto& r : routes_) {
      std::string pattern;
      for (const auto& seg : r.pattern) pattern += "/" + seg;
      out.push_back({r.method, pattern.empty() ? "/" : pattern, r.role});
    }
    return out;
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
    // Host, CORS, credentials, role and Content-Type (request_policy.h) before any handler.
    Verdict verdict = policy_.admit(authRequestOf(req, path), best ? best->role : Role::kViewer);
    for (auto& [name, value] : verdict.headers) res.add_header(name, value);
    if (!verdict.proceed) {
      if (verdict.message.empty()) {
        res.status = verdict.status;
      } else {
        sendError(res, verdict.status, verdict.message);
      }
      return;
    }
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
      currentVerdict_ = &verdict;
      struct Reset {
        ~Reset() { currentVerdict_ = nullptr; }
      } reset;
      (this->*(best->handler))(req, res, bestParams);
    } catch (const std::exception& e) {
      sendError(res, 500, internalError(req.method + " " + path, e.what()));
    }
    // Distributed mode: reads answer from the applied cluster state (at once during a backbone
    // outage); the header says how stale it may be. Bodies stay Kafka Connect's.
    if (method == "GET")
      if (auto age = herder_.stateAgeMs()) res.set_header("X-Ferry-State-Age-Ms", std::to_string(*age));
  }

 private:
  struct Route {
    std::string method;
    std::vector<std::string> pattern;
    int literals = 0;
    Handler handler;
    Role role;
  };

  // Every route names the least role that may call it (auth.h): a route cannot be added without.
  void add(std::string method, std::string_view pattern, Handler handler, Role role) {
    Route r{std::move(method), splitTarget(pattern), 0, handler, role};
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

  void root(const Request&, Response& res, const Params&) {
    sendJson(res, 200,
             {{"version", options_.version},
              {"commit", options_.commit},
              {"kafka_cluster_id", options_.clusterId},
              {"worker_id", herder_.workerId()},
              {"mode", options_.mode},
              {"product", "ferry"}});
  }

  // Who the caller is, as the console needs it to show only the controls its role may use.
  void whoami(const Request&, Response& res, const Params&) {
    const Verdict* v = currentVerdict_;
    const bool auth = policy_.authEnabled();
    if (auth && v != nullptr && v->principal) {
      sendJson(res, 200, {{"authentication", true},
                          {"user", v->principal->name},
                          {"role", roleName(v->principal->role)},
                          {"via", v->principal->via}});
      return;
    }
    // Authentication off: every caller may do everything.
    sendJson(res, 200, {{"authentication", auth}, {"user", nullptr}, {"role", roleName(Role::kAdmin)}});
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
    if (const http::HttpServer* server = transport_.load()) {
      auto t = server->stats();
      auto add = [&](const char* name, std::uint64_t v, const char* type, const char* help) {
        samples.push_back({name, {}, static_cast<double>(v), help, type});
      };
      add("ferry_rest_connections_rejected_total", t.connectionsRejected, "counter",
          "REST connections closed at accept because rest.max.connections were open");
      add("ferry_rest_requests_rejected_total", t.requestsRejected, "counter",
          "REST requests answered 503: rest.request.queue.size requests waiting, or the body budget spent");
      add("ferry_rest_deadline_closes_total", t.timeouts, "counter",
          "REST connections closed for missing a header, body, idle or write deadline");
      add("ferry_rest_tls_reloads_total", t.tlsReloads, "counter",
          "Times a changed keystore took effect without a restart");
      add("ferry_rest_open_connections", t.openConnections, "gauge", "Open REST connections");
    }
    res.status = 200;
    res.set_content(renderPrometheus(samples), "text/plain; version=0.0.4; charset=utf-8");
  }

  // --- connectors

  void listConnectors(const Request& req, Response& res, const Params&) {
    bool status = false, info = false;
    // Kafka Connect: any expand (even an unknown one) answers the map, name -> expansions.
    const bool expand = req.get_param_value_count("expand") > 0;
    for (std::size_t i = 0; i < req.get_param_value_count("expand"); ++i) {
      auto v = req.get_param_value("expand", i);
      status |= v == "status";
      info |= v == "info";
    }
    auto names = herder_.connectors();
    if (!expand) {
      sendJson(res, 200, names);
      return;
    }
    Json out = Json::object();
    for (const auto& name : names) {
      Json entry = Json::object();
      if (status) {
        auto s = herder_.connectorStatus(name);
        if (!s.isOk()) continue;  // deleted meanwhile
        entry["status"] = connectorStatusJson(*s, versionOf(name));
      }
      if (info) {
        auto i = herder_.connectorInfo(name);
        if (!i.isOk()) continue;
        entry["info"] = connectorInfoJson(masked(*i));
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
    sendJson(res, 201, connectorInfoJson(masked(withTasks(
                           std::move(*created), parsed->initialState.value_or(store::TargetState::kStarted)))));
  }

  // Kafka Connect's standalone worker answers a create with the tasks it made; ferry makes them
  // on the worker's thread, so wait for them a little (kTaskWait at most) when the connector is
  // to run. A slow connector is answered with the tasks known so far (none), as Kafka's
  // distributed worker does.
  static constexpr auto kTaskWait = std::chrono::milliseconds(1500);
  // A replaced config restarts the connector: the same applies unless it is stopped (no tasks).
  control::ConnectorInfo withTasks(control::ConnectorInfo info) const {
    if (!info.tasks.empty()) return info;
    auto s = herder_.connectorStatus(info.name);
    if (s.isOk() && s->state == store::State::kStopped) return info;
    return withTasks(std::move(info), store::TargetState::kStarted);
  }
  control::ConnectorInfo withTasks(control::ConnectorInfo info, store::TargetState target) const {
    if (!info.tasks.empty() || target != store::TargetState::kStarted) return info;
    const auto deadline = std::chrono::steady_clock::now() + kTaskWait;
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      auto now = herder_.connectorInfo(info.name);
      if (!now.isOk()) break;
      if (!now->tasks.empty()) return std::move(*now);
      // A connector that failed to start makes no tasks: answer at once.
      auto s = herder_.connectorStatus(info.name);
      if (s.isOk() && s->state == store::State::kFailed) break;
    }
    return info;
  }

  // The version of a connector's plugin (Kafka Connect 4.x shows it in status); "" if unknown.
  std::string versionOf(const std::string& connector) const {
    auto config = herder_.connectorConfig(connector);
    if (!config.isOk()) return "";
    auto it = config->find("connector.class");
    if (it == config->end()) return "";
    const runtime::PluginInfo* p = pluginNamed(it->second);
    return p ? p->version : "";
  }

  // The plugin a class name, alias or simple name (last segment of a dotted alias) names.
  const runtime::PluginInfo* pluginNamed(const std::string& name) const {
    std::lock_guard lock(pluginsMu_);
    if (plugins_.empty()) plugins_ = herder_.plugins();
    for (const auto& p : plugins_) {
      if (p.className == name) return &p;
      for (const auto& a : p.aliases) {
        if (a == name) return &p;
        auto dot = a.rfind('.');
        if (dot != std::string::npos && a.compare(dot + 1, std::string::npos, name) == 0) return &p;
      }
    }
    return nullptr;
  }

  // RocketMQ Connect's POST /connectors/{name}: creates, or replaces the config of an existing
  // connector (its putConnectorConfig), with a flat config map.
  void rmqCreate(const Request& req, Response& res, const Params& p) {
    if (auto s = validateConnectorName(p[0]); !s.isOk()) return sendStatus(res, s);
    auto config = parseConfigMap(req.body);
    if (!config.isOk()) return sendStatus(res, config.status());
    if (auto s = checkConfigName(p[0], *config); !s.isOk()) return sendStatus(res, s);
    // An update with a config read back masked keeps its secrets, as PUT .../config does.
    if (auto previous = herder_.connectorConfig(p[0]); previous.isOk())
      *config = runtime::restoreHidden(std::move(*config), *previous);
    bool created = false;
    auto info = herder_.putConnectorConfig(p[0], *config, &created);
    if (!info.isOk()) return sendWriteStatus(res, info.status());
    if (created) res.set_header("Location", "/connectors/" + p[0]);
    sendJson(res, created ? 201 : 200,
             connectorInfoJson(masked(created ? withTasks(std::move(*info), store::TargetState::kStarted)
                                              : std::move(*info))));
  }

  // RocketMQ Connect's envelope for its GET-verb operations: {"status": 200, "body": ...}.
  static void rmqAnswer(Response& res, const Status& s, const std::string& done) {
    if (!s.isOk()) return sendStatus(res, s);
    sendJson(res, 200, {{"status", 200}, {"body", done}});
  }
  // GET /connectors/{name}/stop: ferry's stop (config and positions kept). RocketMQ Connect
  // deletes the connector here; ferry does not destroy anything on a GET (DELETE does that).
  void rmqStop(const Request&, Response& res, const Params& p) {
    rmqAnswer(res, herder_.stopConnector(p[0]), "Connector [" + p[0] + "] stopped successfully");
  }
  void rmqPause(const Request&, Response& res, const Params& p) {
    rmqAnswer(res, herder_.pauseConnector(p[0]), "Connector [" + p[0] + "] paused successfully");
  }
  void rmqResume(const Request&, Response& res, const Params& p) {
    rmqAnswer(res, herder_.resumeConnector(p[0]), "Connector [" + p[0] + "] resumed successfully");
  }
  void rmqRestart(const Request&, Response& res, const Params& p) {
    rmqAnswer(res, herder_.restartConnector(p[0], true, false),
              "Connector [" + p[0] + "] restarted successfully");
  }
  void rmqRestartTask(const Request&, Response& res, const Params& p) {
    auto id = taskId(p[1]);
    if (!id.isOk()) return sendStatus(res, id.status());
    rmqAnswer(res, herder_.restartTask(p[0], *id),
              "Task [" + p[0] + "/" + p[1] + "] restarted successfully");
  }
  // The bulk operations act on every connector; the first failure is answered (the ones before
  // it are done).
  template <typename Op>
  void rmqAll(Response& res, Op op, const std::string& verb) {
    auto names = herder_.connectors();
    if (names.empty())
      return rmqAnswer(res, Status::ok(),
                       "No connector needs to be " + verb + ", please add connector first");
    for (const auto& n : names)
      if (auto s = op(n); !s.isOk() && s.code() != StatusCode::kNotFound) return sendStatus(res, s);
    rmqAnswer(res, Status::ok(), std::to_string(names.size()) + " connectors are " + verb);
  }
  void rmqStopAll(const Request&, Response& res, const Params&) {
    rmqAll(res, [&](const std::string& n) { return herder_.stopConnector(n); }, "stopped");
  }
  void rmqPauseAll(const Request&, Response& res, const Params&) {
    rmqAll(res, [&](const std::string& n) { return herder_.pauseConnector(n); }, "paused");
  }
  void rmqResumeAll(const Request&, Response& res, const Params&) {
    rmqAll(res, [&](const std::string& n) { return herder_.resumeConnector(n); }, "resumed");
  }
  void rmqConnectorPlugins(const Request&, Response& res, const Params&) {
    Json out = Json::array();
    for (const auto& p : herder_.plugins())
      if (p.kind == PluginKind::kSourceConnector || p.kind == PluginKind::kSinkConnector)
        out.push_back(pluginJson(p, /*detailed=*/true));
    sendJson(res, 200, {{"status", 200}, {"body", std::move(out)}});
  }
  // GET /plugin/config?plugin=<class>: the plugin's ConfigKeyInfo list (RocketMQ Connect
  // declares this route without serving it; ferry serves it).
  void rmqPluginConfig(const Request& req, Response& res, const Params&) {
    if (!req.has_param("plugin"))
      return sendError(res, 400, "query parameter 'plugin' (a plugin class name) is required");
    auto keys = herder_.pluginConfig(req.get_param_value("plugin"));
    if (!keys.isOk()) return sendStatus(res, keys.status());
    sendJson(res, 200, {{"status", 200}, {"body", configKeysJson(*keys)}});
  }
  // GET /plugin/config/validate?config=<JSON map> (RocketMQ's GET style) or POST with the map as
  // the body: the ConfigInfos of PUT /connector-plugins/{plugin}/config/validate, the plugin
  // taken from connector.class.
  void rmqValidate(const Request& req, Response& res, const Params&) {
    std::string body = req.method == "POST" ? req.body : req.get_param_value("config");
    if (body.empty())
      return sendError(res, 400, "the config is required (query parameter 'config' or a POST body)");
    auto config = parseConfigMap(body);
    if (!config.isOk()) return sendStatus(res, config.status());
    auto cls = config->find("connector.class");
    if (cls == config->end() || cls->second.empty())
      return sendError(res, 400, "the config must name its connector.class");
    auto report = herder_.validateConfig(cls->second, *config);
    if (!report.isOk()) return sendStatus(res, report.status());
    sendJson(res, 200, {{"status", 200}, {"body", configReportJson(*report)}});
  }

  void getConnector(const Request&, Response& res, const Params& p) {
    auto info = herder_.connectorInfo(p[0]);
    if (!info.isOk()) return sendStatus(res, info.status());
    sendJson(res, 200, connectorInfoJson(masked(*info)));
  }

  void deleteConnector(const Request&, Response& res, const Params& p) {
    if (auto s = herder_.deleteConnector(p[0]); !s.isOk()) return sendStatus(res, s);
    res.status = 204;
  }

  // --- pipelines (pipeline.h): a source + transforms + sinks materialised as connectors

  void listPipelines(const Request&, Response& res, const Params&) {
    sendJson(res, 200, Json(control::pipelineNames(herder_)));
  }

  // The pipeline as declared plus its connectors and their states.
  Json pipelineView(const PipelineSpec& spec) const {
    // Rendered from its connectors' configs with their secrets masked (runtime/secrets.h).
    auto parts = materialisePipeline(spec);
    for (auto& c : parts) c.config = herder_.maskConfig(c.config);
    auto shown = pipelineFromConnectors(spec.name, parts);
    Json j = pipelineJson(shown.isOk() ? *shown : PipelineSpec{spec.name});
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

  // Validation, creation, replacement and rollback live in control/pipeline_ops.h (the worker's
  // pipeline files use them too); these routes parse, call and render.
  void createPipeline(const Request& req, Response& res, const Params&) {
    auto spec = parsePipeline(req.body, std::nullopt);
    if (!spec.isOk()) return sendStatus(res, spec.status());
    auto created = control::applyPipeline(herder_, *spec, control::PipelineWrite::kCreate);
    if (!created.isOk()) return sendWriteStatus(res, created.status());
    res.set_header("Location", "/pipelines/" + spec->name);
    sendJson(res, 201, pipelineView(*spec));
  }

  void getPipeline(const Request&, Response& res, const Params& p) {
    auto connectors = control::pipelineConnectors(herder_, p[0]);
    if (connectors.empty()) return sendError(res, 404, "pipeline " + p[0] + " not found");
    auto spec = pipelineFromConnectors(p[0], connectors);
    if (!spec.isOk()) return sendStatus(res, spec.status());
    sendJson(res, 200, pipelineView(*spec));
  }

  void putPipeline(const Request& req, Response& res, const Params& p) {
    if (auto s = validatePipelineName(p[0]); !s.isOk()) return sendStatus(res, s);
    auto spec = parsePipeline(req.body, p[0]);
    if (!spec.isOk()) return sendStatus(res, spec.status());
    auto created = control::applyPipeline(herder_, *spec, control::PipelineWrite::kCreateOrReplace);
    if (!created.isOk()) return sendWriteStatus(res, created.status());
    if (*created) res.set_header("Location", "/pipelines/" + spec->name);
    sendJson(res, *created ? 201 : 200, pipelineView(*spec));
  }

  void deletePipeline(const Request&, Response& res, const Params& p) {
    if (auto s = control::removePipeline(herder_, p[0]); !s.isOk()) return sendStatus(res, s);
    res.status = 204;
  }

  void getConfig(const Request&, Response& res, const Params& p) {
    auto config = herder_.connectorConfig(p[0]);
    if (!config.isOk()) return sendStatus(res, config.status());
    sendJson(res, 200, herder_.maskConfig(*config));
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
    // A config read back masked and put again keeps its secrets.
    if (auto previous = herder_.connectorConfig(p[0]); previous.isOk())
      *config = runtime::restoreHidden(std::move(*config), *previous);
    bool created = false;
    auto info = herder_.putConnectorConfig(p[0], *config, &created);
    if (!info.isOk()) return sendWriteStatus(res, info.status());
    if (created) res.set_header("Location", "/connectors/" + p[0]);
    sendJson(res, created ? 201 : 200, connectorInfoJson(masked(withTasks(std::move(*info)))));
  }

  void patchConfig(const Request& req, Response& res, const Params& p) {
    auto patch = parsePatch(req.body);
    if (!patch.isOk()) return sendStatus(res, patch.status());
    if (auto it = patch->find("name"); it != patch->end() && it->second != p[0])
      return sendError(res, 400,
                       "a PATCH cannot rename connector " + p[0] + " (or remove its name)");
    // "[hidden]" (a masked value sent back) leaves the stored secret as it is.
    if (auto previous = herder_.connectorConfig(p[0]); previous.isOk())
      for (auto it = patch->begin(); it != patch->end();)
        it = it->second && *it->second == runtime::kHiddenValue && previous->count(it->first) ? patch->erase(it)
                                                                                               : std::next(it);
    auto info = herder_.patchConnectorConfig(p[0], *patch);
    // Unlike create/replace, NotFound here means the connector itself is missing: 404.
    if (!info.isOk()) return sendStatus(res, info.status());
    sendJson(res, 200, connectorInfoJson(masked(withTasks(std::move(*info)))));
  }

  void connectorStatus(const Request&, Response& res, const Params& p) {
    auto s = herder_.connectorStatus(p[0]);
    if (!s.isOk()) return sendStatus(res, s.status());
    sendJson(res, 200, connectorStatusJson(*s, versionOf(p[0])));
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
    // Kafka Connect answers the plan: what it restarts is RESTARTING (onlyFailed: the failed
    // ones only), the rest keeps its state.
    if (!*onlyFailed || s->state == store::State::kFailed) s->state = store::State::kRestarting;
    if (*includeTasks)
      for (auto& t : s->tasks)
        if (!*onlyFailed || t.state == store::State::kFailed) t.state = store::State::kRestarting;
    sendJson(res, 202, connectorStatusJson(*s, versionOf(p[0])));
  }

  void pause(const Request&, Response& res, const Params& p) {
    targetChange(res, herder_.pauseConnector(p[0]));
  }
  void resume(const Request&, Response& res, const Params& p) {
    targetChange(res, herder_.resumeConnector(p[0]));
  }
  // Kafka Connect answers a stop with 204 (Strimzi accepts nothing else); pause and resume 202.
  void stopConnector(const Request&, Response& res, const Params& p) {
    if (auto s = herder_.stopConnector(p[0]); !s.isOk()) return sendStatus(res, s);
    res.status = 204;
  }
  static void targetChange(Response& res, const Status& s) {
    if (!s.isOk()) return sendStatus(res, s);
    res.status = 202;
  }

  void taskConfigs(const Request&, Response& res, const Params& p) {
    auto tasks = herder_.taskConfigs(p[0]);
    if (!tasks.isOk()) return sendStatus(res, tasks.status());
    for (auto& t : *tasks) t.config = herder_.maskConfig(t.config);
    sendJson(res, 200, taskConfigsJson(p[0], *tasks));
  }

  void taskStatus(const Request&, Response& res, const Params& p) {
    auto id = taskId(p[1]);
    if (!id.isOk()) return sendStatus(res, id.status());
    auto s = herder_.taskStatus(p[0], *id);
    if (!s.isOk()) return sendStatus(res, s.status());
    sendJson(res, 200, taskStatusJson(*s, versionOf(p[0])));
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
    if (auto s = whileStopping(p[0], [&] { return herder_.alterOffsets(p[0], *positions); }); !s.isOk())
      return sendOffsetsStatus(res, s);
    sendJson(res, 200,
             {{"message", "The offsets for this connector have been altered successfully"}});
  }

  void resetOffsets(const Request&, Response& res, const Params& p) {
    if (auto s = whileStopping(p[0], [&] { return herder_.resetOffsets(p[0]); }); !s.isOk())
      return sendOffsetsStatus(res, s);
    sendJson(res, 200,
             {{"message", "The offsets for this connector have been reset successfully"}});
  }

  // A connector whose status says STOPPED may still be letting its tasks go (a sink's consumer
  // leaving its group): the herder answers FailedPrecondition then. Kafka Connect's clients read
  // STOPPED as "offsets may change now" and do not retry a 400, so retry here a little
  // (kTaskWait at most) while the status says STOPPED.
  template <typename Op>
  Status whileStopping(const std::string& name, Op op) const {
    const auto deadline = std::chrono::steady_clock::now() + kTaskWait;
    while (true) {
      Status s = op();
      if (s.code() != StatusCode::kFailedPrecondition || std::chrono::steady_clock::now() >= deadline) return s;
      auto status = herder_.connectorStatus(name);
      if (!status.isOk() || status->state != store::State::kStopped) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Kafka Connect answers 400 when the connector is not STOPPED (a 409 makes kcctl retry for 30 s).
  static void sendOffsetsStatus(Response& res, const Status& s) {
    sendError(res, s.code() == StatusCode::kFailedPrecondition ? 400 : httpStatusFor(s.code()),
              s.message());
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
    report->className = p[0];  // Kafka Connect names the plugin as the path does
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

  // --- per-connector history (metrics_history.h)

  void metricsHistory(const Request&, Response& res, const Params& p) {
    if (auto s = herder_.connectorInfo(p[0]); !s.isOk()) return sendStatus(res, s.status());
    Json points = Json::array();
    if (auto h = history_ ? history_->history(p[0]) : std::nullopt)
      for (const auto& x : *h)
        points.push_back({{"time", x.timeMs},
                          {"records_in_per_second", x.recordsInPerSecond},
                          {"records_out_per_second", x.recordsOutPerSecond},
                          {"errors_per_second", x.errorsPerSecond},
                          {"commit_lag_records", x.commitLagRecords}});
    sendJson(res, 200, {{"connector", p[0]},
                        {"worker_id", herder_.workerId()},
                        {"interval_ms", options_.historyInterval.count()},
                        {"points", std::move(points)}});
  }

  // --- taps (runtime/tap.h)

  // The herder's taps, or a 404 answered (a herder without them).
  runtime::TapHub* tapsOr404(Response& res) {
    runtime::TapHub* hub = herder_.taps();
    if (hub == nullptr) sendError(res, 404, "this worker has no taps");
    return hub;
  }

  // --- a look at a backbone topic (Herder::topicRecords)

  void listTopics(const Request&, Response& res, const Params&) {
    auto got = herder_.topics();
    if (!got.isOk()) return sendStatus(res, got.status());
    Json topics = Json::array();
    for (const auto& t : *got) topics.push_back({{"name", t.name}, {"queues", t.queues}});
    sendJson(res, 200, {{"topics", std::move(topics)}});
  }

  void topicRecords(const Request& req, Response& res, const Params& p) {
    std::size_t limit = 5;
    if (req.has_param("limit")) {
      const std::string v = req.get_param_value("limit");
      unsigned n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size() || n < 1 || n > kMaxTopicRecords)
        return sendError(res, 400, "query parameter 'limit' must be a whole number from 1 to " + std::to_string(kMaxTopicRecords));
      limit = n;
    }
    if (herder_.isInternalTopic(p[0]))
      return sendError(res, 403, "topic " + p[0] + " is one of the worker's own (positions, schemas, the cluster's log): not shown");
    auto got = herder_.topicRecords(p[0], limit);
    if (!got.isOk()) return sendStatus(res, got.status());
    Json records = Json::array();
    for (const auto& r : *got) {
      Json j = tappedRecordJson(r.record);
      j.erase("task");
      j.erase("tapped_at");
      j["queue"] = r.queue;
      j["offset"] = r.offset;
      records.push_back(std::move(j));
    }
    sendJson(res, 200, {{"topic", p[0]}, {"limit", limit}, {"records", std::move(records)}});
  }

  void openTap(const Request& req, Response& res, const Params& p) {
    runtime::TapHub* hub = tapsOr404(res);
    if (hub == nullptr) return;
    auto options = parseTapOptions(req.body);
    if (!options.isOk()) return sendStatus(res, options.status());
    auto status = herder_.connectorStatus(p[0]);
    if (!status.isOk()) return sendStatus(res, status.status());
    auto random = randomBytes(16);
    if (!random.isOk()) return sendStatus(res, random.status());
    const std::string id = hexEncode(*random);
    if (auto s = hub->open(id, p[0], *options); !s.isOk())
      return sendError(res, s.code() == StatusCode::kResourceExhausted ? 429 : 400, s.message());
    // In a cluster a tap sees the connector's tasks running on this worker only.
    int here = 0;
    for (const auto& t : status->tasks) here += t.workerId == herder_.workerId();
    sendJson(res, 201, {{"id", id},
                        {"connector", p[0]},
                        {"worker_id", herder_.workerId()},
                        {"tasks_on_this_worker", here},
                        {"max_records_per_second", options->recordsPerSecond},
                        {"buffer", options->capacity},
                        {"idle_timeout_ms", options->idleMs}});
  }

  void readTap(const Request&, Response& res, const Params& p) {
    runtime::TapHub* hub = tapsOr404(res);
    if (hub == nullptr) return;
    auto batch = hub->read(p[0]);
    if (!batch.isOk()) return sendStatus(res, batch.status());
    sendJson(res, 200, tapBatchJson(*batch));
  }

  // The tap as server-sent events: its records every 500 ms as `event: records` (the JSON of GET
  // /taps/{id}), `event: end` when the tap is gone. The stream owns the tap: when the client
  // goes away (a closed page), the tap is closed at once.
  class TapEvents final : public http::EventStream {
   public:
    TapEvents(runtime::TapHub& hub, std::string id) : hub_(hub), id_(std::move(id)) {}
    ~TapEvents() override { hub_.close(id_); }
    std::optional<std::string> next() override {
      if (ended_) return std::nullopt;
      auto batch = hub_.read(id_);
      if (!batch.isOk()) {
        ended_ = true;
        return "event: end\ndata: " + dumpJson(Json{{"message", batch.status().message()}}) + "\n\n";
      }
      if (batch->records.empty() && batch->sampledOut == 0 && batch->overflowed == 0) return std::string();
      return "event: records\ndata: " + dumpJson(tapBatchJson(*batch)) + "\n\n";
    }

   private:
    runtime::TapHub& hub_;
    const std::string id_;
    bool ended_ = false;
  };

  void tapEvents(const Request&, Response& res, const Params& p) {
    runtime::TapHub* hub = tapsOr404(res);
    if (hub == nullptr) return;
    auto first = hub->read(p[0]);  // also: an unknown tap is a plain 404, not an empty stream
    if (!first.isOk()) return sendStatus(res, first.status());
    res.status = 200;
    res.set_header("Content-Type", "text/event-stream; charset=utf-8");
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.body = "retry: 2000\n\n";
    if (!first->records.empty() || first->sampledOut || first->overflowed)
      res.body += "event: records\ndata: " + dumpJson(tapBatchJson(*first)) + "\n\n";
    res.stream = std::make_shared<TapEvents>(*hub, p[0]);
  }

  void closeTap(const Request&, Response& res, const Params& p) {
    runtime::TapHub* hub = tapsOr404(res);
    if (hub == nullptr) return;
    if (!hub->close(p[0])) return sendError(res, 404, "no tap " + p[0].substr(0, 64));
    res.status = 204;
  }

  // --- loggers

  void loggers(const Request&, Response& res, const Params&) {
    Json out = Json::object();
    for (const auto& [name, level] : core::loggerLevels())
      out[name] = {{"level", levelText(level)}, {"last_modified", lastModified(name)}};
    sendJson(res, 200, out);
  }

  void getLogger(const Request&, Response& res, const Params& p) {
    auto levels = core::loggerLevels();
    auto it = levels.find(p[0]);
    if (it == levels.end()) return sendError(res, 404, "no logger named '" + p[0] + "'");
    sendJson(res, 200, {{"level", levelText(it->second)}, {"last_modified", lastModified(p[0])}});
  }

  void putLogger(const Request& req, Response& res, const Params& p) {
    auto level = parseLoggerLevel(req.body);
    if (!level.isOk()) return sendStatus(res, level.status());
    auto changed = core::setLoggerLevel(p[0], *level);
    if (!changed.isOk()) return sendError(res, 400, changed.status().message());
    {
      const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
      std::lock_guard lock(loggersMu_);
      for (const auto& name : *changed) loggerChanged_[name] = now;
    }
    sendJson(res, 200, *changed);
  }

  // Kafka Connect's last_modified: when a logger's level was last set over REST (epoch ms), null
  // if never.
  Json lastModified(const std::string& name) const {
    std::lock_guard lock(loggersMu_);
    auto it = loggerChanged_.find(name);
    return it == loggerChanged_.end() ? Json(nullptr) : Json(it->second);
  }

  // --- RocketMQ Connect paths

  // Every live worker, idle ones too: in a cluster the members of GET /cluster (the ones that run
  // nothing were missing), plus any worker a status names.
  void clusterInfo(const Request&, Response& res, const Params&) {
    std::set<std::string> workers{herder_.workerId()};
    if (auto cluster = herder_.clusterJson(); cluster.isOk()) {
      auto j = parseJson(*cluster);
      if (j.isOk() && j->is_object() && j->contains("workers") && (*j)["workers"].is_array())
        for (const auto& m : (*j)["workers"])
          if (m.is_object() && m.contains("id") && m["id"].is_string())
            workers.insert(m["id"].get<std::string>());
    }
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
      out[name] = {{"config", herder_.maskConfig(*config)},
                   {"status", connectorStatusJson(*status, versionOf(name))}};
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
      if (config.isOk()) out[name] = herder_.maskConfig(*config);
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
            if (c.id == t.id) task["config"] = herder_.maskConfig(c.config);
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

  // A connector's info as it may leave the worker: secrets masked (runtime/secrets.h).
  control::ConnectorInfo masked(control::ConnectorInfo info) const {
    info.config = herder_.maskConfig(info.config);
    return info;
  }

  control::Herder& herder_;
  const RestOptions& options_;
  RequestPolicy& policy_;
  std::vector<Route> routes_;
  MetricsHistory* history_ = nullptr;  // set by RestServer
  // The admitted request's verdict while its handler runs on this thread (whoami reads it).
  static inline thread_local const Verdict* currentVerdict_ = nullptr;
  // The worker's plugins, read once (the registry is read-only after start-up).
  mutable std::mutex pluginsMu_;
  mutable std::vector<runtime::PluginInfo> plugins_;
  mutable std::mutex loggersMu_;
  std::map<std::string, std::int64_t> loggerChanged_;  // logger -> epoch ms of its last PUT

 public:
  // The running transport, for its counters in /metrics (set by start(), cleared by stop()).
  std::atomic<const http::HttpServer*> transport_{nullptr};
};

std::vector<std::string> listenerHosts(const RestOptions& options) {
  if (options.listeners.empty()) return {options.host};
  std::vector<std::string> out;
  for (const auto& text : options.listeners)
    if (auto l = http::parseListener(text); l.isOk()) out.push_back(l->host);
  return out;  // a listener that does not parse fails start() with its own message
}

bool clientCertsRequired(const RestOptions& options) {
  if (options.transport.tls.clientAuthentication != "required") return false;
  for (const auto& text : options.listeners)
    if (auto l = http::parseListener(text); l.isOk() && l->tls) return true;
  return false;
}

RestServer::RestServer(control::Herder& herder, RestOptions options)
    : herder_(herder), options_(std::move(options)) {
  options_.security.bindHosts = listenerHosts(options_);
  options_.security.auth.clientCertRequired = clientCertsRequired(options_);
  policy_ = std::make_unique<RequestPolicy>(options_.security);
  routes_ = std::make_unique<Routes>(herder_, options_, *policy_);
  history_ = std::make_unique<MetricsHistory>(options_.historyPoints);
  routes_->setHistory(history_.get());
}

std::vector<RouteSpec> RestServer::routeTable() const { return routes_->table(); }

RestServer::~RestServer() { stop(); }

int RestServer::port() const { return ports_.empty() ? 0 : ports_.front(); }

std::vector<int> RestServer::ports() const { return ports_; }

http::ServerStats RestServer::transportStats() const {
  return server_ ? server_->stats() : http::ServerStats{};
}

Status RestServer::start() {
  if (server_) return Status::failedPrecondition("the REST server is already started");
  if (auto s = policy_->start(); !s.isOk()) return s;
  http::ServerOptions so = options_.transport;
  so.listeners.clear();
  if (options_.listeners.empty()) {
    so.listeners.push_back(http::Listener{false, options_.host, options_.port});
  } else {
    for (const auto& text : options_.listeners) {
      auto l = http::parseListener(text);
      if (!l.isOk()) return l.status();
      so.listeners.push_back(*l);
    }
  }
  const std::vector<http::Listener> listeners = so.listeners;
  so.handlerThreads = kRequestThreads;
  std::string webRoot = options_.webRoot;
  if (!webRoot.empty() && !std::filesystem::is_directory(webRoot)) {
    core::logger("rest")->warn("web console folder {} does not exist; /ui is not served", webRoot);
    webRoot.clear();
  }
  const bool console = !webRoot.empty() || !options_.console.empty();
  if (webRoot.empty() && options_.console.empty())
    core::logger("rest")->info("the web console is not included: {}", options_.consoleMissing);
  auto server = std::make_unique<http::HttpServer>(
      std::move(so), [this, webRoot, console](const Request& req, Response& res) {
        if (!webRoot.empty()) {
          if (http::serveStatic(webRoot, "/ui", req, res)) {
            addConsoleSecurityHeaders(res);
            return;
          }
        } else if (serveConsole(options_.console, options_.consoleMissing, req, res)) {
          return;
        }
        // A browser asking for / lands on the console (public pages; the console then asks for
        // credentials where authentication is on). API clients (Accept without text/html) get
        // Kafka Connect's answer.
        if (console && req.path == "/" && (req.method == "GET" || req.method == "HEAD") &&
            req.get_header_value("Accept").find("text/html") != std::string::npos) {
          res.set_redirect("/ui/");
          return;
        }
        routes_->dispatch(req, res);
      });
  if (auto s = server->start(); !s.isOk()) return s;
  ports_ = server->ports();
  server_ = std::move(server);
  routes_->transport_ = server_.get();
  {
    std::lock_guard lock(samplerMu_);
    samplerStop_ = false;
  }
  sampler_ = std::thread([this] {
    std::unique_lock lock(samplerMu_);
    while (!samplerStop_) {
      lock.unlock();
      history_->sample(herder_.connectorCounters(), core::nowMs());
      lock.lock();
      samplerWake_.wait_for(lock, options_.historyInterval, [this] { return samplerStop_; });
    }
  });
  std::string where;
  for (std::size_t i = 0; i < ports_.size() && i < listeners.size(); ++i)
    where += (where.empty() ? "" : ", ") + std::string(listeners[i].tls ? "https://" : "http://") +
             listeners[i].host + ":" + std::to_string(ports_[i]);
  core::logger("rest")->info("REST server listening on {}", where);
  return Status::ok();
}

void RestServer::stop() {
  if (sampler_.joinable()) {
    {
      std::lock_guard lock(samplerMu_);
      samplerStop_ = true;
    }
    samplerWake_.notify_all();
    sampler_.join();
  }
  if (!server_) return;
  server_->stop();
  routes_->transport_ = nullptr;
  server_.reset();
  ports_.clear();
}

}  // namespace ferry::rest
