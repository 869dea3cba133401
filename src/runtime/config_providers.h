// Config providers (Kafka Connect's KIP-297): a connector config holds a reference such as
// ${file:/etc/ferry/secrets.properties:mqtt.password} instead of the secret, and the worker
// resolves it only where the secret is used — when a connector or task starts and when a config
// is validated — so the stored config, the cluster log and every REST answer hold the reference.
//
// Worker keys (worker.properties):
//   config.providers=file,env,directory                  the providers this worker enables
//   config.providers.<name>.class=<class>                file | env | directory, or Kafka's
//       FileConfigProvider / EnvVarConfigProvider / DirectoryConfigProvider (simple or full
//       org.apache.kafka.common.config.provider.* names). Optional when <name> is itself one of
//       file, env, directory.
//   config.providers.<name>.param.allowed.paths=/a,/b    file and directory providers (KIP-993):
//       the folders they may read. Default: none — nothing is read until folders are listed.
//       Paths are compared after resolving symlinks and "..", so a link out of a folder is refused.
//   config.providers.<name>.param.allowlist.pattern=RE   env provider: the variable names it may
//       read (a full match of the ECMAScript regex). Default: none — nothing is read until a
//       pattern is set (a worker's environment often holds other secrets).
// A worker with a bad provider setting refuses to start.
//
// Syntax (Kafka's): ${provider:key} or ${provider:path:key}, anywhere inside a value.
//   ${file:/path/to/file.properties:key}   the key's value in a Java .properties file
//   ${directory:/path/to/dir:filename}      the whole content of dir/filename, verbatim (a trailing
//                                           newline is kept, as Kafka's DirectoryConfigProvider does)
//   ${env:NAME} or ${env::NAME}             the environment variable NAME
// A reference naming a provider this worker has not enabled is an error when the name is one of
// file, env, directory (the config expects a provider) and is left as it is otherwise, as Kafka
// does — connector placeholders such as ${level:3} or ${header:x} use the same brackets.
// Errors name the config key and the reference and never a resolved value.
//
// Thread-safety: immutable after fromWorkerProps(); resolve() may run on any thread.
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "ferry/config.h"
#include "ferry/result.h"

namespace ferry::runtime {

class ConfigProviders {
 public:
  // The enabled providers from worker properties (keys under config.providers). No key: an
  // empty set (references to file/env/directory fail with a message saying how to enable them).
  static Result<std::shared_ptr<const ConfigProviders>> fromWorkerProps(const StringMap& props);

  // The enabled provider names, in config.providers order.
  std::vector<std::string> names() const;

  // `config` with every reference resolved. InvalidArgument naming the key and the reference
  // when one cannot be resolved (unknown provider, missing file, variable or key, a path outside
  // allowed.paths, a variable outside allowlist.pattern).
  Result<StringMap> resolve(const StringMap& config) const;
  Result<std::string> resolveValue(const std::string& key, const std::string& value) const;
  // Whether any value of `config` holds a reference resolve() acts on.
  bool hasReferences(const StringMap& config) const;

  class Provider;  // one provider's implementation (config_providers.cc)
  ~ConfigProviders();
  ConfigProviders();

 private:
  std::vector<std::pair<std::string, std::unique_ptr<Provider>>> providers_;
  const Provider* find(const std::string& name) const;
};

// Kafka Connect's reverse transform, for task configs a connector made from its resolved config:
// every key of `task` whose raw connector value holds a reference and whose task value is that
// key's resolved value gets the reference back. So stored and distributed task configs hold
// references too, and each task resolves its own config when it starts. (A secret a connector
// copies into a key of its own is not recognised; connectors should pass keys through.)
StringMap reReference(const StringMap& task, const StringMap& raw, const StringMap& resolved);

}  // namespace ferry::runtime
