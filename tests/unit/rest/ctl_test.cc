#include "ferry/ctl.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fake_herder.h"
#include "rest/rest_server.h"

namespace ferry::ctl {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

TEST(RenderTable, AlignsColumnsWithoutTrailingSpaces) {
  std::string t = renderTable({"NAME", "STATE"}, {{"a-long-name", "RUNNING"}, {"b", ""}});
  EXPECT_EQ(t,
            "NAME         STATE\n"
            "a-long-name  RUNNING\n"
            "b\n");
}

TEST(RenderTable, CountsUtf8CodePointsAndPadsShortRows) {
  std::string t = renderTable({"K", "V", "W"}, {{"ä", "x"}, {"ab"}});
  EXPECT_EQ(t,
            "K   V  W\n"
            "ä   x\n"
            "ab\n");
}

TEST(RenderTable, NewlinesInCellsDoNotBreakRows) {
  std::string t = renderTable({"A"}, {{"x\ny"}});
  EXPECT_EQ(t, "A\nx y\n");
}

TEST(Render, ConnectorList) {
  Json j = Json::parse(
      R"({"src": {"status": {"name": "src", "connector": {"state": "RUNNING", "worker_id": "w1"},
      "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w1"}, {"id": 1, "state": "FAILED", "worker_id": "w1"}],
      "type": "source"}, "info": {"name": "src", "type": "source", "config": {}, "tasks": []}}})");
  EXPECT_EQ(renderConnectorList(j),
            "NAME  TYPE    STATE    TASKS  WORKER\n"
            "src   source  RUNNING  1/2    w1\n");
}

TEST(Render, StatusShowsTracesOfFailedParts) {
  Json j = Json::parse(R"({"name": "src", "connector": {"state": "RUNNING", "worker_id": "w1"},
      "tasks": [{"id": 0, "state": "FAILED", "worker_id": "w1", "trace": "Boom\n at x"}], "type": "source"})");
  std::string s = renderStatus(j);
  EXPECT_THAT(s, HasSubstr("Connector: src (source)\n"));
  EXPECT_THAT(s, HasSubstr("State:     RUNNING on w1\n"));
  EXPECT_THAT(s, HasSubstr("TASK  STATE   WORKER\n0     FAILED  w1\n"));
  EXPECT_THAT(s, HasSubstr("Task 0 trace:\nBoom\n at x\n"));
}

TEST(Render, StatusShowsLongWorksProgress) {
  Json j = Json::parse(R"({"name": "db", "connector": {"state": "RUNNING", "worker_id": "w1"},
      "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w1", "progress": {"phase": "initial load",
      "done": 250, "estimated": 1000, "unit": "rows", "percent": 25.0, "rate_per_second": 12.5}},
      {"id": 1, "state": "RUNNING", "worker_id": "w1"}], "type": "source"})");
  std::string s = renderStatus(j);
  EXPECT_THAT(s, HasSubstr("PROGRESS\n"));
  EXPECT_THAT(s, HasSubstr("initial load: 250/1000 rows (25.0%), 12.5/s\n"));
}

TEST(Render, StatusShowsTheConnectionAndWhyItIsNotConnected) {
  Json j = Json::parse(R"({"name": "m", "connector": {"state": "RUNNING", "worker_id": "w1"},
      "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w1", "connection": {"state": "reconnecting",
      "since": "2026-12-08T00:00:00.000Z", "since_ms": 1, "reconnects": 2, "error": "connection refused"}},
      {"id": 1, "state": "RUNNING", "worker_id": "w1", "connection": {"state": "connected",
      "since": "2026-12-08T00:00:00.000Z", "since_ms": 1, "reconnects": 0}}], "type": "source"})");
  std::string s = renderStatus(j);
  EXPECT_THAT(s, HasSubstr("TASK  STATE    WORKER  CONNECTION\n"));
  EXPECT_THAT(s, HasSubstr("reconnecting since 2026-12-08T00:00:00.000Z (2 lost)\n"));
  EXPECT_THAT(s, HasSubstr("1     RUNNING  w1      connected\n"));
  EXPECT_THAT(s, HasSubstr("Task 0 connection: connection refused\n"));
}

TEST(Render, OffsetsPluginsValidationAndGarbage) {
  Json o = Json::parse(R"({"offsets": [{"partition": {"file": "/a"}, "offset": {"line": 3}}]})");
  EXPECT_EQ(renderOffsets(o), "PARTITION  OFFSET\nfile=/a    line=3\n");
  Json p = Json::parse(R"([{"class": "FileStreamSource", "type": "source", "version": "1.0"}])");
  EXPECT_EQ(renderPlugins(p), "CLASS             TYPE    VERSION\nFileStreamSource  source  1.0\n");
  Json v = Json::parse(R"({"name": "X", "error_count": 1, "groups": [], "configs": [
      {"definition": {}, "value": {"name": "topic", "errors": ["required"]}},
      {"definition": {}, "value": {"name": "file", "errors": []}}]})");
  EXPECT_EQ(renderValidation(v), "X: 1 error(s)\n\nKEY    ERROR\ntopic  required\n");
  // Unexpected shapes render as empty tables instead of throwing.
  EXPECT_EQ(renderConnectorList(Json(5)), "NAME  TYPE  STATE  TASKS  WORKER\n");
  EXPECT_NO_THROW(renderStatus(Json::array()));
  EXPECT_NO_THROW(renderConnector(Json("x")));
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ferry-ctl-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& content) {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << content;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(LoadDefinition, JsonYamlPropertiesAndOverride) {
  TempDir d;
  auto json = loadDefinition(
      d.write("a.json", R"({"name": "a", "config": {"connector.class": "X", "tasks.max": 2}})"),
      "");
  ASSERT_TRUE(json.isOk()) << json.status().toString();
  EXPECT_EQ(json->name, "a");
  EXPECT_EQ(json->config.at("tasks.max"), "2");
  auto yaml = loadDefinition(
      d.write("b.yaml", "name: b\nconfig:\n  connector.class: Y\n  topics: t\n"), "");
  ASSERT_TRUE(yaml.isOk()) << yaml.status().toString();
  EXPECT_EQ(yaml->name, "b");
  EXPECT_EQ(yaml->config.at("topics"), "t");
  auto props = loadDefinition(d.write("c.properties", "name=c\nconnector.class=Z\n"), "renamed");
  ASSERT_TRUE(props.isOk());
  EXPECT_EQ(props->name, "renamed");
  EXPECT_EQ(props->config.at("name"), "renamed");  // a name inside the config follows the override
}

TEST(LoadDefinition, Errors) {
  TempDir d;
  auto missing = loadDefinition(d.path() + "/nope.json", "");
  ASSERT_FALSE(missing.isOk());
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.json"));
  auto noName = loadDefinition(d.write("n.properties", "connector.class=Z\n"), "");
  ASSERT_FALSE(noName.isOk());
  EXPECT_THAT(noName.status().message(), HasSubstr("--name"));
  EXPECT_TRUE(loadDefinition(d.path() + "/n.properties", "", /*requireName=*/false).isOk());
  EXPECT_FALSE(loadDefinition(d.write("bad.json", "{\"name\": "), "").isOk());
}

// Runs `ferry ctl` in-process against a RestServer backed by the in-memory Herder.
class CtlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rest::RestOptions o;
    o.port = 0;
    server_ = std::make_unique<rest::RestServer>(herder_, o);
    ASSERT_TRUE(server_->start().isOk());
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  int ctl(std::vector<std::string> args, std::string url = "") {
    std::vector<std::string> all = {"ctl", "--url", url.empty() ? url_ : url};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    out_.str("");
    err_.str("");
    return run(static_cast<int>(argv.size()), argv.data(), out_, err_);
  }

  rest::testing::FakeHerder herder_;
  std::unique_ptr<rest::RestServer> server_;
  std::string url_;
  std::ostringstream out_, err_;
  TempDir dir_;
};

TEST_F(CtlTest, CreateListStatusLifecycle) {
  auto file = dir_.write(
      "a.json",
      R"({"name": "a", "config": {"connector.class": "FileStreamSource", "topic": "t"}})");
  ASSERT_EQ(ctl({"create", "-f", file}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("created connector a"));
  ASSERT_EQ(ctl({"list"}), kExitOk);
  EXPECT_THAT(
      out_.str(),
      HasSubstr("NAME  TYPE    STATE    TASKS  WORKER\na     source  RUNNING  1/1    w1\n"));
  ASSERT_EQ(ctl({"list", "-o", "json"}), kExitOk);
  Json listed = Json::parse(out_.str(), nullptr, false);
  ASSERT_TRUE(listed.is_object()) << out_.str();
  EXPECT_TRUE(listed.contains("a"));
  EXPECT_TRUE(err_.str().empty());

  ASSERT_EQ(ctl({"pause", "a"}), kExitOk);
  ASSERT_EQ(ctl({"status", "a"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("PAUSED"));
  ASSERT_EQ(ctl({"resume", "a"}), kExitOk);
  ASSERT_EQ(ctl({"restart", "a", "--include-tasks"}), kExitOk);
  auto calls = herder_.calls();
  EXPECT_NE(std::find(calls.begin(), calls.end(), "restart a tasks"), calls.end());
  ASSERT_EQ(ctl({"get", "a"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("connector.class  FileStreamSource"));
  ASSERT_EQ(ctl({"stop", "a"}), kExitOk);
  herder_.setPositions("a", {{{{"file", "/in"}}, {{"line", "4"}}}});
  ASSERT_EQ(ctl({"offsets", "a"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("file=/in   line=4"));
  ASSERT_EQ(ctl({"offsets", "reset", "a"}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("reset"));
  ASSERT_EQ(ctl({"plugins"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("Filter            transformation"));
  ASSERT_EQ(ctl({"delete", "a"}), kExitOk);
  EXPECT_EQ(ctl({"status", "a"}), kExitServerError);
  EXPECT_THAT(err_.str(), HasSubstr("not found"));
}

TEST_F(CtlTest, ApplyCreatesThenUpdates) {
  auto file =
      dir_.write("s.yaml", "name: s\nconfig:\n  connector.class: FileStreamSink\n  topics: t\n");
  ASSERT_EQ(ctl({"apply", "-f", file}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("created connector s"));
  ASSERT_EQ(ctl({"apply", "-f", file}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("updated connector s"));
}

TEST_F(CtlTest, ServerErrorsExitOneWithTheMessage) {
  auto bad = dir_.write("bad.json",
                        R"({"name": "bad", "config": {"connector.class": "FileStreamSource"}})");
  EXPECT_EQ(ctl({"create", "-f", bad}), kExitServerError);
  EXPECT_THAT(err_.str(), HasSubstr("topic"));
  auto props = dir_.write("v.properties", "connector.class=FileStreamSource\nfile=/a\n");
  EXPECT_EQ(ctl({"validate", "-f", props}), kExitServerError);  // invalid config: exit 1
  EXPECT_THAT(out_.str(), HasSubstr("topic"));
}

TEST_F(CtlTest, UsageErrorsExitTwo) {
  EXPECT_EQ(ctl({"frobnicate"}), kExitUsage);
  EXPECT_EQ(ctl({}), kExitUsage);
  EXPECT_EQ(ctl({"status"}), kExitUsage);
  EXPECT_EQ(ctl({"list", "-o", "xml"}), kExitUsage);
  EXPECT_EQ(ctl({"create", "-f", dir_.path() + "/missing.json"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("missing.json"));
  EXPECT_EQ(ctl({"offsets", "wipe", "a"}), kExitUsage);
  EXPECT_EQ(ctl({"list"}, "ftp://x"), kExitUsage);
  EXPECT_EQ(ctl({"--help"}), kExitOk);
}

TEST_F(CtlTest, UnreachableExitsThreeNamingTheUrl) {
  // A port that was free a moment ago: bind, read it, close.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(ctl({"list"}, url), kExitUnreachable);
  EXPECT_THAT(err_.str(), HasSubstr(url));
}

TEST_F(CtlTest, PipelineApplyGetListDelete) {
  auto file = dir_.write("p.json", R"({"name": "p", "mode": "backbone",
      "source": {"connector.class": "FileStreamSource", "file": "/in"},
      "sink": {"connector.class": "FileStreamSink", "file": "/out"}})");
  ASSERT_EQ(ctl({"pipeline", "apply", "-f", file}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("created pipeline p"));
  ASSERT_EQ(ctl({"pipeline", "apply", "-f", file}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("updated pipeline p"));
  ASSERT_EQ(ctl({"pipeline", "list"}), kExitOk);
  EXPECT_EQ(out_.str(), "p\n");
  ASSERT_EQ(ctl({"pipeline", "get", "p"}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("Mode:     backbone\nTopic:    pipeline-p\n"));
  EXPECT_THAT(out_.str(), HasSubstr("p-source   RUNNING  1/1"));
  EXPECT_THAT(out_.str(), HasSubstr("p-sink-1   RUNNING  1/1"));
  ASSERT_EQ(ctl({"pipeline", "delete", "p"}), kExitOk);
  EXPECT_EQ(ctl({"pipeline", "get", "p"}), kExitServerError);
  EXPECT_THAT(err_.str(), HasSubstr("not found"));
  EXPECT_EQ(ctl({"pipeline", "apply"}), kExitUsage);
  EXPECT_EQ(ctl({"pipeline", "apply", "-f", dir_.write("bad.json", "[1]")}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("JSON object with a \"name\""));
  EXPECT_EQ(ctl({"pipeline", "frobnicate"}), kExitUsage);
}

// Credentials: --token sends a bearer token, --user basic credentials (password from the
// option or $FERRY_REST_PASSWORD), and the body goes out as JSON without a 100-continue wait.
TEST(CtlCredentials, SentAsAuthorizationHeaders) {
  std::mutex mu;
  std::vector<std::string> seen;  // "METHOD Authorization|Content-Type|Expect"
  rest::http::ServerOptions o;
  o.listeners.push_back(rest::http::Listener{false, "127.0.0.1", 0});
  rest::http::HttpServer server(o, [&](const rest::http::Request& req, rest::http::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(req.method + " " + req.get_header_value("Authorization") + "|" +
                   req.get_header_value("Content-Type") + "|" + req.get_header_value("Expect"));
    res.status = 200;
    res.set_content("{}", "application/json");
  });
  ASSERT_TRUE(server.start().isOk());
  const std::string url = "http://127.0.0.1:" + std::to_string(server.ports().at(0));
  auto ctl = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"ctl", "--url", url};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    std::ostringstream out, err;
    return run(static_cast<int>(argv.size()), argv.data(), out, err);
  };
  EXPECT_EQ(ctl({"--token", "t0k3n", "list", "-o", "json"}), kExitOk);
  EXPECT_EQ(ctl({"--user", "alice:s3cret", "list", "-o", "json"}), kExitOk);
  ::setenv("FERRY_REST_USER", "bob", 1);
  ::setenv("FERRY_REST_PASSWORD", "pw", 1);
  EXPECT_EQ(ctl({"list", "-o", "json"}), kExitOk);
  ::unsetenv("FERRY_REST_USER");
  ::unsetenv("FERRY_REST_PASSWORD");
  TempDir d;
  auto file = d.write("a.json", R"({"name": "a", "config": {"connector.class": "X"}})");
  EXPECT_EQ(ctl({"create", "-f", file}), kExitOk);
  server.stop();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], "GET Bearer t0k3n||");
  EXPECT_EQ(seen[1], "GET Basic YWxpY2U6czNjcmV0||");  // alice:s3cret
  EXPECT_EQ(seen[2], "GET Basic Ym9iOnB3||");          // bob:pw
  EXPECT_EQ(seen[3], "POST |application/json|");
}

}  // namespace
}  // namespace ferry::ctl
