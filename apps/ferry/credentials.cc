// `ferry passwd` / `ferry token` (see credentials.h).
#include "credentials.h"

#include <termios.h>
#include <unistd.h>

#include <charconv>
#include <iostream>
#include <string>
#include <string_view>

#include "rest/auth.h"

namespace ferry::credentials {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int usage(const char* what) {
  std::cerr << "ferry: " << what << "\n"
            << "usage: ferry passwd NAME ROLE [--iterations N]   (the password is read from stdin)\n"
            << "       ferry token NAME ROLE\n"
            << "ROLE: viewer, operator or admin\n";
  return kExitUsage;
}

// The first line of stdin, without its line end; echo is off while a terminal types it.
std::string readPassword() {
  const bool tty = ::isatty(STDIN_FILENO) == 1;
  termios saved{};
  if (tty && ::tcgetattr(STDIN_FILENO, &saved) == 0) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    std::cerr << "password: " << std::flush;
  }
  std::string line;
  std::getline(std::cin, line);
  if (tty) {
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    std::cerr << "\n";
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

int runPasswd(int argc, char** argv) {
  int iterations = rest::kDefaultPbkdf2Iterations;
  std::string name, role;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      std::string_view v = argv[++i];
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), iterations);
      if (ec != std::errc() || end != v.data() + v.size()) return usage("--iterations needs a number");
    } else if (positional == 0) {
      name = a;
      ++positional;
    } else if (positional == 1) {
      role = a;
      ++positional;
    } else {
      return usage("too many arguments");
    }
  }
  if (positional != 2) return usage("passwd needs NAME and ROLE");
  std::string password = readPassword();
  if (password.empty()) return usage("the password (first line of stdin) is empty");
  auto hash = rest::hashPassword(password, iterations);
  if (!hash.isOk()) {
    std::cerr << "ferry: " << hash.status().message() << "\n";
    return hash.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  auto line = rest::credentialLine(name, role, *hash, rest::CredentialKind::kUsers);
  if (!line.isOk()) return usage(line.status().message().c_str());
  std::cout << *line << "\n";
  return kExitOk;
}

int runToken(int argc, char** argv) {
  if (argc != 3) return usage("token needs NAME and ROLE");
  auto token = rest::newToken();
  if (!token.isOk()) {
    std::cerr << "ferry: " << token.status().message() << "\n";
    return kExitFailure;
  }
  auto line = rest::credentialLine(argv[1], argv[2], rest::sha256Hex(*token), rest::CredentialKind::kTokens);
  if (!line.isOk()) return usage(line.status().message().c_str());
  std::cout << "token: " << *token << "\n" << "line:  " << *line << "\n";
  return kExitOk;
}

}  // namespace ferry::credentials
