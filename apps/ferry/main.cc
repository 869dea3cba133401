// The ferry binary.
//
//   ferry standalone worker.properties [connector.json|.yaml|.properties|pipeline.json ...]
//   ferry distributed worker.properties [connector.json|.yaml|.properties|pipeline.json ...]   (src/cluster/README.md)
//   ferry ctl [--url URL] <command> ...      (see apps/ferry/ctl.h)
//   ferry passwd NAME ROLE / ferry token NAME ROLE  (REST credentials, apps/ferry/credentials.h)
//   ferry version
//
// Standalone start-up order: worker config -> data.dir lock -> stores -> embedded backbone ->
// plugins -> herder (brings stored connectors back) -> connector files -> REST. SIGINT/SIGTERM
// shut down in reverse: REST stops, every task commits what is safe and stops (within
// task.shutdown.graceful.timeout.ms; the others are abandoned), the backbone flushes; the exit
// code is 0. With abandoned task threads still running the process leaves through _exit(0) right
// after the backbone is closed, without running destructors those threads may still use (see
// src/runtime/README.md, "Stopping tasks").
#include <fcntl.h>
#include <sys/stat.h>
#include <filesystem>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "backbone/embedded/embedded.h"
#include "backbone/kafka/kafka_backbone.h"
#include "runtime/local_files.h"
#include "runtime/log_position_store.h"
#include "backbone/rocketmq/rocketmq_backbone.h"
#include "control/distributed_herder.h"
#include "control/pipeline.h"
#include "control/pipeline_ops.h"
#include "control/standalone_herder.h"
#include "core/crash.h"
#include "core/fs.h"
#include "core/json_bounds.h"
#include "core/logging.h"
#include "core/private_paths.h"
#include "core/properties.h"
#include "credentials.h"
#include "jvm/java_plugins.h"
#include "jvm/jvm_paths.h"
#include "ctl.h"
#if FERRY_CONSOLE_TABLE
#include "web/console_assets.h"
#endif
#include "rest/rest_server.h"
#include "runtime/plugins.h"
#include "runtime/tasks.h"
#include "runtime/worker_config.h"
#include "store/store.h"

#ifndef FERRY_VERSION
#define FERRY_VERSION "0.0.0"
#endif
#ifndef FERRY_GIT_COMMIT
#define FERRY_GIT_COMMIT "unknown"
#endif

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

void usage(std::ostream& out) {
  out << "ferry " << FERRY_VERSION << " — a native data-integration runtime\n\n"
      << "usage:\n"
      << "  ferry standalone WORKER.properties [CONNECTOR.json|.yaml|.properties|PIPELINE.json ...]\n"
      << "  ferry distributed WORKER.properties [CONNECTOR.json|.yaml|.properties|PIPELINE.json ...]\n"
      << "  ferry ctl [--url URL] list|get|create|apply|status|pause|resume|stop|restart|delete|offsets|plugins|validate ...\n"
      << "  ferry passwd NAME ROLE [--iterations N]   (password on stdin; prints a rest.auth.users.file line)\n"
      << "  ferry token NAME ROLE                      (prints a new token and its rest.auth.tokens.file line)\n"
      << "  ferry version\n";
}

int fail(const std::string& what) {
  std::cerr << "ferry: " << what << "\n";
  return kExitFailure;
}

// The backbone the worker config names.
ferry::Result<std::unique_ptr<ferry::backbone::Backbone>> openBackbone(const ferry::runtime::WorkerConfig& worker) {
  using namespace ferry;
  if (worker.backbone == "rocketmq") {
    backbone::RocketmqBackboneOptions ropts;
    ropts.namesrv = worker.rocketmqNamesrv;
    ropts.cluster = worker.rocketmqCluster;
    ropts.maxInflight = worker.rocketmqMaxInflight;
    ropts.accessKey = worker.rocketmqAccessKey;
    ropts.secretKey = worker.rocketmqSecretKey;
    ropts.defaultQueues = worker.defaultQueues;
    auto bb = backbone::openRocketmqBackbone(ropts);
    if (!bb.isOk()) return bb.status().withContext("rocketmq backbone");
    return std::move(*bb);
  } else if (worker.backbone == "kafka") {
    backbone::KafkaBackboneOptions kopts;
    kopts.bootstrapServers = worker.kafkaBootstrapServers;
    kopts.defaultQueues = worker.defaultQueues;
    kopts.replicationFactor = worker.kafkaReplicationFactor;
    kopts.staticMembership = worker.kafkaStaticMembership;
    kopts.sessionTimeoutMs = worker.kafkaSessionTimeoutMs;
    kopts.requestTimeoutMs = worker.kafkaRequestTimeoutMs;
    kopts.clientOverrides = worker.kafkaClientConfig;
    kopts.producerOverrides = worker.kafkaProducerConfig;
    kopts.consumerOverrides = worker.kafkaConsumerConfig;
    auto bb = backbone::openKafkaBackbone(kopts);
    if (!bb.isOk()) return bb.status();
    return std::move(*bb);
  } else {
    backbone::EmbeddedOptions bopts;
    bopts.dir = worker.dataDir + "/backbone";
    bopts.segmentBytes = worker.embeddedSegmentBytes;
    bopts.fsync = backbone::parseFsyncPolicy(worker.embeddedFsync).value_or(backbone::FsyncPolicy::kAlways);
    bopts.fsyncIntervalMs = worker.embeddedFsyncIntervalMs;
    bopts.maxRecordBytes = worker.embeddedMaxRecordBytes;
    bopts.retentionBytes = worker.embeddedRetentionBytes;
    bopts.retentionMs = worker.embeddedRetentionMs;
    bopts.defaultQueues = worker.defaultQueues;
    auto bb = backbone::openEmbeddedBackbone(bopts);
    if (!bb.isOk()) return bb.status().withContext("embedded backbone");
    return std::move(*bb);
  }
}

// Reads and parses the worker properties file.
// The built-in plugins and those of plugin.path; then the worker's default converters are built
// once, so a misspelt key/value/header converter class or config stops the worker at start rather
// than failing every task later.
// The Java connectors of plugin.path, through the JVM host (jvm/README.md). The host starts only
// when plugin.path holds jars; when it cannot (no Java, a build without it), the worker runs all
// the same and says why whenever a connector class it does not know is asked for.
void loadJavaPlugins(ferry::runtime::PluginRegistry& registry, const ferry::runtime::WorkerConfig& worker) {
  using namespace ferry;
  const auto jars = jvm::javaJarsIn(worker.pluginPath);
  if (jars.empty()) return;
  auto log = core::logger("jvm");
  const std::string some = std::to_string(jars.size()) + " Java jar(s) (" + jars.front() + (jars.size() > 1 ? ", ..." : "") + ")";
  jvm::JvmHostOptions o;
  o.classpath = worker.jvmHostClasspath.empty() ? std::string(jvm::kBuiltHostClasspath) : worker.jvmHostClasspath;
  if (o.classpath.empty()) {
    const std::string why = "plugin.path holds " + some + ", but this ferry was built without the JVM host (" +
                            std::string(jvm::kHostMissingReason) + ")";
    log->warn("{}", why);
    registry.setUnknownConnectorHint(why);
    return;
  }
  if (!worker.jvmJavaHome.empty()) o.java = worker.jvmJavaHome + "/bin/java";
  o.pluginPath = worker.pluginPath;
  o.maxHeap = worker.jvmHeapMax;
  o.jvmOptions = worker.jvmOptions;
  if (!worker.jvmPluginIsolation) o.jvmOptions.push_back("-Dferry.plugin.isolation=false");
  auto host = std::make_shared<jvm::JvmHostSupervisor>(o);
  auto scan = jvm::scanJavaPlugins(*host);
  if (!scan.isOk()) {
    const std::string why = "plugin.path holds " + some + ", but the JVM host could not start: " + scan.status().message();
    log->warn("{}", why);
    registry.setUnknownConnectorHint(why);
    return;
  }
  auto added = jvm::registerJavaPlugins(registry, host, *scan, {worker.keyConverter, worker.valueConverter, worker.taskShutdownTimeoutMs});
  if (added.isOk()) log->info("{} Java connector class(es) from plugin.path", *added);
}

ferry::Status loadPlugins(ferry::runtime::PluginRegistry& registry, const ferry::runtime::WorkerConfig& worker) {
  if (auto s = ferry::runtime::registerBuiltins(registry); !s.isOk()) return s.withContext("built-in plugins");
  for (const auto& err : registry.loadPath(worker.pluginPath))
    ferry::core::logger("worker")->error("plugin not loaded: {}", err.message());
  loadJavaPlugins(registry, worker);
  auto converters = ferry::runtime::makeTaskConverters(registry, worker, {});
  if (!converters.isOk()) return converters.status().withContext("worker converters");
  return ferry::Status::ok();
}

ferry::Result<ferry::runtime::WorkerConfig> loadWorkerConfig(const char* path) {
  using namespace ferry;
  auto text = core::readFile(path);
  if (!text.isOk()) return Status::invalidArgument("cannot read worker config: " + text.status().toString());
  auto props = core::parseProperties(*text);
  if (!props.isOk()) return Status::invalidArgument(std::string(path) + ": " + props.status().message());
  auto cfg = runtime::parseWorkerConfig(*props);
  if (!cfg.isOk()) return Status::invalidArgument(std::string(path) + ": invalid worker config: " + cfg.status().message());
  return *cfg;
}

// The REST server's options from the worker config (rest.*, access.control.*).
ferry::rest::RestOptions restOptionsFor(const ferry::runtime::WorkerConfig& worker) {
  ferry::rest::RestOptions ropts;
  ropts.host = worker.restHost;
  ropts.port = worker.restPort;
  ropts.version = FERRY_VERSION;
  ropts.commit = FERRY_GIT_COMMIT;
  ropts.webRoot = worker.webRoot;
#if FERRY_CONSOLE_TABLE
  ropts.console = ferry::web::consoleAssets();
  ropts.consoleMissing = std::string(ferry::web::consoleMissingReason());
#else
  ropts.consoleMissing = "this program was built without web/";
#endif
  ropts.rocketmqCompat = worker.restRocketmqCompat;
  ropts.listeners = worker.restListeners;
  auto& t = ropts.transport;
  t.tls.keystoreLocation = worker.restKeystoreLocation;
  t.tls.keystoreType = worker.restKeystoreType;
  t.tls.keyPassword = worker.restKeyPassword;
  t.tls.truststoreLocation = worker.restTruststoreLocation;
  t.tls.clientAuthentication = worker.restClientAuthentication;
  t.tls.enabledProtocols = worker.restEnabledProtocols;
  t.headerTimeout = std::chrono::milliseconds(worker.restHeaderTimeoutMs);
  t.bodyTimeout = std::chrono::milliseconds(worker.restBodyTimeoutMs);
  t.idleTimeout = std::chrono::milliseconds(worker.restIdleTimeoutMs);
  t.writeTimeout = std::chrono::milliseconds(worker.restWriteTimeoutMs);
  t.maxConnections = static_cast<std::size_t>(worker.restMaxConnections);
  t.queueCapacity = static_cast<std::size_t>(worker.restRequestQueueSize);
  auto& sec = ropts.security;
  sec.bindHosts = ferry::rest::listenerHosts(ropts);
  sec.auth.clientCertRequired = ferry::rest::clientCertsRequired(ropts);
  sec.auth.usersFile = worker.restAuthUsersFile;
  sec.auth.tokensFile = worker.restAuthTokensFile;
  sec.auth.mtlsDefaultRole = ferry::rest::parseRole(worker.restAuthMtlsDefaultRole);
  sec.allowUnauthenticated = worker.restAuthAllowUnauthenticated;
  sec.allowedHostNames = worker.restAllowedHostNames;
  sec.advertisedHost = worker.restAdvertisedHostName;
  sec.corsAllowOrigins = worker.accessControlAllowOrigin;
  sec.corsAllowMethods = worker.accessControlAllowMethods;
  return ropts;
}

// REST's start-up checks (exposure without authentication, credential files) before anything
// else starts, so a refused worker touches no store, backbone or cluster.
ferry::Status checkRestSecurity(const ferry::runtime::WorkerConfig& worker) {
  auto ropts = restOptionsFor(worker);
  if (auto s = ferry::rest::checkListenerPolicy(ropts.security); !s.isOk()) return s;
  ferry::rest::Authenticator auth(ropts.security.auth);
  if (auth.enabled()) return auth.load();
  return ferry::Status::ok();
}

// Blocks SIGINT/SIGTERM (taken by sigwait() on the main thread) before any thread starts.
sigset_t blockSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

// Serves REST until SIGINT/SIGTERM, then shuts down in reverse order. `stopHerder` returns the
// number of abandoned task threads still running.
int serve(ferry::control::Herder& herder, ferry::backbone::Backbone& backbone, const ferry::runtime::WorkerConfig& worker,
          sigset_t signals, const char* mode, const std::string& where,
          const std::function<std::size_t()>& stopHerder) {
  using namespace ferry;
  auto log = core::logger("worker");
  core::registerPrivateFolder(worker.dataDir);  // error answers name files relative to it
  auto ropts = restOptionsFor(worker);
  ropts.mode = mode;
  // Kafka Connect answers GET / with the Kafka cluster's id; a ferry cluster's is its name.
  if (ropts.mode == "distributed") ropts.clusterId = worker.clusterName;
  rest::RestServer server(herder, std::move(ropts));
  if (auto s = server.start(); !s.isOk()) {
    (void)stopHerder();
    backbone.close();
    return fail("REST: " + s.toString());
  }
  std::string restWhere = "http://" + worker.restHost + ":" + std::to_string(server.port());
  if (!worker.restListeners.empty()) {
    restWhere.clear();
    for (const auto& l : worker.restListeners) restWhere += (restWhere.empty() ? "" : ", ") + l;
  }
  log->info("ferry {} {} worker {} ready: REST on {}, {}", FERRY_VERSION, mode, worker.workerId, restWhere,
            where);
  int sig = 0;
  sigwait(&signals, &sig);
  log->info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
  server.stop();
  const std::size_t abandoned = stopHerder();
  backbone.close();
  if (abandoned > 0) {
    // Abandoned task threads are still running (cancelled: they send, commit and report nothing
    // more). The herder, the plugin registry (its dlopen()ed libraries), the backbone and the
    // stores they may still touch are destroyed by the normal return path, and static
    // destructors run after it: leave now. Stores write synchronously (nothing is buffered) and
    // the backbone is closed, so nothing is lost; the data.dir lock goes with the process.
    log->error("stopped with {} abandoned task thread(s) still running; exiting without running destructors",
               abandoned);
    spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->flush(); });
    std::fflush(nullptr);
    ::_exit(0);
  }
  log->info("stopped");
  spdlog::shutdown();
  return 0;
}

// Whether a definition file holds a pipeline (control/pipeline.h): a JSON object whose "source" is
// an object. A connector's own keys are scalars, so no connector definition looks like this.
bool isPipelineDefinition(std::string_view text) {
  auto j = ferry::core::parseJsonBounded<nlohmann::json>(text, ferry::core::kConfigJsonLimits);
  if (!j.isOk() || !j->is_object()) return false;
  auto src = j->find("source");
  return src != j->end() && src->is_object();
}

// Connector and pipeline definition files: each is created, or updated when its config changed.
ferry::Status applyConnectorFiles(ferry::control::Herder& herder, int argc, char** argv, int first) {
  using namespace ferry;
  for (int i = first; i < argc; ++i) {
    auto def = core::readFile(argv[i]);
    if (!def.isOk()) return def.status();
    if (isPipelineDefinition(*def)) {
      auto spec = control::parsePipeline(*def, std::nullopt);
      if (!spec.isOk()) return Status::invalidArgument(std::string(argv[i]) + ": " + spec.status().message());
      auto created = control::applyPipeline(herder, *spec, control::PipelineWrite::kCreateOrReplace);
      if (!created.isOk())
        return Status::invalidArgument(std::string(argv[i]) + ": pipeline " + spec->name + ": " +
                                       created.status().message());
      core::logger("worker")->info("{} pipeline {} from {}", *created ? "created" : "applied", spec->name, argv[i]);
      continue;
    }
    auto parsed = core::parseConnectorDefinition(*def);
    if (!parsed.isOk()) return Status::invalidArgument(std::string(argv[i]) + ": " + parsed.status().message());
    bool created = false;
    auto info = herder.putConnectorConfig(parsed->name, parsed->config, &created);
    if (!info.isOk())
      return Status::invalidArgument(std::string(argv[i]) + ": connector " + parsed->name + ": " + info.status().message());
    core::logger("worker")->info("{} connector {} from {}", created ? "created" : "applied", parsed->name, argv[i]);
  }
  return Status::ok();
}

int runStandalone(int argc, char** argv) {
  using namespace ferry;
  if (argc < 3) {
    usage(std::cerr);
    return kExitUsage;
  }
  sigset_t signals = blockSignals();
  auto cfg = loadWorkerConfig(argv[2]);
  if (!cfg.isOk()) return fail(cfg.status().message());
  runtime::WorkerConfig worker = *cfg;
  core::initLogging(worker.logLevel);
  auto log = core::logger("worker");
  if (auto s = checkRestSecurity(worker); !s.isOk()) return fail("REST: " + s.message());

  // One worker per data folder.
  if (auto s = core::ensureDir(worker.dataDir); !s.isOk()) return fail(s.toString());
  const std::string lockPath = worker.dataDir + "/.lock";
  int lockFd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lockFd < 0 || ::flock(lockFd, LOCK_EX | LOCK_NB) != 0)
    return fail("data.dir " + worker.dataDir + " is in use by another ferry worker (lock " + lockPath + ")");
  (void)::fchmod(lockFd, 0600);  // a lock file an older version made 0644

  if (auto s = runtime::prepareLocalFiles(worker); !s.isOk()) return fail(s.message());

  const std::string storeDir = worker.dataDir + "/store";
  if (auto s = core::ensureDir(storeDir); !s.isOk()) return fail(s.toString());
  // The stores hold connector configs (and their secrets, unless they are provider references):
  // the folders are the owner's alone, whatever an older version or the umask left.
  for (const std::string& dir : {worker.dataDir, storeDir}) {
    std::vector<std::string> paths{dir};
    if (dir == storeDir)
      for (const auto& e : std::filesystem::directory_iterator(storeDir, std::filesystem::directory_options::skip_permission_denied))
        if (e.is_regular_file()) paths.push_back(e.path().string());
    for (const auto& path : paths) {
      auto was = core::restrictMode(path);
      if (!was.isOk()) return fail(was.status().toString());
      if (*was)
        log->warn("{} was mode {:04o}, readable by other users; tightened to {:04o}", path, **was, **was & 07700);
    }
  }
  auto configs = store::openFileConfigStore(storeDir);
  if (!configs.isOk()) return fail("config store: " + configs.status().toString());
  auto positions = store::openFilePositionStore(storeDir);
  if (!positions.isOk()) return fail("position store: " + positions.status().toString());
  auto statuses = store::openFileStatusStore(storeDir);
  if (!statuses.isOk()) return fail("status store: " + statuses.status().toString());

  auto opened = openBackbone(worker);
  if (!opened.isOk()) return fail(opened.status().toString());
  std::unique_ptr<backbone::Backbone> backbone = std::move(*opened);

  // Exactly-once sources keep their positions in the backbone, written in their transactions.
  std::unique_ptr<runtime::LogPositionStore> logPositions;
  if (worker.exactlyOnceSource) {
    auto lp = runtime::LogPositionStore::open(*backbone, worker.offsetStorageTopic, worker.offsetStoragePartitions,
                                              std::chrono::milliseconds(std::max<std::int64_t>(60000, worker.kafkaRequestTimeoutMs)));
    if (!lp.isOk()) return fail("position store: " + lp.status().toString());
    logPositions = std::move(*lp);
    log->info("exactly-once sources: positions in backbone topic {}", worker.offsetStorageTopic);
  }

  runtime::PluginRegistry registry;
  if (auto s = loadPlugins(registry, worker); !s.isOk()) return fail(s.toString());

  control::StandaloneOptions hopts;
  hopts.worker = worker;
  hopts.registry = &registry;
  hopts.backbone = backbone.get();
  hopts.configs = configs->get();
  hopts.positions = logPositions ? static_cast<store::PositionStore*>(logPositions.get()) : positions->get();
  hopts.statuses = statuses->get();
  auto herder = control::makeStandaloneHerder(hopts);
  if (auto s = herder->start(); !s.isOk()) return fail("herder: " + s.toString());

  // Connector files are applied at every start (create, or update when the config changed).
  if (auto s = applyConnectorFiles(*herder, argc, argv, 3); !s.isOk()) {
    herder->stop();
    return fail(s.message());
  }

  const int rc = serve(*herder, *backbone, worker, signals, "standalone", "data in " + worker.dataDir,
                       [&] {
                         herder->stop();
                         return herder->abandonedTasksRunning();
                       });
  ::close(lockFd);
  return rc;
}

// ferry distributed: the worker joins the cluster named by cluster.name on its backbone; all
// state lives in the backbone (cluster log, snapshots, positions), none in data.dir.
int runDistributed(int argc, char** argv) {
  using namespace ferry;
  if (argc < 3) {
    usage(std::cerr);
    return kExitUsage;
  }
  sigset_t signals = blockSignals();
  auto cfg = loadWorkerConfig(argv[2]);
  if (!cfg.isOk()) return fail(cfg.status().message());
  runtime::WorkerConfig worker = *cfg;
  if (worker.backbone != "kafka" && worker.backbone != "rocketmq")
    return fail(std::string(argv[2]) + ": ferry distributed needs backbone=kafka or backbone=rocketmq (the cluster's "
                "state lives in the backbone; backbone is " + worker.backbone + ")");
  core::initLogging(worker.logLevel);
  auto log = core::logger("worker");
  if (auto s = checkRestSecurity(worker); !s.isOk()) return fail("REST: " + s.message());
  if (auto s = runtime::prepareLocalFiles(worker); !s.isOk()) return fail(s.message());
  auto opened = openBackbone(worker);
  if (!opened.isOk()) return fail(opened.status().toString());
  std::unique_ptr<backbone::Backbone> backbone = std::move(*opened);
  const std::string base = runtime::kClusterTopicPrefix + worker.clusterName;
  auto clusterLog = backbone->openSharedLog(base);
  if (!clusterLog.isOk()) return fail("cluster log " + base + ": " + clusterLog.status().toString());
  auto snapshots = backbone->openSharedLog(base + "-snapshots");
  if (!snapshots.isOk()) return fail("cluster snapshots: " + snapshots.status().toString());
  const std::string positionsTopic = worker.offsetStorageTopicSet ? worker.offsetStorageTopic : base + "-offsets";
  // Not read here: REST must not wait for a topic that exactly-once sources write at every
  // transaction (9.1 s at a restart in a chaos run). A thread of the store reads it while the
  // worker joins; with exactly-once it keeps up with it from then on, so a task starting here
  // reads only the last moment's positions (without, the herder reads what is new before it
  // starts tasks).
  auto positions = runtime::LogPositionStore::open(*backbone, positionsTopic, worker.offsetStoragePartitions,
                                                   std::chrono::milliseconds(std::max<std::int64_t>(60000, worker.kafkaRequestTimeoutMs)),
                                                   /*readNow=*/false);
  if (!positions.isOk()) return fail("position store " + positionsTopic + ": " + positions.status().toString());
  (*positions)->follow(std::chrono::milliseconds(worker.exactlyOnceSource ? 1000 : 0));

  runtime::PluginRegistry registry;
  if (auto s = loadPlugins(registry, worker); !s.isOk()) return fail(s.toString());

  control::DistributedOptions dopts;
  dopts.worker = worker;
  dopts.registry = &registry;
  dopts.backbone = backbone.get();
  dopts.positions = positions->get();
  dopts.log = clusterLog->get();
  dopts.snapshots = snapshots->get();
  dopts.member.workerId = worker.workerId;
  dopts.member.url = worker.restListeners.empty()
                         ? "http://" + worker.restHost + ":" + std::to_string(worker.restPort)
                         : worker.restListeners.front();
  if (!worker.restAdvertisedHostName.empty()) {
    // The URL others use: the listener's scheme and port with the advertised host.
    const auto scheme = dopts.member.url.find("://");
    const auto colon = dopts.member.url.rfind(':');
    if (scheme != std::string::npos && colon > scheme + 2) {
      const std::string& h = worker.restAdvertisedHostName;
      dopts.member.url = dopts.member.url.substr(0, scheme + 3) +
                         (h.find(':') != std::string::npos ? "[" + h + "]" : h) + dopts.member.url.substr(colon);
    }
  }
  dopts.member.capacity = worker.clusterWorkerCapacity;
  dopts.member.heartbeatIntervalMs = worker.clusterHeartbeatIntervalMs;
  dopts.member.leaseMarginMs = worker.clusterLeaseMarginMs;
  dopts.member.cluster.sessionTimeoutMs = worker.clusterSessionTimeoutMs;
  dopts.member.cluster.strategy = worker.clusterStrategy;
  dopts.member.snapshotEveryEvents = worker.clusterSnapshotEvents;
  auto herder = control::makeDistributedHerder(dopts);
  if (auto s = herder->start(); !s.isOk()) return fail("cluster: " + s.toString());
  if (auto s = applyConnectorFiles(*herder, argc, argv, 3); !s.isOk()) {
    herder->stop();
    return fail(s.message());
  }
  return serve(*herder, *backbone, worker, signals, "distributed",
               "cluster " + worker.clusterName + " on the " + worker.backbone + " backbone", [&] {
                 herder->stop();
                 return herder->abandonedTasksRunning();
               });
}

}  // namespace

int main(int argc, char** argv) {
  ferry::core::installCrashHandler();  // a crash leaves its signal, thread and backtrace in the log
  if (argc < 2) {
    usage(std::cerr);
    return kExitUsage;
  }
  const std::string cmd = argv[1];
  if (cmd == "standalone") return runStandalone(argc, argv);
  if (cmd == "distributed") return runDistributed(argc, argv);
  if (cmd == "ctl") return ferry::ctl::run(argc - 1, argv + 1);
  if (cmd == "passwd") return ferry::credentials::runPasswd(argc - 1, argv + 1);
  if (cmd == "token") return ferry::credentials::runToken(argc - 1, argv + 1);
  if (cmd == "version" || cmd == "--version") {
    std::cout << "ferry " << FERRY_VERSION << " (" << FERRY_GIT_COMMIT << ")\n";
    return 0;
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    usage(std::cout);
    return 0;
  }
  std::cerr << "ferry: unknown command '" << cmd << "'\n";
  usage(std::cerr);
  return kExitUsage;
}
