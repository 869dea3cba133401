#include "ferry/ctl.h"

#include <curl/curl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/fs.h"
#include "core/json_bounds.h"

namespace ferry::ctl {
namespace {

using Json = nlohmann::json;

std::string dump(const Json& j, int indent = -1) {
  try {
    return j.dump(indent, ' ', false, Json::error_handler_t::replace);
  } catch (...) {
    return "null";
  }
}

// Scalars as plain text (strings without quotes); anything else as compact JSON.
std::string text(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "";
  return dump(j);
}

std::string field(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it == j.end() ? "" : text(*it);
}

const Json& member(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::size_t displayWidth(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count code points, not bytes
  return n;
}

// "k=v, k2=v2" for partition and offset maps.
std::string mapText(const Json& j) {
  if (!j.is_object()) return text(j);
  std::string out;
  for (const auto& [k, v] : j.items()) out += (out.empty() ? "" : ", ") + k + "=" + text(v);
  return out;
}

std::string encodeSegment(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

struct Reply {
  int status = 0;
  std::string body;
  Json json;  // parsed body (null when empty or not JSON)
};

// TLS files and credentials for the REST client (--cacert, --cert, --key, --user, --token).
struct ClientAuth {
  std::string caCert;
  std::string cert;
  std::string key;
  std::string user;      // NAME or NAME:PASSWORD
  std::string password;  // when not part of `user`
  std::string token;
};

// A REST client bound to one base URL (libcurl); prints transport and server errors itself.
class Api {
 public:
  Api(std::string url, ClientAuth auth, std::ostream& err)
      : url_(std::move(url)), auth_(std::move(auth)), err_(err) {
    while (!url_.empty() && url_.back() == '/') url_.pop_back();
  }

  bool validUrl() const { return url_.rfind("http://", 0) == 0 || url_.rfind("https://", 0) == 0; }

  // Sends a request; returns kExitOk with `reply` filled for a 2xx answer, otherwise prints
  // what went wrong and returns kExitServerError or kExitUnreachable.
  int call(const std::string& method, const std::string& path, const Json* body, Reply& reply) {
    static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    (void)initialised;
    std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) {
      err_ << "error: cannot initialise the HTTP client\n";
      return kExitUnreachable;
    }
    CURL* c = curl.get();
    std::string payload = body ? dump(*body) : std::string();
    std::string url = url_ + path;
    std::string received;
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Api::collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &received);
    if (body) {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
    }
    struct curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Accept: application/json");
    if (body) headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    std::string bearer;
    if (!auth_.token.empty()) {
      bearer = "Authorization: Bearer " + auth_.token;
      headers = curl_slist_append(headers, bearer.c_str());
    } else if (!auth_.user.empty()) {
      std::string userpwd = auth_.user;
      if (userpwd.find(':') == std::string::npos) userpwd += ":" + auth_.password;
      curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
      curl_easy_setopt(c, CURLOPT_USERPWD, userpwd.c_str());
    }
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> headerList(headers, curl_slist_free_all);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    if (!auth_.caCert.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, auth_.caCert.c_str());
    if (!auth_.cert.empty()) {
      curl_easy_setopt(c, CURLOPT_SSLCERT, auth_.cert.c_str());
      curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (!auth_.key.empty()) {
      curl_easy_setopt(c, CURLOPT_SSLKEY, auth_.key.c_str());
      curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
      err_ << "error: cannot reach ferry at " << url_ << ": "
           << (errbuf[0] ? errbuf : curl_easy_strerror(rc)) << "\n";
      return kExitUnreachable;
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    reply.status = static_cast<int>(status);
    reply.body = std::move(received);
    auto replyJson = core::parseJsonBounded<Json>(reply.body);
    reply.json = replyJson.isOk() ? std::move(*replyJson) : Json();
    if (reply.status >= 200 && reply.status < 300) return kExitOk;
    std::string message = field(reply.json, "message");
    if (message.empty()) message = reply.body.empty() ? "(no message)" : reply.body;
    err_ << "error: " << method << " " << path << " answered " << reply.status << ": " << message
         << "\n";
    return kExitServerError;
  }

 private:
  static std::size_t collect(char* data, std::size_t size, std::size_t n, void* out) {
    auto* s = static_cast<std::string*>(out);
    constexpr std::size_t kMaxAnswer = 256u << 20;
    if (s->size() + size * n > kMaxAnswer) return 0;  // aborts the transfer
    s->append(data, size * n);
    return size * n;
  }

  std::string url_;
  ClientAuth auth_;
  std::ostream& err_;
};

std::string connectorPath(const std::string& name, const std::string& rest = "") {
  return "/connectors/" + encodeSegment(name) + rest;
}

}  // namespace

std::string renderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i >= widths.size()) widths.push_back(0);
      widths[i] = std::max(widths[i], displayWidth(row[i]));
    }
  };
  measure(header);
  for (const auto& r : rows) measure(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      std::string cell = i < row.size() ? row[i] : "";
      // Newlines would break the alignment; tables show one line per cell.
      std::replace(cell.begin(), cell.end(), '\n', ' ');
      l += cell;
      if (i + 1 < widths.size()) l += std::string(widths[i] - displayWidth(cell) + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

Result<core::ConnectorDefinition> loadDefinition(const std::string& path,
                                                 const std::string& nameOverride,
                                                 bool requireName) {
  auto content = core::readFile(path);
  if (!content.isOk())
    return Status::invalidArgument("cannot read " + path + ": " + content.status().message());
  auto def = core::parseConnectorDefinition(*content);
  if (!def.isOk()) return Status::invalidArgument(path + ": " + def.status().message());
  if (!nameOverride.empty()) {
    def->name = nameOverride;
    if (def->config.count("name")) def->config["name"] = nameOverride;
  }
  if (requireName && def->name.empty())
    return Status::invalidArgument(path + " names no connector: add \"name\" or pass --name");
  return def;
}

std::string renderConnectorList(const Json& expanded) {
  std::vector<std::vector<std::string>> rows;
  if (expanded.is_object()) {
    for (const auto& [name, entry] : expanded.items()) {
      const Json& status = member(entry, "status");
      const Json& info = member(entry, "info");
      std::string type = field(info, "type");
      if (type.empty()) type = field(status, "type");
      const Json& tasks = member(status, "tasks");
      std::size_t running = 0, total = 0;
      if (tasks.is_array()) {
        total = tasks.size();
        for (const auto& t : tasks) running += field(t, "state") == "RUNNING";
      }
      rows.push_back({name, type, field(member(status, "connector"), "state"),
                      std::to_string(running) + "/" + std::to_string(total),
                      field(member(status, "connector"), "worker_id")});
    }
  }
  return renderTable({"NAME", "TYPE", "STATE", "TASKS", "WORKER"}, rows);
}

std::string renderStatus(const Json& status) {
  const Json& connector = member(status, "connector");
  std::string out = "Connector: " + field(status, "name");
  if (auto type = field(status, "type"); !type.empty()) out += " (" + type + ")";
  out += "\nState:     " + field(connector, "state");
  if (auto worker = field(connector, "worker_id"); !worker.empty()) out += " on " + worker;
  out += "\n";
  std::string traces;
  if (field(connector, "state") == "FAILED" && !field(connector, "trace").empty())
    traces += "\nConnector trace:\n" + field(connector, "trace") + "\n";
  std::vector<std::vector<std::string>> rows;
  const Json& tasks = member(status, "tasks");
  if (tasks.is_array()) {
    for (const auto& t : tasks) {
      std::string progress;
      if (const Json& p = member(t, "progress"); p.is_object()) {
        progress = field(p, "phase") + ": " + field(p, "done");
        if (auto est = field(p, "estimated"); !est.empty()) progress += "/" + est;
        progress += " " + field(p, "unit");
        if (auto pct = field(p, "percent"); !pct.empty()) progress += " (" + pct + "%)";
        if (auto rate = field(p, "rate_per_second"); !rate.empty() && rate != "0.0" && rate != "0")
          progress += ", " + rate + "/s";
      }
      // The connection to the outside system: "connected", "reconnecting since <time> (n lost)", ...
      std::string connection;
      if (const Json& c = member(t, "connection"); c.is_object()) {
        connection = field(c, "state");
        if (connection != "connected") connection += " since " + field(c, "since");
        if (auto n = field(c, "reconnects"); !n.empty() && n != "0") connection += " (" + n + " lost)";
        if (auto why = field(c, "error"); !why.empty() && field(t, "state") != "FAILED")
          traces += "\nTask " + field(t, "id") + " connection: " + why + "\n";
      }
      rows.push_back({field(t, "id"), field(t, "state"), field(t, "worker_id"), connection, progress});
      if (field(t, "state") == "FAILED" && !field(t, "trace").empty())
        traces += "\nTask " + field(t, "id") + " trace:\n" + field(t, "trace") + "\n";
    }
  }
  // The CONNECTION column when a task reports one, the PROGRESS column only when a task reports
  // long work (a table's first load, say).
  std::vector<std::string> header = {"TASK", "STATE", "WORKER", "CONNECTION", "PROGRESS"};
  for (std::size_t col = 4; col >= 3; --col) {
    bool any = false;
    for (const auto& r : rows) any = any || !r[col].empty();
    if (any) continue;
    for (auto& r : rows) r.erase(r.begin() + static_cast<std::ptrdiff_t>(col));
    header.erase(header.begin() + static_cast<std::ptrdiff_t>(col));
  }
  out += "\n" + renderTable(header, rows);
  return out + traces;
}

std::string renderPipeline(const Json& p) {
  std::string out = "Pipeline: " + field(p, "name") + "\nMode:     " + field(p, "mode") + "\n";
  if (auto topic = field(p, "topic"); !topic.empty()) out += "Topic:    " + topic + "\n";
  std::vector<std::vector<std::string>> rows;
  const Json& cs = member(p, "connectors");
  if (cs.is_array()) {
    for (const auto& c : cs) {
      std::size_t running = 0, total = 0;
      const Json& tasks = member(c, "tasks");
      if (tasks.is_array())
        for (const auto& t : tasks) {
          ++total;
          running += field(t, "state") == "RUNNING";
        }
      rows.push_back({field(c, "name"), field(c, "state"),
                      std::to_string(running) + "/" + std::to_string(total)});
    }
  }
  return out + "\n" + renderTable({"CONNECTOR", "STATE", "TASKS"}, rows);
}

std::string renderConnector(const Json& info) {
  std::string out = "Name:  " + field(info, "name") + "\nType:  " + field(info, "type") + "\n";
  const Json& tasks = member(info, "tasks");
  out += "Tasks: " + std::to_string(tasks.is_array() ? tasks.size() : 0) + "\n\n";
  std::vector<std::vector<std::string>> rows;
  const Json& config = member(info, "config");
  if (config.is_object())
    for (const auto& [k, v] : config.items()) rows.push_back({k, text(v)});
  return out + renderTable({"KEY", "VALUE"}, rows);
}

std::string renderOffsets(const Json& offsets) {
  std::vector<std::vector<std::string>> rows;
  const Json& list = member(offsets, "offsets");
  if (list.is_array())
    for (const auto& o : list)
      rows.push_back({mapText(member(o, "partition")), mapText(member(o, "offset"))});
  return renderTable({"PARTITION", "OFFSET"}, rows);
}

std::string renderPlugins(const Json& plugins) {
  std::vector<std::vector<std::string>> rows;
  if (plugins.is_array())
    for (const auto& p : plugins)
      rows.push_back({field(p, "class"), field(p, "type"), field(p, "version")});
  return renderTable({"CLASS", "TYPE", "VERSION"}, rows);
}

std::string renderValidation(const Json& configInfos) {
  std::vector<std::vector<std::string>> rows;
  const Json& configs = member(configInfos, "configs");
  if (configs.is_array()) {
    for (const auto& c : configs) {
      const Json& value = member(c, "value");
      const Json& errors = member(value, "errors");
      if (!errors.is_array()) continue;
      for (const auto& e : errors) rows.push_back({field(value, "name"), text(e)});
    }
  }
  std::string count = field(configInfos, "error_count");
  std::string out =
      field(configInfos, "name") + ": " + (count.empty() ? "0" : count) + " error(s)\n";
  if (!rows.empty()) out += "\n" + renderTable({"KEY", "ERROR"}, rows);
  return out;
}

int run(int argc, char** argv) { return run(argc, argv, std::cout, std::cerr); }

int run(int argc, char** argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"Manage the connectors of a ferry worker through its REST API.", "ferry ctl"};
  app.require_subcommand(1);
  app.fallthrough();
  const char* env = std::getenv("FERRY_URL");
  std::string url = env && *env ? env : "http://127.0.0.1:8082";
  app.add_option("--url", url,
                 "the worker's REST URL (default $FERRY_URL or http://127.0.0.1:8082)");
  ClientAuth auth;
  auto fromEnv = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  auth.user = fromEnv("FERRY_REST_USER");
  auth.password = fromEnv("FERRY_REST_PASSWORD");
  auth.token = fromEnv("FERRY_REST_TOKEN");
  app.add_option("--cacert", auth.caCert, "https: PEM file of the CAs that sign the worker's certificate");
  app.add_option("--cert", auth.cert, "https: client certificate (PEM) for workers that ask for one");
  app.add_option("--key", auth.key, "https: private key (PEM) of --cert");
  app.add_option("--user", auth.user,
                 "HTTP basic credentials NAME[:PASSWORD] (default $FERRY_REST_USER, password "
                 "$FERRY_REST_PASSWORD)");
  app.add_option("--token", auth.token, "bearer token (default $FERRY_REST_TOKEN)");

  std::string name, file, nameOverride, output = "table";
  bool includeTasks = false, onlyFailed = false;
  std::vector<std::string> offsetArgs;
  auto addOutput = [&](CLI::App* sub) {
    sub->add_option("-o,--output", output, "table (default) or json")
        ->check(CLI::IsMember({"table", "json"}));
  };
  auto addName = [&](CLI::App* sub) {
    sub->add_option("NAME", name, "connector name")->required();
  };
  auto addFile = [&](CLI::App* sub) {
    sub->add_option("-f,--file", file, "connector definition: JSON, YAML or .properties")
        ->required();
  };

  auto* list = app.add_subcommand("list", "list connectors with their type, state and tasks");
  addOutput(list);
  auto* get = app.add_subcommand("get", "show a connector's config and tasks");
  addName(get);
  addOutput(get);
  auto* create = app.add_subcommand("create", "create a connector from a file");
  addFile(create);
  create->add_option("--name", nameOverride, "connector name (overrides the file's)");
  auto* apply = app.add_subcommand("apply", "create or update a connector from a file");
  addFile(apply);
  apply->add_option("--name", nameOverride, "connector name (overrides the file's)");
  auto* status = app.add_subcommand("status", "show a connector's and its tasks' states");
  addName(status);
  addOutput(status);
  auto* pause = app.add_subcommand("pause", "pause a connector");
  addName(pause);
  auto* resume = app.add_subcommand("resume", "resume a paused or stopped connector");
  addName(resume);
  auto* stop = app.add_subcommand("stop", "stop a connector (keeps config and offsets)");
  addName(stop);
  auto* del = app.add_subcommand("delete", "delete a connector");
  addName(del);
  auto* restart = app.add_subcommand("restart", "restart a connector");
  addName(restart);
  restart->add_flag("--include-tasks", includeTasks, "restart its tasks too");
  restart->add_flag("--only-failed", onlyFailed, "restart only what FAILED");
  auto* offsets =
      app.add_subcommand("offsets", "show offsets: `offsets NAME`; reset: `offsets reset NAME`");
  offsets->add_option("ARGS", offsetArgs, "NAME, or reset NAME")->required()->expected(1, 2);
  addOutput(offsets);
  auto* plugins = app.add_subcommand("plugins", "list connector, transform and converter plugins");
  addOutput(plugins);
  auto* validate =
      app.add_subcommand("validate", "validate a connector definition file (exit 1 when invalid)");
  addFile(validate);
  addOutput(validate);

  auto* pipeline = app.add_subcommand(
      "pipeline", "pipelines: `pipeline list`, `pipeline get NAME`, `pipeline apply -f FILE.json`, "
                  "`pipeline delete NAME`");
  std::vector<std::string> pipelineArgs;
  pipeline->add_option("ARGS", pipelineArgs, "list | get NAME | apply | delete NAME")
      ->required()
      ->expected(1, 2);
  pipeline->add_option("-f,--file", file, "apply: the pipeline as JSON (the body of POST /pipelines)");
  addOutput(pipeline);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e, out, err);
    return rc == 0 ? kExitOk : kExitUsage;
  }

  Api api(url, auth, err);
  if (!api.validUrl()) {
    err << "error: --url must start with http:// or https://, not '" << url << "'\n";
    return kExitUsage;
  }
  bool json = output == "json";
  Reply reply;
  auto show = [&](const std::function<std::string(const Json&)>& render) {
    out << (json ? dump(reply.json, 2) + "\n" : render(reply.json));
    return kExitOk;
  };
  auto simple = [&](const std::string& method, const std::string& path, const std::string& done) {
    int rc = api.call(method, path, nullptr, reply);
    if (rc == kExitOk) out << done << "\n";
    return rc;
  };

  if (list->parsed()) {
    if (int rc = api.call("GET", "/connectors?expand=status&expand=info", nullptr, reply))
      return rc;
    return show(renderConnectorList);
  }
  if (get->parsed()) {
    if (int rc = api.call("GET", connectorPath(name), nullptr, reply)) return rc;
    return show(renderConnector);
  }
  if (status->parsed()) {
    if (int rc = api.call("GET", connectorPath(name, "/status"), nullptr, reply)) return rc;
    return show(renderStatus);
  }
  if (create->parsed() || apply->parsed() || validate->parsed()) {
    auto def = loadDefinition(file, nameOverride, /*requireName=*/!validate->parsed());
    if (!def.isOk()) {
      err << "error: " << def.status().message() << "\n";
      return kExitUsage;
    }
    core::ConnectorDefinition d = std::move(*def);
    if (create->parsed()) {
      Json body = {{"name", d.name}, {"config", d.config}};
      if (int rc = api.call("POST", "/connectors", &body, reply)) return rc;
      out << "created connector " << d.name << "\n";
      return kExitOk;
    }
    if (apply->parsed()) {
      Json body = d.config;
      if (int rc = api.call("PUT", connectorPath(d.name, "/config"), &body, reply)) return rc;
      out << (reply.status == 201 ? "created" : "updated") << " connector " << d.name << "\n";
      return kExitOk;
    }
    auto cls = d.config.find("connector.class");
    if (cls == d.config.end() || cls->second.empty()) {
      err << "error: " << file << " has no connector.class to validate against\n";
      return kExitUsage;
    }
    Json body = d.config;
    if (int rc =
            api.call("PUT", "/connector-plugins/" + encodeSegment(cls->second) + "/config/validate",
                     &body, reply))
      return rc;
    show(renderValidation);
    return member(reply.json, "error_count").is_number() &&
                   member(reply.json, "error_count").get<int>() > 0
               ? kExitServerError
               : kExitOk;
  }
  if (pause->parsed())
    return simple("PUT", connectorPath(name, "/pause"), "pausing connector " + name);
  if (resume->parsed())
    return simple("PUT", connectorPath(name, "/resume"), "resuming connector " + name);
  if (stop->parsed())
    return simple("PUT", connectorPath(name, "/stop"), "stopping connector " + name);
  if (del->parsed()) return simple("DELETE", connectorPath(name), "deleted connector " + name);
  if (restart->parsed()) {
    std::string path = connectorPath(name, "/restart");
    if (includeTasks || onlyFailed)
      path += std::string("?includeTasks=") + (includeTasks ? "true" : "false") +
              "&onlyFailed=" + (onlyFailed ? "true" : "false");
    return simple("POST", path, "restarting connector " + name);
  }
  if (offsets->parsed()) {
    if (offsetArgs.size() == 2) {
      if (offsetArgs[0] != "reset") {
        err << "error: expected `offsets NAME` or `offsets reset NAME`\n";
        return kExitUsage;
      }
      if (int rc = api.call("DELETE", connectorPath(offsetArgs[1], "/offsets"), nullptr, reply))
        return rc;
      out << (json ? dump(reply.json, 2) : field(reply.json, "message")) << "\n";
      return kExitOk;
    }
    if (int rc = api.call("GET", connectorPath(offsetArgs[0], "/offsets"), nullptr, reply))
      return rc;
    return show(renderOffsets);
  }
  if (pipeline->parsed()) {
    const std::string& verb = pipelineArgs[0];
    const std::string target = pipelineArgs.size() > 1 ? pipelineArgs[1] : "";
    if (verb == "list" && target.empty()) {
      if (int rc = api.call("GET", "/pipelines", nullptr, reply)) return rc;
      return show([](const Json& names) {
        std::string o;
        if (names.is_array())
          for (const auto& n : names) o += text(n) + "\n";
        return o;
      });
    }
    if (verb == "get" && !target.empty()) {
      if (int rc = api.call("GET", "/pipelines/" + encodeSegment(target), nullptr, reply)) return rc;
      return show(renderPipeline);
    }
    if (verb == "delete" && !target.empty())
      return simple("DELETE", "/pipelines/" + encodeSegment(target), "deleted pipeline " + target);
    if (verb == "apply" && target.empty()) {
      if (file.empty()) {
        err << "error: pipeline apply needs -f FILE.json\n";
        return kExitUsage;
      }
      auto textOf = core::readFile(file);
      if (!textOf.isOk()) {
        err << "error: " << textOf.status().message() << "\n";
        return kExitUsage;
      }
      auto parsedBody = core::parseJsonBounded<Json>(*textOf);
      Json body = parsedBody.isOk() ? std::move(*parsedBody) : Json();
      if (!body.is_object() || !member(body, "name").is_string()) {
        err << "error: " << file << " must hold a JSON object with a \"name\" (the body of POST /pipelines)\n";
        return kExitUsage;
      }
      const std::string pname = body["name"].get<std::string>();
      if (int rc = api.call("PUT", "/pipelines/" + encodeSegment(pname), &body, reply)) return rc;
      out << (reply.status == 201 ? "created" : "updated") << " pipeline " << pname << "\n";
      return kExitOk;
    }
    err << "error: expected `pipeline list`, `pipeline get NAME`, `pipeline apply -f FILE` or "
           "`pipeline delete NAME`\n";
    return kExitUsage;
  }
  if (plugins->parsed()) {
    if (int rc = api.call("GET", "/connector-plugins?connectorsOnly=false", nullptr, reply))
      return rc;
    return show(renderPlugins);
  }
  err << app.help();
  return kExitUsage;
}

}  // namespace ferry::ctl
