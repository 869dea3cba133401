// The checks in front of every handler: Host, CORS, cross-origin writes, credentials, roles and
// Content-Type, and the start-up refusal of an exposed listener without authentication.
#include "rest/request_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/temp_files.h"

namespace ferry::rest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ManualClock : public core::Clock {
 public:
  std::int64_t steadyMs() const override { return now; }
  std::int64_t now = 0;
};

AuthRequest get(const std::string& path, const std::string& host = "127.0.0.1:8082") {
  AuthRequest r;
  r.method = "GET";
  r.path = path;
  r.httpVersion = "HTTP/1.1";
  r.host = host;
  r.remoteAddr = "127.0.0.1";
  return r;
}

AuthRequest post(const std::string& path, std::optional<std::string> type, bool body = true) {
  AuthRequest r = get(path);
  r.method = "POST";
  r.contentType = std::move(type);
  r.hasBody = body;
  return r;
}

std::string header(const Verdict& v, const std::string& name) {
  std::string out;
  for (const auto& [k, val] : v.headers)
    if (k == name) out += (out.empty() ? "" : "|") + val;
  return out;
}

TEST(HostHeader, PortsBracketsCaseAndDots) {
  EXPECT_EQ(hostOfHeader("LocalHost:8082"), "localhost");
  EXPECT_EQ(hostOfHeader("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(hostOfHeader("[::1]:8082"), "::1");
  EXPECT_EQ(hostOfHeader("[::1]"), "::1");
  EXPECT_EQ(hostOfHeader("::1"), "::1");
  EXPECT_EQ(hostOfHeader("example.com.:80"), "example.com");
  EXPECT_EQ(hostOfHeader(" worker-1 "), "worker-1");
}

TEST(HostHeader, Loopback) {
  for (const char* h : {"localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]:1", "::ffff:127.0.0.1"})
    EXPECT_TRUE(isLoopbackHost(h)) << h;
  for (const char* h : {"0.0.0.0", "", "::", "10.0.0.1", "128.0.0.1", "localhost.evil.com", "example.com"})
    EXPECT_FALSE(isLoopbackHost(h)) << h;
}

TEST(ContentType, OnlyApplicationJson) {
  for (const char* t : {"application/json", "Application/JSON", "application/json; charset=utf-8", " application/json ;x=y"})
    EXPECT_TRUE(isJsonContentType(t)) << t;
  for (const char* t : {"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                        "application/jsonp", "text/json", "application/json-patch+json"})
    EXPECT_FALSE(isJsonContentType(t)) << t;
}

TEST(HostCheck, DefaultsServeLoopbackNamesAndRefuseOthers) {
  RequestPolicy policy(PolicySettings{});
  for (const char* h : {"127.0.0.1:8082", "localhost:8082", "[::1]:8082", "LOCALHOST"})
    EXPECT_TRUE(policy.admit(get("/connectors", h), Role::kViewer).proceed) << h;
  for (const char* h : {"evil.example:8082", "attacker.com", "127.0.0.1.nip.io", "localhost.evil.com"}) {
    auto v = policy.admit(get("/connectors", h), Role::kViewer);
    EXPECT_FALSE(v.proceed) << h;
    EXPECT_EQ(v.status, 421);
    EXPECT_THAT(v.message, HasSubstr("rest.allowed.host.names"));
  }
  // The health probe is checked too: a rebinding page must not read anything.
  EXPECT_FALSE(policy.admit(get("/health", "evil.example"), Role::kOpen).proceed);
}

TEST(HostCheck, MissingHost) {
  RequestPolicy policy(PolicySettings{});
  AuthRequest r = get("/connectors");
  r.host.reset();
  EXPECT_EQ(policy.admit(r, Role::kViewer).status, 400);  // HTTP/1.1 needs one
  r.httpVersion = "HTTP/1.0";
  EXPECT_TRUE(policy.admit(r, Role::kViewer).proceed);  // HTTP/1.0 from loopback
  r.remoteAddr = "10.1.2.3";
  EXPECT_FALSE(policy.admit(r, Role::kViewer).proceed);
}

TEST(HostCheck, ConfiguredNamesAndStar) {
  PolicySettings s;
  s.allowedHostNames = {"connect.example.com", "[fd00::5]"};
  RequestPolicy policy(s);
  EXPECT_TRUE(policy.admit(get("/", "connect.example.com:8083"), Role::kViewer).proceed);
  EXPECT_TRUE(policy.admit(get("/", "[fd00::5]:8083"), Role::kViewer).proceed);
  EXPECT_FALSE(policy.admit(get("/", "127.0.0.1:8083"), Role::kViewer).proceed);  // the list replaces the defaults
  s.allowedHostNames = {"*"};
  RequestPolicy open(s);
  EXPECT_TRUE(open.admit(get("/", "anything.example"), Role::kViewer).proceed);
}

TEST(HostCheck, DefaultsIncludeTheBoundAndAdvertisedHost) {
  auto hosts = defaultAllowedHosts({"10.9.8.7"}, "connect-1.internal");
  EXPECT_THAT(hosts, ::testing::IsSupersetOf({"localhost", "127.0.0.1", "::1", "10.9.8.7", "connect-1.internal"}));
  EXPECT_THAT(defaultAllowedHosts({"0.0.0.0"}, ""), ::testing::Not(::testing::Contains("0.0.0.0")));
}

TEST(ContentTypeCheck, WritesWithABodyNeedJson) {
  RequestPolicy policy(PolicySettings{});
  EXPECT_TRUE(policy.admit(post("/connectors", "application/json"), Role::kAdmin).proceed);
  EXPECT_TRUE(policy.admit(post("/connectors", "application/json; charset=UTF-8"), Role::kAdmin).proceed);
  for (std::optional<std::string> t : {std::optional<std::string>("text/plain"),
                                       std::optional<std::string>("application/x-www-form-urlencoded"),
                                       std::optional<std::string>("multipart/form-data; boundary=b"),
                                       std::optional<std::string>()}) {
    auto v = policy.admit(post("/connectors", t), Role::kAdmin);
    EXPECT_FALSE(v.proceed) << t.value_or("(none)");
    EXPECT_EQ(v.status, 415);
    EXPECT_THAT(v.message, HasSubstr("application/json"));
  }
  for (const char* m : {"PUT", "PATCH"}) {
    AuthRequest r = post("/connectors/a/config", "text/plain");
    r.method = m;
    EXPECT_EQ(policy.admit(r, Role::kAdmin).status, 415) << m;
  }
  // Kafka clients pause with a body-less PUT and no Content-Type.
  AuthRequest pause = post("/connectors/a/pause", std::nullopt, /*body=*/false);
  pause.method = "PUT";
  EXPECT_TRUE(policy.admit(pause, Role::kOperator).proceed);
  // A body-less write that names a form type is still refused (a cross-site form without fields).
  EXPECT_EQ(policy.admit(post("/connectors/a/restart", "text/plain", false), Role::kOperator).status, 415);
  // Reads are never checked.
  AuthRequest r = get("/connectors");
  r.contentType = "text/plain";
  EXPECT_TRUE(policy.admit(r, Role::kViewer).proceed);
}

TEST(CrossOrigin, WritesFromForeignPagesAreRefused) {
  RequestPolicy policy(PolicySettings{});
  AuthRequest r = post("/connectors/a/restart", std::nullopt, false);
  r.origin = "https://evil.example";
  auto v = policy.admit(r, Role::kOperator);
  EXPECT_EQ(v.status, 403);
  EXPECT_THAT(v.message, HasSubstr("access.control.allow.origin"));
  r.origin = "null";
  EXPECT_EQ(policy.admit(r, Role::kOperator).status, 403);
  r.origin = "http://127.0.0.1:8082";  // the worker's own console
  EXPECT_TRUE(policy.admit(r, Role::kOperator).proceed);
  // A read with a foreign Origin goes through (the browser keeps the answer from the page).
  AuthRequest read = get("/connectors");
  read.origin = "https://evil.example";
  auto rv = policy.admit(read, Role::kViewer);
  EXPECT_TRUE(rv.proceed);
  EXPECT_EQ(header(rv, "Access-Control-Allow-Origin"), "");
}

TEST(Cors, OffByDefault) {
  RequestPolicy policy(PolicySettings{});
  AuthRequest pre = get("/connectors");
  pre.method = "OPTIONS";
  pre.origin = "https://ui.example";
  pre.accessControlRequestMethod = "POST";
  auto v = policy.admit(pre, Role::kViewer);
  EXPECT_TRUE(v.proceed);  // answered as any OPTIONS, without CORS headers
  EXPECT_TRUE(v.headers.empty());
}

TEST(Cors, ConfiguredOriginsOnly) {
  PolicySettings s;
  s.corsAllowOrigins = {"https://ui.example", "http://localhost:3000/"};
  s.corsAllowMethods = "GET, POST, put";
  RequestPolicy policy(s);
  AuthRequest pre = get("/connectors");
  pre.method = "OPTIONS";
  pre.origin = "https://ui.example";
  pre.accessControlRequestMethod = "PUT";
  auto v = policy.admit(pre, Role::kViewer);
  EXPECT_FALSE(v.proceed);
  EXPECT_EQ(v.status, 204);
  EXPECT_EQ(header(v, "Access-Control-Allow-Origin"), "https://ui.example");
  EXPECT_EQ(header(v, "Access-Control-Allow-Methods"), "GET,POST,PUT");
  EXPECT_THAT(header(v, "Access-Control-Allow-Headers"), HasSubstr("Authorization"));
  pre.accessControlRequestMethod = "DELETE";  // not listed
  EXPECT_TRUE(policy.admit(pre, Role::kViewer).headers.empty());
  pre.accessControlRequestMethod = "POST";
  pre.origin = "https://other.example";
  EXPECT_TRUE(policy.admit(pre, Role::kViewer).headers.empty());
  pre.origin = "http://localhost:3000";
  EXPECT_EQ(header(policy.admit(pre, Role::kViewer), "Access-Control-Allow-Origin"), "http://localhost:3000");

  // Actual requests: headers for listed origins, and their writes are not cross-origin refusals.
  AuthRequest w = post("/connectors", "application/json");
  w.origin = "https://ui.example";
  auto wv = policy.admit(w, Role::kAdmin);
  EXPECT_TRUE(wv.proceed);
  EXPECT_EQ(header(wv, "Access-Control-Allow-Origin"), "https://ui.example");
  EXPECT_EQ(header(wv, "Vary"), "Origin");
  w.origin = "https://other.example";
  EXPECT_EQ(policy.admit(w, Role::kAdmin).status, 403);
}

TEST(ListenerPolicy, NonLoopbackNeedsAuthenticationOrAnExplicitOptOut) {
  PolicySettings s;
  s.bindHosts = {"0.0.0.0"};
  auto st = checkListenerPolicy(s);
  ASSERT_FALSE(st.isOk());
  EXPECT_THAT(st.message(), HasSubstr("rest.auth.users.file"));
  EXPECT_THAT(st.message(), HasSubstr("rest.auth.tokens.file"));
  EXPECT_THAT(st.message(), HasSubstr("rest.auth.allow.unauthenticated"));
  for (const char* h : {"10.0.0.5", "", "::", "example.com"}) {
    s.bindHosts = {h};
    EXPECT_FALSE(checkListenerPolicy(s).isOk()) << h;
  }
  for (const char* h : {"127.0.0.1", "localhost", "::1", "127.0.0.2"}) {
    s.bindHosts = {h};
    EXPECT_TRUE(checkListenerPolicy(s).isOk()) << h;
  }
  s.bindHosts = {"127.0.0.1", "10.0.0.5"};  // one exposed listener among several is enough
  EXPECT_FALSE(checkListenerPolicy(s).isOk());
  s.bindHosts = {"0.0.0.0"};
  s.allowUnauthenticated = true;
  EXPECT_TRUE(checkListenerPolicy(s).isOk());
  s.allowUnauthenticated = false;
  s.auth.usersFile = "/some/users";
  EXPECT_TRUE(checkListenerPolicy(s).isOk());
  s.corsAllowOrigins = {"*"};  // any origin with credentials: refused
  EXPECT_THAT(checkListenerPolicy(s).message(), HasSubstr("access.control.allow.origin"));
}

class AuthPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string users;
    for (const char* role : {"viewer", "operator", "admin"})
      users += std::string(role) + "-user:" + role + ":" + *hashPassword("pw", kMinPbkdf2Iterations) + "\n";
    testing::writeText(dir_.file("users"), users);
    PolicySettings s;
    s.auth.usersFile = dir_.file("users");
    policy_ = std::make_unique<RequestPolicy>(s, clock_);
    ASSERT_TRUE(policy_->start().isOk());
  }
  AuthRequest as(AuthRequest r, const std::string& user) {
    if (!user.empty()) r.authorization = "Basic " + base64Encode(user + ":pw");
    return r;
  }
  testing::TempDir dir_{"ferry-policy"};
  ManualClock clock_;
  std::unique_ptr<RequestPolicy> policy_;
};

TEST_F(AuthPolicyTest, RolesAreOrdered) {
  const Role levels[] = {Role::kViewer, Role::kOperator, Role::kAdmin};
  const char* users[] = {"viewer-user", "operator-user", "admin-user"};
  for (int u = 0; u < 3; ++u)
    for (int need = 0; need < 3; ++need) {
      auto v = policy_->admit(as(get("/x"), users[u]), levels[need]);
      EXPECT_EQ(v.proceed, u >= need) << users[u] << " for " << roleName(levels[need]);
      if (u < need) {
        EXPECT_EQ(v.status, 403);
        EXPECT_THAT(v.message, HasSubstr(std::string("user ") + users[u] + " (" + roleName(levels[u]) + ") may not GET /x"));
      }
    }
}

TEST_F(AuthPolicyTest, MissingOrWrongCredentialsAre401WithChallenges) {
  for (auto r : {get("/connectors"), as(get("/connectors"), "nobody")}) {
    auto v = policy_->admit(r, Role::kViewer);
    EXPECT_EQ(v.status, 401);
    EXPECT_THAT(header(v, "WWW-Authenticate"), HasSubstr("Basic realm=\"ferry\""));
    EXPECT_THAT(header(v, "WWW-Authenticate"), HasSubstr("Bearer realm=\"ferry\""));
  }
  AuthRequest wrong = get("/connectors");
  wrong.authorization = "Basic " + base64Encode("admin-user:nope");
  EXPECT_EQ(policy_->admit(wrong, Role::kViewer).status, 401);
  // A script's request (the web console's) gets no Basic challenge: browsers would answer it with
  // their own login prompt over the page's. The Bearer one stays; it is still a 401.
  AuthRequest scripted = get("/connectors");
  scripted.scripted = true;
  auto v = policy_->admit(scripted, Role::kViewer);
  EXPECT_EQ(v.status, 401);
  EXPECT_THAT(header(v, "WWW-Authenticate"), Not(HasSubstr("Basic")));
  EXPECT_THAT(header(v, "WWW-Authenticate"), HasSubstr("Bearer realm=\"ferry\""));
  EXPECT_TRUE(policy_->admit(get("/health"), Role::kOpen).proceed);  // probes need nothing
  AuthRequest options = get("/connectors");
  options.method = "OPTIONS";
  EXPECT_TRUE(policy_->admit(options, Role::kOpen).proceed);
}

TEST_F(AuthPolicyTest, ContentTypeIsCheckedForAuthenticatedWritesToo) {
  auto v = policy_->admit(as(post("/connectors", "text/plain"), "admin-user"), Role::kAdmin);
  EXPECT_EQ(v.status, 415);
  EXPECT_EQ(policy_->admit(post("/connectors", "text/plain"), Role::kAdmin).status, 401);
}

TEST_F(AuthPolicyTest, ClientCertificateNamesTheUser) {
  AuthRequest r = get("/connectors");
  r.peerName = "operator-user";
  auto v = policy_->admit(r, Role::kOperator);
  ASSERT_TRUE(v.proceed);
  EXPECT_EQ(v.principal->name, "operator-user");
  EXPECT_EQ(policy_->admit(r, Role::kAdmin).status, 403);
  r.peerName = "unknown-cn";
  EXPECT_EQ(policy_->admit(r, Role::kViewer).status, 401);
}

}  // namespace
}  // namespace ferry::rest
