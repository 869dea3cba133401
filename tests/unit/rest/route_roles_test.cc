// Every route's role: the route table equals the roles the project promises (and the README's
// table), and real requests to every route by nobody / a wrong password / viewer / operator /
// admin / a bearer token are refused or served accordingly, with no Herder call when refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "fake_herder.h"
#include "http_test_client.h"
#include "rest/auth.h"
#include "rest/rest_server.h"
#include "tests/unit/temp_files.h"

namespace ferry::rest {
namespace {

// The promise, written independently of the code: reads are viewer's, pause/resume/restart/stop
// operator's, everything else admin's; /health is open.
const std::map<std::string, Role>& expectedRoles() {
  static const std::map<std::string, Role> roles = {
      {"GET /", Role::kViewer},
      {"GET /health", Role::kOpen},
      {"GET /whoami", Role::kViewer},
      {"GET /connectors/*/metrics/history", Role::kViewer},
      {"POST /connectors/*/tap", Role::kOperator},
      {"GET /taps/*", Role::kOperator},
      {"GET /taps/*/events", Role::kOperator},
      {"DELETE /taps/*", Role::kOperator},
      {"GET /topics", Role::kViewer},
      {"GET /topics/*/records", Role::kOperator},
      {"GET /metrics", Role::kViewer},
      {"GET /cluster", Role::kViewer},
      {"GET /connectors", Role::kViewer},
      {"POST /connectors", Role::kAdmin},
      {"GET /connectors/*", Role::kViewer},
      {"DELETE /connectors/*", Role::kAdmin},
      {"GET /connectors/*/config", Role::kViewer},
      {"PUT /connectors/*/config", Role::kAdmin},
      {"PATCH /connectors/*/config", Role::kAdmin},
      {"GET /connectors/*/status", Role::kViewer},
      {"POST /connectors/*/restart", Role::kOperator},
      {"PUT /connectors/*/pause", Role::kOperator},
      {"PUT /connectors/*/resume", Role::kOperator},
      {"PUT /connectors/*/stop", Role::kOperator},
      {"GET /connectors/*/tasks", Role::kViewer},
      {"GET /connectors/*/tasks/*/status", Role::kViewer},
      {"POST /connectors/*/tasks/*/restart", Role::kOperator},
      {"GET /connectors/*/offsets", Role::kViewer},
      {"PATCH /connectors/*/offsets", Role::kAdmin},
      {"DELETE /connectors/*/offsets", Role::kAdmin},
      {"GET /connectors/*/topics", Role::kViewer},
      {"PUT /connectors/*/topics/reset", Role::kAdmin},
      {"GET /pipelines", Role::kViewer},
      {"POST /pipelines", Role::kAdmin},
      {"GET /pipelines/*", Role::kViewer},
      {"PUT /pipelines/*", Role::kAdmin},
      {"DELETE /pipelines/*", Role::kAdmin},
      {"POST /rules/test", Role::kAdmin},
      {"GET /connector-plugins", Role::kViewer},
      {"GET /connector-plugins/*/config", Role::kViewer},
      {"PUT /connector-plugins/*/config/validate", Role::kAdmin},
      {"GET /admin/loggers", Role::kViewer},
      {"GET /admin/loggers/*", Role::kViewer},
      {"PUT /admin/loggers/*", Role::kAdmin},
      {"GET /getClusterInfo", Role::kViewer},
      {"GET /connectors/list", Role::kViewer},
      {"GET /allocated/connectors", Role::kViewer},
      {"GET /allocated/tasks", Role::kViewer},
      {"GET /plugin/list", Role::kViewer},
  };
  return roles;
}

// RocketMQ Connect's dialect (rest.rocketmq.compat.enabled): a GET that writes needs the write's
// role.
const std::map<std::string, Role>& rocketmqDialectRoles() {
  static const std::map<std::string, Role> roles = {
      {"POST /connectors/*", Role::kAdmin},
      {"GET /connectors/*/stop", Role::kOperator},
      {"GET /connectors/*/pause", Role::kOperator},
      {"GET /connectors/*/resume", Role::kOperator},
      {"GET /connectors/*/restart", Role::kOperator},
      {"GET /connectors/*/tasks/*/restart", Role::kOperator},
      {"GET /connectors/stop/all", Role::kOperator},
      {"GET /connectors/pause/all", Role::kOperator},
      {"GET /connectors/resume/all", Role::kOperator},
      {"GET /plugin/list/connectors", Role::kViewer},
      {"GET /plugin/config", Role::kViewer},
      {"GET /plugin/config/validate", Role::kAdmin},
      {"POST /plugin/config/validate", Role::kAdmin},
      {"GET /plugin/reload", Role::kAdmin},
      {"POST /plugin/reload", Role::kAdmin},
  };
  return roles;
}

// Every route of a worker with the dialect on (the README table lists them all).
std::map<std::string, Role> allRoles() {
  auto all = expectedRoles();
  for (const auto& [route, role] : rocketmqDialectRoles()) all[route] = role;
  return all;
}

std::map<std::string, Role> tableOf(const std::vector<RouteSpec>& routes) {
  std::map<std::string, Role> out;
  for (const auto& r : routes) out[r.method + " " + r.pattern] = r.role;
  return out;
}

// A concrete path for a pattern: connectors/* -> c1, tasks/* -> 0, and so on.
std::string concrete(const std::string& pattern) {
  std::string out;
  std::stringstream ss(pattern);
  std::string seg, prev;
  while (std::getline(ss, seg, '/')) {
    if (seg.empty()) continue;
    if (seg == "*") {
      seg = prev == "tasks" ? "0" : prev == "connector-plugins" ? "FileStreamSource" : prev == "loggers" ? "ferry.test"
            : prev == "pipelines" ? "p1" : "c1";
    }
    out += "/" + seg;
    prev = seg;
  }
  return out.empty() ? "/" : out;
}

class RouteRolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string users;
    for (const char* role : {"viewer", "operator", "admin"})
      users += std::string(role) + ":" + role + ":" + *hashPassword("pw", kMinPbkdf2Iterations) + "\n";
    ferry::testing::writeText(dir_.file("users"), users);
    token_ = *newToken();
    ferry::testing::writeText(dir_.file("tokens"), "ci:operator:" + sha256Hex(token_) + "\n");
    RestOptions o;
    o.port = 0;
    o.security.auth.usersFile = dir_.file("users");
    o.security.auth.tokensFile = dir_.file("tokens");
    o.rocketmqCompat = true;  // every route, the RocketMQ dialect's too
    server_ = std::make_unique<RestServer>(herder_, o);
    ASSERT_TRUE(server_->start().isOk());
  }
  void TearDown() override { server_->stop(); }

  int call(const std::string& method, const std::string& path, const std::string& user, const std::string& password,
           const std::string& bearer = "") {
    std::string headers;
    if (!user.empty()) headers += "Authorization: Basic " + base64Encode(user + ":" + password) + "\r\n";
    if (!bearer.empty()) headers += "Authorization: Bearer " + bearer + "\r\n";
    const std::string body = method == "GET" || method == "DELETE" ? "" : "{}";
    auto r = testing::httpRequest(server_->port(), method, path, body, headers);
    EXPECT_NE(r.status, 0) << method << " " << path;
    return r.status;
  }

  ferry::testing::TempDir dir_{"ferry-routes"};
  ferry::rest::testing::FakeHerder herder_;
  std::unique_ptr<RestServer> server_;
  std::string token_;
};

TEST_F(RouteRolesTest, EveryRouteHasThePromisedRole) {
  auto actual = tableOf(server_->routeTable());
  const auto promised = allRoles();
  for (const auto& [route, role] : promised) {
    ASSERT_TRUE(actual.count(route)) << route << " is promised but not in the route table";
    EXPECT_EQ(roleName(actual.at(route)), std::string(roleName(role))) << route;
  }
  for (const auto& [route, role] : actual)
    EXPECT_TRUE(promised.count(route)) << route << " (" << roleName(role)
                                       << ") is new: add it to this test and to src/rest/README.md";
}

// Without rest.rocketmq.compat.enabled the dialect's routes do not exist.
TEST_F(RouteRolesTest, RocketMqDialectRoutesOnlyWhenEnabled) {
  ferry::rest::testing::FakeHerder herder;
  RestServer plain(herder, RestOptions{});
  auto actual = tableOf(plain.routeTable());
  EXPECT_EQ(actual.size(), expectedRoles().size());
  for (const auto& [route, role] : rocketmqDialectRoles()) EXPECT_FALSE(actual.count(route)) << route;
}

TEST_F(RouteRolesTest, ReadmeTableMatchesTheCode) {
  std::ifstream in(std::string(FERRY_SOURCE_DIR) + "/src/rest/README.md");
  ASSERT_TRUE(in.good());
  std::map<std::string, Role> documented;
  std::regex row(R"(^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]*)` \| (open|viewer|operator|admin) \|\s*$)");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) {
      auto role = m[3] == "open" ? std::optional<Role>(Role::kOpen) : parseRole(m[3].str());
      documented[m[1].str() + " " + m[2].str()] = *role;
    }
  }
  auto actual = tableOf(server_->routeTable());
  EXPECT_EQ(documented.size(), actual.size());
  for (const auto& [route, role] : actual) {
    ASSERT_TRUE(documented.count(route)) << route << " missing from src/rest/README.md";
    EXPECT_EQ(roleName(documented.at(route)), std::string(roleName(role))) << route;
  }
}

TEST_F(RouteRolesTest, EveryRouteByEveryPrincipal) {
  ASSERT_EQ(call("POST", "/connectors", "admin", "pw"), 400);  // authenticated, but '{}' is no connector
  struct Who {
    std::string user, password, bearer;
    std::optional<Role> role;  // nullopt: not authenticated
  };
  const std::vector<Who> principals = {{"", "", "", std::nullopt},
                                       {"admin", "wrong", "", std::nullopt},
                                       {"", "", "not-a-token", std::nullopt},
                                       {"viewer", "pw", "", Role::kViewer},
                                       {"operator", "pw", "", Role::kOperator},
                                       {"", "", token_, Role::kOperator},
                                       {"admin", "pw", "", Role::kAdmin}};
  for (const auto& spec : server_->routeTable()) {
    const std::string path = concrete(spec.pattern);
    for (const auto& who : principals) {
      const std::size_t callsBefore = herder_.calls().size();
      int status = call(spec.method, path, who.user, who.password, who.bearer);
      std::string label = spec.method + " " + path + " as " + (who.user.empty() ? (who.bearer.empty() ? "nobody" : "bearer") : who.user + ":" + who.password);
      if (spec.role == Role::kOpen) {
        EXPECT_NE(status, 401) << label;
        EXPECT_NE(status, 403) << label;
      } else if (!who.role) {
        EXPECT_EQ(status, 401) << label;
      } else if (*who.role < spec.role) {
        EXPECT_EQ(status, 403) << label;
      } else {
        EXPECT_NE(status, 401) << label;
        EXPECT_NE(status, 403) << label;
      }
      if (status == 401 || status == 403) {
        EXPECT_EQ(herder_.calls().size(), callsBefore) << label << ": the handler ran";
      }
    }
  }
}

TEST_F(RouteRolesTest, UnknownPathsNeedCredentialsBefore404) {
  EXPECT_EQ(call("GET", "/no/such/thing", "", ""), 401);
  EXPECT_EQ(call("GET", "/no/such/thing", "viewer", "pw"), 404);
  EXPECT_EQ(call("DELETE", "/metrics", "", ""), 401);
  EXPECT_EQ(call("DELETE", "/metrics", "viewer", "pw"), 405);
}

}  // namespace
}  // namespace ferry::rest
