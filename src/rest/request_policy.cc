// The checks in front of every REST handler (see request_policy.h).
#include "rest/request_policy.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>

#include "core/logging.h"

namespace ferry::rest {
namespace {

constexpr std::int64_t kFailureLogIntervalMs = 1000;
constexpr std::size_t kFailureLogAddresses = 4096;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A header value as it may be echoed in a message or a log line.
std::string printable(std::string_view s) { return printableText(s, 100); }

bool isWildcard(const std::string& host) { return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]"; }

bool isWrite(const std::string& method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

void addUnique(std::vector<std::string>& v, std::string s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

}  // namespace

std::string hostOfHeader(std::string_view host) {
  host = trim(host);
  std::string_view name = host;
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    name = close == std::string_view::npos ? host.substr(1) : host.substr(1, close - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    name = host.substr(0, host.find(':'));
  }  // more than one ':' without brackets: a bare IPv6 address, kept whole
  std::string out = lower(name);
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

bool isLoopbackHost(std::string_view host) {
  std::string h = hostOfHeader(host);
  if (h == "localhost" || h == "::1") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

bool isJsonContentType(std::string_view contentType) {
  auto semi = contentType.find(';');
  return lower(trim(contentType.substr(0, semi))) == "application/json";
}

std::vector<std::string> defaultAllowedHosts(const std::vector<std::string>& bindHosts,
                                             const std::string& advertisedHost) {
  std::vector<std::string> out{"localhost", "127.0.0.1", "::1"};
  bool wildcard = false;
  for (const auto& bindHost : bindHosts) {
    if (isWildcard(bindHost)) wildcard = true;
    else addUnique(out, hostOfHeader(bindHost));
  }
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) == 0) addUnique(out, hostOfHeader(name));
  addUnique(out, hostOfHeader(advertisedHost));
  if (wildcard) {
    // Bound everywhere: clients reach it by the addresses of its interfaces (an address, unlike a
    // name, cannot be re-pointed by DNS).
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) == 0) {
      for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
        if (a->ifa_addr == nullptr) continue;
        char text[INET6_ADDRSTRLEN] = {0};
        if (a->ifa_addr->sa_family == AF_INET)
          inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof(text));
        else if (a->ifa_addr->sa_family == AF_INET6)
          inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, text, sizeof(text));
        addUnique(out, lower(text));
      }
      freeifaddrs(list);
    }
  }
  return out;
}

namespace {
// A marker no host can be: every bind host is a loopback address.
const std::string kAllLoopback = std::string(1, '\0');
// The first bind host that is not a loopback address ("" is the wildcard), or kAllLoopback.
std::string firstNonLoopback(const std::vector<std::string>& hosts) {
  for (const auto& h : hosts)
    if (!isLoopbackHost(h)) return h;
  return kAllLoopback;
}
}  // namespace

Status checkListenerPolicy(const PolicySettings& settings) {
  const bool authOn = !settings.auth.usersFile.empty() || !settings.auth.tokensFile.empty() ||
                      settings.auth.clientCertRequired;
  const std::string exposed = firstNonLoopback(settings.bindHosts);
  if (!authOn && !settings.allowUnauthenticated && exposed != kAllLoopback)
    return Status::failedPrecondition(
        "the REST listener binds " + (exposed.empty() ? std::string("every address") : exposed) +
        ", which is not a loopback address, and authentication is off: set rest.auth.users.file and/or "
        "rest.auth.tokens.file (users from `ferry passwd`, tokens from `ferry token`), or set "
        "rest.auth.allow.unauthenticated=true to serve anyone who can reach it");
  if (authOn && std::find(settings.corsAllowOrigins.begin(), settings.corsAllowOrigins.end(), "*") !=
                    settings.corsAllowOrigins.end())
    return Status::failedPrecondition(
        "access.control.allow.origin=* is refused while REST authentication is on: list the origins "
        "(scheme://host:port, comma-separated) allowed to call the API");
  return Status::ok();
}

RequestPolicy::RequestPolicy(PolicySettings settings, core::Clock& clock)
    : settings_(std::move(settings)), clock_(clock), auth_(settings_.auth, clock) {
  if (std::find(settings_.allowedHostNames.begin(), settings_.allowedHostNames.end(), "*") !=
      settings_.allowedHostNames.end()) {
    hostCheck_ = false;
  } else if (settings_.allowedHostNames.empty()) {
    hosts_ = defaultAllowedHosts(settings_.bindHosts, settings_.advertisedHost);
  } else {
    for (const auto& h : settings_.allowedHostNames) addUnique(hosts_, hostOfHeader(h));
  }
  for (const auto& o : settings_.corsAllowOrigins) {
    std::string origin = lower(trim(o));
    while (!origin.empty() && origin.back() == '/') origin.pop_back();
    addUnique(origins_, origin);
  }
  std::string methods = settings_.corsAllowMethods.empty() ? "GET,POST,HEAD" : settings_.corsAllowMethods;
  std::size_t start = 0;
  while (start <= methods.size()) {
    auto comma = methods.find(',', start);
    addUnique(methods_, upper(trim(std::string_view(methods).substr(start, comma == std::string::npos ? std::string::npos : comma - start))));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

Status RequestPolicy::start() {
  FERRY_RETURN_IF_ERROR(checkListenerPolicy(settings_));
  if (auth_.enabled()) FERRY_RETURN_IF_ERROR(auth_.load());
  auto log = core::logger("rest");
  if (const std::string exposed = firstNonLoopback(settings_.bindHosts); !auth_.enabled() && exposed != kAllLoopback)
    log->warn("REST authentication is off on {} (rest.auth.allow.unauthenticated=true): anyone who can reach "
              "the port may create, change and delete connectors", exposed.empty() ? "every address" : exposed);
  if (!hostCheck_) log->warn("rest.allowed.host.names=*: the Host header is not checked (DNS rebinding is possible)");
  return Status::ok();
}

bool RequestPolicy::hostAllowed(const AuthRequest& r, std::string& problem) const {
  if (!hostCheck_) return true;
  if (!r.host || trim(*r.host).empty()) {
    if (r.httpVersion == "HTTP/1.0" && isLoopbackHost(r.remoteAddr)) return true;
    problem = "the request has no Host header (required unless HTTP/1.0 from this machine)";
    return false;
  }
  std::string name = hostOfHeader(*r.host);
  if (std::find(hosts_.begin(), hosts_.end(), name) != hosts_.end()) return true;
  problem = "Host '" + printable(*r.host) +
            "' is not a name of this worker; add it to rest.allowed.host.names if clients use it";
  return false;
}

bool RequestPolicy::originAllowed(std::string_view origin) const {
  std::string o = lower(trim(origin));
  for (const auto& allowed : origins_)
    if (allowed == "*" || allowed == o) return true;
  return false;
}

void RequestPolicy::logFailure(const AuthRequest& r, const std::string& user, const std::string& problem) {
  const std::int64_t now = clock_.steadyMs();
  std::uint64_t suppressed = 0;
  {
    std::lock_guard lock(logMu_);
    auto it = lastLog_.find(r.remoteAddr);
    if (it != lastLog_.end() && now - it->second.first < kFailureLogIntervalMs) {
      ++it->second.second;
      return;
    }
    if (it == lastLog_.end()) {
      if (lastLog_.size() >= kFailureLogAddresses) lastLog_.clear();
      it = lastLog_.emplace(r.remoteAddr, std::make_pair(now, 0)).first;
    }
    suppressed = it->second.second;
    it->second = {now, 0};
  }
  core::logger("rest")->warn("authentication failed for {} from {} ({} {}): {}{}",
                             user.empty() ? std::string("a request without credentials") : "user '" + user + "'",
                             printable(r.remoteAddr), printable(r.method), printable(r.path), problem,
                             suppressed ? " (" + std::to_string(suppressed) + " more from this address not logged)" : "");
}

Verdict RequestPolicy::admit(const AuthRequest& r, Role required) {
  Verdict v;
  auto refuse = [&](int status, std::string message) {
    v.proceed = false;
    v.status = status;
    v.message = std::move(message);
    return v;
  };
  std::string problem;
  if (!hostAllowed(r, problem)) return refuse(r.host ? 421 : 400, problem);

  const bool corsOn = !origins_.empty();
  const bool originOk = r.origin && corsOn && originAllowed(*r.origin);
  if (r.method == "OPTIONS") {
    if (originOk && !r.accessControlRequestMethod.empty() &&
        std::find(methods_.begin(), methods_.end(), upper(trim(r.accessControlRequestMethod))) != methods_.end()) {
      bool any = std::find(origins_.begin(), origins_.end(), "*") != origins_.end();
      v.headers.emplace_back("Access-Control-Allow-Origin", any ? "*" : trim(*r.origin));
      std::string methods;
      for (const auto& m : methods_) methods += (methods.empty() ? "" : ",") + m;
      v.headers.emplace_back("Access-Control-Allow-Methods", methods);
      v.headers.emplace_back("Access-Control-Allow-Headers", "Content-Type, Authorization");
      v.headers.emplace_back("Access-Control-Max-Age", "600");
      if (!any) v.headers.emplace_back("Access-Control-Allow-Credentials", "true");
      v.headers.emplace_back("Vary", "Origin");
      v.proceed = false;
      v.status = 204;
      return v;
    }
    return v;  // not a preflight we accept: answered as before (Allow), without CORS headers
  }
  if (originOk) {
    bool any = std::find(origins_.begin(), origins_.end(), "*") != origins_.end();
    v.headers.emplace_back("Access-Control-Allow-Origin", any ? "*" : std::string(trim(*r.origin)));
    if (!any) v.headers.emplace_back("Access-Control-Allow-Credentials", "true");
    v.headers.emplace_back("Vary", "Origin");
  }

  // A browser names the page's origin on every cross-origin write (forms and no-cors fetches
  // included); a write from a page that is neither this worker nor a configured origin is CSRF.
  if (isWrite(r.method) && r.origin && !originOk) {
    std::string o = lower(trim(*r.origin));
    auto scheme = o.find("://");
    std::string originHost = scheme == std::string::npos ? "" : o.substr(scheme + 3);
    bool sameOrigin = r.host && !originHost.empty() && originHost == lower(trim(*r.host));
    if (!sameOrigin)
      return refuse(403, "cross-origin " + r.method + " from Origin '" + printable(*r.origin) +
                             "' refused; list the origin in access.control.allow.origin to allow it");
  }

  if (auth_.enabled() && required != Role::kOpen) {
    auto outcome = auth_.authenticate(r.authorization, r.peerName);
    if (outcome.busy) {
      v.headers.emplace_back("Retry-After", "1");
      return refuse(503, outcome.problem);
    }
    if (!outcome.principal) {
      logFailure(r, outcome.claimedUser, outcome.problem);
      if (!r.scripted) v.headers.emplace_back("WWW-Authenticate", "Basic realm=\"ferry\", charset=\"UTF-8\"");
      v.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"ferry\"");
      return refuse(401, outcome.problem + ": send HTTP basic credentials of a user in rest.auth.users.file "
                                           "or a bearer token from rest.auth.tokens.file");
    }
    v.principal = outcome.principal;
    if (outcome.principal->role < required)
      return refuse(403, "user " + printable(outcome.principal->name) + " (" + roleName(outcome.principal->role) +
                             ") may not " + r.method + " " + printable(r.path) + ": it needs the " +
                             roleName(required) + " role");
  }

  if (r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    if (r.contentType ? !isJsonContentType(*r.contentType) : r.hasBody)
      return refuse(415, r.method + " " + printable(r.path) + " needs Content-Type: application/json" +
                             (r.contentType ? " (got '" + printable(*r.contentType) + "')"
                                            : " (the request has a body and no Content-Type)"));
  }
  return v;
}

}  // namespace ferry::rest
