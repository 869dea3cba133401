// Credentials: hashing and verification, the users and tokens files (bad, missing and hostile
// input), the Authenticator's cache and re-reading of changed files.
#include "rest/auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "tests/unit/temp_files.h"

namespace ferry::rest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ManualClock : public core::Clock {
 public:
  std::int64_t steadyMs() const override { return now; }
  std::int64_t wallMs() const override { return now; }
  std::int64_t now = 1000;
};

std::string basicHeader(const std::string& user, const std::string& password) {
  return "Basic " + base64Encode(user + ":" + password);
}

std::string userLine(const std::string& name, const std::string& role, const std::string& password) {
  auto hash = hashPassword(password, kMinPbkdf2Iterations);
  EXPECT_TRUE(hash.isOk());
  return name + ":" + role + ":" + *hash + "\n";
}

TEST(Base64, RoundTripsAndRejectsMalformed) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    EXPECT_EQ(base64Decode(base64Encode(s)).value_or("?"), s);
  EXPECT_EQ(base64Encode("alice:pw"), "YWxpY2U6cHc=");
  EXPECT_FALSE(base64Decode("abc").has_value());     // not a multiple of 4
  EXPECT_FALSE(base64Decode("ab=c").has_value());    // padding in the middle
  EXPECT_FALSE(base64Decode("a===").has_value());    // three pads
  EXPECT_FALSE(base64Decode("ab!d").has_value());    // not in the alphabet
  EXPECT_FALSE(base64Decode("YQ==YQ==").has_value());  // padding before the end
}

TEST(Sha256, KnownAnswer) {
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Password, HashVerifiesOnlyTheSamePassword) {
  auto hash = hashPassword("correct horse", kMinPbkdf2Iterations);
  ASSERT_TRUE(hash.isOk());
  EXPECT_THAT(*hash, HasSubstr("pbkdf2-sha256$1000$"));
  EXPECT_TRUE(verifyPassword("correct horse", *hash));
  EXPECT_FALSE(verifyPassword("correct horsE", *hash));
  EXPECT_FALSE(verifyPassword("", *hash));
  // A fresh salt every time: the same password hashes differently.
  EXPECT_NE(*hash, *hashPassword("correct horse", kMinPbkdf2Iterations));
  EXPECT_FALSE(hashPassword("x", 10).isOk());  // too few iterations
}

TEST(Password, KnownPbkdf2Vector) {
  // PBKDF2-HMAC-SHA256("passwd", "saltsalt", 1000 iterations, 32 bytes), computed with a second
  // implementation (Python's hashlib.pbkdf2_hmac).
  const std::string encoded = "pbkdf2-sha256$1000$" + base64Encode("saltsalt") + "$" +
                              "KBJH0RIw+FCnOKJi2s/ppNgRHFTFzBjXqxs+xS3zHTY=";
  EXPECT_TRUE(verifyPassword("passwd", encoded));
  EXPECT_FALSE(verifyPassword("passwe", encoded));
}

TEST(Password, MalformedHashesNeverVerify) {
  for (const char* bad : {"", "-", "pbkdf2-sha256$1000$c2FsdHNhbHQ=", "pbkdf2-sha1$1000$c2FsdHNhbHQ=$AAAA",
                          "pbkdf2-sha256$x$c2FsdHNhbHQ=$AAAA", "pbkdf2-sha256$99999999999$c2FsdHNhbHQ=$AAAA",
                          "pbkdf2-sha256$1000$c2FsdHNhbHQ=$AAAA"})
    EXPECT_FALSE(verifyPassword("", bad)) << bad;
}

TEST(Tokens, AreLongAndRandom) {
  auto a = newToken(), b = newToken();
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_GE(a->size(), 43u);  // 32 bytes, base64url
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->find_first_of("+/="), std::string::npos);
}

TEST(ConstantTime, Equality) {
  EXPECT_TRUE(constantTimeEquals("abc", "abc"));
  EXPECT_FALSE(constantTimeEquals("abc", "abd"));
  EXPECT_FALSE(constantTimeEquals("abc", "abcd"));
  EXPECT_TRUE(constantTimeEquals("", ""));
}

TEST(CredentialFile, ParsesUsersWithCommentsAndBlankLines) {
  std::string text = "# REST users\n\n" + userLine("alice", "admin", "pw") + "bob : viewer : -\r\n" +
                     userLine("carol", "Operator", "pw2");
  auto entries = parseCredentials(text, CredentialKind::kUsers);
  ASSERT_TRUE(entries.isOk()) << entries.status().message();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "alice");
  EXPECT_EQ((*entries)[0].role, Role::kAdmin);
  EXPECT_EQ((*entries)[1].name, "bob");
  EXPECT_EQ((*entries)[1].secret, "-");
  EXPECT_EQ((*entries)[2].role, Role::kOperator);
}

TEST(CredentialFile, BadLinesNameTheLineNumberNeverTheLine) {
  const std::string good = userLine("alice", "admin", "pw");
  struct Case {
    std::string text;
    std::string line;
  } cases[] = {
      {good + "bob:viewer\n", "line 2:"},                             // a field missing
      {good + "bob:root:-\n", "line 2:"},                             // unknown role
      {good + "bob:viewer:plaintext-secret-123\n", "line 2:"},        // not a hash
      {good + good, "line 2:"},                                       // duplicate name
      {"\n\n:viewer:-\n", "line 3:"},                                 // empty name
      {std::string("a\x01z:viewer:-\n"), "line 1:"},                  // control character
      {"x:viewer:" + std::string(5000, 'A') + "\n", "line 1:"},       // hostile long line
      {good + "y:admin:pbkdf2-sha256$5$c2FsdHNhbHQ=$" + std::string(44, 'A') + "\n", "line 2:"},  // weak
  };
  for (const auto& c : cases) {
    auto r = parseCredentials(c.text, CredentialKind::kUsers);
    ASSERT_FALSE(r.isOk()) << c.text.substr(0, 80);
    EXPECT_THAT(r.status().message(), HasSubstr(c.line));
    EXPECT_THAT(r.status().message(), Not(HasSubstr("plaintext-secret")));
    EXPECT_THAT(r.status().message(), Not(HasSubstr("AAAAAAAA")));
  }
  EXPECT_FALSE(parseCredentials(std::string(kMaxCredentialFileBytes + 1, '#'), CredentialKind::kUsers).isOk());
}

TEST(CredentialFile, TokenLines) {
  const std::string hex = sha256Hex("t");
  auto ok = parseCredentials("ci:operator:" + hex + "\n", CredentialKind::kTokens);
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ((*ok)[0].secret, hex);
  EXPECT_FALSE(parseCredentials("ci:operator:" + hex.substr(1) + "\n", CredentialKind::kTokens).isOk());
  EXPECT_FALSE(parseCredentials("ci:operator:" + hex.substr(1) + "g\n", CredentialKind::kTokens).isOk());
  EXPECT_FALSE(parseCredentials("ci:operator:-\n", CredentialKind::kTokens).isOk());
}

TEST(CredentialFile, LinesMadeByTheCommandsParse) {
  auto hash = hashPassword("pw", kMinPbkdf2Iterations);
  auto line = credentialLine("alice", "ADMIN", *hash, CredentialKind::kUsers);
  ASSERT_TRUE(line.isOk());
  EXPECT_EQ(line->substr(0, 12), "alice:admin:");
  EXPECT_FALSE(credentialLine("a:b", "admin", *hash, CredentialKind::kUsers).isOk());
  EXPECT_FALSE(credentialLine("alice", "root", *hash, CredentialKind::kUsers).isOk());
  EXPECT_TRUE(credentialLine("ci", "viewer", sha256Hex("x"), CredentialKind::kTokens).isOk());
}

class AuthenticatorTest : public ::testing::Test {
 protected:
  AuthSettings settings() {
    AuthSettings s;
    s.usersFile = dir_.file("users");
    s.tokensFile = dir_.file("tokens");
    return s;
  }
  void writeUsers(const std::string& text) { rewrite(dir_.file("users"), text); }
  void writeTokens(const std::string& text) { rewrite(dir_.file("tokens"), text); }
  // Replaces the file by a rename, so the inode changes even within one mtime tick.
  void rewrite(const std::string& path, const std::string& text) {
    testing::writeText(path + ".new", text);
    std::filesystem::rename(path + ".new", path);
  }
  testing::TempDir dir_{"ferry-auth"};
  ManualClock clock_;
};

TEST_F(AuthenticatorTest, BasicBearerAndFailures) {
  writeUsers(userLine("alice", "admin", "pw") + "bob:viewer:-\n");
  const std::string token = *newToken();
  writeTokens("ci:operator:" + sha256Hex(token) + "\n");
  Authenticator auth(settings(), clock_);
  ASSERT_TRUE(auth.load().isOk());
  EXPECT_TRUE(auth.enabled());

  auto ok = auth.authenticate(basicHeader("alice", "pw"), "");
  ASSERT_TRUE(ok.principal);
  EXPECT_EQ(ok.principal->name, "alice");
  EXPECT_EQ(ok.principal->role, Role::kAdmin);
  EXPECT_FALSE(auth.authenticate(basicHeader("alice", "wrong"), "").principal);
  EXPECT_FALSE(auth.authenticate(basicHeader("nobody", "pw"), "").principal);
  EXPECT_FALSE(auth.authenticate(basicHeader("bob", ""), "").principal);  // certificate-only user
  EXPECT_FALSE(auth.authenticate(basicHeader("bob", "-"), "").principal);
  EXPECT_FALSE(auth.authenticate("Basic !!!", "").principal);
  EXPECT_FALSE(auth.authenticate("Basic " + base64Encode("nocolon"), "").principal);
  EXPECT_FALSE(auth.authenticate("Digest abc", "").principal);
  EXPECT_FALSE(auth.authenticate("", "").principal);

  auto viaToken = auth.authenticate("Bearer " + token, "");
  ASSERT_TRUE(viaToken.principal);
  EXPECT_EQ(viaToken.principal->name, "ci");
  EXPECT_EQ(viaToken.principal->role, Role::kOperator);
  EXPECT_FALSE(auth.authenticate("Bearer " + token + "x", "").principal);
  EXPECT_FALSE(auth.authenticate("Bearer " + sha256Hex(token), "").principal);  // the stored hash is no token
  EXPECT_FALSE(auth.authenticate("Bearer ", "").principal);

  // The failure outcome never carries the password.
  auto failed = auth.authenticate(basicHeader("alice", "hunter2-secret"), "");
  EXPECT_EQ(failed.claimedUser, "alice");
  EXPECT_THAT(failed.problem, Not(HasSubstr("hunter2")));
}

TEST_F(AuthenticatorTest, CertificateUsers) {
  writeUsers(userLine("alice", "admin", "pw") + "bob:viewer:-\n");
  AuthSettings s = settings();
  s.tokensFile.clear();
  {
    Authenticator auth(s, clock_);
    ASSERT_TRUE(auth.load().isOk());
    auto bob = auth.authenticate("", "bob");
    ASSERT_TRUE(bob.principal);
    EXPECT_EQ(bob.principal->role, Role::kViewer);
    EXPECT_EQ(bob.principal->via, "certificate");
    EXPECT_EQ(auth.authenticate("", "alice").principal->role, Role::kAdmin);
    EXPECT_FALSE(auth.authenticate("", "stranger").principal);  // no default role: refused
    // An explicit header wins over the certificate.
    EXPECT_FALSE(auth.authenticate(basicHeader("alice", "wrong"), "bob").principal);
  }
  s.mtlsDefaultRole = Role::kOperator;
  Authenticator auth(s, clock_);
  ASSERT_TRUE(auth.load().isOk());
  auto stranger = auth.authenticate("", "stranger");
  ASSERT_TRUE(stranger.principal);
  EXPECT_EQ(stranger.principal->role, Role::kOperator);
}

TEST_F(AuthenticatorTest, SuccessfulVerificationsAreCachedForTheTtl) {
  writeUsers(userLine("alice", "admin", "pw"));
  AuthSettings s = settings();
  s.tokensFile.clear();
  s.cacheTtlMs = 5000;
  Authenticator auth(s, clock_);
  ASSERT_TRUE(auth.load().isOk());
  ASSERT_TRUE(auth.authenticate(basicHeader("alice", "pw"), "").principal);
  EXPECT_EQ(auth.pbkdf2Runs(), 1u);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(auth.authenticate(basicHeader("alice", "pw"), "").principal);
  EXPECT_EQ(auth.pbkdf2Runs(), 1u);  // served from the cache
  // A wrong password is never served from the cache and always pays PBKDF2.
  EXPECT_FALSE(auth.authenticate(basicHeader("alice", "pW"), "").principal);
  EXPECT_EQ(auth.pbkdf2Runs(), 2u);
  clock_.now += 5001;  // past the TTL
  ASSERT_TRUE(auth.authenticate(basicHeader("alice", "pw"), "").principal);
  EXPECT_EQ(auth.pbkdf2Runs(), 3u);
}

TEST_F(AuthenticatorTest, PasswordChecksBeyondTheConcurrencyBoundAreBusy) {
  writeUsers(userLine("alice", "admin", "pw"));
  AuthSettings s = settings();
  s.tokensFile.clear();
  s.maxConcurrentVerifications = 0;  // every PBKDF2 run is over the bound
  s.verificationWaitMs = 0;
  Authenticator auth(s, clock_);
  ASSERT_TRUE(auth.load().isOk());
  auto out = auth.authenticate(basicHeader("alice", "pw"), "");
  EXPECT_FALSE(out.principal);
  EXPECT_TRUE(out.busy);
  EXPECT_EQ(auth.pbkdf2Runs(), 0u);
  const std::string token = *newToken();  // bearer tokens cost no PBKDF2 and are never busy
  writeTokens("ci:viewer:" + sha256Hex(token) + "\n");
  AuthSettings t = s;
  t.tokensFile = dir_.file("tokens");
  Authenticator withTokens(t, clock_);
  ASSERT_TRUE(withTokens.load().isOk());
  EXPECT_TRUE(withTokens.authenticate("Bearer " + token, "").principal);
}

TEST_F(AuthenticatorTest, PasswordChecksBeyondTheWaitingBoundAreBusyAtOnce) {
  writeUsers(userLine("alice", "admin", "pw"));
  AuthSettings s = settings();
  s.tokensFile.clear();
  s.maxConcurrentVerifications = 0;  // no slot ever frees
  s.maxWaitingVerifications = 0;     // and nobody may wait for one
  s.verificationWaitMs = 60000;      // so a check that waited would take a minute
  Authenticator auth(s, clock_);
  ASSERT_TRUE(auth.load().isOk());
  const auto t0 = std::chrono::steady_clock::now();
  auto out = auth.authenticate(basicHeader("alice", "pw"), "");
  EXPECT_TRUE(out.busy);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(auth.pbkdf2Runs(), 0u);
}

TEST_F(AuthenticatorTest, ConcurrentPasswordChecksWaitForASlot) {
  std::string users;
  for (int i = 0; i < 4; ++i) users += userLine("u" + std::to_string(i), "viewer", "pw");
  writeUsers(users);
  AuthSettings s = settings();
  s.tokensFile.clear();
  s.maxConcurrentVerifications = 1;
  s.maxWaitingVerifications = 3;  // the other three threads may all wait
  s.verificationWaitMs = 60000;
  Authenticator auth(s, clock_);
  ASSERT_TRUE(auth.load().isOk());
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 5; ++k)
        if (auth.authenticate(basicHeader("u" + std::to_string(i), k % 2 ? "pw" : "bad"), "").principal) ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);  // 4 users x 2 good attempts, none refused as busy
}

TEST_F(AuthenticatorTest, CacheIsBounded) {
  std::string users;
  for (int i = 0; i < 5; ++i) users += userLine("u" + std::to_string(i), "viewer", "pw");
  writeUsers(users);
  AuthSettings s = settings();
  s.tokensFile.clear();
  s.cacheEntries = 2;
  Authenticator auth(s, clock_);
  ASSERT_TRUE(auth.load().isOk());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(auth.authenticate(basicHeader("u" + std::to_string(i), "pw"), "").principal);
  EXPECT_EQ(auth.pbkdf2Runs(), 5u);
  ASSERT_TRUE(auth.authenticate(basicHeader("u4", "pw"), "").principal);  // still cached (newest)
  EXPECT_EQ(auth.pbkdf2Runs(), 5u);
  ASSERT_TRUE(auth.authenticate(basicHeader("u0", "pw"), "").principal);  // evicted
  EXPECT_EQ(auth.pbkdf2Runs(), 6u);
}

TEST_F(AuthenticatorTest, ChangedFilesAreReReadAndEmptyTheCache) {
  writeUsers(userLine("alice", "admin", "pw"));
  AuthSettings s = settings();
  s.tokensFile.clear();
  Authenticator auth(s, clock_);
  ASSERT_TRUE(auth.load().isOk());
  ASSERT_TRUE(auth.authenticate(basicHeader("alice", "pw"), "").principal);
  EXPECT_FALSE(auth.authenticate(basicHeader("dave", "pw2"), "").principal);

  // dave added, alice demoted: both take effect without a restart, the cached alice is dropped.
  writeUsers(userLine("alice", "viewer", "pw") + userLine("dave", "operator", "pw2"));
  auto dave = auth.authenticate(basicHeader("dave", "pw2"), "");
  ASSERT_TRUE(dave.principal);
  EXPECT_EQ(dave.principal->role, Role::kOperator);
  EXPECT_EQ(auth.authenticate(basicHeader("alice", "pw"), "").principal->role, Role::kViewer);

  // A file that cannot be parsed keeps the previous users.
  writeUsers(userLine("alice", "admin", "pw") + "garbage line\n");
  EXPECT_EQ(auth.authenticate(basicHeader("alice", "pw"), "").principal->role, Role::kViewer);
  EXPECT_TRUE(auth.authenticate(basicHeader("dave", "pw2"), "").principal);

  // Removing a user revokes it.
  writeUsers(userLine("alice", "admin", "pw"));
  EXPECT_FALSE(auth.authenticate(basicHeader("dave", "pw2"), "").principal);
  EXPECT_EQ(auth.authenticate(basicHeader("alice", "pw"), "").principal->role, Role::kAdmin);

  // A deleted file keeps the previous users too (a half-done edit must not lock everyone out).
  std::filesystem::remove(s.usersFile);
  EXPECT_TRUE(auth.authenticate(basicHeader("alice", "pw"), "").principal);
}

TEST_F(AuthenticatorTest, LoadFailsOnMissingOrBadFilesNamingTheKeyAndLine) {
  AuthSettings s = settings();
  {
    Authenticator auth(s, clock_);  // neither file exists
    auto st = auth.load();
    ASSERT_FALSE(st.isOk());
    EXPECT_THAT(st.message(), HasSubstr("rest.auth.users.file"));
  }
  writeUsers("# ok\nalice:admin:secret-in-clear\n");
  Authenticator auth(s, clock_);
  auto st = auth.load();
  ASSERT_FALSE(st.isOk());
  EXPECT_THAT(st.message(), HasSubstr("line 2"));
  EXPECT_THAT(st.message(), Not(HasSubstr("secret-in-clear")));
}

TEST(AuthenticatorOff, WithoutFilesAuthenticationIsOff) {
  Authenticator auth(AuthSettings{});
  EXPECT_FALSE(auth.enabled());
  AuthSettings s;
  s.clientCertRequired = true;
  EXPECT_TRUE(Authenticator(s).enabled());
}

}  // namespace
}  // namespace ferry::rest
