// JdbcSource for PostgreSQL and MySQL/MariaDB (see jdbc_source.h and connectors/jdbc/README.md).
#include "connectors/jdbc/jdbc_source.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <set>
#include <thread>

#include "connectors/common.h"
#include "connectors/jdbc/mariadb_client.h"
#include "connectors/jdbc/pg_client.h"
#include "connectors/jdbc/values.h"
#include "core/clock.h"
#include "core/json_text.h"
#include "core/logging.h"
#include "core/thread.h"

namespace ferry::connectors {
namespace {

constexpr const char* kTablesKey = "ferry.tables";  // task config: a JSON array of qualified names

Result<JdbcSourceTask::Mode> modeOf(const std::string& s) {
  if (s == "bulk") return JdbcSourceTask::Mode::kBulk;
  if (s == "incrementing") return JdbcSourceTask::Mode::kIncrementing;
  if (s == "timestamp") return JdbcSourceTask::Mode::kTimestamp;
  if (s == "timestamp+incrementing") return JdbcSourceTask::Mode::kTimestampIncrementing;
  return Status::invalidArgument("mode must be bulk, incrementing, timestamp or timestamp+incrementing, not '" + s +
                                 "'");
}

// The checks of a config that need more than one key; InvalidArgument naming the key first.
Status checkCombination(const ParsedConfig& p) {
  FERRY_ASSIGN_OR_RETURN(auto mode, modeOf(p.getString("mode")));
  FERRY_RETURN_IF_ERROR(jdbc::numericMappingOf(p.getString("numeric.mapping")).status());
  if (Status z = core::TimeZone::load(p.getString("db.timezone")).status(); !z.isOk())
    return Status::invalidArgument("db.timezone: " + z.message());
  const bool incrementing =
      mode == JdbcSourceTask::Mode::kIncrementing || mode == JdbcSourceTask::Mode::kTimestampIncrementing;
  const bool timestamp =
      mode == JdbcSourceTask::Mode::kTimestamp || mode == JdbcSourceTask::Mode::kTimestampIncrementing;
  if (incrementing && p.getString("incrementing.column.name").empty())
    return Status::invalidArgument("incrementing.column.name: mode=" + p.getString("mode") +
                                   " needs the name of a strictly increasing column");
  if (timestamp && p.getList("timestamp.column.name").empty())
    return Status::invalidArgument("timestamp.column.name: mode=" + p.getString("mode") +
                                   " needs one or more timestamp columns");
  const bool query = !p.getString("query").empty();
  if (query && p.getString("topic.prefix").empty())
    return Status::invalidArgument("topic.prefix: a query's records go to the topic named by topic.prefix: it must not be empty");
  if (query && (!p.getList("table.whitelist").empty() || !p.getList("table.blacklist").empty()))
    return Status::invalidArgument("query: a query reads no tables: leave table.whitelist and table.blacklist empty");
  if (!p.getList("table.whitelist").empty() && !p.getList("table.blacklist").empty())
    return Status::invalidArgument("table.blacklist: give table.whitelist or table.blacklist, not both");
  for (const auto& t : p.getList("table.types"))
    if (t != "TABLE" && t != "VIEW" && t != "PARTITIONED TABLE" && t != "MATERIALIZED VIEW")
      return Status::invalidArgument("table.types: '" + t + "' is not TABLE, PARTITIONED TABLE, VIEW or MATERIALIZED VIEW");
  const std::string url = p.getString("connection.url");
  if (jdbc::isMariaDbUrl(url)) {
    FERRY_RETURN_IF_ERROR(jdbc::parseMariaDbUrl(url).status());
    for (const auto& t : p.getList("table.types"))
      if (t != "TABLE" && t != "VIEW")
        return Status::invalidArgument("table.types: MySQL and MariaDB have TABLE and VIEW, not '" + t + "'");
  } else if (!jdbc::isPostgresUrl(url)) {
    return Status::invalidArgument("connection.url: postgresql://, mysql:// or mariadb://host:port/database "
                                   "expected, got '" + url.substr(0, url.find(':')) + ":...'");
  }
  return Status::ok();
}

// "schema.table" -> {schema, table}; a name without a dot has no schema.
std::pair<std::string, std::string> splitQualified(const std::string& q) {
  const auto dot = q.find('.');
  if (dot == std::string::npos) return {"", q};
  return {q.substr(0, dot), q.substr(dot + 1)};
}

bool parseInt64(std::string_view s, std::int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

// A name from the config quoted for the URL's database.
Result<std::string> quoted(const std::string& url, std::string_view name) {
  return jdbc::isMariaDbUrl(url) ? jdbc::mysqlIdentifier(name, true) : jdbc::identifier(name, true);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Connector

const ConfigDef& JdbcSourceConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("connection.url", ConfigType::kString, std::nullopt, Importance::kHigh,
             "postgresql://host:port/database[?params], or mysql:// / mariadb://host:port/database (a leading "
             "jdbc: is accepted).",
             validators::nonEmptyString());
    d.define("connection.user", ConfigType::kString, "", Importance::kHigh, "The database user.");
    d.define("connection.password", ConfigType::kPassword, "", Importance::kHigh,
             "The user's password (a secret: never shown, use ${file:...} or ${env:...}).");
    d.define("mode", ConfigType::kString, std::nullopt, Importance::kHigh,
             "bulk: every row, every poll; incrementing: rows whose incrementing column is above the "
             "last one read; timestamp: rows whose timestamp is after the last one read; "
             "timestamp+incrementing: both (new and updated rows, none missed).",
             validators::oneOf({"bulk", "incrementing", "timestamp", "timestamp+incrementing"}));
    d.define("incrementing.column.name", ConfigType::kString, "", Importance::kMedium,
             "A strictly increasing integer column (a serial or identity key).");
    d.define("timestamp.column.name", ConfigType::kList, "", Importance::kMedium,
             "One or more timestamp columns; with several, the first that is not NULL (COALESCE).");
    d.define("timestamp.delay.interval.ms", ConfigType::kLong, "0", Importance::kMedium,
             "Timestamp modes read only rows at least this old, leaving time for transactions "
             "with earlier timestamps to commit.",
             validators::atLeast(0));
    d.define("table.whitelist", ConfigType::kList, "", Importance::kMedium,
             "The tables to read (table or schema.table); empty = every table the user sees.");
    d.define("table.blacklist", ConfigType::kList, "", Importance::kMedium,
             "Tables not to read (table or schema.table).");
    d.define("table.types", ConfigType::kList, "TABLE", Importance::kLow,
             "Which relations are tables: TABLE, PARTITIONED TABLE, VIEW, MATERIALIZED VIEW.");
    d.define("schema.pattern", ConfigType::kString, "", Importance::kLow,
             "Only tables of this schema; empty = every schema except the system ones.");
    d.define("query", ConfigType::kString, "", Importance::kMedium,
             "Read this query's rows instead of tables (it is wrapped as a subquery; the mode's "
             "columns must be among its columns).");
    d.define("topic.prefix", ConfigType::kString, std::nullopt, Importance::kHigh,
             "Topic of a table's records: this prefix + the table name (may be empty); of a query's: the "
             "prefix alone.");
    d.define("poll.interval.ms", ConfigType::kLong, "5000", Importance::kMedium,
             "How long a table that has no new rows rests before it is read again.", validators::atLeast(1));
    d.define("batch.max.rows", ConfigType::kInt, "100", Importance::kLow,
             "Rows read from one table at a time.", validators::atLeast(1));
    d.define("table.poll.interval.ms", ConfigType::kLong, "60000", Importance::kLow,
             "How often the list of tables is read again (new and dropped tables reconfigure the tasks).",
             validators::atLeast(100));
    d.define("numeric.mapping", ConfigType::kString, "none", Importance::kLow,
             "NUMERIC columns: none = Decimal; precision_only = NUMERIC(p,0), p <= 18, as an integer "
             "type; best_fit = that, and NUMERIC(p,s>0), p <= 18, as float64.",
             validators::oneOf({"none", "precision_only", "best_fit"}));
    d.define("db.timezone", ConfigType::kString, "UTC", Importance::kLow,
             "The zone of timestamp columns without a zone (PostgreSQL timestamp, MySQL DATETIME): a zone of the "
             "zone database (Europe/Paris), UTC, or an offset (+02:00).",
             validators::nonEmptyString());
    return d;
  }();
  return def;
}

std::string JdbcSourceConnector::version() const { return kVersion; }

void JdbcSourceConnector::validate(const StringMap& config, ConfigValidation& validation) const {
  auto p = definition().parse(config, /*rejectUnknown=*/false);
  if (!p.isOk()) return;  // the per-key errors are reported by the runtime's own check
  if (Status s = checkCombination(*p); !s.isOk()) {
    const std::string& m = s.message();
    const auto key = m.substr(0, m.find_first_of("=:"));
    validation.errors[definition().find(key) ? key : "mode"].push_back(m);
  }
}

Status JdbcSourceConnector::start(const StringMap& config, ConnectorContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "JdbcSource"));
  if (Status s = checkCombination(p); !s.isOk()) return s.withContext("JdbcSource");
  config_ = config;
  context_ = &context;
  if (!p.getString("query").empty()) return Status::ok();  // one task reads the query
  // A refused password or a missing database fails now; an unreachable server is looked for
  // again by the monitor (the connector runs with no tasks until then).
  auto tables = listTables();
  if (!tables.isOk() && tables.status().code() != StatusCode::kUnavailable)
    return tables.status().withContext("JdbcSource");
  if (tables.isOk()) tables_ = std::move(*tables);
  else core::logger("jdbc")->warn("JdbcSource {}: cannot list tables yet: {}", context.connectorName(), tables.status().message());
  stopping_ = false;
  monitor_ = core::namedThread("jdbc-tables", [this] { monitor(); });
  return Status::ok();
}

Result<std::vector<std::string>> JdbcSourceConnector::listTables() {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config_, "JdbcSource"));
  FERRY_ASSIGN_OR_RETURN(auto db, jdbc::SourceDb::connect(p.getString("connection.url"), p.getString("connection.user"),
                                                           p.getString("connection.password"), 10));
  FERRY_ASSIGN_OR_RETURN(auto rows, db->listTables(p.getList("table.types"), p.getString("schema.pattern")));
  const auto white = p.getList("table.whitelist");
  const auto black = p.getList("table.blacklist");
  auto listed = [](const std::vector<std::string>& list, const std::string& s, const std::string& t) {
    return std::find(list.begin(), list.end(), t) != list.end() ||
           std::find(list.begin(), list.end(), s + "." + t) != list.end();
  };
  std::vector<std::string> out;
  for (const auto& r : rows) {
    const std::string& s = r.schema;
    const std::string& t = r.table;
    if (!white.empty() && !listed(white, s, t)) continue;
    if (listed(black, s, t)) continue;
    out.push_back(s + "." + t);
  }
  // A whitelisted table that is not there (or not readable by the user) is read once it appears;
  // say so, naming it, rather than running silently without it.
  std::vector<std::string> missing;
  for (const auto& w : white) {
    bool found = false;
    for (const auto& q : out) found = found || q == w || q.substr(q.find('.') + 1) == w;
    if (!found) missing.push_back(w);
  }
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "'" : ", '") + m + "'";
    core::logger("jdbc")->warn("JdbcSource {}: table.whitelist names {} that the user cannot read (missing, or no "
                               "SELECT privilege); looking again every table.poll.interval.ms",
                               context_ ? context_->connectorName() : std::string("?"), names);
  }
  return out;
}

void JdbcSourceConnector::monitor() {
  auto p = parseConfig(definition(), config_, "JdbcSource");
  const auto interval = std::chrono::milliseconds(p.isOk() ? p->getLong("table.poll.interval.ms") : 60000);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, interval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    auto tables = listTables();
    lock.lock();
    if (!tables.isOk()) {
      core::logger("jdbc")->warn("JdbcSource {}: cannot list tables: {}", context_->connectorName(), tables.status().message());
      continue;
    }
    if (*tables != tables_) {
      core::logger("jdbc")->info("JdbcSource {}: the tables changed ({} now); reconfiguring its tasks",
                     context_->connectorName(), tables->size());
      tables_ = std::move(*tables);
      lock.unlock();
      context_->requestTaskReconfiguration();
      lock.lock();
    }
  }
}

Result<std::vector<StringMap>> JdbcSourceConnector::taskConfigs(int maxTasks) {
  auto it = config_.find("query");
  if (it != config_.end() && !it->second.empty()) return std::vector<StringMap>(1);
  std::vector<std::string> tables;
  {
    std::lock_guard lock(mu_);
    tables = tables_;
  }
  const std::size_t n = std::min<std::size_t>(tables.size(), static_cast<std::size_t>(std::max(1, maxTasks)));
  std::vector<nlohmann::json> groups(n, nlohmann::json::array());
  for (std::size_t i = 0; i < tables.size(); ++i) groups[i % n].push_back(tables[i]);
  std::vector<StringMap> out;
  for (auto& g : groups) out.push_back({{kTablesKey, g.dump()}});
  return out;
}

void JdbcSourceConnector::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
}

std::unique_ptr<SourceTask> JdbcSourceConnector::createTask() { return std::make_unique<JdbcSourceTask>(); }

// ---------------------------------------------------------------------------------------------
// Task

std::string JdbcSourceTask::version() const { return kVersion; }

Status JdbcSourceTask::start(const StringMap& config, SourceTaskContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(JdbcSourceConnector::definition(), config, "JdbcSource task"));
  if (Status s = checkCombination(p); !s.isOk()) return s.withContext("JdbcSource task");
  context_ = &context;
  url_ = p.getString("connection.url");
  user_ = p.getString("connection.user");
  password_ = p.getString("connection.password");
  FERRY_ASSIGN_OR_RETURN(mode_, modeOf(p.getString("mode")));
  FERRY_ASSIGN_OR_RETURN(numericMapping_, jdbc::numericMappingOf(p.getString("numeric.mapping")));
  FERRY_ASSIGN_OR_RETURN(zone_, core::TimeZone::load(p.getString("db.timezone")));
  if (zone_->isUtc()) zone_.reset();
  incrementingColumn_ = p.getString("incrementing.column.name");
  timestampColumns_ = p.getList("timestamp.column.name");
  delayMs_ = p.getLong("timestamp.delay.interval.ms");
  pollInterval_ = std::chrono::milliseconds(p.getLong("poll.interval.ms"));
  batchMaxRows_ = static_cast<std::size_t>(p.getInt("batch.max.rows"));
  if (!incrementingColumn_.empty()) {
    FERRY_ASSIGN_OR_RETURN(incrementingExpr_, quoted(url_, incrementingColumn_));
  }
  if (!timestampColumns_.empty()) {
    std::string e;
    for (const auto& c : timestampColumns_) {
      FERRY_ASSIGN_OR_RETURN(auto q, quoted(url_, c));
      if (!e.empty()) e += ", ";
      e += q;
    }
    timestampExpr_ = timestampColumns_.size() == 1 ? e : "COALESCE(" + e + ")";
  }
  const std::string prefix = p.getString("topic.prefix");
  tables_.clear();
  const std::string query = p.getString("query");
  if (!query.empty()) {
    Table t;
    t.qualified = query;
    FERRY_ASSIGN_OR_RETURN(auto alias, quoted(url_, "ferry_query"));
    t.from = "(" + query + ") AS " + alias;
    t.topic = prefix;
    t.partition = {{"query", "query"}};
    tables_.push_back(std::move(t));
  } else {
    auto it = config.find(kTablesKey);
    auto names = nlohmann::json::parse(it == config.end() ? "[]" : it->second, nullptr, false);
    if (!names.is_array()) return Status::invalidArgument(std::string("JdbcSource task: ") + kTablesKey + " is not a list");
    for (const auto& n : names) {
      if (!n.is_string()) return Status::invalidArgument(std::string("JdbcSource task: ") + kTablesKey + " is not a list of names");
      Table t;
      t.qualified = n.get<std::string>();
      auto [schema, table] = splitQualified(t.qualified);
      t.name = table;
      t.relation = {schema, table};
      FERRY_ASSIGN_OR_RETURN(auto qt, quoted(url_, table));
      if (schema.empty()) {
        t.from = qt;
      } else {
        FERRY_ASSIGN_OR_RETURN(auto qs, quoted(url_, schema));
        t.from = qs + "." + qt;
      }
      t.topic = prefix + table;
      t.partition = {{"protocol", "1"}, {"table", t.qualified}};
      tables_.push_back(std::move(t));
    }
  }
  // Where each table stands: its committed position.
  for (auto& t : tables_) {
    auto committed = context.committedOffset(t.partition);
    if (!committed) continue;
    t.loading = mode_ == Mode::kBulk;  // resuming: not a first load
    if (auto it = committed->find("incrementing"); it != committed->end()) {
      std::int64_t v = 0;
      if (!parseInt64(it->second, v))
        return Status::dataLoss("JdbcSource: the committed position of " + t.qualified + " has incrementing='" +
                                it->second + "', not an integer");
      t.incrementing = it->second;
    }
    if (auto it = committed->find("timestamp"); it != committed->end()) {
      std::int64_t ms = 0, nanos = 0;
      auto n = committed->find("timestamp_nanos");
      if (!parseInt64(it->second, ms) || (n != committed->end() && !parseInt64(n->second, nanos)))
        return Status::dataLoss("JdbcSource: the committed position of " + t.qualified + " has timestamp='" +
                                it->second + "', not a number of milliseconds");
      t.timestampMicros = jdbc::microsOfTimestampOffset(ms, n != committed->end() ? std::optional(nanos) : std::nullopt);
    }
  }
  next_ = 0;
  return Status::ok();
}

Status JdbcSourceTask::connect() {
  if (db_ && db_->healthy()) return Status::ok();
  db_.reset();
  FERRY_ASSIGN_OR_RETURN(db_, jdbc::SourceDb::connect(url_, user_, password_, 10));
  for (auto& t : tables_) t.bulkOpen = false;  // a cursor dies with its connection
  return Status::ok();
}

Status JdbcSourceTask::failed(Status s) {
  if (s.code() == StatusCode::kUnavailable || !db_ || !db_->healthy()) db_.reset();
  return s;
}

Result<std::size_t> JdbcSourceTask::poll(std::vector<Record>& out, std::size_t maxRecords,
                                         std::chrono::milliseconds maxWait) {
  if (tables_.empty()) {
    std::this_thread::sleep_for(std::min(maxWait, std::chrono::milliseconds(1000)));
    return std::size_t{0};
  }
  if (Status s = connect(); !s.isOk()) return failed(s);
  const auto start = Clock::now();
  // A bulk cursor that is open is read to its end before any other table.
  for (std::size_t tried = 0; tried < tables_.size() && out.size() < maxRecords; ++tried) {
    std::size_t i = next_;
    for (std::size_t j = 0; j < tables_.size(); ++j)
      if (tables_[j].bulkOpen) i = j;
    Table& t = tables_[i];
    next_ = (i + 1) % tables_.size();
    if (t.due > Clock::now()) continue;
    if (Status s = readTable(t, out, maxRecords - out.size()); !s.isOk()) return failed(s);
    if (t.bulkOpen) break;
  }
  reportProgress();
  if (out.empty()) {
    // Nothing due: rest until the first table is, or maxWait.
    auto due = Clock::time_point::max();
    for (const auto& t : tables_) due = std::min(due, t.due);
    const auto until = std::min(due, start + maxWait);
    if (until > Clock::now()) std::this_thread::sleep_until(until);
  }
  return out.size();
}

Result<std::unique_ptr<jdbc::SourceRows>> JdbcSourceTask::query(Table& t, std::size_t limit) {
  if (mode_ == Mode::kBulk) {
    if (!t.bulkOpen) {
      FERRY_RETURN_IF_ERROR(db_->openBulk(t.from));
      t.bulkOpen = true;
    }
    return db_->fetchBulk(limit);
  }
  FERRY_ASSIGN_OR_RETURN(auto st, statement(t, limit, t.incrementing, t.timestampMicros));
  return db_->select(st.sql, st.params);
}

Result<JdbcSourceTask::Statement> JdbcSourceTask::statement(Table& t, std::size_t limit,
                                                            const std::optional<std::string>& incrementing,
                                                            const std::optional<std::int64_t>& timestampMicros) {
  const std::string lim = " LIMIT " + std::to_string(limit);
  const std::string& inc = incrementingExpr_;
  const std::string& ts = timestampExpr_;
  Statement st;
  jdbc::SourceDb::Params& params = st.params;
  switch (mode_) {
    case Mode::kBulk: return Status::internal("JdbcSource: bulk reads through a cursor");
    case Mode::kIncrementing:
      if (!incrementing) st.sql = "SELECT * FROM " + t.from + " ORDER BY " + inc + " ASC" + lim;
      else
        st.sql = "SELECT * FROM " + t.from + " WHERE " + inc + " > " + db_->param(params, *incrementing) +
                 " ORDER BY " + inc + " ASC" + lim;
      return st;
    case Mode::kTimestamp: {
      FERRY_RETURN_IF_ERROR(describeFirst(t));
      FERRY_ASSIGN_OR_RETURN(auto bound, boundParam(t));
      if (!timestampMicros) {
        st.sql = "SELECT * FROM " + t.from + " WHERE " + ts + " < " + db_->param(params, bound) + " ORDER BY " + ts +
                 " ASC" + lim;
        return st;
      }
      const std::string after = db_->param(params, timestampParam(t, *timestampMicros));
      st.sql = "SELECT * FROM " + t.from + " WHERE " + ts + " > " + after + " AND " + ts + " < " +
               db_->param(params, bound) + " ORDER BY " + ts + " ASC" + lim;
      return st;
    }
    case Mode::kTimestampIncrementing: {
      FERRY_RETURN_IF_ERROR(describeFirst(t));
      FERRY_ASSIGN_OR_RETURN(auto bound, boundParam(t));
      const std::string below = db_->param(params, bound);
      if (!timestampMicros) {
        st.sql = "SELECT * FROM " + t.from + " WHERE " + ts + " < " + below + " ORDER BY " + ts + " ASC, " + inc +
                 " ASC" + lim;
        return st;
      }
      const std::string last = db_->param(params, timestampParam(t, *timestampMicros));
      const std::string lastId = db_->param(params, incrementing.value_or("-9223372036854775808"));
      st.sql = "SELECT * FROM " + t.from + " WHERE " + ts + " < " + below + " AND (" + ts + " > " + last + " OR (" +
               ts + " = " + last + " AND " + inc + " > " + lastId + ")) ORDER BY " + ts + " ASC, " + inc + " ASC" +
               lim;
      return st;
    }
  }
  return Status::internal("JdbcSource: unknown mode");
}

Status JdbcSourceTask::describe(Table& t, const jdbc::SourceRows& rows) {
  std::string signature = db_->signature(rows);
  if (t.schema && signature == t.signature) return Status::ok();
  FERRY_ASSIGN_OR_RETURN(auto readers, db_->describe(rows, t.relation, t.from, numericMapping_, zone_));
  const int n = static_cast<int>(readers.size());
  t.signature = std::move(signature);
  t.columnNames.assign(static_cast<std::size_t>(n), "");
  t.readers.clear();
  t.fieldPrefixes.clear();
  t.incrementingIndex = -1;
  t.timestampIndexes.assign(timestampColumns_.size(), -1);
  SchemaBuilder b = SchemaBuilder::structure();
  if (!t.name.empty()) b.name(t.name);
  for (int c = 0; c < n; ++c) {
    auto& reader = readers[static_cast<std::size_t>(c)];
    t.columnNames[c] = reader.name;
    const std::string& name = t.columnNames[c];
    b.field(name, reader.schema);
    t.readers.push_back(std::move(reader));
    std::string prefix = c ? "," : "";
    core::appendJsonString(prefix, name);
    prefix += ':';
    t.fieldPrefixes.push_back(std::move(prefix));
    if (name == incrementingColumn_) t.incrementingIndex = c;
    for (std::size_t k = 0; k < timestampColumns_.size(); ++k)
      if (name == timestampColumns_[k]) t.timestampIndexes[k] = c;
  }
  auto schema = b.build();
  if (!schema.isOk()) return schema.status().withContext("JdbcSource: " + t.qualified);
  t.schema = std::move(*schema);
  if (!incrementingColumn_.empty() && mode_ != Mode::kBulk && t.incrementingIndex < 0)
    return Status::failedPrecondition("JdbcSource: " + t.qualified + " has no column '" + incrementingColumn_ +
                                      "' (incrementing.column.name)");
  if (mode_ != Mode::kBulk && mode_ != Mode::kIncrementing)
    for (std::size_t k = 0; k < timestampColumns_.size(); ++k)
      if (t.timestampIndexes[k] < 0)
        return Status::failedPrecondition("JdbcSource: " + t.qualified + " has no column '" + timestampColumns_[k] +
                                          "' (timestamp.column.name)");
  t.localTimestamps = false;
  if (zone_ && mode_ != Mode::kBulk && mode_ != Mode::kIncrementing) {
    int local = 0, zoned = 0;
    for (int c : t.timestampIndexes) ++(t.readers[static_cast<std::size_t>(c)].zone ? local : zoned);
    if (local > 0 && zoned > 0)
      return Status::failedPrecondition("JdbcSource: " + t.qualified + ": timestamp.column.name mixes columns with "
                                        "and without a time zone, which db.timezone=" + zone_->name() +
                                        " cannot compare as one");
    t.localTimestamps = local > 0;
  }
  return Status::ok();
}

Status JdbcSourceTask::describeFirst(Table& t) {
  if (!zone_ || t.schema || mode_ == Mode::kBulk || mode_ == Mode::kIncrementing) return Status::ok();
  FERRY_ASSIGN_OR_RETURN(auto rows, db_->select("SELECT * FROM " + t.from + " LIMIT 0", {}));
  return describe(t, *rows);
}

std::string JdbcSourceTask::timestampParam(const Table& t, std::int64_t utcMicros) const {
  return jdbc::timestampMicrosText(t.localTimestamps ? jdbc::localMicrosOfUtc(*zone_, utcMicros) : utcMicros);
}

Result<std::string> JdbcSourceTask::boundParam(const Table& t) {
  FERRY_ASSIGN_OR_RETURN(auto bound, db_->upperBound(delayMs_));
  if (!t.localTimestamps) return bound;
  auto us = jdbc::parsePgTimestamp(bound);
  if (!us) return Status::internal("JdbcSource: the server's time '" + bound + "' is not a timestamp");
  return timestampParam(t, *us);
}

void JdbcSourceTask::reportProgress() {
  std::int64_t done = 0, estimated = 0;
  std::size_t loaded = 0;
  for (const auto& t : tables_) {
    done += t.loadDone;
    if (t.loadEstimate < 0 && t.loading) estimated = -1;
    else if (estimated >= 0) estimated += t.loading ? std::max(t.loadEstimate, t.loadDone) : t.loadDone;
    loaded += !t.loading;
  }
  if (loaded == tables_.size()) {
    if (reportedDone_) return;
    reportedDone_ = true;
    context_->reportProgress({mode_ == Mode::kBulk ? "bulk pass done" : "initial load done", done, done, "rows"});
    return;
  }
  reportedDone_ = false;
  const std::string what = mode_ == Mode::kBulk ? "bulk pass" : "initial load";
  context_->reportProgress({what + " (" + std::to_string(loaded) + " of " + std::to_string(tables_.size()) +
                                " tables done)",
                            done, estimated, "rows"});
}

Status JdbcSourceTask::readTable(Table& t, std::vector<Record>& out, std::size_t max) {
  const std::size_t limit = std::min(max, batchMaxRows_);
  if (mode_ == Mode::kBulk && !t.bulkOpen) {  // a new pass
    t.loading = true;
    t.loadDone = 0;
    t.loadEstimate = -2;
  }
  if (t.loading && t.loadEstimate == -2) t.loadEstimate = db_->estimateRows(t.relation, t.from);
  std::unique_ptr<jdbc::SourceRows> rows;
  if (t.prefetchedLimit != 0) {  // sent at the end of the last read (below)
    const bool same = t.prefetchedLimit == limit;
    t.prefetchedLimit = 0;
    if (same) {
      FERRY_ASSIGN_OR_RETURN(rows, db_->takePrefetched());
    }
  }
  if (!rows) {
    FERRY_ASSIGN_OR_RETURN(rows, query(t, limit));
  }
  int n = rows->rows();
  if (n == 0) t.loading = false;
  if (n == 0 && mode_ == Mode::kBulk) {
    t.bulkOpen = false;
    FERRY_RETURN_IF_ERROR(db_->closeBulk());
    t.due = Clock::now() + pollInterval_;
    return Status::ok();
  }
  if (n == 0) {
    t.due = Clock::now() + pollInterval_;
    return Status::ok();
  }
  FERRY_RETURN_IF_ERROR(describe(t, *rows));
  // The timestamp of row r: the first of its timestamp columns that is not NULL.
  auto timestampOf = [&](int r) -> Result<std::optional<std::int64_t>> {
    for (int c : t.timestampIndexes) {
      if (rows->isNull(r, c)) continue;
      auto us = jdbc::parsePgTimestamp(rows->value(r, c));
      if (!us) return Status::failedPrecondition("JdbcSource: " + t.qualified + ": '" + std::string(rows->value(r, c)) +
                                                 "' in the timestamp column is not a timestamp");
      if (const auto& zone = t.readers[static_cast<std::size_t>(c)].zone) us = jdbc::utcMicrosOfLocal(*zone, *us);
      return std::optional<std::int64_t>(*us);
    }
    return std::optional<std::int64_t>();
  };
  const bool full = static_cast<std::size_t>(n) == limit;
  if (mode_ == Mode::kTimestamp && full) {
    // Rows of one timestamp must not be split between two reads (the next starts after it):
    // leave the last timestamp's rows for the next read, unless they are the whole batch.
    FERRY_ASSIGN_OR_RETURN(auto last, timestampOf(n - 1));
    int keep = n;
    while (keep > 0) {
      FERRY_ASSIGN_OR_RETURN(auto ts, timestampOf(keep - 1));
      if (ts != last) break;
      --keep;
    }
    if (keep > 0) {
      n = keep;
    } else if (last) {
      // One timestamp fills the batch: read all its rows at once.
      jdbc::SourceDb::Params params;
      const std::string at = db_->param(params, timestampParam(t, *last));
      FERRY_ASSIGN_OR_RETURN(rows, db_->select("SELECT * FROM " + t.from + " WHERE " + timestampExpr_ + " = " + at +
                                                   " ORDER BY " + timestampExpr_,
                                               params));
      n = rows->rows();
      FERRY_RETURN_IF_ERROR(describe(t, *rows));
    }
  }
  // A full read of the task's only table in the incrementing modes: the next read starts after
  // this batch's last row, so it is sent now and the server reads those rows while these become
  // records (a read that waited for the server took ~30 % of the time at 100-byte rows). It
  // reads what it would read a moment later, less rows committed meanwhile, which the read after
  // it finds. A read of anything else on the connection first drops it.
  if (full && tables_.size() == 1 && (mode_ == Mode::kIncrementing || mode_ == Mode::kTimestampIncrementing) &&
      t.incrementingIndex >= 0 && !rows->isNull(n - 1, t.incrementingIndex)) {
    std::optional<std::int64_t> nextTimestamp = t.timestampMicros;
    bool known = true;
    if (mode_ == Mode::kTimestampIncrementing) {
      auto ts = timestampOf(n - 1);
      known = ts.isOk() && ts->has_value();
      if (known) nextTimestamp = **ts;
    }
    if (known) {
      FERRY_ASSIGN_OR_RETURN(
          auto next, statement(t, limit, std::string(rows->value(n - 1, t.incrementingIndex)), nextTimestamp));
      db_->prefetch(next.sql, next.params);
      t.prefetchedLimit = limit;
    }
  }
  const std::int64_t nowMs = core::nowMs();
  std::size_t lastSize = 64;
  for (int r = 0; r < n; ++r) {
    std::string value;  // moved into the record: written once, not copied
    value.reserve(lastSize + lastSize / 8);
    value.push_back('{');
    for (int c = 0; c < rows->columns(); ++c) {
      value += t.fieldPrefixes[c];
      if (rows->isNull(r, c)) {
        value += "null";
        continue;
      }
      if (Status s = jdbc::appendValue(value, t.readers[c], rows->value(r, c)); !s.isOk())
        return s.withContext("JdbcSource: " + t.qualified);
    }
    value.push_back('}');
    Record& rec = out.emplace_back();
    rec.topic = t.topic;
    lastSize = value.size();
    rec.value = Bytes(std::move(value));
    rec.valueSchema = t.schema;
    rec.timestampMs = nowMs;
    if (mode_ == Mode::kBulk) continue;  // bulk rows have no position: every pass reads them all
    if (t.incrementingIndex >= 0 && mode_ != Mode::kTimestamp) {
      if (rows->isNull(r, t.incrementingIndex))
        return Status::failedPrecondition("JdbcSource: " + t.qualified + ": the incrementing column '" +
                                          incrementingColumn_ + "' is NULL in a row");
      t.incrementing = std::string(rows->value(r, t.incrementingIndex));
    }
    if (mode_ == Mode::kTimestamp || mode_ == Mode::kTimestampIncrementing) {
      FERRY_ASSIGN_OR_RETURN(auto ts, timestampOf(r));
      if (ts) t.timestampMicros = *ts;
    }
    rec.position.partition = t.partition;
    if (t.incrementing && mode_ != Mode::kTimestamp) rec.position.offset["incrementing"] = *t.incrementing;
    if (t.timestampMicros) {
      const auto [ms, nanos] = jdbc::timestampOffsetOfMicros(*t.timestampMicros);
      rec.position.offset["timestamp"] = std::to_string(ms);
      rec.position.offset["timestamp_nanos"] = std::to_string(nanos);
    }
  }
  if (t.loading) t.loadDone += n;
  if (t.loading && !full) t.loading = false;  // caught up: the first load (or the pass) is done
  // A short read caught up: the table rests for poll.interval.ms (bulk: its pass ends).
  if (mode_ == Mode::kBulk) {
    if (!full) {
      t.bulkOpen = false;
      FERRY_RETURN_IF_ERROR(db_->closeBulk());
      t.due = Clock::now() + pollInterval_;
    }
  } else if (!full) {
    t.due = Clock::now() + pollInterval_;
  }
  return Status::ok();
}

void JdbcSourceTask::stop() { db_.reset(); }

}  // namespace ferry::connectors
