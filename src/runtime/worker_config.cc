// Worker configuration: declarations and parsing (see worker_config.h).
#include "runtime/worker_config.h"

#include <charconv>
#include <cstring>

#include <unistd.h>

namespace ferry::runtime {

const ConfigDef& workerConfigDef() {
  static const ConfigDef def = [] {
    using validators::atLeast;
    using validators::between;
    using validators::oneOf;
    ConfigDef d;
    d.define("worker.id", ConfigType::kString, "", Importance::kMedium,
             "This worker's id in status and REST answers. Default: <hostname>:<rest.port>.");
    d.define("rest.host", ConfigType::kString, "127.0.0.1", Importance::kHigh,
             "Address the REST API listens on.");
    d.define("rest.port", ConfigType::kInt, "8082", Importance::kHigh, "Port of the REST API (0 = any free port).",
             between(0, 65535));
    d.define("listeners", ConfigType::kList, "", Importance::kHigh,
             "REST listeners as in Kafka Connect: a comma list of http://host:port and "
             "https://host:port (an empty host is every interface). Empty: http://<rest.host>:<rest.port>.");
    d.define("listeners.https.ssl.keystore.location", ConfigType::kString, "", Importance::kHigh,
             "https listeners: PEM file holding the private key and the certificate chain. Reloaded "
             "without a restart when it changes (checked at most once a second, on new connections).");
    d.define("listeners.https.ssl.keystore.type", ConfigType::kString, "PEM", Importance::kMedium,
             "Type of the keystore file: only PEM.", oneOf({"PEM"}));
    d.define("listeners.https.ssl.key.password", ConfigType::kPassword, "", Importance::kHigh,
             "Password of an encrypted private key in the keystore.");
    d.define("listeners.https.ssl.truststore.location", ConfigType::kString, "", Importance::kHigh,
             "https listeners: PEM bundle of the CAs that client certificates must chain to.");
    d.define("listeners.https.ssl.client.authentication", ConfigType::kString, "none", Importance::kMedium,
             "Client certificates on https listeners: none, requested (verified when sent) or required.",
             oneOf({"none", "requested", "required"}));
    d.define("listeners.https.ssl.enabled.protocols", ConfigType::kList, "TLSv1.2,TLSv1.3", Importance::kMedium,
             "TLS versions https listeners accept.");
    d.define("rest.request.header.timeout.ms", ConfigType::kLong, "10000", Importance::kLow,
             "A REST client must send a request's whole header (and finish the TLS handshake) within "
             "this time or its connection is closed (slow clients hold no thread, only a socket).",
             between(100, 600000));
    d.define("rest.request.body.timeout.ms", ConfigType::kLong, "30000", Importance::kLow,
             "A REST client must send a request's body within this time after its header.", between(100, 3600000));
    d.define("rest.keepalive.idle.timeout.ms", ConfigType::kLong, "30000", Importance::kLow,
             "An idle keep-alive REST connection is closed after this time (Kafka Connect's Jetty: 30 s).",
             between(100, 3600000));
    d.define("rest.response.write.timeout.ms", ConfigType::kLong, "30000", Importance::kLow,
             "A REST client must take an answer within this time or its connection is closed.",
             between(100, 3600000));
    d.define("rest.max.connections", ConfigType::kLong, "1024", Importance::kLow,
             "Most open REST connections; further ones are closed at once (and logged at most once a second).",
             between(1, 1000000));
    d.define("rest.request.queue.size", ConfigType::kLong, "64", Importance::kLow,
             "Most complete REST requests waiting for a handler thread; beyond it a request is answered "
             "503 with Retry-After: 1.", between(1, 100000));
    d.define("data.dir", ConfigType::kString, "ferry-data", Importance::kHigh,
             "Folder for the stores (configs, positions, status) and the embedded backbone.",
             validators::nonEmptyString());
    d.define("plugin.path", ConfigType::kList, "", Importance::kMedium,
             "Folders searched for shared-library plugins (*.so, one level deep) and for Java connector "
             "plugins (a jar, or a folder of jars, in each; run by the JVM host).");
    d.define("jvm.java.home", ConfigType::kString, "", Importance::kMedium,
             "The Java 17+ runtime that runs the JVM connector host (its bin/java); empty: $JAVA_HOME, else "
             "java on PATH. The host starts only when plugin.path holds Java jars.");
    d.define("jvm.heap.max", ConfigType::kString, "", Importance::kMedium,
             "The JVM host's maximum heap (-Xmx), e.g. 512m or 2g; empty: the JVM's default.",
             [](const std::string&, const ConfigValue& v) -> std::optional<std::string> {
               const auto& s = std::get<std::string>(v);
               std::size_t digits = 0;
               while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
               const bool ok = s.empty() || (digits > 0 && digits <= 12 &&
                                             (digits == s.size() || (digits + 1 == s.size() && s.back() != '\0' && std::strchr("kKmMgG", s.back()) != nullptr)));
               if (ok) return std::nullopt;
               return "must be a size such as 512m or 2g";
             });
    d.define("jvm.options", ConfigType::kList, "", Importance::kLow, "More options for the JVM host's java command.");
    d.define("jvm.host.classpath", ConfigType::kString, "", Importance::kLow,
             "The JVM host's jar and libraries as a java class path; empty: where this build put them.");
    d.define("jvm.plugin.isolation", ConfigType::kBool, "true", Importance::kLow,
             "Load each Java plugin in a class loader of its own (as Kafka Connect); false: one loader for all.");
    d.define("file.allowed.dirs", ConfigType::kList, "", Importance::kHigh,
             "Folders where connectors may read and write local files (FileStreamSource, "
             "FileStreamSink, ...); empty: <data.dir>/files, created 0700 at start. Paths are "
             "resolved (.., symbolic links) before the check; plugin.path and data.dir's own "
             "files stay off limits.");
    d.define("web.root", ConfigType::kString, "", Importance::kLow, "Static files served under /ui/.");
    d.define("rest.auth.users.file", ConfigType::kString, "", Importance::kHigh,
             "REST users, one name:role:hash a line (roles viewer, operator, admin; hashes from `ferry passwd`). "
             "Set, it turns REST authentication on (HTTP basic). Re-read when it changes.");
    d.define("rest.auth.tokens.file", ConfigType::kString, "", Importance::kHigh,
             "REST bearer tokens, one name:role:<sha256 hex of the token> a line (from `ferry token`). Set, it "
             "turns REST authentication on. Re-read when it changes.");
    d.define("rest.auth.mtls.default.role", ConfigType::kString, "", Importance::kMedium,
             "Role of a verified TLS client certificate whose CN is not in rest.auth.users.file; empty refuses it.",
             oneOf({"", "viewer", "operator", "admin"}));
    d.define("rest.auth.allow.unauthenticated", ConfigType::kBool, "false", Importance::kHigh,
             "Serve REST without authentication on a non-loopback rest.host (the worker refuses to start "
             "otherwise). Anyone who reaches the port may then change every connector.");
    d.define("rest.advertised.host.name", ConfigType::kString, "", Importance::kMedium,
             "The host name clients and other workers use to reach this worker's REST API (Kafka Connect's key): "
             "accepted in the Host header by default and used in the cluster's member URL. Empty: the listener's host.");
    d.define("rest.allowed.host.names", ConfigType::kList, "", Importance::kMedium,
             "Names the REST Host header may carry (DNS-rebinding defence). Default: localhost, 127.0.0.1, ::1, "
             "rest.host, this machine's host name (and with a wildcard rest.host its interface addresses). "
             "* turns the check off.");
    d.define("access.control.allow.origin", ConfigType::kList, "", Importance::kLow,
             "CORS: origins (scheme://host:port) whose pages may call the REST API; empty turns CORS off. "
             "* (any origin) is refused while authentication is on.");
    d.define("access.control.allow.methods", ConfigType::kString, "", Importance::kLow,
             "CORS: methods allowed cross-origin (comma-separated); empty means GET,POST,HEAD.");
    d.define("log.level", ConfigType::kString, "info", Importance::kMedium, "Root log level.",
             oneOf({"trace", "debug", "info", "warn", "error", "off"}));
    d.define("backbone", ConfigType::kString, "embedded", Importance::kHigh,
             "The queue between source and sink tasks: embedded (a durable local log in data.dir) or "
             "rocketmq (topics and consumer groups in a RocketMQ cluster) or kafka (topics and "
             "consumer groups in a Kafka cluster).",
             oneOf({"embedded", "rocketmq", "kafka"}));
    d.define("backbone.kafka.bootstrap.servers", ConfigType::kString, "127.0.0.1:9092", Importance::kHigh,
             "Brokers of the kafka backbone (host:port,host:port).", validators::nonEmptyString());
    d.define("backbone.kafka.replication.factor", ConfigType::kInt, "-1", Importance::kMedium,
             "Replication factor of topics the kafka backbone creates (-1: the brokers' default).",
             between(-1, 32));
    d.define("backbone.kafka.static.membership", ConfigType::kBool, "true", Importance::kMedium,
             "Sink consumers join their group as static members (group.instance.id = <connector>-<task>): "
             "a worker restarted after a crash gets its partitions back at once, without a rebalance.");
    d.define("backbone.kafka.session.timeout.ms", ConfigType::kLong, "10000", Importance::kLow,
             "Group session timeout of the kafka backbone's consumers: how long a member that stopped "
             "answering keeps its partitions.", between(1000, 3600000));
    d.define("backbone.kafka.request.timeout.ms", ConfigType::kLong, "10000", Importance::kLow,
             "Timeout of the kafka backbone's metadata and admin requests.", between(100, 600000));
    d.define("exactly.once.source.support", ConfigType::kString, "disabled", Importance::kMedium,
             "enabled: every source task writes its records and its positions in one Kafka transaction "
             "(transactional.id ferry-<connector>-<task>, fencing zombies), and positions live in "
             "offset.storage.topic; needs backbone=kafka. As Kafka Connect's key of the same name.",
             oneOf({"disabled", "enabled"}));
    d.define("offset.storage.topic", ConfigType::kString, "ferry-offsets", Importance::kMedium,
             "Backbone topic holding source positions when exactly.once.source.support=enabled "
             "(Kafka Connect's record format: key [\"<connector>\", {partition}], value {offset}).",
             validators::nonEmptyString());
    d.define("schema.storage.topic", ConfigType::kString, "ferry-schemas", Importance::kLow,
             "Backbone topic (one queue) holding the schemas of records written with JsonConverter and "
             "schemas.enable=false: such records carry the schema's id in a header ferry.schema.value / "
             "ferry.schema.key instead of the schema, and a sink reading them the same way gets them typed. "
             "Empty: schemas are dropped there, as Kafka Connect does.");
    d.define("offset.storage.partitions", ConfigType::kInt, "5", Importance::kLow,
             "Partitions of offset.storage.topic when ferry creates it.", between(1, 1000));
    d.define("cluster.name", ConfigType::kString, "ferry", Importance::kHigh,
             "Distributed mode: the cluster this worker joins; its log, snapshot and position topics are "
             "ferry-cluster-<name>, ferry-cluster-<name>-snapshots, ferry-cluster-<name>-offsets.",
             validators::nonEmptyString());
    d.define("cluster.session.timeout.ms", ConfigType::kLong, "2000", Importance::kMedium,
             "Distributed mode: a worker whose last heartbeat is older than this (in the log's time) is gone "
             "and its units move.", between(500, 600000));
    d.define("cluster.heartbeat.interval.ms", ConfigType::kLong, "500", Importance::kLow,
             "Distributed mode: how often a worker appends its heartbeat.", between(50, 60000));
    d.define("cluster.lease.margin.ms", ConfigType::kLong, "500", Importance::kLow,
             "Distributed mode: a worker stops its units this long before others could drop it.",
             between(0, 60000));
    d.define("cluster.assignment.strategy", ConfigType::kString, "sticky-balanced", Importance::kMedium,
             "Distributed mode: sticky-balanced, consistent-hashing or load-weighted.",
             oneOf({"sticky-balanced", "consistent-hashing", "load-weighted"}));
    d.define("cluster.worker.capacity", ConfigType::kDouble, "1", Importance::kLow,
             "Distributed mode, load-weighted: this worker's relative capacity.");
    d.define("cluster.snapshot.interval.events", ConfigType::kLong, "2000", Importance::kLow,
             "Distributed mode: a snapshot of the cluster state is written every this many log events.",
             atLeast(10));
    d.define("backbone.rocketmq.namesrv", ConfigType::kString, "127.0.0.1:9876", Importance::kHigh,
             "NameServer addresses of the rocketmq backbone (host:port;host:port).");
    d.define("backbone.rocketmq.cluster", ConfigType::kString, "", Importance::kMedium,
             "Cluster in which the rocketmq backbone creates topics (empty: every cluster).");
    d.define("backbone.rocketmq.access.key", ConfigType::kString, "", Importance::kMedium,
             "ACL access key of the rocketmq backbone; when set every request is signed.");
    d.define("backbone.rocketmq.secret.key", ConfigType::kPassword, "", Importance::kMedium,
             "ACL secret key of the rocketmq backbone.");
    d.define("backbone.rocketmq.max.inflight", ConfigType::kLong, "1024", Importance::kLow,
             "Most unacknowledged sends per rocketmq backbone producer; a source waits for room. "
             "Bounds the resends (duplicates) after a broker restart.", atLeast(1));
    d.define("backbone.embedded.segment.bytes", ConfigType::kLong, std::to_string(64ll << 20), Importance::kLow,
             "Size at which the embedded log rolls a new segment file.", atLeast(4096));
    d.define("backbone.embedded.fsync", ConfigType::kString, "always", Importance::kMedium,
             "When the embedded log fsyncs. always: a write is acknowledged only once fdatasync()ed (one "
             "fdatasync per queue per write batch), so nothing acknowledged is lost when the machine loses "
             "power. interval: acknowledged once written to the file (survives a crash of the process), "
             "fdatasync()ed every fsync.interval.ms and before any source position or sink offset that "
             "covers it is committed; a power loss can lose up to one interval of acknowledged records "
             "(sources that resume from positions send them again; sources that acknowledged upstream do "
             "not). never: the kernel writes back when it likes.",
             oneOf({"always", "interval", "never"}));
    d.define("backbone.embedded.fsync.interval.ms", ConfigType::kLong, "1000", Importance::kLow,
             "fsync period for backbone.embedded.fsync=interval, and how often the embedded log writes its "
             "end-offset checkpoint (every policy).", atLeast(1));
    d.define("backbone.embedded.max.record.bytes", ConfigType::kLong, std::to_string(16ll << 20), Importance::kLow,
             "The largest record (key, value and headers, framed) the embedded log accepts; a larger one is "
             "refused at send, with errors.tolerance deciding what the task does.",
             between(1024, (256ll << 20) - 64));
    d.define("backbone.embedded.retention.bytes", ConfigType::kLong, "-1", Importance::kMedium,
             "Bytes kept per queue (-1 = no limit).", atLeast(-1));
    d.define("backbone.embedded.retention.ms", ConfigType::kLong, std::to_string(7ll * 24 * 3600 * 1000),
             Importance::kMedium, "Age after which segments are deleted (-1 = no limit).", atLeast(-1));
    d.define("backbone.topic.default.queues", ConfigType::kInt, "4", Importance::kMedium,
             "Queues of topics created automatically.", between(1, 1024));
    d.define("offset.flush.interval.ms", ConfigType::kLong, "1000", Importance::kMedium,
             "How often tasks commit positions (sources) and offsets (sinks).", atLeast(1));
    d.define("offset.flush.timeout.ms", ConfigType::kLong, "5000", Importance::kLow,
             "How long a stopping task waits for in-flight records to be acknowledged.", atLeast(0));
    d.define("key.converter", ConfigType::kClass, "ByteArrayConverter", Importance::kMedium,
             "Default converter for record keys.");
    d.define("value.converter", ConfigType::kClass, "ByteArrayConverter", Importance::kMedium,
             "Default converter for record values.");
    d.define("header.converter", ConfigType::kClass, "SimpleHeaderConverter", Importance::kLow,
             "Default converter applied to every header value at the backbone boundary "
             "(SimpleHeaderConverter: as they are; header.converter.* configures it).");
    d.define("task.restart.enable", ConfigType::kBool, "true", Importance::kMedium,
             "Restart failed tasks and connectors automatically, with exponential backoff.");
    d.define("task.restart.backoff.initial.ms", ConfigType::kLong, "1000", Importance::kLow,
             "First automatic restart delay.", atLeast(0));
    d.define("task.restart.backoff.max.ms", ConfigType::kLong, "60000", Importance::kLow,
             "Largest automatic restart delay.", atLeast(0));
    d.define("task.max.inflight.records", ConfigType::kLong, "100000", Importance::kMedium,
             "Records a task holds before they are safe (backpressure bound).", atLeast(1));
    d.define("task.max.inflight.bytes", ConfigType::kLong, std::to_string(64ll << 20), Importance::kMedium,
             "Bytes a task holds before they are safe (backpressure bound).", atLeast(1024));
    d.define("task.threads", ConfigType::kLong, "0", Importance::kLow,
             "Shared threads that run every task's loop (0: one per core, at least 2). A connector call that "
             "blocks longer than 50 ms is moved off them onto an extra thread while it blocks.",
             between(0, 1024));
    d.define("task.poll.batch", ConfigType::kLong, "2000", Importance::kLow,
             "Most records one poll of a source task or the backbone returns.", atLeast(1));
    d.define("tasks.max.limit", ConfigType::kLong, "1000", Importance::kLow,
             "The most tasks one connector may ask for (its tasks.max); a larger tasks.max is refused when the "
             "connector is validated or created.", between(1, 1000000));
    d.define("config.providers", ConfigType::kList, "", Importance::kMedium,
             "Config providers this worker enables (file, env, directory; Kafka Connect's KIP-297): "
             "connector configs may then hold ${file:/path/f.properties:key}, ${directory:/path:file} or "
             "${env:NAME}, resolved only where a connector or task starts. Each provider is set with "
             "config.providers.<name>.class and config.providers.<name>.param.* (allowed.paths for file and "
             "directory, allowlist.pattern for env; both read nothing until set). See src/runtime/README.md.");
    d.define("config.unknown.keys", ConfigType::kString, "accept", Importance::kMedium,
             "Connector config keys that neither the connector nor the framework declares: accept (as Kafka "
             "Connect does: stored, passed to the connector, reported as warnings by validate) or refuse (a "
             "create or update naming one is answered 400).",
             validators::oneOf({"accept", "refuse"}));
    d.define("connector.client.config.override.policy", ConfigType::kString, "All", Importance::kMedium,
             "Kafka Connect's policy for producer.override.*, consumer.override.* and admin.override.* keys in "
             "connector configs: None (refused), Principal (only sasl.jaas.config, sasl.mechanism and "
             "security.protocol) or All.",
             validators::oneOf({"None", "Principal", "All"}));
    d.define("rest.rocketmq.compat.enabled", ConfigType::kBool, "false", Importance::kMedium,
             "Serve RocketMQ Connect's REST dialect: its GET-verb operations (GET /connectors/{name}/stop|pause|"
             "resume|restart, GET /connectors/{stop,pause,resume}/all), POST /connectors/{name} (create or "
             "update), /plugin/list/connectors, /plugin/config[/validate], /plugin/reload. Off by default: a GET "
             "that changes state can be triggered by any web page or link. Its read-only paths (/getClusterInfo, "
             "/connectors/list, /allocated/*, /plugin/list) are always served.");
    d.define("task.shutdown.graceful.timeout.ms", ConfigType::kLong, "5000", Importance::kLow,
             "How long stopping a task may take (a stop, delete, restart, reconfiguration or the "
             "worker's shutdown). A task still running then is abandoned: its thread is left "
             "running, cancelled so that nothing it does afterwards takes effect, logged and "
             "counted (ferry_tasks_abandoned_total).", atLeast(0));
    return d;
  }();
  return def;
}

Result<WorkerConfig> parseWorkerConfig(const StringMap& props) {
  FERRY_ASSIGN_OR_RETURN(ParsedConfig p,
                         workerConfigDef().parse(props, /*rejectUnknown=*/true,
                                                 {"key.converter.", "value.converter.", "header.converter.", "backbone.kafka.client.",
                                                  "backbone.kafka.producer.", "backbone.kafka.consumer.",
                                                  "config.providers."}));
  WorkerConfig c;
  c.restHost = p.getString("rest.host");
  c.restPort = p.getInt("rest.port");
  c.restListeners = p.getList("listeners");
  c.workerId = p.getString("worker.id");
  if (c.workerId.empty()) {
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "localhost");
    // The port clients reach: the first listener's when `listeners` is set, else rest.port.
    int port = c.restPort;
    if (!c.restListeners.empty()) {
      const std::string& l = c.restListeners.front();
      const auto colon = l.rfind(':');
      int parsed = -1;
      if (colon != std::string::npos && colon + 1 < l.size()) {
        auto [end, ec] = std::from_chars(l.data() + colon + 1, l.data() + l.size(), parsed);
        if (ec != std::errc() || end != l.data() + l.size()) parsed = -1;
      }
      if (parsed > 0) port = parsed;
    }
    c.workerId = std::string(host) + ":" + std::to_string(port);
  }
  c.restKeystoreLocation = p.getString("listeners.https.ssl.keystore.location");
  c.restKeystoreType = p.getString("listeners.https.ssl.keystore.type");
  c.restKeyPassword = p.getString("listeners.https.ssl.key.password");
  c.restTruststoreLocation = p.getString("listeners.https.ssl.truststore.location");
  c.restClientAuthentication = p.getString("listeners.https.ssl.client.authentication");
  c.restEnabledProtocols = p.getList("listeners.https.ssl.enabled.protocols");
  c.restHeaderTimeoutMs = p.getLong("rest.request.header.timeout.ms");
  c.restBodyTimeoutMs = p.getLong("rest.request.body.timeout.ms");
  c.restIdleTimeoutMs = p.getLong("rest.keepalive.idle.timeout.ms");
  c.restWriteTimeoutMs = p.getLong("rest.response.write.timeout.ms");
  c.restMaxConnections = p.getLong("rest.max.connections");
  c.restRequestQueueSize = p.getLong("rest.request.queue.size");
  for (const auto& l : c.restListeners)
    if (l.rfind("https://", 0) == 0 && c.restKeystoreLocation.empty())
      return Status::invalidArgument("listeners has " + l +
                                     ": set listeners.https.ssl.keystore.location to a PEM file with "
                                     "the private key and certificate chain");
  c.dataDir = p.getString("data.dir");
  c.pluginPath = p.getList("plugin.path");
  c.jvmJavaHome = p.getString("jvm.java.home");
  c.jvmHeapMax = p.getString("jvm.heap.max");
  c.jvmOptions = p.getList("jvm.options");
  c.jvmHostClasspath = p.getString("jvm.host.classpath");
  c.jvmPluginIsolation = p.getBool("jvm.plugin.isolation");
  c.fileAllowedDirs = p.getList("file.allowed.dirs");
  c.webRoot = p.getString("web.root");
  c.restAuthUsersFile = p.getString("rest.auth.users.file");
  c.restAuthTokensFile = p.getString("rest.auth.tokens.file");
  c.restAuthMtlsDefaultRole = p.getString("rest.auth.mtls.default.role");
  c.restAuthAllowUnauthenticated = p.getBool("rest.auth.allow.unauthenticated");
  c.restAllowedHostNames = p.getList("rest.allowed.host.names");
  c.restAdvertisedHostName = p.getString("rest.advertised.host.name");
  c.accessControlAllowOrigin = p.getList("access.control.allow.origin");
  c.accessControlAllowMethods = p.getString("access.control.allow.methods");
  c.logLevel = p.getString("log.level");
  c.backbone = p.getString("backbone");
  c.embeddedSegmentBytes = p.getLong("backbone.embedded.segment.bytes");
  c.embeddedFsync = p.getString("backbone.embedded.fsync");
  c.embeddedFsyncIntervalMs = p.getLong("backbone.embedded.fsync.interval.ms");
  c.embeddedMaxRecordBytes = p.getLong("backbone.embedded.max.record.bytes");
  c.tasksMaxLimit = p.getLong("tasks.max.limit");
  c.refuseUnknownConnectorKeys = p.getString("config.unknown.keys") == "refuse";
  c.clientOverridePolicy = p.getString("connector.client.config.override.policy");
  c.restRocketmqCompat = p.getBool("rest.rocketmq.compat.enabled");
  c.embeddedRetentionBytes = p.getLong("backbone.embedded.retention.bytes");
  c.embeddedRetentionMs = p.getLong("backbone.embedded.retention.ms");
  c.defaultQueues = p.getInt("backbone.topic.default.queues");
  c.rocketmqNamesrv = p.getString("backbone.rocketmq.namesrv");
  c.rocketmqCluster = p.getString("backbone.rocketmq.cluster");
  c.rocketmqMaxInflight = p.getLong("backbone.rocketmq.max.inflight");
  c.rocketmqAccessKey = p.getString("backbone.rocketmq.access.key");
  c.rocketmqSecretKey = p.getString("backbone.rocketmq.secret.key");
  c.kafkaBootstrapServers = p.getString("backbone.kafka.bootstrap.servers");
  c.kafkaReplicationFactor = p.getInt("backbone.kafka.replication.factor");
  c.kafkaStaticMembership = p.getBool("backbone.kafka.static.membership");
  c.kafkaSessionTimeoutMs = p.getLong("backbone.kafka.session.timeout.ms");
  c.kafkaRequestTimeoutMs = p.getLong("backbone.kafka.request.timeout.ms");
  c.kafkaClientConfig = p.originalsWithPrefix("backbone.kafka.client.");
  c.kafkaProducerConfig = p.originalsWithPrefix("backbone.kafka.producer.");
  c.kafkaConsumerConfig = p.originalsWithPrefix("backbone.kafka.consumer.");
  c.clusterName = p.getString("cluster.name");
  c.clusterSessionTimeoutMs = p.getLong("cluster.session.timeout.ms");
  c.clusterHeartbeatIntervalMs = p.getLong("cluster.heartbeat.interval.ms");
  c.clusterLeaseMarginMs = p.getLong("cluster.lease.margin.ms");
  c.clusterStrategy = p.getString("cluster.assignment.strategy");
  c.clusterWorkerCapacity = p.getDouble("cluster.worker.capacity");
  c.clusterSnapshotEvents = p.getLong("cluster.snapshot.interval.events");
  c.offsetStorageTopicSet = props.count("offset.storage.topic") > 0;
  if (c.clusterHeartbeatIntervalMs * 2 > c.clusterSessionTimeoutMs)
    return Status::invalidArgument("cluster.heartbeat.interval.ms must be at most half of cluster.session.timeout.ms");
  c.exactlyOnceSource = p.getString("exactly.once.source.support") == "enabled";
  c.offsetStorageTopic = p.getString("offset.storage.topic");
  c.schemaStorageTopic = p.getString("schema.storage.topic");
  c.offsetStoragePartitions = p.getInt("offset.storage.partitions");
  if (c.exactlyOnceSource && c.backbone != "kafka")
    return Status::invalidArgument("exactly.once.source.support=enabled needs backbone=kafka (backbone is " +
                                   c.backbone + ")");
  c.offsetFlushIntervalMs = p.getLong("offset.flush.interval.ms");
  c.offsetFlushTimeoutMs = p.getLong("offset.flush.timeout.ms");
  c.keyConverter = p.getString("key.converter");
  c.valueConverter = p.getString("value.converter");
  c.headerConverter = p.getString("header.converter");
  c.keyConverterConfig = p.originalsWithPrefix("key.converter.");
  c.valueConverterConfig = p.originalsWithPrefix("value.converter.");
  c.headerConverterConfig = p.originalsWithPrefix("header.converter.");
  c.taskRestartEnable = p.getBool("task.restart.enable");
  c.taskRestartBackoffInitialMs = p.getLong("task.restart.backoff.initial.ms");
  c.taskRestartBackoffMaxMs = p.getLong("task.restart.backoff.max.ms");
  c.taskMaxInflightRecords = p.getLong("task.max.inflight.records");
  c.taskMaxInflightBytes = p.getLong("task.max.inflight.bytes");
  c.taskPollBatch = p.getLong("task.poll.batch");
  c.taskThreads = static_cast<int>(p.getLong("task.threads"));
  c.taskShutdownTimeoutMs = p.getLong("task.shutdown.graceful.timeout.ms");
  FERRY_ASSIGN_OR_RETURN(c.configProviders, ConfigProviders::fromWorkerProps(props));
  return c;
}

}  // namespace ferry::runtime
