// Config providers: file, directory, env (see config_providers.h).
#include "runtime/config_providers.h"

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sys/stat.h>

#include "core/fs.h"
#include "core/properties.h"
#include "runtime/config_util.h"

namespace ferry::runtime {

namespace {

constexpr const char* kPrefix = "config.providers";
constexpr const char* kKafkaPackage = "org.apache.kafka.common.config.provider.";

// One ${...} occurrence in a value.
struct Ref {
  std::size_t begin = 0, end = 0;  // [begin, end) in the value, "${" .. "}"
  std::string text;                // the whole reference, for messages
  std::string provider, path, key;
  bool hasPath = false;
};

bool validProviderName(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

// Every well-formed ${provider:[path:]key} in `value` (Kafka's pattern: the provider runs to the
// first ':', the path to the next one, the key is the rest).
std::vector<Ref> findRefs(const std::string& value) {
  std::vector<Ref> out;
  std::size_t pos = 0;
  while ((pos = value.find("${", pos)) != std::string::npos) {
    const auto close = value.find('}', pos + 2);
    if (close == std::string::npos) break;
    const std::string inner = value.substr(pos + 2, close - pos - 2);
    const auto c1 = inner.find(':');
    if (c1 == std::string::npos || inner.find("${") != std::string::npos) {
      pos += 2;
      continue;
    }
    Ref r;
    r.begin = pos;
    r.end = close + 1;
    r.text = value.substr(pos, close + 1 - pos);
    r.provider = inner.substr(0, c1);
    const std::string rest = inner.substr(c1 + 1);
    const auto c2 = rest.find(':');
    if (c2 == std::string::npos) {
      r.key = rest;
    } else {
      r.hasPath = true;
      r.path = rest.substr(0, c2);
      r.key = rest.substr(c2 + 1);
    }
    if (validProviderName(r.provider)) out.push_back(std::move(r));
    pos = close + 1;
  }
  return out;
}

bool isStandardName(const std::string& n) { return n == "file" || n == "env" || n == "directory"; }

// Kafka's class names and ferry's short names -> file | env | directory.
std::string kindOfClass(std::string cls) {
  if (cls.rfind(kKafkaPackage, 0) == 0) cls = cls.substr(std::string(kKafkaPackage).size());
  if (cls == "file" || cls == "FileConfigProvider") return "file";
  if (cls == "env" || cls == "EnvVarConfigProvider") return "env";
  if (cls == "directory" || cls == "DirectoryConfigProvider") return "directory";
  return "";
}

std::string joinList(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

}  // namespace

class ConfigProviders::Provider {
 public:
  virtual ~Provider() = default;
  // The value for one reference; errors say why without any resolved value.
  virtual Result<std::string> get(const Ref& r) const = 0;
};

namespace {

// The folders a file or directory provider may read, canonical.
class AllowedPaths {
 public:
  AllowedPaths(std::string name, std::vector<std::string> folders) : name_(std::move(name)), folders_(std::move(folders)) {}

  static Result<AllowedPaths> parse(const std::string& name, const std::string& list) {
    std::vector<std::string> folders;
    auto items = ConfigDef::parseValue(ConfigType::kList, list);
    if (items.isOk())
      for (const auto& item : std::get<std::vector<std::string>>(*items)) {
        std::filesystem::path p(item);
        if (!p.is_absolute())
          return Status::invalidArgument(std::string(kPrefix) + "." + name + ".param.allowed.paths: '" + item +
                                         "' is not an absolute path");
        std::string canon = p.lexically_normal().string();
        char buf[PATH_MAX];
        if (::realpath(canon.c_str(), buf) != nullptr) canon = buf;
        while (canon.size() > 1 && canon.back() == '/') canon.pop_back();
        folders.push_back(canon);
      }
    return AllowedPaths(name, std::move(folders));
  }

  // The canonical form of `path` when it is inside an allowed folder (checked on the path as
  // written and again with symlinks resolved); an error otherwise.
  Result<std::string> check(const std::string& path) const {
    if (folders_.empty())
      return Status::invalidArgument("the " + name_ + " provider reads no path until " + std::string(kPrefix) + "." +
                                     name_ + ".param.allowed.paths lists the folders it may read");
    std::filesystem::path p(path);
    if (!p.is_absolute()) return Status::invalidArgument("'" + path + "' is not an absolute path");
    const std::string lexical = p.lexically_normal().string();
    if (!inside(lexical)) return outside(path);
    char buf[PATH_MAX];
    if (::realpath(lexical.c_str(), buf) == nullptr) {
      const int err = errno;
      if (err == ENOENT || err == ENOTDIR) return Status::notFound("'" + path + "' does not exist");
      return core::errnoStatus("cannot resolve", path, err);
    }
    if (!inside(buf)) return outside(path);
    return std::string(buf);
  }

 private:
  bool inside(const std::string& p) const {
    for (const auto& f : folders_)
      if (p == f || (p.size() > f.size() && p.compare(0, f.size(), f) == 0 && (f == "/" || p[f.size()] == '/')))
        return true;
    return false;
  }
  Status outside(const std::string& path) const {
    return Status::invalidArgument("'" + path + "' is outside " + std::string(kPrefix) + "." + name_ +
                                   ".param.allowed.paths (" + joinList(folders_) + ")");
  }

  std::string name_;
  std::vector<std::string> folders_;
};

Result<std::string> readRegularFile(const std::string& canon, const std::string& shown) {
  struct stat st {};
  if (::stat(canon.c_str(), &st) != 0) return Status::notFound("'" + shown + "' does not exist");
  if (!S_ISREG(st.st_mode)) return Status::invalidArgument("'" + shown + "' is not a regular file");
  auto text = core::readFile(canon);
  if (!text.isOk()) return Status(text.status().code(), "cannot read '" + shown + "'");
  return *text;
}

class FileProvider final : public ConfigProviders::Provider {
 public:
  explicit FileProvider(AllowedPaths allowed) : allowed_(std::move(allowed)) {}
  Result<std::string> get(const Ref& r) const override {
    if (!r.hasPath || r.path.empty())
      return Status::invalidArgument("the file provider needs a path: ${" + r.provider + ":/path/file.properties:key}");
    FERRY_ASSIGN_OR_RETURN(std::string canon, allowed_.check(r.path));
    FERRY_ASSIGN_OR_RETURN(std::string text, readRegularFile(canon, r.path));
    auto props = core::parseProperties(text);
    // parseProperties' messages name a line number, never the line's text.
    if (!props.isOk()) return Status::invalidArgument("'" + r.path + "' is not a .properties file: " + props.status().message());
    auto it = props->find(r.key);
    if (it == props->end()) return Status::notFound("'" + r.path + "' has no key '" + r.key + "'");
    return it->second;
  }

 private:
  AllowedPaths allowed_;
};

class DirectoryProvider final : public ConfigProviders::Provider {
 public:
  explicit DirectoryProvider(AllowedPaths allowed) : allowed_(std::move(allowed)) {}
  Result<std::string> get(const Ref& r) const override {
    if (!r.hasPath || r.path.empty())
      return Status::invalidArgument("the directory provider needs a folder: ${" + r.provider + ":/path/folder:file}");
    if (r.key.empty() || r.key == "." || r.key == ".." || r.key.find('/') != std::string::npos)
      return Status::invalidArgument("'" + r.key + "' is not a file name (the key names a file directly in the folder)");
    FERRY_ASSIGN_OR_RETURN(std::string dir, allowed_.check(r.path));
    const std::string shown = r.path + (r.path.back() == '/' ? "" : "/") + r.key;
    // The file itself is checked too: a symlink in an allowed folder may point outside it.
    FERRY_ASSIGN_OR_RETURN(std::string canon, allowed_.check(dir + "/" + r.key));
    return readRegularFile(canon, shown);
  }

 private:
  AllowedPaths allowed_;
};

class EnvProvider final : public ConfigProviders::Provider {
 public:
  EnvProvider(std::string name, std::string pattern, std::optional<std::regex> allow)
      : name_(std::move(name)), pattern_(std::move(pattern)), allow_(std::move(allow)) {}
  Result<std::string> get(const Ref& r) const override {
    if (r.hasPath && !r.path.empty())
      return Status::invalidArgument("the env provider takes no path: write ${" + r.provider + ":NAME} or ${" +
                                     r.provider + "::NAME}");
    if (!allow_)
      return Status::invalidArgument("the env provider reads no variable until " + std::string(kPrefix) + "." + name_ +
                                     ".param.allowlist.pattern says which it may read");
    if (!std::regex_match(r.key, *allow_))
      return Status::invalidArgument("variable '" + r.key + "' does not match " + std::string(kPrefix) + "." + name_ +
                                     ".param.allowlist.pattern (" + pattern_ + ")");
    const char* v = std::getenv(r.key.c_str());
    if (v == nullptr) return Status::notFound("environment variable '" + r.key + "' is not set");
    return std::string(v);
  }

 private:
  std::string name_;
  std::string pattern_;
  std::optional<std::regex> allow_;
};

}  // namespace

ConfigProviders::ConfigProviders() = default;
ConfigProviders::~ConfigProviders() = default;

Result<std::shared_ptr<const ConfigProviders>> ConfigProviders::fromWorkerProps(const StringMap& props) {
  auto out = std::make_shared<ConfigProviders>();
  const std::vector<std::string> names = configList(props, kPrefix);
  std::set<std::string> listed(names.begin(), names.end());
  // Keys under config.providers.<name>. for a name not listed are a mistake worth saying.
  for (const auto& [k, v] : props) {
    const std::string p = std::string(kPrefix) + ".";
    if (k.rfind(p, 0) != 0) continue;
    const std::string rest = k.substr(p.size());
    const std::string name = rest.substr(0, rest.find('.'));
    if (!listed.count(name))
      return Status::invalidArgument(k + ": provider '" + name + "' is not listed in " + kPrefix + " (" +
                                     joinList(names) + ")");
  }
  for (const auto& name : names) {
    if (!validProviderName(name))
      return Status::invalidArgument(std::string(kPrefix) + ": '" + name + "' is not a provider name (letters, digits, _ - .)");
    const std::string base = std::string(kPrefix) + "." + name + ".";
    std::string cls = configValue(props, base + "class", isStandardName(name) ? name : "");
    if (cls.empty())
      return Status::invalidArgument(base + "class is required (file, env, directory or Kafka's "
                                     "FileConfigProvider, EnvVarConfigProvider, DirectoryConfigProvider)");
    const std::string kind = kindOfClass(cls);
    if (kind.empty())
      return Status::invalidArgument(base + "class: unknown provider class '" + cls +
                                     "' (file, env, directory or Kafka's FileConfigProvider, EnvVarConfigProvider, "
                                     "DirectoryConfigProvider)");
    const StringMap params = configWithPrefix(props, base + "param.");
    const std::set<std::string> known = kind == "env" ? std::set<std::string>{"allowlist.pattern"}
                                                      : std::set<std::string>{"allowed.paths"};
    for (const auto& [k, v] : props) {
      if (k.rfind(base, 0) != 0) continue;
      const std::string rest = k.substr(base.size());
      if (rest == "class") continue;
      if (rest.rfind("param.", 0) == 0 && known.count(rest.substr(6))) continue;
      return Status::invalidArgument(k + ": unknown key (the " + kind + " provider takes " + base + "param." +
                                     *known.begin() + ")");
    }
    std::unique_ptr<Provider> provider;
    if (kind == "env") {
      std::optional<std::regex> allow;
      const std::string pattern = configValue(params, "allowlist.pattern");
      if (!pattern.empty()) {
        try {
          allow.emplace(pattern, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          return Status::invalidArgument(base + "param.allowlist.pattern: '" + pattern + "' is not a regex: " + e.what());
        }
      }
      provider = std::make_unique<EnvProvider>(name, pattern, std::move(allow));
    } else {
      FERRY_ASSIGN_OR_RETURN(auto allowed, AllowedPaths::parse(name, configValue(params, "allowed.paths")));
      if (kind == "file")
        provider = std::make_unique<FileProvider>(std::move(allowed));
      else
        provider = std::make_unique<DirectoryProvider>(std::move(allowed));
    }
    out->providers_.emplace_back(name, std::move(provider));
  }
  return std::shared_ptr<const ConfigProviders>(std::move(out));
}

std::vector<std::string> ConfigProviders::names() const {
  std::vector<std::string> out;
  for (const auto& [n, p] : providers_) out.push_back(n);
  return out;
}

const ConfigProviders::Provider* ConfigProviders::find(const std::string& name) const {
  for (const auto& [n, p] : providers_)
    if (n == name) return p.get();
  return nullptr;
}

Result<std::string> ConfigProviders::resolveValue(const std::string& key, const std::string& value) const {
  const auto refs = findRefs(value);
  if (refs.empty()) return value;
  std::string out;
  std::size_t at = 0;
  for (const auto& r : refs) {
    const Provider* p = find(r.provider);
    if (p == nullptr && !isStandardName(r.provider)) continue;  // not ours: left as it is
    Result<std::string> got = p == nullptr
        ? Result<std::string>(Status::invalidArgument(
              "provider '" + r.provider + "' is not enabled on this worker (worker key " + kPrefix +
              (providers_.empty() ? " is not set" : " lists " + joinList(names())) + ")"))
        : p->get(r);
    if (!got.isOk())
      return Status(got.status().code() == StatusCode::kNotFound ? StatusCode::kInvalidArgument : got.status().code(),
                    "config key '" + key + "': cannot resolve " + r.text + ": " + got.status().message());
    out.append(value, at, r.begin - at);
    out += *got;
    at = r.end;
  }
  out.append(value, at, std::string::npos);
  return out;
}

Result<StringMap> ConfigProviders::resolve(const StringMap& config) const {
  StringMap out = config;
  for (auto& [k, v] : out) {
    FERRY_ASSIGN_OR_RETURN(v, resolveValue(k, v));
  }
  return out;
}

bool ConfigProviders::hasReferences(const StringMap& config) const {
  for (const auto& [k, v] : config)
    for (const auto& r : findRefs(v))
      if (find(r.provider) != nullptr || isStandardName(r.provider)) return true;
  return false;
}

StringMap reReference(const StringMap& task, const StringMap& raw, const StringMap& resolved) {
  StringMap out = task;
  for (auto& [k, v] : out) {
    auto r = raw.find(k);
    auto s = resolved.find(k);
    if (r == raw.end() || s == resolved.end() || r->second == s->second) continue;  // no reference there
    if (v == s->second) v = r->second;
  }
  return out;
}

}  // namespace ferry::runtime
