#include "rest/rest_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/logging.h"
#include "fake_herder.h"
#include "http_test_client.h"
#include "rest/json_mapping.h"

namespace ferry::rest {
namespace {

using ::testing::HasSubstr;

struct Answer {
  int status = 0;
  Json json;
  std::string body;
  std::string allow;
  std::string contentType;
};

class RestServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RestOptions o;
    o.port = 0;
    o.version = "0.1.0";
    o.commit = "abc123";
    o.rocketmqCompat = rocketmqCompat_;
    server_ = std::make_unique<RestServer>(herder_, o);
    ASSERT_TRUE(server_->start().isOk());
    ASSERT_GT(server_->port(), 0);
  }
  void TearDown() override { server_->stop(); }

  // Sends on one kept-alive connection (reconnecting when the server closed it), as a client
  // library would.
  Answer call(const std::string& method, const std::string& path, const std::string& body = "") {
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (method == "POST" || method == "PUT" || method == "PATCH")
      req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n";
    req += "\r\n" + body;
    testing::HttpAnswer r;
    for (int attempt = 0; attempt < 2 && r.status == 0; ++attempt) {
      if (!conn_ || attempt > 0) conn_ = std::make_unique<testing::TestConnection>(server_->port());
      if (conn_->send(req)) r = conn_->read(std::chrono::seconds(30), method == "HEAD");
    }
    EXPECT_NE(r.status, 0) << method << " " << path;
    Answer a;
    if (r.status == 0) return a;
    a.status = r.status;
    a.body = r.body;
    a.allow = r.header("Allow");
    a.contentType = r.header("Content-Type");
    a.json = Json::parse(r.body, nullptr, false);
    if (r.header("Connection") == "close") conn_.reset();
    return a;
  }

  // Asserts the error shape {"error_code": status, "message": non-empty}.
  std::string expectError(const Answer& a, int status) {
    EXPECT_EQ(a.status, status) << a.body;
    EXPECT_TRUE(a.json.is_object()) << a.body;
    if (!a.json.is_object()) return "";
    EXPECT_EQ(a.json.value("error_code", 0), status) << a.body;
    std::string m = a.json.value("message", "");
    EXPECT_FALSE(m.empty()) << a.body;
    return m;
  }

  void createSource(const std::string& name) {
    auto a = call(
        "POST", "/connectors",
        R"({"name": ")" + name +
            R"(", "config": {"connector.class": "FileStreamSource", "file": "/in", "topic": "t"}})");
    ASSERT_EQ(a.status, 201) << a.body;
  }

  bool rocketmqCompat_ = false;  // worker key rest.rocketmq.compat.enabled
  testing::FakeHerder herder_;
  std::unique_ptr<RestServer> server_;
  std::unique_ptr<testing::TestConnection> conn_;
};

// GET /topics and GET /topics/{name}/records: a look at a backbone topic, bounded, never at the
// worker's own topics; bad limits and names refused.
TEST_F(RestServerTest, TopicRecordsShowTheNewestRecordsOfATopic) {
  for (int i = 0; i < 8; ++i) {
    Headers h;
    h.add("mqtt.topic", Bytes::copyOf("sensors/d" + std::to_string(i)));
    herder_.topicT.push_back({runtime::boundedCopy(-1, "t", Bytes(), Bytes::copyOf(i == 7 ? std::string("\xff\xfe") : "v" + std::to_string(i)), h, 1000 + i),
                              i % 2, i / 2});
  }
  auto list = call("GET", "/topics");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.json, Json::parse(R"({"topics":[{"name":"t","queues":2}]})"));
  auto a = call("GET", "/topics/t/records");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(herder_.lastLimit, 5u);  // the default
  ASSERT_EQ(a.json["records"].size(), 5u);
  const Json& last = a.json["records"][4];
  EXPECT_EQ(last["queue"], 1);
  EXPECT_EQ(last["offset"], 3);
  EXPECT_EQ(last["timestamp"], 1007);
  EXPECT_EQ(last["value_encoding"], "base64");  // not UTF-8
  EXPECT_EQ(last["key"], nullptr);
  EXPECT_EQ(last["headers"][0]["key"], "mqtt.topic");
  EXPECT_EQ(last["headers"][0]["value"], "sensors/d7");
  EXPECT_FALSE(last.contains("task"));
  EXPECT_EQ(a.json["records"][0]["value"], "v3");
  a = call("GET", "/topics/t/records?limit=100");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.json["records"].size(), 8u);
  for (const char* bad : {"0", "101", "-1", "1e2", "5x", "", "99999999999999999999"})
    EXPECT_NE(expectError(call("GET", std::string("/topics/t/records?limit=") + bad), 400).find("limit"), std::string::npos)
        << bad;
  herder_.lastLimit = 0;
  EXPECT_NE(expectError(call("GET", "/topics/ferry-offsets/records"), 403).find("worker's own"), std::string::npos);
  EXPECT_EQ(herder_.lastLimit, 0u);  // refused before the backbone is asked
  expectError(call("GET", "/topics/nope/records"), 404);
  expectError(call("GET", "/topics/" + std::string(300, 'a') + "/records"), 400);
  expectError(call("GET", "/topics/a%2Fb/records"), 400);
}

TEST_F(RestServerTest, RootHealthAndMetrics) {
  auto root = call("GET", "/");
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(root.json["version"], "0.1.0");
  EXPECT_EQ(root.json["commit"], "abc123");
  EXPECT_EQ(root.json["kafka_cluster_id"], "standalone");
  EXPECT_EQ(root.json["worker_id"], "w1");

  auto health = call("GET", "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.json["status"], "healthy");
  herder_.setHealthProblem("config store unreadable");
  auto sick = call("GET", "/health");
  EXPECT_THAT(expectError(sick, 503), HasSubstr("config store unreadable"));
  EXPECT_EQ(sick.json["status"], "unhealthy");

  auto metrics = call("GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.contentType, HasSubstr("text/plain"));
  EXPECT_THAT(metrics.body, HasSubstr("# TYPE ferry_task_records_in_total counter\n"));
  EXPECT_THAT(metrics.body, HasSubstr("connector=\"a\\\"b\""));
  EXPECT_THAT(metrics.body, HasSubstr("ferry_up 1\n"));
  EXPECT_THAT(metrics.body, HasSubstr("process_resident_memory_bytes "));
  EXPECT_THAT(metrics.body, HasSubstr("process_cpu_seconds_total "));
  EXPECT_THAT(metrics.body, HasSubstr("ferry_rest_connections_rejected_total 0\n"));
  EXPECT_THAT(metrics.body, HasSubstr("ferry_rest_open_connections 1\n"));
}

TEST_F(RestServerTest, CreateReadListDelete) {
  auto created = call("POST", "/connectors",
                      R"({"name": "src", "config": {"connector.class": "FileStreamSource",
                          "file": "/in", "topic": "t", "tasks.max": 1}})");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.json["name"], "src");
  EXPECT_EQ(created.json["config"]["tasks.max"], "1");  // numbers become text
  EXPECT_EQ(created.json["tasks"][0], (Json{{"connector", "src"}, {"task", 0}}));
  EXPECT_EQ(created.json["type"], "source");

  expectError(
      call("POST", "/connectors",
           R"({"name": "src", "config": {"connector.class": "FileStreamSource", "topic": "t"}})"),
      409);

  EXPECT_EQ(call("GET", "/connectors").json, Json::array({"src"}));
  auto info = call("GET", "/connectors/src");
  EXPECT_EQ(info.status, 200);
  EXPECT_EQ(info.json["config"]["file"], "/in");
  auto config = call("GET", "/connectors/src/config");
  EXPECT_EQ(config.json["topic"], "t");

  auto status = call("GET", "/connectors/src/status");
  EXPECT_EQ(status.status, 200);
  EXPECT_EQ(status.json["name"], "src");
  EXPECT_EQ(status.json["connector"]["state"], "RUNNING");
  EXPECT_EQ(status.json["connector"]["worker_id"], "w1");
  EXPECT_EQ(status.json["tasks"][0]["id"], 0);
  EXPECT_EQ(status.json["tasks"][0]["state"], "RUNNING");
  EXPECT_EQ(status.json["type"], "source");
  // Kafka Connect 4.x: the plugin's version in connector and task status.
  EXPECT_EQ(status.json["connector"]["version"], "1.0");
  EXPECT_EQ(status.json["tasks"][0]["version"], "1.0");

  auto expanded = call("GET", "/connectors?expand=status&expand=info");
  EXPECT_EQ(expanded.json["src"]["status"]["connector"]["state"], "RUNNING");
  EXPECT_EQ(expanded.json["src"]["info"]["name"], "src");
  auto onlyStatus = call("GET", "/connectors?expand=status");
  EXPECT_FALSE(onlyStatus.json["src"].contains("info"));
  EXPECT_EQ(onlyStatus.json["src"]["status"]["connector"]["version"], "1.0");
  // Kafka Connect answers the map for any expand, an unknown one too (ferry listed names).
  EXPECT_EQ(call("GET", "/connectors?expand=bogus").json, (Json{{"src", Json::object()}}));

  auto tasks = call("GET", "/connectors/src/tasks");
  EXPECT_EQ(tasks.json[0]["id"], (Json{{"connector", "src"}, {"task", 0}}));
  EXPECT_EQ(tasks.json[0]["config"]["file"], "/in");
  auto task = call("GET", "/connectors/src/tasks/0/status");
  EXPECT_EQ(task.json["state"], "RUNNING");
  EXPECT_EQ(task.json["version"], "1.0");
  EXPECT_EQ(task.json["id"], 0);
  expectError(call("GET", "/connectors/src/tasks/7/status"), 404);
  expectError(call("GET", "/connectors/src/tasks/x/status"), 400);
  EXPECT_EQ(call("POST", "/connectors/src/tasks/0/restart").status, 204);

  auto topics = call("GET", "/connectors/src/topics");
  EXPECT_EQ(topics.json["src"]["topics"][0], "lines");
  EXPECT_EQ(call("PUT", "/connectors/src/topics/reset").status, 202);

  EXPECT_EQ(call("DELETE", "/connectors/src").status, 204);
  expectError(call("GET", "/connectors/src"), 404);
  expectError(call("DELETE", "/connectors/src"), 404);
  EXPECT_EQ(call("GET", "/connectors").json, Json::array());
}

TEST_F(RestServerTest, CreateWithInitialState) {
  auto a = call(
      "POST", "/connectors",
      R"({"name": "p", "initial_state": "PAUSED", "config": {"connector.class": "FileStreamSource", "topic": "t"}})");
  ASSERT_EQ(a.status, 201);
  EXPECT_EQ(call("GET", "/connectors/p/status").json["connector"]["state"], "PAUSED");
}

TEST_F(RestServerTest, BadBodiesAre400NamingTheProblem) {
  EXPECT_THAT(expectError(call("POST", "/connectors", "{not json"), 400), HasSubstr("line 1"));
  EXPECT_THAT(expectError(call("POST", "/connectors", ""), 400), HasSubstr("empty"));
  EXPECT_THAT(expectError(call("POST", "/connectors", R"({"name": "x", "config": 5})"), 400),
              HasSubstr("config"));
  EXPECT_THAT(
      expectError(call("POST", "/connectors", R"({"name": "x", "config": {"a": {"b": 1}}})"), 400),
      HasSubstr("'a'"));
  EXPECT_THAT(expectError(call("PUT", "/connectors/x/config", R"([1])"), 400),
              HasSubstr("JSON object"));
  EXPECT_THAT(expectError(call("PUT", "/connectors/x/config", R"({"name": "y"})"), 400),
              HasSubstr("does not match"));
  // Invalid config: the herder's InvalidArgument passes through as 400.
  EXPECT_THAT(
      expectError(call("POST", "/connectors",
                       R"({"name": "x", "config": {"connector.class": "FileStreamSource"}})"),
                  400),
      HasSubstr("topic"));
  // Unknown class: the herder's NotFound is a bad request here, not a missing resource.
  EXPECT_THAT(expectError(call("POST", "/connectors",
                               R"({"name": "x", "config": {"connector.class": "Nope"}})"),
                          400),
              HasSubstr("FileStreamSource"));
  expectError(call("PUT", "/connectors/x/config", R"({"connector.class": "Nope"})"), 400);
  EXPECT_EQ(call("GET", "/connectors").json, Json::array());  // nothing half-created
}

TEST_F(RestServerTest, PutConfigCreatesThenUpdates) {
  const std::string cfg = R"({"connector.class": "FileStreamSink", "topics": "t", "file": "/out"})";
  auto first = call("PUT", "/connectors/sink/config", cfg);
  EXPECT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(first.json["type"], "sink");
  auto second = call("PUT", "/connectors/sink/config", cfg);
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.json["name"], "sink");
}

TEST_F(RestServerTest, PatchMergesAndNullRemoves) {
  createSource("src");
  auto a = call("PATCH", "/connectors/src/config", R"({"errors.tolerance": "all", "batch": 5})");
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(call("GET", "/connectors/src/config").json["errors.tolerance"], "all");
  EXPECT_EQ(call("GET", "/connectors/src/config").json["batch"], "5");
  call("PATCH", "/connectors/src/config", R"({"errors.tolerance": null})");
  EXPECT_FALSE(call("GET", "/connectors/src/config").json.contains("errors.tolerance"));
  expectError(call("PATCH", "/connectors/src/config", R"({"a": [1]})"), 400);
  expectError(call("PATCH", "/connectors/nope/config", R"({"a": "1"})"), 404);
  expectError(call("PATCH", "/connectors/src/config", R"({"name": "other"})"), 400);
}

TEST_F(RestServerTest, TargetStatesAndRestart) {
  createSource("src");
  EXPECT_EQ(call("PUT", "/connectors/src/pause").status, 202);
  EXPECT_EQ(call("GET", "/connectors/src/status").json["connector"]["state"], "PAUSED");
  EXPECT_EQ(call("PUT", "/connectors/src/resume").status, 202);
  // Kafka Connect answers a stop with 204 (Strimzi accepts nothing else); it was 202.
  auto stop = call("PUT", "/connectors/src/stop");
  EXPECT_EQ(stop.status, 204);
  EXPECT_TRUE(stop.body.empty());
  EXPECT_EQ(call("GET", "/connectors/src/status").json["connector"]["state"], "STOPPED");
  EXPECT_EQ(call("PUT", "/connectors/src/resume").status, 202);
  expectError(call("PUT", "/connectors/nope/pause"), 404);

  EXPECT_EQ(call("POST", "/connectors/src/restart").status, 204);
  auto withTasks = call("POST", "/connectors/src/restart?includeTasks=true&onlyFailed=false");
  EXPECT_EQ(withTasks.status, 202);
  EXPECT_EQ(withTasks.json["name"], "src");  // Kafka Connect answers the status with 202
  // ... as the restart plans it: what is restarted is RESTARTING (it showed the current states).
  EXPECT_EQ(withTasks.json["connector"]["state"], "RESTARTING");
  EXPECT_EQ(withTasks.json["tasks"][0]["state"], "RESTARTING");
  auto connectorOnly = call("POST", "/connectors/src/restart?onlyFailed=false&includeTasks=false");
  EXPECT_EQ(connectorOnly.status, 204);
  // onlyFailed: nothing failed, nothing restarts.
  auto onlyFailed = call("POST", "/connectors/src/restart?includeTasks=true&onlyFailed=true");
  EXPECT_EQ(onlyFailed.status, 202);
  EXPECT_EQ(onlyFailed.json["connector"]["state"], "RUNNING");
  EXPECT_EQ(onlyFailed.json["tasks"][0]["state"], "RUNNING");
  EXPECT_THAT(expectError(call("POST", "/connectors/src/restart?includeTasks=maybe"), 400),
              HasSubstr("includeTasks"));
  auto calls = herder_.calls();
  EXPECT_NE(std::find(calls.begin(), calls.end(), "restart src"), calls.end());
  EXPECT_NE(std::find(calls.begin(), calls.end(), "restart src tasks"), calls.end());
  expectError(call("POST", "/connectors/nope/restart"), 404);
}

TEST_F(RestServerTest, Offsets) {
  createSource("src");
  herder_.setPositions("src", {{{{"file", "/in"}}, {{"line", "3"}}}});
  auto got = call("GET", "/connectors/src/offsets");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.json["offsets"][0]["partition"]["file"], "/in");
  EXPECT_EQ(got.json["offsets"][0]["offset"]["line"], 3);  // a number, as Kafka Connect shows it
  // Not STOPPED: 400 as Kafka Connect (409 made kcctl retry for 30 s).
  expectError(call("DELETE", "/connectors/src/offsets"), 400);
  expectError(call("PATCH", "/connectors/src/offsets",
                   R"({"offsets": [{"partition": {"file": "/in"}, "offset": {"line": 9}}]})"),
              400);
  call("PUT", "/connectors/src/stop");
  // Nothing to alter is refused, stopped or not.
  EXPECT_THAT(expectError(call("PATCH", "/connectors/src/offsets", R"({"offsets": []})"), 400),
              HasSubstr("need to be provided"));
  auto altered = call("PATCH", "/connectors/src/offsets",
                      R"({"offsets": [{"partition": {"file": "/in"}, "offset": {"line": 9}}]})");
  EXPECT_EQ(altered.status, 200) << altered.body;
  EXPECT_THAT(altered.json.value("message", ""), HasSubstr("altered"));
  EXPECT_EQ(call("GET", "/connectors/src/offsets").json["offsets"][0]["offset"]["line"], 9);
  EXPECT_THAT(
      expectError(call("PATCH", "/connectors/src/offsets", R"({"offsets": [{"partition": 3}]})"),
                  400),
      HasSubstr("offsets[0].partition"));
  // STOPPED while its tasks still leave: retried briefly instead of a 400 clients do not retry.
  herder_.setStillStopping(3);
  EXPECT_EQ(call("PATCH", "/connectors/src/offsets",
                 R"({"offsets": [{"partition": {"file": "/in"}, "offset": {"line": 9}}]})")
                .status,
            200);
  herder_.setStillStopping(1000);  // never done: the herder's answer, as 400, after the bound
  EXPECT_THAT(expectError(call("DELETE", "/connectors/src/offsets"), 400), HasSubstr("live member"));
  herder_.setStillStopping(0);
  auto reset = call("DELETE", "/connectors/src/offsets");
  EXPECT_EQ(reset.status, 200);
  EXPECT_THAT(reset.json.value("message", ""), HasSubstr("reset"));
  EXPECT_EQ(call("GET", "/connectors/src/offsets").json["offsets"], Json::array());
  expectError(call("GET", "/connectors/nope/offsets"), 404);
}

TEST_F(RestServerTest, Plugins) {
  auto connectors = call("GET", "/connector-plugins");
  ASSERT_EQ(connectors.status, 200);
  ASSERT_EQ(connectors.json.size(), 2u);
  EXPECT_EQ(connectors.json[0],
            (Json{{"class", "FileStreamSource"}, {"type", "source"}, {"version", "1.0"}}));
  auto all = call("GET", "/connector-plugins?connectorsOnly=false");
  EXPECT_EQ(all.json.size(), 4u);
  EXPECT_EQ(all.json[2]["type"], "transformation");
  EXPECT_EQ(all.json[3]["type"], "converter");
  expectError(call("GET", "/connector-plugins?connectorsOnly=perhaps"), 400);

  auto cfg = call("GET", "/connector-plugins/FileStreamSource/config");
  ASSERT_EQ(cfg.status, 200);
  EXPECT_EQ(cfg.json[0]["name"], "file");
  EXPECT_EQ(cfg.json[0]["required"], true);
  EXPECT_EQ(cfg.json[2]["default_value"], "1");
  expectError(call("GET", "/connector-plugins/Nope/config"), 404);

  auto val = call("PUT", "/connector-plugins/FileStreamSource/config/validate",
                  R"({"file": "/a", "tasks.max": 2})");
  ASSERT_EQ(val.status, 200) << val.body;
  EXPECT_EQ(val.json["name"], "FileStreamSource");
  EXPECT_TRUE(cfg.json[0].contains("order"));  // Kafka Connect 4.x's name
  EXPECT_FALSE(cfg.json[0].contains("order_in_group"));
  EXPECT_EQ(val.json["error_count"], 1);
  EXPECT_EQ(val.json["groups"][0], "Common");
  bool topicError = false;
  for (const auto& c : val.json["configs"])
    if (c["value"]["name"] == "topic") topicError = !c["value"]["errors"].empty();
  EXPECT_TRUE(topicError) << val.body;
  expectError(call("PUT", "/connector-plugins/FileStreamSource/config/validate", "{"), 400);
  expectError(call("PUT", "/connector-plugins/Nope/config/validate", "{}"), 404);
}

TEST_F(RestServerTest, Loggers) {
  auto all = call("GET", "/admin/loggers");
  ASSERT_EQ(all.status, 200);
  EXPECT_TRUE(all.json.contains("root"));
  auto put = call("PUT", "/admin/loggers/rest-test-logger", R"({"level": "DEBUG"})");
  EXPECT_EQ(put.status, 200) << put.body;
  auto one = call("GET", "/admin/loggers/rest-test-logger");
  EXPECT_EQ(one.json["level"], "DEBUG");
  EXPECT_TRUE(one.json["last_modified"].is_number_integer()) << one.body;  // Kafka's field
  EXPECT_TRUE(call("GET", "/admin/loggers").json["root"]["last_modified"].is_null());
  EXPECT_THAT(
      expectError(call("PUT", "/admin/loggers/rest-test-logger", R"({"level": "LOUD"})"), 400),
      HasSubstr("LOUD"));
  expectError(call("PUT", "/admin/loggers/x", R"({"lvl": "DEBUG"})"), 400);
  expectError(call("GET", "/admin/loggers/never-created-logger"), 404);
}

// The 500 answer carried the exception's text ("internal error: open /abs/path: ..."): now an id
// that the log line with the details carries.
TEST_F(RestServerTest, InternalErrorAnswersAnIdNotTheExceptionText) {
  herder_.setThrowOnList("open /var/lib/ferry-secret-place/store/configs.json: EIO");
  auto a = call("GET", "/connectors");
  const std::string message = expectError(a, 500);
  EXPECT_THAT(message, HasSubstr("internal error (id "));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("ferry-secret-place")));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("EIO")));
  herder_.setThrowOnList("");
  EXPECT_EQ(call("GET", "/connectors").status, 200);
}

// PUT /admin/loggers of new names: validated and bounded (each registered a logger forever).
TEST_F(RestServerTest, NewLoggerNamesAreValidatedAndBounded) {
  expectError(call("PUT", "/admin/loggers/" + std::string(300, 'a'), R"({"level": "INFO"})"), 400);
  expectError(call("PUT", "/admin/loggers/a%20b", R"({"level": "INFO"})"), 400);
  int refused = 0;
  for (std::size_t i = 0; i < core::kMaxCreatedLoggers + 10; ++i) {
    auto a = call("PUT", "/admin/loggers/rest.bound." + std::to_string(i), R"({"level": "INFO"})");
    if (a.status == 400) {
      ++refused;
      EXPECT_THAT(a.body, HasSubstr("too many new logger names"));
    } else {
      EXPECT_EQ(a.status, 200) << a.body;
    }
  }
  EXPECT_GE(refused, 10);
  EXPECT_EQ(call("PUT", "/admin/loggers/root", R"({"level": "INFO"})").status, 200);
  EXPECT_EQ(call("PUT", "/admin/loggers/rest.bound.0", R"({"level": "WARN"})").status, 200);
}

TEST_F(RestServerTest, UnknownRoute404WrongMethod405) {
  EXPECT_THAT(expectError(call("GET", "/nope"), 404), HasSubstr("/nope"));
  expectError(call("GET", "/connectors/a/b/c/d/e"), 404);
  auto wrong = call("DELETE", "/connector-plugins");
  EXPECT_THAT(expectError(wrong, 405), HasSubstr("GET"));
  EXPECT_EQ(wrong.allow, "GET");
  auto pause = call("GET", "/connectors/x/pause");
  expectError(pause, 405);
  EXPECT_EQ(pause.allow, "PUT");
  auto options = call("OPTIONS", "/connectors/x/config");
  EXPECT_EQ(options.status, 204);
  EXPECT_EQ(options.allow, "GET, PATCH, PUT");
  // HEAD answers as GET without the body, on the same kept-alive connection.
  auto get = call("GET", "/connectors");
  auto head = call("HEAD", "/connectors");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(call("GET", "/connectors").body, get.body);
}

TEST_F(RestServerTest, ErrorAnswersNeverEchoTheBody) {
  auto a = call("POST", "/connectors", "{\"name\": \"SECRET-IN-BODY\", \"config\": 5}");
  EXPECT_EQ(a.status, 400);
  auto b = call("POST", "/connectors", std::string(9 * 1024 * 1024, 'Q'));
  expectError(b, 413);
  EXPECT_EQ(b.body.find("QQQQ"), std::string::npos);
}

TEST_F(RestServerTest, EncodedNamesAndTrailingSlash) {
  auto a = call("PUT", "/connectors/a%2Fb/config",
                R"({"connector.class": "FileStreamSource", "topic": "t"})");
  EXPECT_EQ(a.status, 201) << a.body;
  EXPECT_EQ(a.json["name"], "a/b");
  EXPECT_EQ(call("GET", "/connectors/a%2Fb/status").json["name"], "a/b");
  EXPECT_EQ(call("GET", "/connectors/").status, 200);
}

// RocketMQ Connect's paths that only read are always served.
TEST_F(RestServerTest, RocketMqPaths) {
  createSource("rmq");

  auto list = call("GET", "/connectors/list");
  EXPECT_EQ(list.status, 200);
  EXPECT_EQ(list.json["rmq"]["config"]["topic"], "t");
  EXPECT_EQ(list.json["rmq"]["status"]["connector"]["state"], "RUNNING");

  auto cluster = call("GET", "/getClusterInfo");
  EXPECT_EQ(cluster.json["workers"], Json::array({"w1"}));
  // Idle members of a cluster are listed too (only workers running something were).
  herder_.setClusterJson(R"({"workers": [{"id": "w1"}, {"id": "idle-w2", "units": 0}]})");
  EXPECT_EQ(call("GET", "/getClusterInfo").json["workers"], Json::array({"idle-w2", "w1"}));
  auto allocated = call("GET", "/allocated/connectors");
  EXPECT_EQ(allocated.json["rmq"]["topic"], "t");
  auto tasks = call("GET", "/allocated/tasks");
  EXPECT_EQ(tasks.json[0]["connector"], "rmq");
  EXPECT_EQ(tasks.json[0]["state"], "RUNNING");
  auto plugins = call("GET", "/plugin/list");
  EXPECT_EQ(plugins.json[0]["aliases"][0], "FileSource");
}

// Its dialect with writes is off by default: GET-verb writes are unsafe without authentication.
TEST_F(RestServerTest, RocketMqDialectOffByDefault) {
  createSource("src");
  // Kafka Connect's paths with GET: 405, as Kafka Connect answers them.
  expectError(call("GET", "/connectors/src/stop"), 405);
  expectError(call("GET", "/connectors/src/pause"), 405);
  expectError(call("GET", "/connectors/pause/all"), 404);
  expectError(call("GET", "/connectors/stop/all"), 404);
  expectError(call("GET", "/plugin/list/connectors"), 404);
  expectError(call("GET", "/plugin/reload"), 404);
  // POST /connectors/{name} is RocketMQ's create: off too (405: the path has other methods).
  expectError(call("POST", "/connectors/rmq", R"({"connector.class": "FileStreamSource", "topic": "t"})"),
              405);
  EXPECT_EQ(call("GET", "/connectors/src/status").json["connector"]["state"], "RUNNING");
  const auto calls = herder_.calls();
  for (const auto& c : calls) EXPECT_EQ(c.find("stop"), std::string::npos) << c;
  for (const auto& c : calls) EXPECT_EQ(c.find("pause"), std::string::npos) << c;
}

class RestServerRocketMqTest : public RestServerTest {
 protected:
  RestServerRocketMqTest() { rocketmqCompat_ = true; }
};

TEST_F(RestServerRocketMqTest, GetVerbOperations) {
  auto created =
      call("POST", "/connectors/rmq", R"({"connector.class": "FileStreamSource", "topic": "t"})");
  EXPECT_EQ(created.status, 201) << created.body;
  // An existing connector is updated (it answered 409: RocketMQ's POST is its putConnectorConfig).
  auto updated = call("POST", "/connectors/rmq",
                      R"({"connector.class": "FileStreamSource", "topic": "t2"})");
  EXPECT_EQ(updated.status, 200) << updated.body;
  EXPECT_EQ(call("GET", "/connectors/rmq/config").json["topic"], "t2");
  expectError(call("POST", "/connectors/rmq2", R"({"connector.class": 5.5, "topic": {}})"), 400);

  auto pause = call("GET", "/connectors/rmq/pause");
  EXPECT_EQ(pause.status, 200) << pause.body;
  EXPECT_EQ(pause.json["status"], 200);  // RocketMQ Connect's envelope
  EXPECT_THAT(pause.json["body"].get<std::string>(), HasSubstr("paused"));
  EXPECT_EQ(call("GET", "/connectors/rmq/status").json["connector"]["state"], "PAUSED");
  EXPECT_EQ(call("GET", "/connectors/rmq/resume").status, 200);
  EXPECT_EQ(call("GET", "/connectors/rmq/status").json["connector"]["state"], "RUNNING");
  EXPECT_EQ(call("GET", "/connectors/rmq/restart").status, 200);
  EXPECT_EQ(call("GET", "/connectors/rmq/tasks/0/restart").status, 200);
  expectError(call("GET", "/connectors/rmq/tasks/x/restart"), 400);
  // stop keeps the connector (RocketMQ deletes it; ferry destroys nothing on a GET).
  EXPECT_EQ(call("GET", "/connectors/rmq/stop").status, 200);
  EXPECT_EQ(call("GET", "/connectors/rmq/status").json["connector"]["state"], "STOPPED");
  expectError(call("GET", "/connectors/nope/pause"), 404);

  createSource("second");
  auto pauseAll = call("GET", "/connectors/pause/all");
  EXPECT_EQ(pauseAll.status, 200) << pauseAll.body;
  EXPECT_THAT(pauseAll.json["body"].get<std::string>(), HasSubstr("2 connectors"));
  EXPECT_EQ(call("GET", "/connectors/second/status").json["connector"]["state"], "PAUSED");
  EXPECT_EQ(call("GET", "/connectors/resume/all").status, 200);
  EXPECT_EQ(call("GET", "/connectors/second/status").json["connector"]["state"], "RUNNING");
  EXPECT_EQ(call("GET", "/connectors/stop/all").status, 200);
  EXPECT_EQ(call("GET", "/connectors/second/status").json["connector"]["state"], "STOPPED");

  auto plugins = call("GET", "/plugin/list/connectors");
  ASSERT_EQ(plugins.status, 200);
  EXPECT_EQ(plugins.json["body"].size(), 2u);  // connectors only
  auto cfg = call("GET", "/plugin/config?plugin=FileStreamSource");
  EXPECT_EQ(cfg.status, 200) << cfg.body;
  EXPECT_EQ(cfg.json["body"][0]["name"], "file");
  expectError(call("GET", "/plugin/config"), 400);
  auto val = call("POST", "/plugin/config/validate", R"({"connector.class": "FileStreamSource"})");
  EXPECT_EQ(val.status, 200) << val.body;
  EXPECT_EQ(val.json["body"]["error_count"], 2);  // file and topic are required
  auto valGet = call("GET", "/plugin/config/validate?config=%7B%22connector.class%22%3A%22FileStreamSource%22%7D");
  EXPECT_EQ(valGet.status, 200) << valGet.body;
  EXPECT_THAT(expectError(call("GET", "/plugin/reload"), 501), HasSubstr("not supported"));
  expectError(call("POST", "/plugin/reload"), 501);
}

TEST_F(RestServerTest, FailedTaskShowsTrace) {
  createSource("src");
  herder_.setFailed("src");
  auto s = call("GET", "/connectors/src/status");
  EXPECT_EQ(s.json["tasks"][0]["state"], "FAILED");
  EXPECT_THAT(s.json["tasks"][0].value("trace", ""), HasSubstr("Boom"));
}

TEST_F(RestServerTest, OversizedBodyIs413WithErrorShape) {
  std::string big(9 * 1024 * 1024, 'x');
  auto a = call("POST", "/connectors", big);
  expectError(a, 413);
}

// Regression: cpp-httplib's default socket options set SO_REUSEPORT, so a second server on the same
// port started fine and shared the first one's connections.
TEST(RestServerBind, SecondServerOnSamePortIsRefusedNotShared) {
  testing::FakeHerder herder;
  RestOptions o;
  o.port = 0;
  RestServer first(herder, o);
  ASSERT_TRUE(first.start().isOk());
  RestOptions same;
  same.port = first.port();
  RestServer second(herder, same);
  Status s = second.start();
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("127.0.0.1:" + std::to_string(first.port())));
  first.stop();
  first.stop();  // idempotent
}

TEST(RestServerBind, StopRightAfterStartDoesNotHang) {
  testing::FakeHerder herder;
  for (int i = 0; i < 20; ++i) {
    RestOptions o;
    o.port = 0;
    RestServer s(herder, o);
    ASSERT_TRUE(s.start().isOk());
    s.stop();
  }
}

namespace ferry::rest {
namespace {

// Distributed mode: reads answer from the applied cluster state and say how stale it may be;
// the bodies stay Kafka Connect's. A standalone herder (no state age) sends no such header.
class AgedHerder : public testing::FakeHerder {
 public:
  std::optional<std::int64_t> stateAgeMs() const override { return 4321; }
};

TEST(RestServerStateAge, GetAnswersCarryTheStateAgeOfADistributedHerder) {
  AgedHerder aged;
  testing::FakeHerder plain;
  for (control::Herder* h : {static_cast<control::Herder*>(&aged), static_cast<control::Herder*>(&plain)}) {
    RestOptions o;
    o.port = 0;
    RestServer server(*h, o);
    ASSERT_TRUE(server.start().isOk());
    const std::string body =
        R"({"name": "c", "config": {"connector.class": "FileStreamSource", "file": "/in", "topic": "t"}})";
    auto created = testing::httpRequest(server.port(), "POST", "/connectors", body);
    EXPECT_EQ(created.status, 201) << created.body;
    EXPECT_EQ(created.header("X-Ferry-State-Age-Ms"), "");  // a write: answered once applied
    for (const char* path : {"/connectors", "/connectors?expand=status", "/connectors/c/status", "/connectors/c/config"}) {
      auto a = testing::httpRequest(server.port(), "GET", path);
      EXPECT_EQ(a.status, 200) << path << ": " << a.body;
      EXPECT_EQ(a.header("X-Ferry-State-Age-Ms"), h == &aged ? "4321" : "") << path;
    }
    auto list = testing::httpRequest(server.port(), "GET", "/connectors");
    EXPECT_EQ(Json::parse(list.body), Json::parse(R"(["c"])"));  // the body is unchanged
    server.stop();
  }
}

TEST(RestServerWebRoot, BrowserIsRedirectedToTheConsoleAndFilesAreServed) {
  char tmpl[] = "/tmp/ferry-web-test-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  { std::ofstream(dir + "/index.html") << "<html>console</html>"; }
  testing::FakeHerder herder;
  RestOptions o;
  o.port = 0;
  o.webRoot = dir;
  RestServer server(herder, o);
  ASSERT_TRUE(server.start().isOk());
  auto browser = testing::httpRequest(server.port(), "GET", "/", "",
                                      "Accept: text/html,application/xhtml+xml\r\n");
  EXPECT_EQ(browser.status, 302);
  EXPECT_EQ(browser.header("Location"), "/ui/");
  auto api = testing::httpRequest(server.port(), "GET", "/");  // scripts still get the JSON
  EXPECT_EQ(api.status, 200);
  EXPECT_THAT(api.body, ::testing::HasSubstr("kafka_cluster_id"));
  auto page = testing::httpRequest(server.port(), "GET", "/ui/index.html");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.body, "<html>console</html>");
  EXPECT_THAT(page.header("Content-Type"), ::testing::HasSubstr("text/html"));
  server.stop();
  std::filesystem::remove_all(dir);
}

// Taps (POST /connectors/{name}/tap, GET and DELETE /taps/{id}): what a task offers is read once,
// binary as base64; bad options and unknown names are refused by name; the worker's limit is a 429.
TEST(RestServerTaps, OpenReadCloseAndRefusals) {
  testing::FakeHerder herder;
  ASSERT_TRUE(herder.createConnector("c", {{"connector.class", "FileStreamSource"}, {"file", "/in"}, {"topic", "t"}},
                                     std::nullopt)
                  .isOk());
  RestOptions o;
  o.port = 0;
  RestServer server(herder, o);
  ASSERT_TRUE(server.start().isOk());
  auto post = [&](const std::string& path, const std::string& body) {
    return testing::httpRequest(server.port(), "POST", path, body,
                                body.empty() ? "" : "Content-Type: application/json\r\n");
  };
  auto opened = post("/connectors/c/tap", R"({"max_records_per_second": 50, "buffer": 10})");
  ASSERT_EQ(opened.status, 201) << opened.body;
  auto j = Json::parse(opened.body);
  const std::string id = j["id"];
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(j["tasks_on_this_worker"], 1);
  EXPECT_EQ(j["buffer"], 10);
  auto point = herder.tapHub.point("c");
  Record r;
  r.topic = "t";
  r.key = Bytes(std::string("k\xff\x00", 3));  // not UTF-8: base64
  r.value = Bytes(std::string(R"({"seq":1})"));
  r.headers.add("h", std::string_view("v"));
  point->offer(0, r);
  auto read = testing::httpRequest(server.port(), "GET", "/taps/" + id);
  ASSERT_EQ(read.status, 200) << read.body;
  auto b = Json::parse(read.body);
  ASSERT_EQ(b["records"].size(), 1u);
  EXPECT_EQ(b["records"][0]["value"], R"({"seq":1})");
  EXPECT_EQ(b["records"][0]["value_encoding"], "utf8");
  EXPECT_EQ(b["records"][0]["key"], "a/8A");
  EXPECT_EQ(b["records"][0]["key_encoding"], "base64");
  EXPECT_EQ(b["records"][0]["headers"][0]["key"], "h");
  EXPECT_EQ(Json::parse(testing::httpRequest(server.port(), "GET", "/taps/" + id).body)["records"].size(), 0u);
  EXPECT_EQ(testing::httpRequest(server.port(), "DELETE", "/taps/" + id).status, 204);
  EXPECT_EQ(testing::httpRequest(server.port(), "GET", "/taps/" + id).status, 404);
  EXPECT_EQ(testing::httpRequest(server.port(), "DELETE", "/taps/" + id).status, 404);
  EXPECT_EQ(testing::httpRequest(server.port(), "GET", "/taps/" + std::string(5000, 'z')).status, 404);
  EXPECT_EQ(testing::httpRequest(server.port(), "GET", "/taps/" + id + "/events").status, 404);  // closed: no stream
  // Refusals, each naming what is wrong.
  EXPECT_EQ(post("/connectors/nope/tap", "").status, 404);
  for (const auto& [body, words] : std::vector<std::pair<std::string, std::string>>{
           {R"({"buffer": 0})", "buffer"},
           {R"({"buffer": 2.5})", "buffer"},
           {R"({"buffer": 1e300})", "buffer"},
           {R"({"max_records_per_second": -1})", "max_records_per_second"},
           {R"({"max_records_per_second": "fast"})", "must be a number"},
           {R"({"idle_timeout_ms": 1})", "idle_timeout_ms"},
           {R"({"evil": 1})", "unknown tap option 'evil'"},
           {R"([1,2])", "JSON object"},
           {std::string(200, '[') + std::string(200, ']'), ""},
           {R"({"buffer": )", ""}}) {
    auto res = post("/connectors/c/tap", body);
    EXPECT_EQ(res.status, 400) << body;
    EXPECT_THAT(res.body, ::testing::HasSubstr(words)) << body;
  }
  for (std::size_t i = 0; i < runtime::kMaxTaps; ++i) ASSERT_EQ(post("/connectors/c/tap", "").status, 201);
  auto full = post("/connectors/c/tap", "");
  EXPECT_EQ(full.status, 429);
  EXPECT_THAT(full.body, ::testing::HasSubstr("taps are open"));
  server.stop();
}

}  // namespace
}  // namespace ferry::rest

TEST_F(RestServerTest, PipelinesAreMaterialisedAsConnectors) {
  const std::string body = R"({"name": "p", "mode": "backbone",
      "source": {"connector.class": "FileStreamSource", "file": "/in"},
      "transforms": [{"alias": "h", "type": "InsertHeader"}],
      "sinks": [{"connector.class": "FileStreamSink", "file": "/a"},
                {"connector.class": "FileStreamSink", "file": "/b"}]})";
  auto created = call("POST", "/pipelines", body);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.json["connectors"].size(), 3u);
  EXPECT_EQ(created.json["connectors"][0]["name"], "p-source");
  EXPECT_EQ(created.json["connectors"][0]["state"], "RUNNING");
  EXPECT_EQ(call("GET", "/connectors").json, Json::array({"p-sink-1", "p-sink-2", "p-source"}));
  EXPECT_EQ(call("GET", "/connectors/p-sink-2/config").json["topics"], "pipeline-p");
  EXPECT_EQ(call("GET", "/connectors/p-source/config").json["topic"], "pipeline-p");
  EXPECT_EQ(call("GET", "/pipelines").json, Json::array({"p"}));
  auto got = call("GET", "/pipelines/p");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.json["mode"], "backbone");
  EXPECT_EQ(got.json["source"]["file"], "/in");
  EXPECT_EQ(got.json["sinks"][1]["file"], "/b");
  EXPECT_EQ(got.json["transforms"][0]["type"], "InsertHeader");
  expectError(call("POST", "/pipelines", body), 409);

  // PUT with one sink fewer removes that connector and keeps the others' names.
  auto put = call("PUT", "/pipelines/p", R"({"mode": "backbone",
      "source": {"connector.class": "FileStreamSource", "file": "/in2"},
      "sink": {"connector.class": "FileStreamSink", "file": "/a"}})");
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(call("GET", "/connectors").json, Json::array({"p-sink-1", "p-source"}));
  EXPECT_EQ(call("GET", "/connectors/p-source/config").json["file"], "/in2");
  EXPECT_EQ(call("GET", "/pipelines/p").json["transforms"], Json::array());

  ASSERT_EQ(call("DELETE", "/pipelines/p").status, 204);
  EXPECT_EQ(call("GET", "/connectors").json, Json::array());
  expectError(call("GET", "/pipelines/p"), 404);
  expectError(call("DELETE", "/pipelines/p"), 404);
}

TEST_F(RestServerTest, APipelineWriteThatFailsHalfwayIsUndone) {
  // control/pipeline_ops.h: a write that fails after some connectors were changed puts every
  // connector back as it was (before, PUT left the pipeline half replaced).
  ASSERT_EQ(call("POST", "/pipelines", R"({"name": "p", "mode": "backbone",
      "source": {"connector.class": "FileStreamSource", "file": "/in"},
      "sinks": [{"connector.class": "FileStreamSink", "file": "/a"},
                {"connector.class": "FileStreamSink", "file": "/b"}]})").status, 201);
  auto unchanged = [&](const char* when) {
    EXPECT_EQ(call("GET", "/connectors").json, Json::array({"p-sink-1", "p-sink-2", "p-source"})) << when;
    EXPECT_EQ(call("GET", "/connectors/p-source/config").json["file"], "/in") << when;
    EXPECT_EQ(call("GET", "/connectors/p-sink-1/config").json["file"], "/a") << when;
    EXPECT_EQ(call("GET", "/connectors/p-sink-2/config").json["file"], "/b") << when;
  };
  // A third sink whose creation fails: the source and the first sinks get their old configs back.
  herder_.setFailWritesOf("p-sink-3");
  auto grown = call("PUT", "/pipelines/p", R"({"mode": "backbone",
      "source": {"connector.class": "FileStreamSource", "file": "/in2"},
      "sinks": [{"connector.class": "FileStreamSink", "file": "/a2"},
                {"connector.class": "FileStreamSink", "file": "/b2"},
                {"connector.class": "FileStreamSink", "file": "/c"}]})");
  EXPECT_THAT(expectError(grown, 500), HasSubstr("connector p-sink-3: config store of p-sink-3 unreachable"));
  EXPECT_THAT(grown.body, HasSubstr("other changes were undone"));
  unchanged("after a failed grow");
  // One sink fewer and the kept sink's write fails: the removed sink comes back too.
  herder_.setFailWritesOf("p-sink-1");
  auto shrunk = call("PUT", "/pipelines/p", R"({"mode": "backbone",
      "source": {"connector.class": "FileStreamSource", "file": "/in3"},
      "sink": {"connector.class": "FileStreamSink", "file": "/a3"}})");
  expectError(shrunk, 500);
  unchanged("after a failed shrink");
  // Creating: what was created before the failure is deleted again.
  herder_.setFailWritesOf("q-sink-2");
  auto q = call("POST", "/pipelines", R"({"name": "q", "mode": "backbone",
      "source": {"connector.class": "FileStreamSource", "file": "/in"},
      "sinks": [{"connector.class": "FileStreamSink", "file": "/a"},
                {"connector.class": "FileStreamSink", "file": "/b"}]})");
  expectError(q, 500);
  expectError(call("GET", "/pipelines/q"), 404);
  unchanged("after a failed create of another pipeline");
}

TEST_F(RestServerTest, ABadPipelineIsRefusedWholeNamingItsFields) {
  // The second sink lacks its required `file`: nothing may be created, and the error names
  // the pipeline field, not the connector key.
  auto bad = call("POST", "/pipelines", R"({"name": "q", "mode": "backbone",
      "source": {"connector.class": "FileStreamSource", "file": "/in"},
      "sinks": [{"connector.class": "FileStreamSink", "file": "/a"}, {"connector.class": "FileStreamSink"}]})");
  EXPECT_THAT(expectError(bad, 400), HasSubstr("sinks[1].file: Missing required configuration"));
  EXPECT_EQ(call("GET", "/connectors").json, Json::array());
  auto unknown = call("POST", "/pipelines", R"({"name": "q", "mode": "backbone",
      "source": {"connector.class": "Nope"}, "sink": {"connector.class": "FileStreamSink", "file": "/a"}})");
  EXPECT_THAT(expectError(unknown, 400), HasSubstr("source.connector.class: unknown plugin Nope"));
  EXPECT_THAT(expectError(call("POST", "/pipelines", R"({"name": "q"})"), 400), HasSubstr("source: required"));
  // A connector already holding a name the pipeline needs: 409, and it is left alone.
  createSource("q-source");
  auto taken = call("POST", "/pipelines", R"({"name": "q", "mode": "backbone",
      "source": {"connector.class": "FileStreamSource", "file": "/in"},
      "sink": {"connector.class": "FileStreamSink", "file": "/a"}})");
  EXPECT_THAT(expectError(taken, 409), HasSubstr("'q-source'"));
  EXPECT_EQ(call("GET", "/connectors").json, Json::array({"q-source"}));
  EXPECT_EQ(call("GET", "/connectors/q-source/config").json.count("pipeline"), 0u);
}

TEST_F(RestServerTest, RulesTestRunsARuleOnSampleRecords) {
  auto a = call("POST", "/rules/test", R"({
    "rule": "SELECT payload.temp AS t, topic FROM \"sensors/+/data\" WHERE payload.temp > 30",
    "records": [{"mqtt_topic": "sensors/d1/data", "value": {"temp": 31.5}},
                {"mqtt_topic": "sensors/d2/data", "value": {"temp": 12}},
                {"mqtt_topic": "other/x", "value": {"temp": 99}},
                {"mqtt_topic": "sensors/d3/data", "value": "not json"}]})");
  ASSERT_EQ(a.status, 200) << a.body;
  const Json& r = a.json["records"];
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0]["result"], "kept");
  EXPECT_EQ(r[0]["output"]["value"], Json::parse(R"({"t":31.5,"topic":"sensors/d1/data"})"));
  EXPECT_EQ(r[0]["steps"][0]["alias"], "rule");
  EXPECT_EQ(r[0]["steps"][0]["result"], "ok");
  EXPECT_EQ(r[1]["result"], "dropped");  // WHERE
  EXPECT_EQ(r[1].count("output"), 0u);
  EXPECT_EQ(r[2]["result"], "dropped");  // FROM
  EXPECT_EQ(r[3]["result"], "dropped");  // a text payload has no temp: WHERE is false
}

TEST_F(RestServerTest, RulesTestTracesAChainStepByStep) {
  auto a = call("POST", "/rules/test", R"({
    "transforms": [{"alias": "rename", "type": "ReplaceField$Value", "renames": "temperature:temp"},
                   {"alias": "cast", "type": "Cast$Value", "spec": "temp:int32"},
                   {"alias": "hdr", "type": "InsertHeader", "header": "seen", "value.literal": "yes",
                    "predicate": "isData"}],
    "predicates": [{"alias": "isData", "type": "TopicNameMatches", "pattern": "data"}],
    "records": [{"topic": "data", "key": "k1", "value": {"temperature": 21.7}, "headers": {"a": "b"},
                 "timestamp": 1764800000000},
                {"topic": "other", "value": {"temperature": 5}},
                {"topic": "data", "value": {"temperature": "hot"}}]})");
  ASSERT_EQ(a.status, 200) << a.body;
  const Json& r = a.json["records"];
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0]["result"], "kept");
  EXPECT_EQ(r[0]["steps"][0]["record"]["value"], Json::parse(R"({"temp":21.7})"));
  EXPECT_EQ(r[0]["steps"][1]["record"]["value"], Json::parse(R"({"temp":21})"));
  EXPECT_EQ(r[0]["output"]["headers"], Json::parse(R"({"a":"b","seen":"yes"})"));
  EXPECT_EQ(r[0]["output"]["key"], "k1");
  EXPECT_EQ(r[0]["output"]["timestamp"], 1764800000000);
  EXPECT_EQ(r[1]["steps"][2]["result"], "skipped");  // the predicate said no
  EXPECT_EQ(r[1]["output"]["headers"], Json::object());
  EXPECT_EQ(r[2]["result"], "error");
  EXPECT_EQ(r[2]["steps"][1]["result"], "error");
  EXPECT_THAT(r[2]["error"].get<std::string>(), HasSubstr("transform cast"));
  EXPECT_EQ(r[2]["steps"].size(), 2u);  // the record stops at the failing step
}

TEST_F(RestServerTest, RulesTestRefusesBadRulesAndBodies) {
  auto a = call("POST", "/rules/test", R"({"rule": "SELECT payload.t FROM \"a\" WHERE", "records": [{"value": 1}]})");
  EXPECT_EQ(a.status, 400);
  EXPECT_THAT(a.json["message"].get<std::string>(), HasSubstr("line 1, column"));
  a = call("POST", "/rules/test", R"({"rule": "SELECT 1 FROM \"a\"", "transforms": [], "records": [{}]})");
  EXPECT_EQ(a.status, 400);
  EXPECT_THAT(a.json["message"].get<std::string>(), HasSubstr("exactly one of"));
  a = call("POST", "/rules/test", R"({"rule": "SELECT 1 FROM \"a\"", "records": []})");
  EXPECT_EQ(a.status, 400);
  EXPECT_THAT(a.json["message"].get<std::string>(), HasSubstr("records"));
  a = call("POST", "/rules/test", R"({"rule": "SELECT 1 FROM \"a\"", "records": [{"headers": {"h": 1}}]})");
  EXPECT_EQ(a.status, 400);
  EXPECT_THAT(a.json["message"].get<std::string>(), HasSubstr("records[0].headers.h: must be a string"));
  a = call("POST", "/rules/test", R"({"transforms": [{"type": "NoSuchTransform"}], "records": [{}]})");
  EXPECT_EQ(a.status, 400);
  EXPECT_THAT(a.json["message"].get<std::string>(), HasSubstr("NoSuchTransform"));
  a = call("POST", "/rules/test", "{not json");
  EXPECT_EQ(a.status, 400);
}

}  // namespace
}  // namespace ferry::rest
