// ACL signing of remoting requests for brokers that authenticate clients (RocketMQ's ACL 1.0 and
// 2.0 both check this signature): every request carries the AccessKey (and SecurityToken when
// set) in its extFields, and Signature = Base64(HMAC-SHA1(secretKey, the values of every other
// extField in key order, concatenated, followed by the body)).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "rocketmq/remoting.h"

namespace ferry::rocketmq {

inline constexpr const char* kAclAccessKey = "AccessKey";
inline constexpr const char* kAclSecurityToken = "SecurityToken";
inline constexpr const char* kAclSignature = "Signature";

struct AclCredentials {
  std::string accessKey;
  std::string secretKey;
  std::string securityToken;  // optional
  bool enabled() const noexcept { return !accessKey.empty(); }
};

// Base64 of HMAC-SHA1(key, data).
std::string hmacSha1Base64(std::string_view key, std::string_view data);

// The signature of `extFields` (without any Signature entry) and `body`.
std::string aclSignature(const std::map<std::string, std::string>& extFields, std::string_view body,
                         std::string_view secretKey);

// Adds AccessKey (+ SecurityToken) and the Signature to `request` (replacing earlier ones).
void signRequest(RemotingCommand& request, const AclCredentials& credentials);

}  // namespace ferry::rocketmq
