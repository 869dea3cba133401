// HTTPS listeners in-process: a test CA and certificates made with the OpenSSL API, a libcurl
// client. The routes see is_tls and the verified client certificate's CN as peer_name; a client
// certificate from another CA is refused; `required` refuses a client without one.
#include <curl/curl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "rest/http_server.h"

namespace ferry::rest::http {
namespace {

struct Cert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  ~Cert() {
    EVP_PKEY_free(key);
    X509_free(cert);
  }
};

void addExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A P-256 certificate with subject CN `cn`, signed by `issuer` (self-signed when null).
std::unique_ptr<Cert> makeCert(const char* cn, const Cert* issuer, bool ca, bool server) {
  auto c = std::make_unique<Cert>();
  c->key = EVP_EC_gen("P-256");
  c->cert = X509_new();
  X509_set_version(c->cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(c->cert), ++serial);
  X509_gmtime_adj(X509_getm_notBefore(c->cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(c->cert), 3600);
  X509_set_pubkey(c->cert, c->key);
  X509_NAME* name = X509_get_subject_name(c->cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* issuerCert = issuer ? issuer->cert : c->cert;
  X509_set_issuer_name(c->cert, X509_get_subject_name(issuerCert));
  if (ca) {
    addExt(c->cert, issuerCert, NID_basic_constraints, "critical,CA:TRUE");
    addExt(c->cert, issuerCert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    addExt(c->cert, issuerCert, NID_basic_constraints, "critical,CA:FALSE");
    addExt(c->cert, issuerCert, NID_ext_key_usage, server ? "serverAuth" : "clientAuth");
    if (server) addExt(c->cert, issuerCert, NID_subject_alt_name, "IP:127.0.0.1");
  }
  X509_sign(c->cert, issuer ? issuer->key : c->key, EVP_sha256());
  return c;
}

void writePem(const std::string& path, const Cert& c, bool withKey, bool withCert) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  if (withKey) PEM_write_PrivateKey(f, c.key, nullptr, nullptr, 0, nullptr, nullptr);
  if (withCert) PEM_write_X509(f, c.cert);
  std::fclose(f);
}

std::size_t collect(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// GET over https; returns the HTTP status, or 0 when the TLS handshake or the request failed.
int curlGet(const std::string& url, const std::string& ca, const std::string& cert,
            const std::string& key, std::string* body) {
  CURL* c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CAINFO, ca.c_str());
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (!cert.empty()) {
    curl_easy_setopt(c, CURLOPT_SSLCERT, cert.c_str());
    curl_easy_setopt(c, CURLOPT_SSLKEY, key.c_str());
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return static_cast<int>(status);
}

class HttpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ferry-https-unit-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    ca_ = makeCert("test CA", nullptr, true, false);
    other_ = makeCert("other CA", nullptr, true, false);
    server_ = makeCert("localhost", ca_.get(), false, true);
    client_ = makeCert("ops-admin", ca_.get(), false, false);
    stranger_ = makeCert("stranger", other_.get(), false, false);
    writePem(path("ca.pem"), *ca_, false, true);
    writePem(path("keystore.pem"), *server_, true, true);
    writePem(path("client.crt"), *client_, false, true);
    writePem(path("client.key"), *client_, true, false);
    writePem(path("stranger.crt"), *stranger_, false, true);
    writePem(path("stranger.key"), *stranger_, true, false);
  }
  void TearDown() override {
    if (http_) http_->stop();
    std::filesystem::remove_all(dir_);
  }
  std::string path(const char* name) const { return (dir_ / name).string(); }

  void start(const std::string& clientAuth) {
    ServerOptions o;
    o.listeners.push_back(Listener{true, "127.0.0.1", 0});
    o.tls.keystoreLocation = path("keystore.pem");
    o.tls.truststoreLocation = path("ca.pem");
    o.tls.clientAuthentication = clientAuth;
    http_ = std::make_unique<HttpServer>(o, [this](const Request& req, Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      seen_ = std::string(req.is_tls ? "tls" : "plain") + " peer=" + req.peer_name +
              " from=" + req.remote_addr;
      res.status = 200;
      res.set_content("{}", "application/json");
    });
    ASSERT_TRUE(http_->start().isOk());
    url_ = "https://127.0.0.1:" + std::to_string(http_->ports().at(0)) + "/x";
  }
  std::string seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Cert> ca_, other_, server_, client_, stranger_;
  std::unique_ptr<HttpServer> http_;
  std::string url_;
  std::mutex mu_;
  std::string seen_;
};

TEST_F(HttpsTest, RequestedClientCertificateBecomesThePeerName) {
  start("requested");
  std::string body;
  EXPECT_EQ(curlGet(url_, path("ca.pem"), "", "", &body), 200);
  EXPECT_EQ(seen(), "tls peer= from=127.0.0.1");
  EXPECT_EQ(curlGet(url_, path("ca.pem"), path("client.crt"), path("client.key"), &body), 200);
  EXPECT_EQ(seen(), "tls peer=ops-admin from=127.0.0.1");
  // A certificate from a CA outside the truststore is refused, not served anonymously.
  EXPECT_EQ(curlGet(url_, path("ca.pem"), path("stranger.crt"), path("stranger.key"), &body), 0);
  EXPECT_EQ(seen(), "tls peer=ops-admin from=127.0.0.1");
}

TEST_F(HttpsTest, RequiredRefusesAClientWithoutCertificate) {
  start("required");
  std::string body;
  EXPECT_EQ(curlGet(url_, path("ca.pem"), "", "", &body), 0);
  EXPECT_EQ(seen(), "");
  EXPECT_EQ(curlGet(url_, path("ca.pem"), path("client.crt"), path("client.key"), &body), 200);
  EXPECT_EQ(seen(), "tls peer=ops-admin from=127.0.0.1");
}

TEST_F(HttpsTest, NoneIgnoresClientCertificates) {
  start("none");
  std::string body;
  EXPECT_EQ(curlGet(url_, path("ca.pem"), path("client.crt"), path("client.key"), &body), 200);
  EXPECT_EQ(seen(), "tls peer= from=127.0.0.1");
}

TEST_F(HttpsTest, ClientTrustingAnotherCaRefusesTheServer) {
  start("none");
  writePem(path("other.pem"), *other_, false, true);
  std::string body;
  EXPECT_EQ(curlGet(url_, path("other.pem"), "", "", &body), 0);
  EXPECT_EQ(seen(), "");
}

TEST_F(HttpsTest, EncryptedKeyNeedsItsPassword) {
  FILE* f = std::fopen(path("enc.pem").c_str(), "w");
  ASSERT_NE(f, nullptr);
  PEM_write_PrivateKey(f, server_->key, EVP_aes_256_cbc(), nullptr, 0, nullptr,
                       const_cast<char*>("hunter2"));
  PEM_write_X509(f, server_->cert);
  std::fclose(f);
  ServerOptions o;
  o.listeners.push_back(Listener{true, "127.0.0.1", 0});
  o.tls.keystoreLocation = path("enc.pem");
  HttpServer without(o, [](const Request&, Response&) {});
  Status s = without.start();
  ASSERT_FALSE(s.isOk());
  EXPECT_THAT(s.message(), ::testing::HasSubstr("listeners.https.ssl.key.password"));
  o.tls.keyPassword = "hunter2";
  HttpServer with(o, [](const Request&, Response&) {});
  EXPECT_TRUE(with.start().isOk());
  with.stop();
}

}  // namespace
}  // namespace ferry::rest::http
