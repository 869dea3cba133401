// ACL signing: HMAC-SHA1 known answers (RFC 2202) and a request signature computed independently
// (Python's hmac module: values of the sorted extFields, then the body).
#include "rocketmq/acl.h"

#include <gtest/gtest.h>

namespace ferry::rocketmq {
namespace {

TEST(Acl, HmacSha1KnownAnswers) {
  EXPECT_EQ(hmacSha1Base64(std::string(20, '\x0b'), "Hi There"), "thcxhlUFcmTii8C2+zeMjvFGvgA=");
  EXPECT_EQ(hmacSha1Base64("Jefe", "what do ya want for nothing?"), "7/zfauXrL6LSdBbV8YTfnCWafHk=");
}

TEST(Acl, SignsSortedValuesAndBody) {
  RemotingCommand req;
  req.code = 14;
  req.extFields = {{"topic", "T"}, {"queueId", "3"}, {"consumerGroup", "g"}};
  req.body = std::string("\0body\x01", 6);
  signRequest(req, AclCredentials{"ferryAdmin", "ferrySecret12345", ""});
  EXPECT_EQ(req.extFields.at("AccessKey"), "ferryAdmin");
  EXPECT_EQ(req.extFields.at("Signature"), "ozdYVlh1VLStj1LKw5t5bb9zcu8=");
  EXPECT_EQ(req.extFields.count("SecurityToken"), 0u);
  // Signing again (a retried request) gives the same signature: the old one is not signed.
  signRequest(req, AclCredentials{"ferryAdmin", "ferrySecret12345", ""});
  EXPECT_EQ(req.extFields.at("Signature"), "ozdYVlh1VLStj1LKw5t5bb9zcu8=");
  // Another secret, another body or a changed field change it.
  RemotingCommand other = req;
  signRequest(other, AclCredentials{"ferryAdmin", "wrong", ""});
  EXPECT_NE(other.extFields.at("Signature"), req.extFields.at("Signature"));
  other = req;
  other.extFields["queueId"] = "4";
  signRequest(other, AclCredentials{"ferryAdmin", "ferrySecret12345", ""});
  EXPECT_NE(other.extFields.at("Signature"), req.extFields.at("Signature"));
}

TEST(Acl, SecurityTokenIsSignedToo) {
  RemotingCommand a, b;
  a.extFields = b.extFields = {{"topic", "T"}};
  signRequest(a, AclCredentials{"ak", "sk", ""});
  signRequest(b, AclCredentials{"ak", "sk", "token"});
  EXPECT_EQ(b.extFields.at("SecurityToken"), "token");
  EXPECT_NE(a.extFields.at("Signature"), b.extFields.at("Signature"));
}

TEST(Acl, DisabledWithoutAccessKey) {
  RemotingCommand req;
  req.extFields = {{"topic", "T"}};
  signRequest(req, AclCredentials{});
  EXPECT_EQ(req.extFields.size(), 1u);
}

}  // namespace
}  // namespace ferry::rocketmq
