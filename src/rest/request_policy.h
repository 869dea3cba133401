// What the REST server checks before a handler runs: the Host header (DNS rebinding), CORS and
// cross-origin writes, authentication and the route's role, and the Content-Type of writes (CSRF).
//
// The server fills an AuthRequest from whatever HTTP library it uses and asks admit(); the verdict
// either lets the request through (with headers to add, e.g. CORS) or is the whole answer.
// Order: Host -> CORS preflight -> cross-origin write -> credentials (401) -> role (403) ->
// Content-Type (415).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "ferry/status.h"
#include "rest/auth.h"

namespace ferry::rest {

// The parts of one request the policy looks at.
struct AuthRequest {
  std::string method;       // as sent: GET, HEAD, POST, OPTIONS, ...
  std::string path;         // without the query
  std::string httpVersion;  // "HTTP/1.1", "HTTP/1.0"
  std::optional<std::string> host;
  std::optional<std::string> contentType;
  std::optional<std::string> origin;
  std::string accessControlRequestMethod;
  std::string authorization;  // the Authorization header, "" when absent
  bool hasBody = false;       // a non-empty body, a Content-Length above 0 or a Transfer-Encoding
  std::string remoteAddr;
  std::string peerName;  // the verified TLS client certificate's subject CN, "" when none
  // X-Requested-With: XMLHttpRequest (a script such as the web console): a 401 then carries no
  // Basic challenge, so the browser shows no login prompt of its own over the page's.
  bool scripted = false;
};

struct PolicySettings {
  AuthSettings auth;
  bool allowUnauthenticated = false;          // rest.auth.allow.unauthenticated
  std::vector<std::string> allowedHostNames;  // rest.allowed.host.names; empty: the defaults; "*": off
  std::vector<std::string> corsAllowOrigins;  // access.control.allow.origin; empty: CORS off
  std::string corsAllowMethods;               // access.control.allow.methods; empty: GET,POST,HEAD
  std::vector<std::string> bindHosts{"127.0.0.1"};  // the addresses the listeners bind
  std::string advertisedHost;                 // the name other workers and clients use, if any
};

struct Verdict {
  bool proceed = true;  // false: answer `status` with `message` (an error body; none when empty)
  int status = 0;
  std::string message;
  std::vector<std::pair<std::string, std::string>> headers;  // to add in both cases
  std::optional<Principal> principal;                        // who, when authentication is on
};

// --- pure helpers (exposed for tests)

// "host:port" -> "host", "[::1]:8082" -> "::1", lower-cased, a trailing dot dropped.
std::string hostOfHeader(std::string_view host);
bool isLoopbackHost(std::string_view host);  // localhost, 127.0.0.0/8, ::1, ::ffff:127.x
// application/json with any parameters, case-insensitive.
bool isJsonContentType(std::string_view contentType);
// localhost, 127.0.0.1, ::1, the bound host (unless a wildcard), this machine's host name, the
// advertised host, and with a wildcard bind the addresses of the local interfaces.
std::vector<std::string> defaultAllowedHosts(const std::vector<std::string>& bindHosts,
                                             const std::string& advertisedHost);

// The start-up checks, run before the listener binds: a non-loopback bind needs authentication or
// rest.auth.allow.unauthenticated=true; access.control.allow.origin=* is refused with
// authentication on. FailedPrecondition naming the keys.
Status checkListenerPolicy(const PolicySettings& settings);

// Thread-safety: admit() is called concurrently from the request threads (the Authenticator and
// the failure-log limiter have their own locks); the settings are read-only after construction.
class RequestPolicy {
 public:
  explicit RequestPolicy(PolicySettings settings, core::Clock& clock = core::Clock::system());

  // checkListenerPolicy() and the first read of the credential files.
  Status start();
  bool authEnabled() const { return auth_.enabled(); }
  // `required` is the matched route's role (kViewer when no route matched, so an unknown path
  // still needs credentials; OPTIONS is always open).
  Verdict admit(const AuthRequest& request, Role required);

  Authenticator& authenticator() { return auth_; }

 private:
  bool hostAllowed(const AuthRequest& request, std::string& problem) const;
  bool originAllowed(std::string_view origin) const;
  void logFailure(const AuthRequest& request, const std::string& user, const std::string& problem);

  const PolicySettings settings_;
  core::Clock& clock_;
  Authenticator auth_;
  bool hostCheck_ = true;
  std::vector<std::string> hosts_;    // lower-case
  std::vector<std::string> origins_;  // lower-case, no trailing slash
  std::vector<std::string> methods_;  // upper-case
  std::mutex logMu_;
  std::unordered_map<std::string, std::pair<std::int64_t, std::uint64_t>> lastLog_;  // GUARDED_BY(logMu_): addr -> (ms, suppressed)
};

}  // namespace ferry::rest
