// Who is calling: REST users (HTTP basic, passwords as salted PBKDF2-SHA256 hashes), bearer tokens
// (stored as SHA-256 of the token) and TLS client certificates (the subject CN is the user name),
// each with one role.
//
//   users file   (rest.auth.users.file):  name:role:pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>
//                                         name:role:-        (no password: client certificate only)
//   tokens file  (rest.auth.tokens.file): name:role:<sha256 hex of the token>
//
// One entry a line, `#` starts a comment line, blank lines are ignored. `ferry passwd` and
// `ferry token` print entries (apps/ferry/credentials.cc).
//
// Nothing here logs or returns a presented credential; a file error names its line number, never
// the line.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base64.h"
#include "core/clock.h"
#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry::rest {

// Ordered: a role may do everything the roles below it may. kOpen marks routes that need no
// credential at all (/health); no user has it.
enum class Role { kOpen = 0, kViewer = 1, kOperator = 2, kAdmin = 3 };

const char* roleName(Role role);  // "open", "viewer", "operator", "admin"
// viewer | operator | admin (case-insensitive); nullopt for anything else (also "open").
std::optional<Role> parseRole(std::string_view text);

// --- primitives (thread-safe, pure apart from the random source)

inline constexpr int kDefaultPbkdf2Iterations = 600000;
inline constexpr int kMinPbkdf2Iterations = 1000;
inline constexpr int kMaxPbkdf2Iterations = 10000000;

// Text from a request as it may appear in a message or a log line: at most `max` bytes, bytes
// outside printable ASCII as '?', "..." when cut.
std::string printableText(std::string_view s, std::size_t max);

using core::base64Decode;  // core/base64.h
using core::base64Encode;
std::string sha256Hex(std::string_view data);
// Lowercase hex of the bytes.
std::string hexEncode(std::string_view bytes);
// Compares in time that depends only on the lengths.
bool constantTimeEquals(std::string_view a, std::string_view b);
// `n` bytes from the OS's cryptographic random source (OpenSSL RAND_bytes).
Result<std::string> randomBytes(std::size_t n);

// "pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>" with a fresh 16-byte salt and a 32-byte hash.
Result<std::string> hashPassword(std::string_view password, int iterations = kDefaultPbkdf2Iterations);
// True when `encoded` is a well-formed hash of `password` (constant-time comparison of the hash).
bool verifyPassword(std::string_view password, std::string_view encoded);
// A new bearer token: 32 random bytes, base64url without padding (43 characters).
Result<std::string> newToken();

// --- files

enum class CredentialKind { kUsers, kTokens };

struct CredentialEntry {
  std::string name;
  Role role = Role::kViewer;
  std::string secret;  // users: the pbkdf2 string or "-"; tokens: lowercase sha256 hex
};

inline constexpr std::size_t kMaxCredentialLineBytes = 4096;
inline constexpr std::size_t kMaxCredentialFileBytes = 4 << 20;

// Parses a whole file. InvalidArgument naming the first bad line by number and what is wrong with
// it (never its text): a line longer than kMaxCredentialLineBytes, a missing field, an empty or
// duplicate name, a name with a control character, an unknown role, a malformed hash.
Result<std::vector<CredentialEntry>> parseCredentials(std::string_view text, CredentialKind kind);
// The line `ferry passwd` / `ferry token` print (name and role are checked as the parser does).
Result<std::string> credentialLine(std::string_view name, std::string_view role, std::string_view secret,
                                   CredentialKind kind);

// --- the authenticator

struct AuthSettings {
  std::string usersFile;   // rest.auth.users.file
  std::string tokensFile;  // rest.auth.tokens.file
  // rest.auth.mtls.default.role: the role of a verified client certificate whose CN is not in the
  // users file; nullopt refuses such certificates.
  std::optional<Role> mtlsDefaultRole;
  bool clientCertRequired = false;  // the TLS listener requires client certificates
  // Successful basic verifications are remembered this long (PBKDF2 is deliberately slow).
  std::int64_t cacheTtlMs = 60000;
  std::size_t cacheEntries = 1024;
  // PBKDF2 verifications running at once; at most maxWaitingVerifications more wait up to
  // verificationWaitMs for a slot, any other is answered "busy" (503) at once. So a flood of wrong
  // passwords can neither take every core from the tasks nor hold more than 4 of the 8 REST
  // handler threads (the rest keep serving cached credentials, tokens and open routes).
  int maxConcurrentVerifications = 2;
  int maxWaitingVerifications = 2;
  std::int64_t verificationWaitMs = 2000;  // how long a password check waits for a free slot
};

struct Principal {
  std::string name;
  Role role = Role::kViewer;
  std::string via;  // "basic", "bearer", "certificate"
};

// Holds the users and tokens read from their files and checks presented credentials.
//
// Thread-safety: authenticate() is called concurrently from the REST request threads; one mutex
// guards the entries, the file stamps and the cache (PBKDF2 itself runs outside it).
// Files: each call stats the configured files and re-reads one whose mtime, size or inode changed;
// a file that cannot be read or parsed then keeps the previous entries and logs the reason (line
// number only) once per change. load() at start-up must succeed. The clock (TTL of the cache) is
// injected so tests need no sleep. A password check may wait (up to verificationWaitMs) for one
// of maxConcurrentVerifications PBKDF2 slots.
class Authenticator {
 public:
  explicit Authenticator(AuthSettings settings, core::Clock& clock = core::Clock::system());

  // Reads both files; an error names the setting and the file (and the line number).
  Status load();
  // Authentication is on when a users or tokens file is configured or client certs are required.
  bool enabled() const;

  struct Outcome {
    std::optional<Principal> principal;
    std::string claimedUser;  // for the failure log: the basic user name (sanitised) or "bearer token"
    std::string problem;      // why it failed, safe to show (no credential)
    bool busy = false;        // not checked: maxConcurrentVerifications were running (retry)
  };
  // `authorization` is the Authorization header ("" when absent); `peerName` the verified client
  // certificate's CN ("" when none). The header wins over the certificate when both are present.
  Outcome authenticate(std::string_view authorization, std::string_view peerName);

  // Counters for tests: PBKDF2 verifications run, file (re)loads that succeeded.
  std::uint64_t pbkdf2Runs() const;
  std::uint64_t reloads() const;

 private:
  struct FileStamp {
    bool present = false;
    std::int64_t mtimeNs = 0;
    std::int64_t size = -1;
    std::uint64_t inode = 0;
    bool operator==(const FileStamp&) const = default;
  };
  struct CacheEntry {
    Principal principal;
    std::int64_t expiresMs = 0;
    std::list<std::string>::iterator order;
  };

  Status loadFile(const std::string& path, CredentialKind kind, std::map<std::string, CredentialEntry>& into,
                  FileStamp& stamp);
  void refreshLocked();
  Outcome basic(std::string_view encoded);
  Outcome bearer(std::string_view token);
  Outcome certificate(std::string_view cn);

  const AuthSettings settings_;
  core::Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, CredentialEntry> users_;   // GUARDED_BY(mu_)
  std::map<std::string, CredentialEntry> tokens_;  // GUARDED_BY(mu_)
  FileStamp usersStamp_, tokensStamp_;             // GUARDED_BY(mu_): last stamp seen (read or not)
  std::unordered_map<std::string, CacheEntry> cache_;  // GUARDED_BY(mu_): sha256(credential) -> who
  std::list<std::string> cacheOrder_;                  // GUARDED_BY(mu_): oldest first
  std::uint64_t generation_ = 0;                       // GUARDED_BY(mu_): bumped on every reload
  std::uint64_t pbkdf2Runs_ = 0;                       // GUARDED_BY(mu_)
  int verifying_ = 0;                                  // GUARDED_BY(mu_): PBKDF2 runs in progress
  int waiting_ = 0;                                    // GUARDED_BY(mu_): checks waiting for a slot
  std::condition_variable slotFree_;                   // signalled when verifying_ drops
  std::uint64_t reloads_ = 0;                          // GUARDED_BY(mu_)
};

}  // namespace ferry::rest
