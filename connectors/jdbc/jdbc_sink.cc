// JdbcSink for PostgreSQL and MySQL/MariaDB (see jdbc_sink.h and connectors/jdbc/README.md).
#include "connectors/jdbc/jdbc_sink.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "connectors/common.h"
#include "connectors/jdbc/mariadb_client.h"
#include "connectors/jdbc/pg_client.h"
#include "core/logging.h"
#include "core/json_fast.h"
#include "core/json_read.h"

namespace ferry::connectors {
namespace {

using jdbc::Json;

constexpr std::size_t kMaxParams = 65535;  // PostgreSQL's limit of parameters per statement

const char* kKafkaPk[] = {"__connect_topic", "__connect_partition", "__connect_offset"};

// The types of pk.mode=kafka's three columns: topic, partition, offset.
const std::array<SchemaPtr, 3>& kafkaSchemas() {
  static const std::array<SchemaPtr, 3> s = {SchemaBuilder::string().build().value(),
                                             SchemaBuilder::int32().build().value(),
                                             SchemaBuilder::int64().build().value()};
  return s;
}

Result<JdbcSinkTask::InsertMode> insertModeOf(const std::string& s) {
  if (s == "insert") return JdbcSinkTask::InsertMode::kInsert;
  if (s == "upsert") return JdbcSinkTask::InsertMode::kUpsert;
  if (s == "update") return JdbcSinkTask::InsertMode::kUpdate;
  return Status::invalidArgument("insert.mode must be insert, upsert or update, not '" + s + "'");
}

Result<JdbcSinkTask::PkMode> pkModeOf(const std::string& s) {
  if (s == "none") return JdbcSinkTask::PkMode::kNone;
  if (s == "record_key") return JdbcSinkTask::PkMode::kRecordKey;
  if (s == "record_value") return JdbcSinkTask::PkMode::kRecordValue;
  if (s == "kafka") return JdbcSinkTask::PkMode::kKafka;
  return Status::invalidArgument("pk.mode must be none, record_key, record_value or kafka, not '" + s + "'");
}

// The checks of a config that need more than one key; InvalidArgument naming the key.
Status checkCombination(const ParsedConfig& p) {
  FERRY_ASSIGN_OR_RETURN(auto insert, insertModeOf(p.getString("insert.mode")));
  FERRY_ASSIGN_OR_RETURN(auto pk, pkModeOf(p.getString("pk.mode")));
  if (insert != JdbcSinkTask::InsertMode::kInsert && pk == JdbcSinkTask::PkMode::kNone)
    return Status::invalidArgument("insert.mode=" + p.getString("insert.mode") + " needs a primary key: set pk.mode");
  if (p.getBool("delete.enabled") && pk != JdbcSinkTask::PkMode::kRecordKey)
    return Status::invalidArgument("delete.enabled=true needs pk.mode=record_key (a tombstone has only its key)");
  if (Status z = core::TimeZone::load(p.getString("db.timezone")).status(); !z.isOk())
    return Status::invalidArgument("db.timezone: " + z.message());
  if (pk == JdbcSinkTask::PkMode::kKafka && !p.getList("pk.fields").empty() && p.getList("pk.fields").size() != 3)
    return Status::invalidArgument("pk.fields with pk.mode=kafka names 3 columns (topic, partition, offset), or none");
  const std::string url = p.getString("connection.url");
  if (jdbc::isMariaDbUrl(url)) return jdbc::parseMariaDbUrl(url).status();
  if (!jdbc::isPostgresUrl(url))
    return Status::invalidArgument("connection.url: postgresql://, mysql:// or mariadb://host:port/database, got '" +
                                   url.substr(0, url.find(':')) + ":...'");
  return Status::ok();
}

bool dataError(const Status& s) { return s.code() == StatusCode::kInvalidArgument; }

}  // namespace

const ConfigDef& JdbcSinkConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("connection.url", ConfigType::kString, std::nullopt, Importance::kHigh,
             "postgresql://host:port/database[?params] (PostgreSQL), or mysql://host:port/database or "
             "mariadb://host:port/database (MySQL/MariaDB); a leading jdbc: is accepted.",
             validators::nonEmptyString());
    d.define("connection.user", ConfigType::kString, "", Importance::kHigh, "The database user.");
    d.define("connection.password", ConfigType::kPassword, "", Importance::kHigh,
             "The user's password (a secret: never shown, use ${file:...} or ${env:...}).");
    d.define("insert.mode", ConfigType::kString, "insert", Importance::kHigh,
             "insert: INSERT; upsert: INSERT ... ON CONFLICT (pk) DO UPDATE (PostgreSQL) or INSERT ... ON "
             "DUPLICATE KEY UPDATE (MySQL/MariaDB), replays leave the table exact; update: UPDATE by primary key.",
             validators::oneOf({"insert", "upsert", "update"}));
    d.define("pk.mode", ConfigType::kString, "none", Importance::kHigh,
             "none; record_key (the key's fields, or the whole key as one column); record_value (value "
             "fields); kafka (__connect_topic, __connect_partition, __connect_offset).",
             validators::oneOf({"none", "record_key", "record_value", "kafka"}));
    d.define("pk.fields", ConfigType::kList, "", Importance::kMedium,
             "The primary key's columns: fields of the key (record_key; a primitive key: its one "
             "column name, default __connect_key) or of the value (record_value; empty = all), or the "
             "three column names for kafka.");
    d.define("fields.whitelist", ConfigType::kList, "", Importance::kMedium,
             "Value fields written as columns; empty = all.");
    d.define("table.name.format", ConfigType::kString, "${topic}", Importance::kMedium,
             "The table of a record: ${topic} is replaced by its topic; schema.table (PostgreSQL) or "
             "database.table (MySQL/MariaDB) is split at the first dot.",
             validators::nonEmptyString());
    d.define("auto.create", ConfigType::kBool, "false", Importance::kMedium,
             "Create a missing table from the record's schema (CREATE TABLE IF NOT EXISTS, with the "
             "primary key).");
    d.define("auto.evolve", ConfigType::kBool, "false", Importance::kLow,
             "Add a column the table lacks for a record's field (ALTER TABLE ... ADD COLUMN, nullable; a "
             "required field without a column fails the task, as in Kafka Connect).");
    d.define("delete.enabled", ConfigType::kBool, "false", Importance::kMedium,
             "A tombstone (null value) deletes the row of its key (needs pk.mode=record_key); "
             "otherwise tombstones are skipped.");
    d.define("batch.size", ConfigType::kInt, "3000", Importance::kMedium,
             "Rows per statement (within one put, which is one transaction; MySQL/MariaDB statements also "
             "stay under half of max_allowed_packet).", validators::atLeast(1));
    d.define("quote.sql.identifiers", ConfigType::kString, "always", Importance::kLow,
             "always: table and column names are quoted (\"...\" or `...`: any name is safe); never: names must be "
             "plain letters, digits and _.",
             validators::oneOf({"always", "never"}));
    d.define("db.timezone", ConfigType::kString, "UTC", Importance::kLow,
             "The zone of the wall clock Timestamp values are written as (timestamp columns without a zone): a zone "
             "of the zone database (Europe/Paris), UTC, or an offset (+02:00).",
             validators::nonEmptyString());
    return d;
  }();
  return def;
}

std::string JdbcSinkConnector::version() const { return kVersion; }

void JdbcSinkConnector::validate(const StringMap& config, ConfigValidation& validation) const {
  auto p = definition().parse(config, /*rejectUnknown=*/false);
  if (!p.isOk()) return;  // the per-key errors are reported by the runtime's own check
  if (Status s = checkCombination(*p); !s.isOk()) {
    const std::string& m = s.message();
    const auto key = m.substr(0, m.find_first_of("=:"));
    validation.errors[definition().find(key) ? key : "pk.mode"].push_back(m);
  }
}

Status JdbcSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "JdbcSink"));
  if (Status s = checkCombination(p); !s.isOk()) return s.withContext("JdbcSink");
  config_ = config;
  return Status::ok();
}

Result<std::vector<StringMap>> JdbcSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(maxTasks, 1)), StringMap{});
}

std::unique_ptr<SinkTask> JdbcSinkConnector::createTask() { return std::make_unique<JdbcSinkTask>(); }

// The seam between the shared sink and one server: its connection, quoting, value texts, column
// types and statements. Called from the task's thread only.
class JdbcSinkTask::Dialect {
 public:
  virtual ~Dialect() = default;
  virtual Status connect(const std::string& url, const std::string& user, const std::string& password) = 0;
  virtual bool connected() const = 0;
  virtual void disconnect() = 0;

  virtual Result<std::optional<std::string>> value(const Schema& s, const Json& v, const std::string& field) const = 0;
  // value() for a field as simdjson read it, where that is quick (jdbc::quickText); nullopt: take
  // value() on its Json.
  virtual std::optional<std::string> quickValue(const Schema& s, const simdjson::dom::element& v) const = 0;
  // A Timestamp written as the wall clock `localText` ("YYYY-MM-DD HH:MM:SS.mmm") of a zone
  // `offsetSeconds` east of UTC at that instant (db.timezone).
  virtual std::string zonedTimestamp(const std::string& localText, std::int32_t offsetSeconds) const = 0;
  virtual Result<std::string> column(std::string_view name, bool quote) const = 0;
  virtual Result<std::string> table(const std::string& format, const std::string& topic, bool quote) const = 0;

  virtual Result<bool> tableExists(const std::string& table) = 0;
  // The names of `table`'s columns, as the server keeps them (unquoted).
  virtual Result<std::vector<std::string>> tableColumns(const std::string& table) = 0;
  // Whether column names match whatever their case (MySQL/MariaDB always; PostgreSQL folds
  // names it is given unquoted to lower case).
  virtual bool caseInsensitiveColumns(bool quoted) const { return !quoted; }
  virtual Status exec(const std::string& sql) = 0;
  virtual const char* beginSql() const = 0;
  // The most rows one statement of `columns` columns takes (the caller also applies batch.size).
  virtual std::size_t maxRows(std::size_t columns) const = 0;
  // Writes `group` (rows of one shape, all deletes or none) in `mode`, inside the caller's
  // transaction.
  virtual Status write(const std::vector<const JdbcSinkTask::Row*>& group, InsertMode mode) = 0;
  // As write() for a group that is a whole batch: sends the statement without waiting for its
  // answer, so the server works while the task converts the next batch; settle() collects the
  // answer. An upsert runs in a transaction settle() commits: a worker that dies meanwhile leaves
  // nothing of it (the server rolls it back), so it cannot land after the replay of its records
  // and undo newer versions of a row. A plain insert commits by itself (one statement, all rows or
  // none), saving the commit's round trip: one that lands after its worker died only repeats rows,
  // which insert mode does after any crash before the offsets' commit. False when the dialect
  // cannot (nothing sent, no transaction open); an error leaves no transaction open.
  Result<bool> send(const std::vector<const JdbcSinkTask::Row*>& group, InsertMode mode) {
    if (group.front()->remove() || mode == InsertMode::kUpdate) return false;
    FERRY_ASSIGN_OR_RETURN(bool one, prepareSend(group, mode));
    if (!one) return false;
    inTxn_ = mode != InsertMode::kInsert;
    if (inTxn_) FERRY_RETURN_IF_ERROR(exec(beginSql()));
    if (Status st = sendPrepared(group, mode); !st.isOk()) {
      if (inTxn_ && connected()) (void)exec("ROLLBACK");
      return st;
    }
    return true;
  }
  // The answer of the statement send() sent, then an upsert's COMMIT (ROLLBACK when it failed):
  // OK when none is outstanding.
  Status settle() {
    if (!outstanding()) return Status::ok();
    Status st = finishSent();
    if (!inTxn_) return st;
    if (st.isOk()) st = exec("COMMIT");
    if (!st.isOk() && connected()) (void)exec("ROLLBACK");
    return st;
  }

  // ALTER TABLE ... ADD COLUMN for column `i` of `row`, nullable.
  Result<std::string> addColumnSql(const JdbcSinkTask::Row& row, std::size_t i) const {
    FERRY_ASSIGN_OR_RETURN(auto type, columnType(*row.schemas()[i], row.columns()[i], false));
    return "ALTER TABLE " + row.table() + " ADD COLUMN " + row.columns()[i] + " " + type;
  }

  // CREATE TABLE IF NOT EXISTS for `row`'s columns: the key and required fields NOT NULL.
  Result<std::string> createTableSql(const JdbcSinkTask::Row& row) const {
    std::string sql = "CREATE TABLE IF NOT EXISTS " + row.table() + " (";
    for (std::size_t i = 0; i < row.columns().size(); ++i) {
      const Schema& schema = *row.schemas()[i];
      FERRY_ASSIGN_OR_RETURN(auto type, columnType(schema, row.columns()[i], i < row.pkCount()));
      sql += (i ? ", " : "") + row.columns()[i] + " " + type + (i >= row.pkCount() && schema.optional() ? "" : " NOT NULL");
    }
    if (row.pkCount() > 0) sql += ", PRIMARY KEY (" + pkList(row) + ")";
    return sql + ")" + tableOptions();
  }

 protected:
  // send()'s parts, for a dialect that sends without waiting: whether `group` (inserts or upserts)
  // goes in one statement (and that statement made ready), sending it, whether an answer is
  // outstanding, and collecting it. The defaults: never.
  virtual Result<bool> prepareSend(const std::vector<const JdbcSinkTask::Row*>& group, InsertMode mode) {
    (void)group;
    (void)mode;
    return false;
  }
  virtual Status sendPrepared(const std::vector<const JdbcSinkTask::Row*>& group, InsertMode mode) {
    (void)group;
    (void)mode;
    return Status::internal("this dialect sends nothing without waiting");
  }
  virtual bool outstanding() const { return false; }
  virtual Status finishSent() { return Status::ok(); }
  using Row = JdbcSinkTask::Row;
  virtual Result<std::string> columnType(const Schema& s, const std::string& column, bool key) const = 0;
  virtual std::string tableOptions() const { return ""; }

  static std::string pkList(const Row& row) {
    std::string out;
    for (std::size_t i = 0; i < row.pkCount(); ++i) out += (i ? ", " : "") + row.columns()[i];
    return out;
  }
  static std::string columnList(const Row& row) {
    std::string out;
    for (std::size_t i = 0; i < row.columns().size(); ++i) out += (i ? ", " : "") + row.columns()[i];
    return out;
  }
  // The last row of each key, in order: an upsert statement then touches a row once (PostgreSQL
  // refuses twice; MySQL would apply both, in order, to the same end).
  static std::vector<const Row*> lastOfEachKey(const std::vector<const Row*>& group) {
    std::vector<std::string> keys(group.size());
    std::unordered_map<std::string_view, std::size_t> last;
    for (std::size_t k = 0; k < group.size(); ++k) {
      for (std::size_t i = 0; i < group[k]->pkCount(); ++i)
        keys[k].append(group[k]->values[i].value_or("\x01null")).append(1, '\0');
      last[keys[k]] = k;
    }
    std::vector<const Row*> rows;
    for (std::size_t k = 0; k < group.size(); ++k)
      if (last[keys[k]] == k) rows.push_back(group[k]);
    return rows;
  }

 private:
  bool inTxn_ = false;  // what send() sent runs in a transaction settle() commits
};

namespace {

using InsertMode = JdbcSinkTask::InsertMode;

class PostgresDialect final : public JdbcSinkTask::Dialect {
 public:
  Status connect(const std::string& url, const std::string& user, const std::string& password) override {
    FERRY_ASSIGN_OR_RETURN(db_, jdbc::PgConnection::connect(url, user, password, 10));
    return Status::ok();
  }
  bool connected() const override { return db_ && db_->healthy(); }
  void disconnect() override { db_.reset(); }

  Result<std::optional<std::string>> value(const Schema& s, const Json& v, const std::string& field) const override {
    return jdbc::postgresText(s, v, field);
  }
  std::optional<std::string> quickValue(const Schema& s, const simdjson::dom::element& v) const override {
    return jdbc::quickText(s, v, false);
  }
  // With its offset: a timestamp column keeps the wall clock (PostgreSQL ignores the offset), a
  // timestamptz column gets the instant.
  std::string zonedTimestamp(const std::string& localText, std::int32_t offsetSeconds) const override {
    const std::int32_t a = offsetSeconds < 0 ? -offsetSeconds : offsetSeconds;
    char buf[16];
    std::snprintf(buf, sizeof buf, "%c%02d:%02d:%02d", offsetSeconds < 0 ? '-' : '+', a / 3600, a / 60 % 60, a % 60);
    return localText + buf;
  }
  Result<std::string> column(std::string_view name, bool quote) const override { return jdbc::identifier(name, quote); }
  Result<std::string> table(const std::string& format, const std::string& topic, bool quote) const override {
    return jdbc::tableIdentifier(format, topic, quote);
  }
  Result<bool> tableExists(const std::string& table) override {
    FERRY_ASSIGN_OR_RETURN(auto found, db_->query("SELECT to_regclass($1) IS NOT NULL", {table}));
    return !found.empty() && found[0][0] == std::string("t");
  }
  Result<std::vector<std::string>> tableColumns(const std::string& table) override {
    FERRY_ASSIGN_OR_RETURN(auto rows, db_->query("SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND "
                                                 "attnum > 0 AND NOT attisdropped",
                                                 {table}));
    std::vector<std::string> out;
    for (const auto& r : rows) out.push_back(r[0].value_or(""));
    return out;
  }
  Status exec(const std::string& sql) override { return db_->exec(sql); }
  const char* beginSql() const override { return "BEGIN"; }
  std::size_t maxRows(std::size_t columns) const override {
    return std::max<std::size_t>(1, kMaxParams / std::max<std::size_t>(1, columns));
  }
  Status write(const std::vector<const Row*>& group, InsertMode mode) override {
    return writeGroup(group, mode, false);
  }

 protected:
  Result<bool> prepareSend(const std::vector<const Row*>&, InsertMode) override { return true; }
  Status sendPrepared(const std::vector<const Row*>& group, InsertMode mode) override {
    return writeGroup(group, mode, true);
  }
  bool outstanding() const override { return db_ && db_->outstanding(); }
  Status finishSent() override { return db_->finish(); }
  Result<std::string> columnType(const Schema& s, const std::string& column, bool) const override {
    return jdbc::postgresType(s, column);
  }

 private:
  // write(), or with `deferred` send() (inserts and upserts only).
  Status writeGroup(const std::vector<const Row*>& group, InsertMode mode, bool deferred);
  std::unique_ptr<jdbc::PgConnection> db_;
};

Status PostgresDialect::writeGroup(const std::vector<const Row*>& group, InsertMode mode, bool deferred) {
  const Row& first = *group.front();
  const std::size_t n = first.columns().size();
  std::vector<std::optional<std::string>> params;
  std::string sql;
  auto placeholders = [&](const Row& row, std::size_t from, std::size_t to) {
    std::string out = "(";
    for (std::size_t i = from; i < to; ++i) {
      params.push_back(row.values[i]);
      out += (i > from ? ", $" : "$") + std::to_string(params.size());
    }
    return out + ")";
  };
  const std::string pk = pkList(first);
  if (first.remove()) {
    sql = "DELETE FROM " + first.table() + " WHERE (" + pk + ") IN (";
    for (std::size_t k = 0; k < group.size(); ++k) sql += (k ? ", " : "") + placeholders(*group[k], 0, first.pkCount());
    sql += ")";
    return db_->exec(sql, params);
  }
  if (mode == InsertMode::kUpdate) {
    for (const Row* row : group) {
      params.clear();
      std::string set;
      for (std::size_t i = first.pkCount(); i < n; ++i) {
        params.push_back(row->values[i]);
        set += (i > first.pkCount() ? ", " : "") + row->columns()[i] + " = $" + std::to_string(params.size());
      }
      if (set.empty()) continue;
      std::string where;
      for (std::size_t i = 0; i < first.pkCount(); ++i) {
        params.push_back(row->values[i]);
        where += (i ? " AND " : "") + row->columns()[i] + " = $" + std::to_string(params.size());
      }
      FERRY_RETURN_IF_ERROR(db_->exec("UPDATE " + first.table() + " SET " + set + " WHERE " + where, params));
    }
    return Status::ok();
  }
  if (mode == InsertMode::kInsert) {
    // COPY ... FROM STDIN: the server's bulk path (one row of bad data fails it; the caller then
    // writes the rows one by one and reports the bad ones). A value is escaped only where it holds
    // one of COPY's four special characters; most hold none and are copied whole.
    static constexpr auto kSpecial = [] {
      std::array<bool, 256> t{};
      for (unsigned char c : {'\\', '\t', '\n', '\r'}) t[c] = true;
      return t;
    }();
    std::size_t size = 0;
    for (const Row* row : group)
      for (const auto& v : row->values) size += v ? v->size() + 1 : 3;
    std::string data;
    data.reserve(size + size / 8);
    for (const Row* row : group) {
      for (std::size_t i = 0; i < n; ++i) {
        if (i) data.push_back('\t');
        if (!row->values[i]) {
          data += "\\N";
          continue;
        }
        const std::string& v = *row->values[i];
        const char* run = v.data();
        const char* const end = run + v.size();
        for (const char* p = run; p < end; ++p) {
          if (!kSpecial[static_cast<unsigned char>(*p)]) continue;
          data.append(run, p);
          const char c = *p;
          data.push_back('\\');
          data.push_back(c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : '\\');
          run = p + 1;
        }
        data.append(run, end);
      }
      data.push_back('\n');
    }
    const std::string copy = "COPY " + first.table() + " (" + columnList(first) + ") FROM STDIN";
    return deferred ? db_->copyInSend(copy, data) : db_->copyIn(copy, data);
  }
  const std::vector<const Row*> rows = lastOfEachKey(group);
  sql = "INSERT INTO " + first.table() + " (" + columnList(first) + ") VALUES ";
  for (std::size_t k = 0; k < rows.size(); ++k) sql += (k ? ", " : "") + placeholders(*rows[k], 0, n);
  std::string set;
  for (std::size_t i = first.pkCount(); i < n; ++i)
    set += (i > first.pkCount() ? ", " : "") + first.columns()[i] + " = EXCLUDED." + first.columns()[i];
  sql += " ON CONFLICT (" + pk + ") " + (set.empty() ? std::string("DO NOTHING") : "DO UPDATE SET " + set);
  return deferred ? db_->sendParams(sql, params) : db_->exec(sql, params);
}

// MySQL/MariaDB: values are SQL literals (values.h mysqlLiteral), statements are sized to stay
// well under the server's max_allowed_packet (a larger one makes the server drop the connection).
class MariaDbDialect final : public JdbcSinkTask::Dialect {
 public:
  Status connect(const std::string& url, const std::string& user, const std::string& password) override {
    FERRY_ASSIGN_OR_RETURN(db_, jdbc::MariaDbConnection::connect(url, user, password, 10));
    // Half the packet for a statement (room for the protocol), and never more than 16 MiB: big
    // statements gain nothing and hold more in memory.
    maxStatement_ = std::clamp<std::size_t>(db_->maxAllowedPacket() / 2, 512, std::size_t{16} << 20);
    return Status::ok();
  }
  bool connected() const override { return db_ && db_->healthy(); }
  void disconnect() override { db_.reset(); }

  Result<std::optional<std::string>> value(const Schema& s, const Json& v, const std::string& field) const override {
    return jdbc::mysqlLiteral(s, v, field);
  }
  std::optional<std::string> quickValue(const Schema& s, const simdjson::dom::element& v) const override {
    return jdbc::quickText(s, v, true);
  }
  // The wall clock alone: a DATETIME column keeps it; a TIMESTAMP column would read it in the
  // session's zone (UTC), so db.timezone is for DATETIME columns (README).
  std::string zonedTimestamp(const std::string& localText, std::int32_t) const override {
    return "'" + localText + "'";
  }
  Result<std::string> column(std::string_view name, bool quote) const override {
    return jdbc::mysqlIdentifier(name, quote);
  }
  Result<std::string> table(const std::string& format, const std::string& topic, bool quote) const override {
    return jdbc::mysqlTableIdentifier(format, topic, quote);
  }
  Result<bool> tableExists(const std::string& table) override {
    Status st = db_->exec("SELECT 1 FROM " + table + " LIMIT 0");
    if (st.isOk()) return true;
    if (jdbc::mariaDbErrno(st) == 1146) return false;  // ER_NO_SUCH_TABLE
    return st;
  }
  Result<std::vector<std::string>> tableColumns(const std::string& table) override {
    FERRY_ASSIGN_OR_RETURN(auto r, db_->query("SHOW COLUMNS FROM " + table));
    std::vector<std::string> out;
    for (const auto& row : r.rows) out.push_back(row.empty() ? "" : row[0].value_or(""));
    return out;
  }
  bool caseInsensitiveColumns(bool) const override { return true; }
  Status exec(const std::string& sql) override { return db_->exec(sql); }
  const char* beginSql() const override { return "START TRANSACTION"; }
  std::size_t maxRows(std::size_t) const override { return std::numeric_limits<std::size_t>::max(); }
  Status write(const std::vector<const Row*>& group, InsertMode mode) override;

 protected:
  Result<std::string> columnType(const Schema& s, const std::string& column, bool key) const override {
    return jdbc::mysqlType(s, column, key);
  }
  Result<bool> prepareSend(const std::vector<const Row*>& group, InsertMode mode) override {
    std::string head, tail;
    std::vector<std::string> tuples;
    insertParts(group, mode, head, tuples, tail);
    std::size_t size = head.size() + tail.size();
    for (const auto& t : tuples) size += t.size() + 2;
    if (size > maxStatement_) return false;  // more than one statement: written at once
    prepared_.clear();
    prepared_.reserve(size);
    prepared_ += head;
    for (std::size_t i = 0; i < tuples.size(); ++i) (i ? prepared_ += ", " : prepared_) += tuples[i];
    prepared_ += tail;
    return true;
  }
  Status sendPrepared(const std::vector<const Row*>&, InsertMode) override {
    Status st = db_->send(prepared_);
    prepared_.clear();
    return st;
  }
  bool outstanding() const override { return db_ && db_->outstanding(); }
  Status finishSent() override { return db_->finish(); }
  std::string tableOptions() const override { return " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"; }

 private:
  // Sends `head` + the tuples + `tail` in as few statements as fit under maxStatement_. A tuple
  // that cannot fit even alone is that row's data error (InvalidArgument), not a lost connection.
  Status inStatements(const std::string& head, const std::vector<std::string>& tuples, const std::string& tail);
  // An insert or upsert group's INSERT head, row tuples and ON DUPLICATE KEY tail.
  static void insertParts(const std::vector<const Row*>& group, InsertMode mode, std::string& head,
                          std::vector<std::string>& tuples, std::string& tail);
  std::string prepared_;  // prepareSend()'s statement, for sendPrepared()
  static std::string tuple(const Row& row, std::size_t from, std::size_t to) {
    std::string out = "(";
    for (std::size_t i = from; i < to; ++i) out += (i > from ? ", " : "") + row.values[i].value_or("NULL");
    return out + ")";
  }

  std::unique_ptr<jdbc::MariaDbConnection> db_;
  std::size_t maxStatement_ = 1 << 20;
};

Status MariaDbDialect::inStatements(const std::string& head, const std::vector<std::string>& tuples,
                                    const std::string& tail) {
  std::string sql;
  std::size_t count = 0;
  for (const auto& t : tuples) {
    if (head.size() + t.size() + tail.size() > maxStatement_)
      return Status::invalidArgument("a row of " + std::to_string(t.size()) + " bytes of SQL does not fit in a " +
                                     std::to_string(maxStatement_) + "-byte statement (the server's " +
                                     "max_allowed_packet is " + std::to_string(db_->maxAllowedPacket()) + ")");
    if (count > 0 && sql.size() + 2 + t.size() + tail.size() > maxStatement_) {
      FERRY_RETURN_IF_ERROR(db_->exec(sql + tail));
      count = 0;
    }
    if (count++ == 0) sql = head;
    else sql += ", ";
    sql += t;
  }
  if (count > 0) return db_->exec(sql + tail);
  return Status::ok();
}

Status MariaDbDialect::write(const std::vector<const Row*>& group, InsertMode mode) {
  const Row& first = *group.front();
  const std::size_t n = first.columns().size();
  std::vector<std::string> tuples;
  if (first.remove()) {
    for (const Row* row : group) tuples.push_back(tuple(*row, 0, first.pkCount()));
    return inStatements("DELETE FROM " + first.table() + " WHERE (" + pkList(first) + ") IN (", tuples, ")");
  }
  if (mode == InsertMode::kUpdate) {
    for (const Row* row : group) {
      std::string set, where;
      for (std::size_t i = first.pkCount(); i < n; ++i)
        set += (i > first.pkCount() ? ", " : "") + row->columns()[i] + " = " + row->values[i].value_or("NULL");
      if (set.empty()) continue;
      for (std::size_t i = 0; i < first.pkCount(); ++i)
        where += (i ? " AND " : "") + row->columns()[i] + " = " + row->values[i].value_or("NULL");
      const std::string sql = "UPDATE " + first.table() + " SET " + set + " WHERE " + where;
      if (sql.size() > maxStatement_)
        return Status::invalidArgument("an UPDATE of " + std::to_string(sql.size()) +
                                       " bytes does not fit under the server's max_allowed_packet");
      FERRY_RETURN_IF_ERROR(db_->exec(sql));
    }
    return Status::ok();
  }
  std::string head, tail;
  insertParts(group, mode, head, tuples, tail);
  return inStatements(head, tuples, tail);
}

void MariaDbDialect::insertParts(const std::vector<const Row*>& group, InsertMode mode, std::string& head,
                                 std::vector<std::string>& tuples, std::string& tail) {
  const Row& first = *group.front();
  const std::size_t n = first.columns().size();
  const std::vector<const Row*> rows = mode == InsertMode::kUpsert ? lastOfEachKey(group) : group;
  tuples.reserve(rows.size());
  for (const Row* row : rows) tuples.push_back(tuple(*row, 0, n));
  if (mode == InsertMode::kUpsert) {
    // VALUES(c): the value the statement's row would have inserted (MariaDB; MySQL 8 accepts it
    // with a deprecation warning). Without value columns a duplicate changes nothing.
    for (std::size_t i = first.pkCount(); i < n; ++i)
      tail += (i > first.pkCount() ? ", " : "") + first.columns()[i] + " = VALUES(" + first.columns()[i] + ")";
    if (tail.empty()) tail = first.columns()[0] + " = " + first.columns()[0];
    tail = " ON DUPLICATE KEY UPDATE " + tail;
  }
  head = "INSERT INTO " + first.table() + " (" + columnList(first) + ") VALUES ";
}

}  // namespace

// A row's fields read from simdjson's DOM: the value is parsed once and each field the schema
// names becomes a Json of its own, so a flat row costs no document of every field with its key
// (a per-row nlohmann object was ~10 % of the sink's CPU at 100-byte rows). A text simdjson
// refuses goes to core::parseJson, which decides as every other reader of record JSON does.
// As nlohmann's parser does, a key given twice counts with its last value.
struct JdbcSinkTask::Fields {
  simdjson::dom::parser parser = core::boundedFastParser();
  SchemaPtr schema;  // whose field names `index` holds (kept alive: the views point into it)
  std::unordered_map<std::string_view, std::size_t> index;
  std::vector<simdjson::dom::element> at;  // this row's element of each field
  std::vector<char> present;
  std::optional<Json> slow;  // the document, when simdjson refused the text

  // Reads `value` (a record's value text) for a struct `schema`; false: not a JSON object.
  bool read(const SchemaPtr& s, std::string_view value) {
    if (schema.get() != s.get()) {
      schema = s;
      index.clear();
      for (std::size_t i = 0; i < s->fields().size(); ++i) index[s->fields()[i].name] = i;
      at.assign(s->fields().size(), simdjson::dom::element());
    }
    present.assign(s->fields().size(), 0);
    slow.reset();
    auto doc = parser.parse(value.data(), value.size());
    if (doc.error()) {
      slow = core::parseJson(value);
      return slow && slow->is_object();
    }
    simdjson::dom::object object;
    if (doc.value_unsafe().get_object().get(object)) return false;
    const auto& fields = s->fields();
    std::size_t next = 0;  // members in the schema's order (as writers write them) are found without a lookup
    for (auto field : object) {
      std::size_t i;
      if (next < fields.size() && fields[next].name == field.key) {
        i = next;
      } else {
        auto it = index.find(field.key);
        if (it == index.end()) continue;
        i = it->second;
      }
      at[i] = field.value;  // a repeated key: the last one wins
      present[i] = 1;
      next = i + 1;
    }
    return true;
  }
  // The element of the schema's field `i` as simdjson read it; null when the row has none or the
  // text was read by the fallback.
  const simdjson::dom::element* element(std::size_t i) const {
    if (slow || i >= present.size() || !present[i]) return nullptr;
    return &at[i];
  }
  // The field's value (null when the row has none).
  Json operator[](const std::string& name) const {
    if (slow) {
      auto it = slow->find(name);
      return it == slow->end() ? Json() : *it;
    }
    auto it = index.find(name);
    if (it == index.end() || !present[it->second]) return Json();
    Json out;
    core::toJson(at[it->second], out);
    return out;
  }
};

JdbcSinkTask::JdbcSinkTask() : fields_(std::make_unique<Fields>()) {}
JdbcSinkTask::~JdbcSinkTask() = default;

std::string JdbcSinkTask::version() const { return kVersion; }

Status JdbcSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  context_ = &context;
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(JdbcSinkConnector::definition(), config, "JdbcSink"));
  FERRY_RETURN_IF_ERROR(checkCombination(p).withContext("JdbcSink"));
  url_ = p.getString("connection.url");
  user_ = p.getString("connection.user");
  password_ = p.getString("connection.password");
  insertMode_ = *insertModeOf(p.getString("insert.mode"));
  pkMode_ = *pkModeOf(p.getString("pk.mode"));
  pkFields_ = p.getList("pk.fields");
  for (const auto& f : p.getList("fields.whitelist")) fieldsWhitelist_.insert(f);
  tableFormat_ = p.getString("table.name.format");
  autoCreate_ = p.getBool("auto.create");
  autoEvolve_ = p.getBool("auto.evolve");
  FERRY_ASSIGN_OR_RETURN(zone_, core::TimeZone::load(p.getString("db.timezone")));
  if (zone_->isUtc()) zone_.reset();
  deleteEnabled_ = p.getBool("delete.enabled");
  quote_ = p.getString("quote.sql.identifiers") == "always";
  batchSize_ = static_cast<std::size_t>(p.getInt("batch.size"));
  if (jdbc::isMariaDbUrl(url_)) dialect_ = std::make_unique<MariaDbDialect>();
  else dialect_ = std::make_unique<PostgresDialect>();
  // A server that is down now may be up by the first put (which retries); a refused password or
  // a database that does not exist fails the task here, with the server's message.
  Status st = connect();
  if (st.code() == StatusCode::kUnavailable) return Status::ok();
  return st.withContext("JdbcSink");
}

Status JdbcSinkTask::connect() {
  if (dialect_->connected()) return Status::ok();
  dialect_->disconnect();
  knownTables_.clear();
  tableColumns_.clear();
  evolvedShapes_.clear();
  return dialect_->connect(url_, user_, password_);
}

Result<std::shared_ptr<const JdbcSinkTask::Layout>> JdbcSinkTask::layoutOf(const Record& r, bool remove) {
  const Schema* ks = r.keySchema.get();
  const Schema* vs = r.valueSchema.get();
  if (lastLayout_ && lastLayout_->topic == r.topic && lastLayout_->keySchema.get() == ks &&
      lastLayout_->valueSchema.get() == vs && lastLayout_->remove == remove)
    return lastLayout_;
  auto cached = layouts_.find(LayoutKey{r.topic, ks, vs, remove});
  if (cached != layouts_.end()) return lastLayout_ = cached->second;

  auto layout = std::make_shared<Layout>();
  layout->topic = r.topic;
  layout->keySchema = r.keySchema;
  layout->valueSchema = r.valueSchema;
  layout->remove = remove;
  // Table and column names are quoted once (the quoting never changes; the same few for every row).
  if (auto it = tableNames_.find(r.topic); it != tableNames_.end()) {
    layout->table = it->second;
  } else {
    FERRY_ASSIGN_OR_RETURN(layout->table, dialect_->table(tableFormat_, r.topic, quote_));
    if (tableNames_.size() > 10000) tableNames_.clear();
    tableNames_.emplace(r.topic, layout->table);
  }
  auto add = [&](Layout::From from, const std::string& name, const Schema& schema) -> Status {
    auto it = columnNames_.find(name);
    if (it == columnNames_.end()) {
      FERRY_ASSIGN_OR_RETURN(auto col, dialect_->column(name, quote_));
      if (columnNames_.size() > 10000) columnNames_.clear();
      it = columnNames_.emplace(name, std::move(col)).first;
    }
    layout->columns.push_back(it->second);
    layout->schemas.push_back(&schema);
    std::size_t field = 0;
    if (from == Layout::From::kValueField)
      while (field < r.valueSchema->fields().size() && r.valueSchema->fields()[field].name != name) ++field;
    layout->sources.push_back({from, name, field});
    return Status::ok();
  };
  // The primary key's column names: a value field of the same name is not written again (its
  // column holds the key's value, as in Kafka Connect's JDBC sink).
  std::set<std::string> pkNames;
  // The key's columns (record_key), for rows and tombstones alike.
  auto keyColumns = [&]() -> Status {
    if (!r.keySchema)
      return Status::invalidArgument("pk.mode=record_key needs a key with a schema (key.converter=JsonConverter "
                                     "with schemas.enable=true)");
    if (r.keySchema->type() != SchemaType::kStruct) {
      const std::string name = pkFields_.empty() ? "__connect_key" : pkFields_.front();
      pkNames.insert(name);
      return add(Layout::From::kKey, name, *r.keySchema);
    }
    std::vector<std::string> names = pkFields_;
    if (names.empty())
      for (const auto& f : r.keySchema->fields()) names.push_back(f.name);
    for (const auto& name : names) {
      const SchemaField* f = r.keySchema->field(name);
      if (!f) return Status::invalidArgument("pk.fields: the key has no field '" + name + "'");
      FERRY_RETURN_IF_ERROR(add(Layout::From::kKeyField, name, *f->schema));
      pkNames.insert(name);
    }
    return Status::ok();
  };
  if (remove) {
    FERRY_RETURN_IF_ERROR(keyColumns());
  } else {
    if (!r.valueSchema)
      return Status::invalidArgument("a record without a value schema: JdbcSink writes typed records "
                                     "(value.converter=org.apache.kafka.connect.json.JsonConverter with "
                                     "schemas.enable=true, or a source that gives schemas)");
    const Schema& v = *r.valueSchema;
    if (v.type() != SchemaType::kStruct)
      return Status::invalidArgument("the value's schema is " + v.describe() + ", not a struct (one column per field)");
    switch (pkMode_) {
      case PkMode::kNone: break;
      case PkMode::kKafka:
        // The coordinates go through the dialect's value text like any value: for MySQL/MariaDB
        // a literal, so a topic name is never SQL.
        for (std::size_t i = 0; i < 3; ++i) {
          static constexpr Layout::From kFrom[] = {Layout::From::kTopic, Layout::From::kQueue, Layout::From::kOffset};
          const std::string name = pkFields_.size() == 3 ? pkFields_[i] : kKafkaPk[i];
          FERRY_RETURN_IF_ERROR(add(kFrom[i], name, *kafkaSchemas()[i]));
        }
        break;
      case PkMode::kRecordKey:
        FERRY_RETURN_IF_ERROR(keyColumns());
        break;
      case PkMode::kRecordValue: {
        std::vector<std::string> names = pkFields_;
        if (names.empty())
          for (const auto& f : v.fields()) names.push_back(f.name);
        for (const auto& name : names) {
          const SchemaField* f = v.field(name);
          if (!f) return Status::invalidArgument("pk.fields: the value has no field '" + name + "'");
          FERRY_RETURN_IF_ERROR(add(Layout::From::kValueField, name, *f->schema));
          pkNames.insert(name);
        }
        break;
      }
    }
  }
  layout->pkCount = layout->columns.size();
  if (!remove) {
    for (const auto& f : r.valueSchema->fields()) {
      if (pkNames.count(f.name) || (!fieldsWhitelist_.empty() && !fieldsWhitelist_.count(f.name))) continue;
      FERRY_RETURN_IF_ERROR(add(Layout::From::kValueField, f.name, *f.schema));
    }
  }
  layout->shape = layout->table;
  for (const auto& c : layout->columns) layout->shape.append(1, '\0').append(c);
  if (layouts_.size() >= 1000) layouts_.clear();
  layouts_.emplace(LayoutKey{r.topic, ks, vs, remove}, layout);
  return lastLayout_ = std::move(layout);
}

Result<std::optional<JdbcSinkTask::Row>> JdbcSinkTask::rowOf(const Record& r) {
  using Out = std::optional<Row>;
  const bool remove = r.value.isNull();
  if (remove && !deleteEnabled_) return Out();  // a tombstone without delete.enabled: nothing to write
  Row row;
  row.record = &r;
  FERRY_ASSIGN_OR_RETURN(row.layout, layoutOf(r, remove));
  const Layout& layout = *row.layout;
  // The row's data: the value's fields (read from simdjson's DOM), the key's, the coordinates.
  bool valueRead = false;
  std::optional<Json> key;
  row.values.reserve(layout.sources.size());
  for (std::size_t i = 0; i < layout.sources.size(); ++i) {
    const auto& [from, name, field] = layout.sources[i];
    Json data;
    switch (from) {
      case Layout::From::kTopic: data = Json(r.topic); break;
      case Layout::From::kQueue: data = Json(r.queue.value_or(-1)); break;
      case Layout::From::kOffset: data = Json(r.offset); break;
      case Layout::From::kKey:
      case Layout::From::kKeyField: {
        if (!key) {
          if (r.key.isNull())
            return Status::invalidArgument("pk.mode=record_key needs a key with a schema (key.converter="
                                           "JsonConverter with schemas.enable=true)");
          key = core::parseJson(r.key.view());
          if (!key) return Status::invalidArgument("the key is not JSON");
        }
        if (from == Layout::From::kKey) {
          data = *key;
        } else if (auto it = key->find(name); it != key->end()) {
          data = *it;
        }
        break;
      }
      case Layout::From::kValueField: {
        if (!valueRead) {
          if (!fields_->read(r.valueSchema, r.value.view()))
            return Status::invalidArgument("the value is not a JSON object");
          valueRead = true;
        }
        const Schema& schema = *layout.schemas[i];
        if (const auto* e = fields_->element(field); e && !(zone_ && schema.logicalName() == logical::kTimestamp)) {
          if (auto text = dialect_->quickValue(schema, *e)) {
            row.values.emplace_back(std::move(*text));
            continue;
          }
        }
        data = (*fields_)[name];
        break;
      }
    }
    FERRY_ASSIGN_OR_RETURN(auto v, valueOf(*layout.schemas[i], data, name));
    row.values.push_back(std::move(v));
  }
  return Out(std::move(row));
}

Result<std::optional<std::string>> JdbcSinkTask::valueOf(const Schema& s, const Json& v, const std::string& field) {
  if (!zone_ || s.logicalName() != logical::kTimestamp || !v.is_number_integer()) return dialect_->value(s, v, field);
  // db.timezone: the instant's wall clock in that zone.
  const std::int64_t ms = v.get<std::int64_t>();
  std::int64_t seconds = ms / 1000;
  if (ms % 1000 < 0) --seconds;
  const std::int32_t offset = zone_->offsetAt(seconds);
  return std::optional<std::string>(
      dialect_->zonedTimestamp(jdbc::timestampText(ms + std::int64_t{offset} * 1000), offset));
}

Status JdbcSinkTask::ensureTable(const Row& row) {
  if (!knownTables_.count(row.table())) {
    FERRY_ASSIGN_OR_RETURN(bool found, dialect_->tableExists(row.table()));
    if (!found) {
      if (row.remove()) return Status::notFound("table " + row.table() + " does not exist: nothing to delete");
      if (!autoCreate_) return Status::failedPrecondition("table " + row.table() + " does not exist (auto.create=false)");
      FERRY_ASSIGN_OR_RETURN(auto sql, dialect_->createTableSql(row));
      FERRY_RETURN_IF_ERROR(dialect_->exec(sql));
    }
    knownTables_.insert(row.table());
  }
  if (!autoEvolve_ || row.remove() || evolvedShapes_.count(row.shape())) return Status::ok();
  FERRY_RETURN_IF_ERROR(evolveTable(row));
  evolvedShapes_.insert(row.shape());  // rows of this shape have every column now
  return Status::ok();
}

Status JdbcSinkTask::evolveTable(const Row& row) {
  const bool folded = dialect_->caseInsensitiveColumns(quote_);
  auto key = [folded](std::string name) {
    if (folded)
      for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return name;
  };
  auto load = [&]() -> Status {
    FERRY_ASSIGN_OR_RETURN(auto names, dialect_->tableColumns(row.table()));
    auto& known = tableColumns_[row.table()];
    known.clear();
    for (const auto& n : names) {
      FERRY_ASSIGN_OR_RETURN(auto quoted, dialect_->column(n, true));
      known.insert(key(quoted));
    }
    return Status::ok();
  };
  if (!tableColumns_.count(row.table())) FERRY_RETURN_IF_ERROR(load());
  // Row columns are quoted as quote.sql.identifiers says; compare in the always-quoted form.
  auto has = [&](std::size_t i) -> Result<bool> {
    std::string name = row.columns()[i];
    if (!quote_) {
      FERRY_ASSIGN_OR_RETURN(name, dialect_->column(name, true));
    }
    return tableColumns_[row.table()].count(key(name)) > 0;
  };
  for (std::size_t i = row.pkCount(); i < row.columns().size(); ++i) {
    FERRY_ASSIGN_OR_RETURN(bool present, has(i));
    if (present) continue;
    if (!row.schemas()[i]->optional() && !row.schemas()[i]->defaultJson())
      return Status::failedPrecondition("auto.evolve: table " + row.table() + " has no column " + row.columns()[i] +
                                        " and its field is required without a default: a column added now would be "
                                        "NULL in the existing rows; add it yourself");
    FERRY_ASSIGN_OR_RETURN(auto sql, dialect_->addColumnSql(row, i));
    Status st = dialect_->exec(sql);
    // Another task may have added it meanwhile: look again before failing.
    FERRY_RETURN_IF_ERROR(load());
    FERRY_ASSIGN_OR_RETURN(present, has(i));
    if (!present) return st.isOk() ? Status::internal("auto.evolve: " + sql + " added no column") : st;
    core::logger("jdbc")->info("JdbcSink: auto.evolve added column {} to {}", row.columns()[i], row.table());
  }
  return Status::ok();
}

Status JdbcSinkTask::writeAll(const std::vector<Row>& rows) {
  FERRY_RETURN_IF_ERROR(dialect_->exec(dialect_->beginSql()));
  std::size_t i = 0;
  Status st;
  while (i < rows.size() && st.isOk()) {
    const Row& first = rows[i];
    const std::size_t maxRows = std::max<std::size_t>(1, std::min(batchSize_, dialect_->maxRows(first.columns().size())));
    std::vector<const Row*> group{&first};
    std::size_t j = i + 1;
    while (j < rows.size() && group.size() < maxRows && rows[j].sameStatement(first))
      group.push_back(&rows[j++]);
    st = dialect_->write(group, insertMode_);
    i = j;
  }
  if (st.isOk()) st = dialect_->exec("COMMIT");
  if (!st.isOk()) (void)dialect_->exec("ROLLBACK");
  return st;
}

Status JdbcSinkTask::writeOneByOne(const std::vector<Row>& rows) {
  FERRY_RETURN_IF_ERROR(dialect_->exec(dialect_->beginSql()));
  for (const Row& row : rows) {
    Status st = dialect_->exec("SAVEPOINT ferry_row");
    if (st.isOk()) st = dialect_->write({&row}, insertMode_);
    if (st.isOk()) st = dialect_->exec("RELEASE SAVEPOINT ferry_row");
    if (st.isOk()) continue;
    if (dataError(st)) {
      Status back = dialect_->exec("ROLLBACK TO SAVEPOINT ferry_row");
      Status reported = back.isOk() ? context_->reportBadRecord(*row.record, st.withContext("JdbcSink: table " + row.table()))
                                    : back;
      if (reported.isOk()) continue;
      st = reported;
    }
    (void)dialect_->exec("ROLLBACK");
    return st;
  }
  Status st = dialect_->exec("COMMIT");
  if (!st.isOk()) (void)dialect_->exec("ROLLBACK");
  return st;
}

Status JdbcSinkTask::put(std::vector<Record>& records) {
  if (records.empty()) return Status::ok();
  // The records become rows first, without the database: meanwhile the server still works on
  // the batch sent last.
  // Bad records are reported once the database answered (a put() that fails before is retried
  // with the same records, and they would be reported again).
  std::vector<Row> rows;
  rows.reserve(records.size());
  std::vector<std::pair<const Record*, Status>> bad;
  for (const Record& r : records) {
    auto row = rowOf(r);
    if (!row.isOk()) bad.emplace_back(&r, row.status().withContext("JdbcSink"));
    else if (*row) rows.push_back(std::move(**row));
  }
  FERRY_RETURN_IF_ERROR(settle());
  FERRY_RETURN_IF_ERROR(connect().withContext("JdbcSink"));
  for (const auto& [r, why] : bad) FERRY_RETURN_IF_ERROR(context_->reportBadRecord(*r, why));
  std::size_t kept = 0;
  for (Row& row : rows) {
    if (Status st = ensureTable(row); !st.isOk()) {
      if (st.code() == StatusCode::kNotFound) continue;  // a tombstone for a table that is not there
      if (st.code() == StatusCode::kUnavailable) dialect_->disconnect();
      if (dataError(st)) {  // a schema that has no table form
        FERRY_RETURN_IF_ERROR(context_->reportBadRecord(*row.record, st.withContext("JdbcSink")));
        continue;
      }
      return st.withContext("JdbcSink");
    }
    if (&rows[kept] != &row) rows[kept] = std::move(row);
    ++kept;
  }
  rows.resize(kept);
  if (rows.empty()) return Status::ok();
  // A batch that is one statement is sent without waiting for its answer (settle() collects it
  // at the next put() or flush); the records stay with it for a bad-record report.
  Status st;
  if (std::vector<const Row*> group = oneStatement(rows); !group.empty()) {
    auto sent = dialect_->send(group, insertMode_);
    if (sent.isOk() && *sent) {
      pending_.emplace(Pending{std::move(records), std::move(rows)});  // the rows' record pointers stay valid
      return Status::ok();
    }
    st = sent.status();
  }
  if (st.isOk()) st = writeAll(rows);
  if (dataError(st)) st = writeOneByOne(rows);
  if (!st.isOk() && st.code() == StatusCode::kUnavailable) dialect_->disconnect();  // reconnect on the retry
  return st.isOk() ? st : st.withContext("JdbcSink");
}

std::vector<const JdbcSinkTask::Row*> JdbcSinkTask::oneStatement(const std::vector<Row>& rows) const {
  const Row& first = rows.front();
  if (rows.size() > std::min(batchSize_, dialect_->maxRows(first.columns().size()))) return {};
  std::vector<const Row*> group;
  group.reserve(rows.size());
  for (const Row& row : rows) {
    if (!row.sameStatement(first)) return {};
    group.push_back(&row);
  }
  return group;
}

Status JdbcSinkTask::settle() {
  if (!pending_) return Status::ok();
  if (!pending_->failed) {
    Status st = dialect_->settle();
    if (st.isOk()) {
      pending_.reset();
      return st;
    }
    // The statement wrote all of its rows or none: they are written again, now and on every retry
    // until that passes (the statement's answer is gone with the failure; nothing is outstanding).
    core::logger("jdbc")->warn("JdbcSink: writing {} rows again: {}", pending_->rows.size(), st.message());
    pending_->failed = true;
    pending_->rowByRow = dataError(st);
    if (st.code() == StatusCode::kUnavailable) dialect_->disconnect();
  }
  Status st = connect();
  if (st.isOk()) st = pending_->rowByRow ? writeOneByOne(pending_->rows) : writeAll(pending_->rows);
  if (!pending_->rowByRow && dataError(st)) st = writeOneByOne(pending_->rows);
  if (!st.isOk() && st.code() == StatusCode::kUnavailable) dialect_->disconnect();
  if (st.isOk()) pending_.reset();
  return st.isOk() ? st : st.withContext("JdbcSink");
}

void JdbcSinkTask::stop() {
  // A batch still unanswered is left to the server (it commits or not on its own); its offsets
  // were not committed, so it is read again after a restart.
  pending_.reset();
  if (dialect_) dialect_->disconnect();
}

}  // namespace ferry::connectors
