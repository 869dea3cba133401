// The masking rule (runtime/secrets.h) and the config providers (runtime/config_providers.h).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "control/herder_common.h"
#include "runtime/config_providers.h"
#include "runtime/secrets.h"
#include "runtime/worker_config.h"
#include "tests/unit/temp_files.h"

namespace ferry::runtime {
namespace {

using ferry::testing::TempDir;
using ferry::testing::writeText;

class SecretsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registerBuiltins(registry_).isOk()); }
  PluginRegistry registry_;
};

TEST(LooksSecret, PassThroughNames) {
  for (const char* k : {"producer.override.sasl.password", "ssl.key.password", "consumer.override.sasl.jaas.config",
                        "SASL.JAAS.CONFIG", "ssl.keystore.key", "ssl.key.pem", "client.private.key",
                        "sasl.oauthbearer.client.secret", "basic.auth.user.info", "api.token", "aws.credentials",
                        "db.passwd", "x.apikey", "datadog.api.key", "private.key.pem", "ssl.truststore.password"})
    EXPECT_TRUE(looksSecret(k)) << k;
  for (const char* k : {"sasl.username", "ssl.keystore.location", "mqtt.ssl.key.file", "topic", "key.converter",
                        "ssl.certificate.pem", "rocketmq.access.key", "sasl.mechanism", "ssl.key.location"})
    EXPECT_FALSE(looksSecret(k)) << k;
}

TEST(ProviderReference, WholeValueOnly) {
  EXPECT_TRUE(isProviderReference("${file:/a/b.properties:k}"));
  EXPECT_TRUE(isProviderReference("${env:NAME}"));
  EXPECT_TRUE(isProviderReference("${env::NAME}"));
  EXPECT_FALSE(isProviderReference("x${env:NAME}"));
  EXPECT_FALSE(isProviderReference("${env:NAME}x"));
  EXPECT_FALSE(isProviderReference("${env:A}${env:B}"));
  EXPECT_FALSE(isProviderReference("${NAME}"));
  EXPECT_FALSE(isProviderReference("${:x}"));
  EXPECT_FALSE(isProviderReference("secret"));
}

TEST_F(SecretsTest, DeclaredPasswordUndeclaredSecretAndReferences) {
  const StringMap config{{"connector.class", "MQTTSource"},
                         {"mqtt.server.uri", "tcp://h:1883"},
                         {"mqtt.username", "u"},
                         {"mqtt.password", "p4ssw0rd"},
                         {"topic", "t"}};
  auto masked = maskConfig(registry_, config);
  EXPECT_EQ(masked["mqtt.password"], kHiddenValue);
  EXPECT_EQ(masked["mqtt.username"], "u");
  EXPECT_EQ(masked["mqtt.server.uri"], "tcp://h:1883");

  StringMap ref = config;
  ref["mqtt.password"] = "${file:/etc/ferry/s.properties:mqtt.password}";
  EXPECT_EQ(maskConfig(registry_, ref)["mqtt.password"], ref["mqtt.password"]) << "a reference is not a secret";
  ref["mqtt.password"] = "";
  EXPECT_EQ(maskConfig(registry_, ref)["mqtt.password"], "") << "nothing to hide";

  const StringMap kafka{{"connector.class", "KafkaSink"},
                        {"topics", "t"},
                        {"producer.override.sasl.password", "pw1"},
                        {"producer.override.sasl.jaas.config", "x password=\"pw2\";"},
                        {"producer.override.sasl.username", "alice"},
                        {"producer.override.ssl.truststore.password", "${env:TRUST}"}};
  auto k = maskConfig(registry_, kafka);
  EXPECT_EQ(k["producer.override.sasl.password"], kHiddenValue);
  EXPECT_EQ(k["producer.override.sasl.jaas.config"], kHiddenValue);
  EXPECT_EQ(k["producer.override.sasl.username"], "alice");
  EXPECT_EQ(k["producer.override.ssl.truststore.password"], "${env:TRUST}");
}

TEST_F(SecretsTest, DirectSinkSideAndDeclaredNonSecretKeys) {
  const StringMap config{{"connector.class", "DatagenSource"},
                         {"sink.connector.class", "RocketMQSink"},
                         {"sink.rocketmq.secret.key", "sk-123"},
                         {"sink.rocketmq.access.key", "ak-visible"},
                         {"topic", "t"}};
  auto m = maskConfig(registry_, config);
  EXPECT_EQ(m["sink.rocketmq.secret.key"], kHiddenValue);
  EXPECT_EQ(m["sink.rocketmq.access.key"], "ak-visible") << "declared as a plain string by the connector";
  // Without a registry (Herder's default) names decide: secret.key looks secret.
  auto f = maskConfig(config, frameworkSecretKeys(config));
  EXPECT_EQ(f["sink.rocketmq.secret.key"], kHiddenValue);
}

TEST(ScrubSecrets, ReplacesEveryOccurrenceLongestFirst) {
  EXPECT_EQ(scrubSecrets("Invalid value hunter22 for mqtt.password; hunter22!", {"hunter22"}),
            "Invalid value [hidden] for mqtt.password; [hidden]!");
  EXPECT_EQ(scrubSecrets("abcdef", {"abcdef", "abcd"}), "[hidden]");
  EXPECT_EQ(scrubSecrets("nothing", {}), "nothing");
}

TEST(UriPasswords, MaskedUnderAnyKeyAndRestoredOnWriteBack) {
  EXPECT_EQ(maskUriPasswords("tcp://u:s3cret@broker:1883"), "tcp://u:[hidden]@broker:1883");
  EXPECT_EQ(maskUriPasswords("tcp://u:pw1x@a:1,ssl://v:pw2y@b:2/x?y"), "tcp://u:[hidden]@a:1,ssl://v:[hidden]@b:2/x?y");
  for (const char* plain : {"tcp://broker:1883", "tcp://user@broker", "mailto:a@b", "http://h/p?u=a:b@c", "no uri"})
    EXPECT_EQ(maskUriPasswords(plain), plain) << plain;
  EXPECT_EQ(uriPasswords("postgres://app:hunter22@db/x"), (std::vector<std::string>{"hunter22"}));

  SecretKeys none;  // a declared non-secret key still has its URI password masked
  none.declared.insert("mqtt.server.uri");
  StringMap config{{"mqtt.server.uri", "tcp://u:s3cret@broker:1883"}, {"ref", "${file:/x:y}"}};
  auto masked = maskConfig(config, none);
  EXPECT_EQ(masked.at("mqtt.server.uri"), "tcp://u:[hidden]@broker:1883");
  EXPECT_EQ(masked.at("ref"), "${file:/x:y}");
  EXPECT_EQ(scrubSecrets("cannot connect to tcp://u:s3cret@broker", secretValues(config, none)),
            "cannot connect to tcp://u:[hidden]@broker");
  // GET, edit another key, PUT: the URI keeps its password; a changed URI is taken as written.
  EXPECT_EQ(restoreHidden(masked, config).at("mqtt.server.uri"), "tcp://u:s3cret@broker:1883");
  StringMap moved{{"mqtt.server.uri", "tcp://u:[hidden]@other:1883"}};
  EXPECT_EQ(restoreHidden(moved, config).at("mqtt.server.uri"), "tcp://u:[hidden]@other:1883");
}

TEST(RestoreHidden, KeepsStoredSecretsOnly) {
  auto r = restoreHidden({{"a.password", kHiddenValue}, {"b", kHiddenValue}, {"c", "new"}},
                         {{"a.password", "old"}, {"c", "old"}});
  EXPECT_EQ(r["a.password"], "old");
  EXPECT_EQ(r["b"], kHiddenValue);  // nothing stored to restore
  EXPECT_EQ(r["c"], "new");
}

TEST_F(SecretsTest, ValidateEchoAndErrorsHideSecrets) {
  const StringMap config{{"connector.class", "MQTTSource"}, {"mqtt.server.uri", "tcp://h:1883"},
                         {"mqtt.password", "p4ssw0rd-x"}, {"mqtt.qos", "p4ssw0rd-x"}, {"topic", "t"},
                         {"producer.override.sasl.password", "p4ssw0rd-y"}};
  auto report = control::validationReport(registry_, "MQTTSource", config, {});
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  bool sawPassword = false;
  for (const auto& k : report->keys) {
    if (k.definition.name == "mqtt.password") {
      sawPassword = true;
      EXPECT_EQ(k.value.value_or(""), kHiddenValue);
    }
    if (k.value) {
      EXPECT_EQ(k.value->find("p4ssw0rd-y"), std::string::npos) << k.definition.name;
    }
    for (const auto& e : k.errors) EXPECT_EQ(e.find("p4ssw0rd"), std::string::npos) << e;
  }
  EXPECT_TRUE(sawPassword);
  StringMap c = config;
  auto refused = control::checkConnectorConfig(registry_, "x", c, {});
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().message().find("p4ssw0rd"), std::string::npos) << refused.status().message();
}

// --- providers

std::shared_ptr<const ConfigProviders> providers(const StringMap& props) {
  auto p = ConfigProviders::fromWorkerProps(props);
  EXPECT_TRUE(p.isOk()) << p.status().toString();
  return p.isOk() ? *p : nullptr;
}

TEST(ConfigProviders, EachSyntax) {
  TempDir dir("ferry-providers");
  writeText(dir.file("s.properties"), "# c\nuser = bob\npw: s3cret\\\n  -more\nk:with=colon\n");
  writeText(dir.file("pw"), "line1\nline2\n");
  ::setenv("FERRY_UNIT_SECRET", "from-env", 1);
  auto p = providers({{"config.providers", "file,dir,env"},
                      {"config.providers.file.param.allowed.paths", dir.path()},
                      {"config.providers.dir.class", "org.apache.kafka.common.config.provider.DirectoryConfigProvider"},
                      {"config.providers.dir.param.allowed.paths", dir.path()},
                      {"config.providers.env.class", "EnvVarConfigProvider"},
                      {"config.providers.env.param.allowlist.pattern", "FERRY_UNIT_.*"}});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->names(), (std::vector<std::string>{"file", "dir", "env"}));
  const std::string f = dir.file("s.properties");
  auto r = p->resolve({{"a", "${file:" + f + ":pw}"},
                       {"b", "user=${file:" + f + ":user};pw=${env:FERRY_UNIT_SECRET}"},
                       {"c", "${dir:" + dir.path() + ":pw}"},
                       {"d", "${env::FERRY_UNIT_SECRET}"},
                       {"e", "${level:3}/${header:mqtt.topic}/${topic}"},
                       {"g", "plain"}});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ((*r)["a"], "s3cret-more");
  EXPECT_EQ((*r)["b"], "user=bob;pw=from-env");
  EXPECT_EQ((*r)["c"], "line1\nline2\n") << "the whole file, trailing newline kept (as Kafka does)";
  EXPECT_EQ((*r)["d"], "from-env");
  EXPECT_EQ((*r)["e"], "${level:3}/${header:mqtt.topic}/${topic}") << "connector placeholders are not references";
  EXPECT_EQ((*r)["g"], "plain");
  EXPECT_TRUE(p->hasReferences({{"a", "${file:" + f + ":pw}"}}));
  EXPECT_FALSE(p->hasReferences({{"a", "${level:3}"}}));
}

// Resolving `value` fails, the message names the key and `mentions`, and never `secret`.
void expectRefused(const ConfigProviders& p, const std::string& value, const std::string& mentions,
                   const std::string& secret = "s3cret") {
  auto r = p.resolveValue("mqtt.password", value);
  ASSERT_FALSE(r.isOk()) << value;
  const std::string& m = r.status().message();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << m;
  EXPECT_NE(m.find("mqtt.password"), std::string::npos) << m;
  EXPECT_NE(m.find(value), std::string::npos) << "the reference is named: " << m;
  EXPECT_NE(m.find(mentions), std::string::npos) << m;
  EXPECT_EQ(m.find(secret), std::string::npos) << "no secret in: " << m;
}

TEST(ConfigProviders, BadReferencesAllowedPathsAndAllowlist) {
  TempDir dir("ferry-providers");
  TempDir other("ferry-providers-out");
  const std::string allowed = dir.file("ok");
  std::filesystem::create_directory(allowed);
  writeText(allowed + "/s.properties", "pw=s3cret\n");
  writeText(other.file("s.properties"), "pw=s3cret\n");
  writeText(allowed + "/broken.properties", "pw=s3cret\\u12\n");
  std::filesystem::create_symlink(other.file("s.properties"), allowed + "/link.properties");
  ::setenv("FERRY_UNIT_OTHER", "s3cret", 1);
  auto p = providers({{"config.providers", "file,directory,env"},
                      {"config.providers.file.param.allowed.paths", allowed},
                      {"config.providers.directory.param.allowed.paths", allowed},
                      {"config.providers.env.param.allowlist.pattern", "FERRY_UNIT_ALLOWED"}});
  ASSERT_TRUE(p);
  expectRefused(*p, "${file:" + allowed + "/s.properties:nope}", "has no key 'nope'");
  expectRefused(*p, "${file:" + allowed + "/none.properties:pw}", "does not exist");
  expectRefused(*p, "${file:" + other.file("s.properties") + ":pw}", "outside config.providers.file.param.allowed.paths");
  expectRefused(*p, "${file:" + allowed + "/../../" + std::filesystem::path(other.path()).filename().string() +
                        "/s.properties:pw}", "outside");
  expectRefused(*p, "${file:" + allowed + "/link.properties:pw}", "outside");
  expectRefused(*p, "${file:" + allowed + "/broken.properties:pw}", "not a .properties file");
  expectRefused(*p, "${file:relative.properties:pw}", "not an absolute path");
  expectRefused(*p, "${file:pw}", "needs a path");
  expectRefused(*p, "${directory:" + allowed + ":../s.properties}", "not a file name");
  expectRefused(*p, "${directory:" + allowed + ":link.properties}", "outside");
  expectRefused(*p, "${directory:" + other.path() + ":s.properties}", "outside");
  expectRefused(*p, "${env:FERRY_UNIT_OTHER}", "does not match");
  expectRefused(*p, "${env:FERRY_UNIT_ALLOWED}", "is not set");
  expectRefused(*p, "${env:/x:FERRY_UNIT_ALLOWED}", "takes no path");

  // Providers not enabled: file/env/directory are errors, other names are left alone.
  auto none = providers({});
  ASSERT_TRUE(none);
  expectRefused(*none, "${file:" + allowed + "/s.properties:pw}", "not enabled");
  EXPECT_EQ(*none->resolveValue("k", "${vault:x:y}"), "${vault:x:y}");
}

TEST(ConfigProviders, RestrictiveDefaults) {
  TempDir dir("ferry-providers");
  writeText(dir.file("s.properties"), "pw=s3cret\n");
  ::setenv("FERRY_UNIT_SECRET", "s3cret", 1);
  auto p = providers({{"config.providers", "file,env"}});
  ASSERT_TRUE(p);
  expectRefused(*p, "${file:" + dir.file("s.properties") + ":pw}", "reads no path until");
  expectRefused(*p, "${env:FERRY_UNIT_SECRET}", "reads no variable until");
}

TEST(ConfigProviders, WorkerKeys) {
  EXPECT_FALSE(ConfigProviders::fromWorkerProps({{"config.providers", "vault"}}).isOk()) << "class required";
  EXPECT_FALSE(ConfigProviders::fromWorkerProps({{"config.providers", "x"}, {"config.providers.x.class", "Nope"}}).isOk());
  EXPECT_FALSE(ConfigProviders::fromWorkerProps({{"config.providers.file.class", "file"}}).isOk()) << "not listed";
  EXPECT_FALSE(ConfigProviders::fromWorkerProps({{"config.providers", "env"},
                                                 {"config.providers.env.param.allowlist.pattern", "("}}).isOk());
  EXPECT_FALSE(ConfigProviders::fromWorkerProps({{"config.providers", "file"},
                                                 {"config.providers.file.param.allowed.paths", "rel/dir"}}).isOk());
  EXPECT_FALSE(ConfigProviders::fromWorkerProps({{"config.providers", "file"},
                                                 {"config.providers.file.param.allowlist.pattern", ".*"}}).isOk());
  auto ok = ConfigProviders::fromWorkerProps({{"config.providers", "secrets"},
                                              {"config.providers.secrets.class", "FileConfigProvider"}});
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  // The worker config accepts the keys and builds them.
  auto w = parseWorkerConfig({{"config.providers", "env"}, {"config.providers.env.param.allowlist.pattern", "A.*"}});
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  ASSERT_TRUE(w->configProviders);
  EXPECT_EQ(w->configProviders->names(), (std::vector<std::string>{"env"}));
  EXPECT_FALSE(parseWorkerConfig({{"config.providers", "x"}}).isOk());
}

TEST(ReReference, TaskConfigsKeepReferences) {
  const StringMap raw{{"a", "${env:A}"}, {"b", "plain"}, {"c", "${env:C}"}};
  const StringMap resolved{{"a", "secretA"}, {"b", "plain"}, {"c", "secretC"}};
  // The connector passed a through, changed c and added d.
  auto t = reReference({{"a", "secretA"}, {"b", "plain"}, {"c", "other"}, {"d", "x"}}, raw, resolved);
  EXPECT_EQ(t["a"], "${env:A}");
  EXPECT_EQ(t["b"], "plain");
  EXPECT_EQ(t["c"], "other");
  EXPECT_EQ(t["d"], "x");
}

}  // namespace
}  // namespace ferry::runtime
