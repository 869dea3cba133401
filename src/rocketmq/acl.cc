// ACL request signing (see acl.h). HMAC-SHA1 and Base64 come from OpenSSL's libcrypto.
#include "rocketmq/acl.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <vector>

namespace ferry::rocketmq {

std::string hmacSha1Base64(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int macLen = 0;
  HMAC(EVP_sha1(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &macLen);
  std::vector<unsigned char> b64(4 * ((macLen + 2) / 3) + 1);
  const int n = EVP_EncodeBlock(b64.data(), mac, static_cast<int>(macLen));
  return std::string(reinterpret_cast<const char*>(b64.data()), static_cast<std::size_t>(n));
}

std::string aclSignature(const std::map<std::string, std::string>& extFields, std::string_view body,
                         std::string_view secretKey) {
  std::string content;
  for (const auto& [k, v] : extFields)  // std::map: key order, as the broker sorts them
    if (k != kAclSignature) content += v;
  content.append(body.data(), body.size());
  return hmacSha1Base64(secretKey, content);
}

void signRequest(RemotingCommand& request, const AclCredentials& c) {
  if (!c.enabled()) return;
  request.extFields[kAclAccessKey] = c.accessKey;
  if (!c.securityToken.empty()) request.extFields[kAclSecurityToken] = c.securityToken;
  request.extFields.erase(kAclSignature);
  request.extFields[kAclSignature] = aclSignature(request.extFields, request.body, c.secretKey);
}

}  // namespace ferry::rocketmq
