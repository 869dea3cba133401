// Credentials: hashing, the two files and the Authenticator (see auth.h).
#include "rest/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>

#include "core/fs.h"
#include "core/logging.h"

namespace ferry::rest {
namespace {

constexpr std::string_view kPbkdf2Scheme = "pbkdf2-sha256";
constexpr std::size_t kSaltBytes = 16;
constexpr std::size_t kHashBytes = 32;
constexpr std::size_t kMaxNameBytes = 256;


std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Empty when the name is acceptable, else what is wrong with it.
std::string nameProblem(std::string_view name) {
  if (name.empty()) return "the name is empty";
  if (name.size() > kMaxNameBytes) return "the name is longer than " + std::to_string(kMaxNameBytes) + " bytes";
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "the name contains a control character";
    if (c == ':') return "the name contains ':'";
  }
  return "";
}

struct Pbkdf2Hash {
  int iterations = 0;
  std::string salt;
  std::string hash;
};

std::optional<Pbkdf2Hash> parsePbkdf2(std::string_view encoded) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    auto d = encoded.find('$', start);
    parts.push_back(encoded.substr(start, d == std::string_view::npos ? std::string_view::npos : d - start));
    if (d == std::string_view::npos) break;
    start = d + 1;
  }
  if (parts.size() != 4 || parts[0] != kPbkdf2Scheme) return std::nullopt;
  Pbkdf2Hash h;
  auto [end, ec] = std::from_chars(parts[1].data(), parts[1].data() + parts[1].size(), h.iterations);
  if (ec != std::errc() || end != parts[1].data() + parts[1].size()) return std::nullopt;
  if (h.iterations < kMinPbkdf2Iterations || h.iterations > kMaxPbkdf2Iterations) return std::nullopt;
  auto salt = base64Decode(parts[2]);
  auto hash = base64Decode(parts[3]);
  if (!salt || salt->size() < 8 || salt->size() > 64 || !hash || hash->size() != kHashBytes) return std::nullopt;
  h.salt = std::move(*salt);
  h.hash = std::move(*hash);
  return h;
}

std::optional<std::string> pbkdf2(std::string_view password, std::string_view salt, int iterations) {
  std::string out(kHashBytes, '\0');
  if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                        reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()),
                        iterations, EVP_sha256(), static_cast<int>(out.size()),
                        reinterpret_cast<unsigned char*>(out.data())) != 1)
    return std::nullopt;
  return out;
}

// A user name as it may appear in a log line: printable ASCII, at most 64 characters.
std::string loggable(std::string_view name) { return printableText(name, 64); }

}  // namespace

std::string printableText(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) {
    auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (s.size() > max) out += "...";
  return out;
}

const char* roleName(Role role) {
  switch (role) {
    case Role::kOpen: return "open";
    case Role::kViewer: return "viewer";
    case Role::kOperator: return "operator";
    case Role::kAdmin: return "admin";
  }
  return "?";
}

std::optional<Role> parseRole(std::string_view text) {
  auto t = lower(text);
  if (t == "viewer") return Role::kViewer;
  if (t == "operator") return Role::kOperator;
  if (t == "admin") return Role::kAdmin;
  return std::nullopt;
}

std::string sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return hexEncode(std::string_view(reinterpret_cast<const char*>(md), len));
}

std::string hexEncode(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

bool constantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<std::string> randomBytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1)
    return Status::unavailable("the system's random source failed (OpenSSL RAND_bytes)");
  return out;
}

Result<std::string> hashPassword(std::string_view password, int iterations) {
  if (iterations < kMinPbkdf2Iterations || iterations > kMaxPbkdf2Iterations)
    return Status::invalidArgument("iterations must be between " + std::to_string(kMinPbkdf2Iterations) + " and " +
                                   std::to_string(kMaxPbkdf2Iterations));
  FERRY_ASSIGN_OR_RETURN(std::string salt, randomBytes(kSaltBytes));
  auto hash = pbkdf2(password, salt, iterations);
  if (!hash) return Status::internal("PBKDF2 failed");
  return std::string(kPbkdf2Scheme) + "$" + std::to_string(iterations) + "$" + base64Encode(salt) + "$" +
         base64Encode(*hash);
}

bool verifyPassword(std::string_view password, std::string_view encoded) {
  auto h = parsePbkdf2(encoded);
  if (!h) return false;
  auto computed = pbkdf2(password, h->salt, h->iterations);
  return computed && constantTimeEquals(*computed, h->hash);
}

Result<std::string> newToken() {
  FERRY_ASSIGN_OR_RETURN(std::string bytes, randomBytes(32));
  std::string t = base64Encode(bytes);
  for (auto& c : t) c = c == '+' ? '-' : c == '/' ? '_' : c;
  while (!t.empty() && t.back() == '=') t.pop_back();
  return t;
}

Result<std::vector<CredentialEntry>> parseCredentials(std::string_view text, CredentialKind kind) {
  if (text.size() > kMaxCredentialFileBytes)
    return Status::invalidArgument("the file is larger than " + std::to_string(kMaxCredentialFileBytes) + " bytes");
  std::vector<CredentialEntry> out;
  std::size_t lineNo = 0, start = 0;
  auto bad = [&](const std::string& what) {
    return Status::invalidArgument("line " + std::to_string(lineNo) + ": " + what);
  };
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    std::string_view raw = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? text.size() : nl + 1;
    ++lineNo;
    if (raw.size() > kMaxCredentialLineBytes)
      return bad("longer than " + std::to_string(kMaxCredentialLineBytes) + " bytes");
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    auto c1 = line.find(':');
    auto c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) return bad("expected name:role:" + std::string(kind == CredentialKind::kUsers ? "hash" : "sha256"));
    CredentialEntry e;
    std::string_view name = trim(line.substr(0, c1));
    std::string_view role = trim(line.substr(c1 + 1, c2 - c1 - 1));
    std::string_view secret = trim(line.substr(c2 + 1));
    if (auto p = nameProblem(name); !p.empty()) return bad(p);
    auto r = parseRole(role);
    if (!r) return bad("the role must be viewer, operator or admin");
    e.name = std::string(name);
    e.role = *r;
    if (kind == CredentialKind::kUsers) {
      if (secret != "-" && !parsePbkdf2(secret))
        return bad("the hash must be '-' or pbkdf2-sha256$<iterations " + std::to_string(kMinPbkdf2Iterations) +
                   ".." + std::to_string(kMaxPbkdf2Iterations) + ">$<salt base64>$<32-byte hash base64> (make one with ferry passwd)");
      e.secret = std::string(secret);
    } else {
      std::string hex = lower(secret);
      bool ok = hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
                  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                });
      if (!ok) return bad("the token hash must be 64 hexadecimal digits (make one with ferry token)");
      e.secret = std::move(hex);
    }
    for (const auto& prev : out)
      if (prev.name == e.name) return bad("the name is used by an earlier line too");
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::string> credentialLine(std::string_view name, std::string_view role, std::string_view secret,
                                   CredentialKind kind) {
  if (auto p = nameProblem(name); !p.empty()) return Status::invalidArgument(p);
  if (trim(name) != name) return Status::invalidArgument("the name starts or ends with a blank");
  auto r = parseRole(role);
  if (!r) return Status::invalidArgument("the role must be viewer, operator or admin, not '" + std::string(role) + "'");
  std::string line = std::string(name) + ":" + roleName(*r) + ":" + std::string(secret);
  FERRY_RETURN_IF_ERROR(parseCredentials(line, kind).status());
  return line;
}

// --- Authenticator

Authenticator::Authenticator(AuthSettings settings, core::Clock& clock) : settings_(std::move(settings)), clock_(clock) {}

bool Authenticator::enabled() const {
  return !settings_.usersFile.empty() || !settings_.tokensFile.empty() || settings_.clientCertRequired;
}

Status Authenticator::loadFile(const std::string& path, CredentialKind kind,
                               std::map<std::string, CredentialEntry>& into, FileStamp& stamp) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return core::errnoStatus("cannot read", path, errno);
  stamp.present = true;
  stamp.mtimeNs = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  stamp.size = st.st_size;
  stamp.inode = st.st_ino;
  if (st.st_size > static_cast<off_t>(kMaxCredentialFileBytes))
    return Status::invalidArgument(path + ": larger than " + std::to_string(kMaxCredentialFileBytes) + " bytes");
  auto text = core::readFile(path);
  if (!text.isOk()) return text.status();
  auto entries = parseCredentials(*text, kind);
  if (!entries.isOk()) return Status::invalidArgument(path + ": " + entries.status().message());
  std::map<std::string, CredentialEntry> fresh;
  for (auto& e : *entries) fresh.emplace(e.name, std::move(e));
  into = std::move(fresh);
  return Status::ok();
}

Status Authenticator::load() {
  std::lock_guard lock(mu_);
  if (!settings_.usersFile.empty()) {
    if (auto s = loadFile(settings_.usersFile, CredentialKind::kUsers, users_, usersStamp_); !s.isOk())
      return s.withContext("rest.auth.users.file");
  }
  if (!settings_.tokensFile.empty()) {
    if (auto s = loadFile(settings_.tokensFile, CredentialKind::kTokens, tokens_, tokensStamp_); !s.isOk())
      return s.withContext("rest.auth.tokens.file");
  }
  ++generation_;
  ++reloads_;
  cache_.clear();
  cacheOrder_.clear();
  return Status::ok();
}

void Authenticator::refreshLocked() {
  auto check = [&](const std::string& path, CredentialKind kind, std::map<std::string, CredentialEntry>& into,
                   FileStamp& stamp, const char* key) {
    if (path.empty()) return;
    FileStamp now;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      now.present = true;
      now.mtimeNs = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      now.size = st.st_size;
      now.inode = st.st_ino;
    }
    if (now == stamp) return;
    stamp = now;  // a change is acted on (or reported) once
    std::map<std::string, CredentialEntry> fresh;
    FileStamp ignored;
    if (auto s = loadFile(path, kind, fresh, ignored); !s.isOk()) {
      core::logger("rest")->error("{}: {}; keeping the {} entries read before", key, s.message(), into.size());
      return;
    }
    into = std::move(fresh);
    ++generation_;
    ++reloads_;
    cache_.clear();
    cacheOrder_.clear();
    core::logger("rest")->info("{}: re-read {} ({} entries)", key, path, into.size());
  };
  check(settings_.usersFile, CredentialKind::kUsers, users_, usersStamp_, "rest.auth.users.file");
  check(settings_.tokensFile, CredentialKind::kTokens, tokens_, tokensStamp_, "rest.auth.tokens.file");
}

Authenticator::Outcome Authenticator::authenticate(std::string_view authorization, std::string_view peerName) {
  authorization = trim(authorization);
  if (!authorization.empty()) {
    auto space = authorization.find(' ');
    std::string scheme = lower(authorization.substr(0, space));
    std::string_view value = space == std::string_view::npos ? std::string_view() : trim(authorization.substr(space + 1));
    if (scheme == "basic") return basic(value);
    if (scheme == "bearer") return bearer(value);
    return {std::nullopt, "", "unsupported authorization scheme (use Basic or Bearer)"};
  }
  if (!peerName.empty()) return certificate(peerName);
  return {std::nullopt, "", "authentication required"};
}

Authenticator::Outcome Authenticator::basic(std::string_view encoded) {
  auto decoded = base64Decode(encoded);
  if (!decoded) return {std::nullopt, "", "malformed Basic credentials"};
  auto colon = decoded->find(':');
  if (colon == std::string::npos || colon == 0) return {std::nullopt, "", "malformed Basic credentials"};
  std::string user = decoded->substr(0, colon);
  std::string_view password = std::string_view(*decoded).substr(colon + 1);
  const std::string key = sha256Hex("basic\n" + *decoded);
  std::string hash;
  std::optional<Role> role;
  std::uint64_t generation = 0;
  {
    std::unique_lock lock(mu_);
    refreshLocked();
    auto hit = cache_.find(key);
    if (hit != cache_.end()) {
      if (hit->second.expiresMs > clock_.steadyMs()) return {hit->second.principal, loggable(user), ""};
      cacheOrder_.erase(hit->second.order);
      cache_.erase(hit);
    }
    auto u = users_.find(user);
    if (u != users_.end() && u->second.secret != "-") {
      hash = u->second.secret;
      role = u->second.role;
    } else {
      // Unknown users cost the same PBKDF2 as known ones, so timing does not tell which exist.
      for (const auto& [name, e] : users_)
        if (e.secret != "-") {
          hash = e.secret;
          break;
        }
    }
    generation = generation_;
    if (!hash.empty()) {
      // Wait briefly for a slot (a client's first parallel requests), then give up; when enough
      // checks already wait, give up at once.
      if (verifying_ >= settings_.maxConcurrentVerifications && waiting_ < settings_.maxWaitingVerifications) {
        ++waiting_;
        slotFree_.wait_for(lock, std::chrono::milliseconds(settings_.verificationWaitMs),
                           [&] { return verifying_ < settings_.maxConcurrentVerifications; });
        --waiting_;
      }
      if (verifying_ >= settings_.maxConcurrentVerifications) {
        Outcome busy{std::nullopt, loggable(user), "too many password checks in progress; retry in a second"};
        busy.busy = true;
        return busy;
      }
      ++verifying_;
      ++pbkdf2Runs_;
    }
  }
  bool ok = !hash.empty() && verifyPassword(password, hash) && role.has_value();
  if (!hash.empty()) {
    std::lock_guard lock(mu_);
    --verifying_;
    slotFree_.notify_one();
  }
  if (!ok) return {std::nullopt, loggable(user), "wrong user name or password"};
  Principal who{user, *role, "basic"};
  std::lock_guard lock(mu_);
  if (generation == generation_ && settings_.cacheEntries > 0 && !cache_.count(key)) {
    while (cache_.size() >= settings_.cacheEntries) {
      cache_.erase(cacheOrder_.front());
      cacheOrder_.pop_front();
    }
    cacheOrder_.push_back(key);
    cache_.emplace(key, CacheEntry{who, clock_.steadyMs() + settings_.cacheTtlMs, std::prev(cacheOrder_.end())});
  }
  return {who, loggable(user), ""};
}

Authenticator::Outcome Authenticator::bearer(std::string_view token) {
  const std::string digest = sha256Hex(token);
  std::lock_guard lock(mu_);
  refreshLocked();
  const CredentialEntry* found = nullptr;
  for (const auto& [name, e] : tokens_)  // every entry is compared: the time does not depend on which matched
    if (constantTimeEquals(digest, e.secret) && found == nullptr) found = &e;
  if (found == nullptr || token.empty()) return {std::nullopt, "bearer token", "unknown bearer token"};
  return {Principal{found->name, found->role, "bearer"}, loggable(found->name), ""};
}

Authenticator::Outcome Authenticator::certificate(std::string_view cn) {
  std::lock_guard lock(mu_);
  refreshLocked();
  auto u = users_.find(std::string(cn));
  if (u != users_.end()) return {Principal{u->second.name, u->second.role, "certificate"}, loggable(cn), ""};
  if (settings_.mtlsDefaultRole) return {Principal{std::string(cn), *settings_.mtlsDefaultRole, "certificate"}, loggable(cn), ""};
  return {std::nullopt, loggable(cn),
          "the client certificate's user is not in rest.auth.users.file and rest.auth.mtls.default.role is not set"};
}

std::uint64_t Authenticator::pbkdf2Runs() const {
  std::lock_guard lock(mu_);
  return pbkdf2Runs_;
}

std::uint64_t Authenticator::reloads() const {
  std::lock_guard lock(mu_);
  return reloads_;
}

}  // namespace ferry::rest
