// The JDBC source's two databases (source_db.h).
#include "connectors/jdbc/source_db.h"

#include <charconv>
#include <map>
#include <set>

#include "connectors/jdbc/mariadb_client.h"
#include "connectors/jdbc/pg_client.h"
#include "connectors/jdbc/values.h"
#include "core/logging.h"

namespace ferry::connectors::jdbc {
namespace {

bool isInteger(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

std::int64_t toInt64(const std::optional<std::string>& s, std::int64_t otherwise) {
  if (!s || !isInteger(*s)) return otherwise;
  return std::stoll(*s);
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

class PgSourceRows final : public SourceRows {
 public:
  explicit PgSourceRows(std::unique_ptr<PgRows> r) : r_(std::move(r)) {}
  int rows() const override { return r_->rows(); }
  int columns() const override { return r_->columns(); }
  std::string_view name(int c) const override { return r_->name(c); }
  bool isNull(int r, int c) const override { return r_->isNull(r, c); }
  std::string_view value(int r, int c) const override { return r_->value(r, c); }
  const PgRows& pg() const { return *r_; }

 private:
  std::unique_ptr<PgRows> r_;
};

std::optional<PgTypeInfo> lookupType(unsigned oid, const void* state) {
  const auto& types = *static_cast<const std::map<unsigned, PgTypeInfo>*>(state);
  auto it = types.find(oid);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

class PgSourceDb final : public SourceDb {
 public:
  explicit PgSourceDb(std::unique_ptr<PgConnection> c) : db_(std::move(c)) {}

  bool healthy() const override { return db_->healthy(); }
  Result<std::string> identifier(std::string_view name) const override { return jdbc::identifier(name, true); }
  std::string param(Params& params, const std::string& value) const override {
    params.emplace_back(value);
    return "$" + std::to_string(params.size());
  }
  Result<std::unique_ptr<SourceRows>> select(const std::string& sql, const Params& params) override {
    FERRY_ASSIGN_OR_RETURN(auto rows, conn().select(sql, params));
    return std::unique_ptr<SourceRows>(new PgSourceRows(std::move(rows)));
  }
  void prefetch(const std::string& sql, const Params& params) override {
    // Not sent: the next read sends it again and reports its error.
    prefetched_ = conn().sendParams(sql, params).isOk();
  }
  Result<std::unique_ptr<SourceRows>> takePrefetched() override {
    if (!prefetched_) return std::unique_ptr<SourceRows>();
    prefetched_ = false;
    FERRY_ASSIGN_OR_RETURN(auto rows, db_->finishSelect());
    return std::unique_ptr<SourceRows>(new PgSourceRows(std::move(rows)));
  }

  Status openBulk(const std::string& from) override {
    FERRY_RETURN_IF_ERROR(conn().exec("BEGIN READ ONLY"));
    return conn().exec("DECLARE ferry_bulk NO SCROLL CURSOR FOR SELECT * FROM " + from);
  }
  Result<std::unique_ptr<SourceRows>> fetchBulk(std::size_t n) override {
    return select("FETCH " + std::to_string(n) + " FROM ferry_bulk", {});
  }
  Status closeBulk() override { return conn().exec("COMMIT"); }

  Result<std::vector<Relation>> listTables(const std::vector<std::string>& types, const std::string& schema) override {
    std::string kinds = "{";
    for (const auto& t : types) {
      if (kinds.size() > 1) kinds += ',';
      kinds += t == "TABLE" ? "r" : t == "PARTITIONED TABLE" ? "p" : t == "VIEW" ? "v" : "m";
    }
    kinds += '}';
    FERRY_ASSIGN_OR_RETURN(
        auto rows,
        conn().query("SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON "
                   "n.oid = c.relnamespace WHERE c.relkind::text = ANY($1::text[]) AND n.nspname NOT IN "
                   "('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' AND "
                   "n.nspname NOT LIKE 'pg\\_temp%' AND ($2 = '' OR n.nspname = $2) AND "
                   "has_table_privilege(c.oid, 'SELECT') ORDER BY 1, 2",
                   {kinds, schema}));
    std::vector<Relation> out;
    for (const auto& r : rows) out.push_back({r[0].value_or(""), r[1].value_or("")});
    return out;
  }

  Result<std::string> upperBound(std::int64_t delayMs) override {
    // The oldest open transaction of another client: its rows, committed later, carry
    // timestamps from its start on. (Visible with pg_read_all_stats or for the user's own.)
    FERRY_ASSIGN_OR_RETURN(
        auto rows,
        conn().query("SELECT to_char(LEAST(clock_timestamp() - make_interval(secs => $1::double precision / 1000), "
                   "(SELECT min(xact_start) FROM pg_stat_activity WHERE xact_start IS NOT NULL AND pid <> "
                   "pg_backend_pid() AND backend_type = 'client backend')) AT TIME ZONE 'UTC', "
                   "'YYYY-MM-DD HH24:MI:SS.US')",
                   {std::to_string(delayMs)}));
    if (rows.size() != 1 || !rows[0][0]) return Status::internal("JdbcSource: the server gave no time");
    return *rows[0][0];
  }

  std::int64_t estimateRows(const Relation& table, const std::string& from) override {
    if (table.table.empty()) return -1;
    auto r = conn().query("SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass", {from});
    if (r.isOk() && r->size() == 1 && (*r)[0][0] && *(*r)[0][0] != "-1") return toInt64((*r)[0][0], -1);
    auto c = conn().query("SELECT count(*) FROM " + from);  // never analysed: count them (once per load)
    if (c.isOk() && c->size() == 1) return toInt64((*c)[0][0], -1);
    return -1;
  }

  std::string signature(const SourceRows& rows) const override {
    const PgRows& pg = static_cast<const PgSourceRows&>(rows).pg();
    std::string s;
    for (int c = 0; c < pg.columns(); ++c) {
      s += std::to_string(pg.typeOid(c)) + ':' + std::to_string(pg.typeMod(c)) + ':';
      s += pg.name(c);
      s += '\0';
    }
    return s;
  }

  Result<std::vector<ColumnReader>> describe(const SourceRows& rows, const Relation& table, const std::string& from,
                                             NumericMapping mapping,
                                             const std::shared_ptr<const core::TimeZone>& zone) override {
    const PgRows& pg = static_cast<const PgSourceRows&>(rows).pg();
    const int n = pg.columns();
    // Types without a fixed oid (enums, arrays of them, domains): from pg_type.
    std::string oids = "{";
    for (int c = 0; c < n; ++c) {
      if (c) oids += ',';
      oids += std::to_string(pg.typeOid(c));
    }
    oids += '}';
    FERRY_ASSIGN_OR_RETURN(auto types, conn().query("SELECT oid::text, typtype, typcategory, typelem::text FROM pg_type "
                                                   "WHERE oid = ANY($1::oid[]) OR oid IN (SELECT typelem FROM pg_type "
                                                   "WHERE oid = ANY($1::oid[]))",
                                                   {oids}));
    for (const auto& r : types) {
      PgTypeInfo info;
      info.typtype = r[1] && !r[1]->empty() ? (*r[1])[0] : 'b';
      info.category = r[2] && !r[2]->empty() ? (*r[2])[0] : 'U';
      info.element = static_cast<unsigned>(toInt64(r[3], 0));
      types_[static_cast<unsigned>(toInt64(r[0], 0))] = info;
    }
    // Which columns may be NULL: the table's NOT NULL constraints (a query's columns all may).
    std::set<std::string> notNull;
    if (!table.table.empty()) {
      FERRY_ASSIGN_OR_RETURN(auto attrs, conn().query("SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass "
                                                    "AND attnum > 0 AND NOT attisdropped AND attnotnull",
                                                    {from}));
      for (const auto& r : attrs)
        if (r[0]) notNull.insert(*r[0]);
    }
    std::vector<ColumnReader> out;
    for (int c = 0; c < n; ++c) {
      std::string name(pg.name(c));
      const bool optional = !notNull.count(name);
      FERRY_ASSIGN_OR_RETURN(auto reader, pgColumnReader(std::move(name), pg.typeOid(c), pg.typeMod(c), optional,
                                                         mapping, &lookupType, &types_, zone));
      out.push_back(std::move(reader));
    }
    return out;
  }

 private:
  // The connection, free for a statement: a prefetched query's rows are read and dropped first.
  PgConnection& conn() {
    if (prefetched_) {
      prefetched_ = false;
      (void)db_->finish();
    }
    return *db_;
  }
  bool prefetched_ = false;
  std::unique_ptr<PgConnection> db_;
  std::map<unsigned, PgTypeInfo> types_;  // pg_type rows of the oids seen
};

// ---------------------------------------------------------------------------------------------
// MySQL / MariaDB

class MySourceRows final : public SourceRows {
 public:
  explicit MySourceRows(MariaDbConnection::QueryResult r) : r_(std::move(r)) {}
  int rows() const override { return static_cast<int>(r_.rows.size()); }
  int columns() const override { return static_cast<int>(r_.columns.size()); }
  std::string_view name(int c) const override { return r_.columns[static_cast<std::size_t>(c)].name; }
  bool isNull(int r, int c) const override {
    return !r_.rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)].has_value();
  }
  std::string_view value(int r, int c) const override {
    const auto& v = r_.rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
    return v ? std::string_view(*v) : std::string_view();
  }
  const MariaDbConnection::QueryResult& result() const { return r_; }

 private:
  MariaDbConnection::QueryResult r_;
};

class MySourceDb final : public SourceDb {
 public:
  MySourceDb(std::unique_ptr<MariaDbConnection> c, std::string database)
      : db_(std::move(c)), database_(std::move(database)) {}

  bool healthy() const override { return db_->healthy(); }
  Result<std::string> identifier(std::string_view name) const override { return mysqlIdentifier(name, true); }
  std::string param(Params&, const std::string& value) const override {
    if (isInteger(value)) return value;
    return "'" + db_->escape(value) + "'";
  }
  Result<std::unique_ptr<SourceRows>> select(const std::string& sql, const Params&) override {
    FERRY_ASSIGN_OR_RETURN(auto rows, conn().query(sql));
    return std::unique_ptr<SourceRows>(new MySourceRows(std::move(rows)));
  }
  void prefetch(const std::string& sql, const Params&) override {
    // Not sent: the next read sends it again and reports its error.
    prefetched_ = conn().send(sql).isOk();
  }
  Result<std::unique_ptr<SourceRows>> takePrefetched() override {
    if (!prefetched_) return std::unique_ptr<SourceRows>();
    prefetched_ = false;
    FERRY_ASSIGN_OR_RETURN(auto rows, db_->finishQuery());
    return std::unique_ptr<SourceRows>(new MySourceRows(std::move(rows)));
  }

  Status openBulk(const std::string& from) override { return conn().stream("SELECT * FROM " + from); }
  Result<std::unique_ptr<SourceRows>> fetchBulk(std::size_t n) override {
    FERRY_ASSIGN_OR_RETURN(auto rows, conn().fetch(n));
    return std::unique_ptr<SourceRows>(new MySourceRows(std::move(rows)));
  }
  Status closeBulk() override {
    conn().endStream();
    return Status::ok();
  }

  Result<std::vector<Relation>> listTables(const std::vector<std::string>& types, const std::string& schema) override {
    std::string kinds;
    for (const auto& t : types) {
      if (t != "TABLE" && t != "VIEW") continue;  // MySQL has no partitioned or materialized kinds of their own
      if (!kinds.empty()) kinds += ", ";
      kinds += t == "TABLE" ? "'BASE TABLE'" : "'VIEW'";
    }
    if (kinds.empty()) return std::vector<Relation>{};
    const std::string& db = schema.empty() ? database_ : schema;
    // information_schema lists only what the user has some privilege on.
    std::string sql =
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE IN (" + kinds +
        ") AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')";
    if (!db.empty()) sql += " AND TABLE_SCHEMA = '" + db_->escape(db) + "'";
    sql += " ORDER BY 1, 2";
    FERRY_ASSIGN_OR_RETURN(auto rows, conn().query(sql));
    std::vector<Relation> out;
    for (const auto& r : rows.rows) out.push_back({r[0].value_or(""), r[1].value_or("")});
    return out;
  }

  Result<std::string> upperBound(std::int64_t delayMs) override {
    // InnoDB's open transactions (information_schema.INNODB_TRX, with the PROCESS privilege):
    // trx_started has whole seconds and a statement's NOW() may come just before its
    // transaction is registered, so the bound stays one second before it. Without the privilege
    // the delay alone guards (said once in the log).
    const std::string now = "NOW(6) - INTERVAL " + std::to_string(delayMs * 1000) + " MICROSECOND";
    const std::string fmt = "'%Y-%m-%d %H:%i:%s.%f'";
    if (trxVisible_) {
      auto r = conn().query("SELECT DATE_FORMAT(LEAST(" + now +
                          ", COALESCE((SELECT MIN(trx_started) - INTERVAL 1 SECOND FROM information_schema.INNODB_TRX "
                          "WHERE trx_mysql_thread_id <> CONNECTION_ID()), NOW(6))), " + fmt + ")");
      if (r.isOk() && r->rows.size() == 1 && r->rows[0].size() == 1 && r->rows[0][0]) return *r->rows[0][0];
      if (!r.isOk() && mariaDbErrno(r.status()) != 1227 /* ER_SPECIFIC_ACCESS_DENIED_ERROR */) return r.status();
      trxVisible_ = false;
      core::logger("jdbc")->warn(
          "JdbcSource: the user may not read information_schema.INNODB_TRX (PROCESS privilege): the timestamp "
          "modes are guarded by timestamp.delay.interval.ms alone against rows of transactions that commit late");
    }
    FERRY_ASSIGN_OR_RETURN(auto r, conn().query("SELECT DATE_FORMAT(" + now + ", " + fmt + ")"));
    if (r.rows.size() != 1 || r.rows[0].size() != 1 || !r.rows[0][0])
      return Status::internal("JdbcSource: the server gave no time");
    return *r.rows[0][0];
  }

  std::int64_t estimateRows(const Relation& table, const std::string& from) override {
    if (table.table.empty()) return -1;
    auto r = conn().query("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = '" +
                        db_->escape(table.schema) + "' AND TABLE_NAME = '" + db_->escape(table.table) + "'");
    if (r.isOk() && r->rows.size() == 1 && r->rows[0][0]) return toInt64(r->rows[0][0], -1);
    auto c = conn().query("SELECT COUNT(*) FROM " + from);
    if (c.isOk() && c->rows.size() == 1) return toInt64(c->rows[0][0], -1);
    return -1;
  }

  std::string signature(const SourceRows& rows) const override {
    std::string s;
    for (const auto& c : static_cast<const MySourceRows&>(rows).result().columns) {
      s += std::to_string(c.type) + ':' + std::to_string(c.flags) + ':' + std::to_string(c.length) + ':' +
           std::to_string(c.decimals) + ':' + std::to_string(c.charsetnr) + ':' + c.typeName + ':' + c.format + ':';
      s += c.name;
      s += '\0';
    }
    return s;
  }

  Result<std::vector<ColumnReader>> describe(const SourceRows& rows, const Relation&, const std::string&,
                                             NumericMapping mapping,
                                             const std::shared_ptr<const core::TimeZone>& zone) override {
    constexpr unsigned kNotNull = 1;
    std::vector<ColumnReader> out;
    for (const auto& c : static_cast<const MySourceRows&>(rows).result().columns) {
      FERRY_ASSIGN_OR_RETURN(auto reader, mysqlColumnReader(c, (c.flags & kNotNull) == 0, mapping, zone));
      out.push_back(std::move(reader));
    }
    return out;
  }

 private:
  // The connection, free for a statement: a prefetched query's rows are read and dropped first.
  MariaDbConnection& conn() {
    if (prefetched_) {
      prefetched_ = false;
      (void)db_->finish();
    }
    return *db_;
  }
  bool prefetched_ = false;
  std::unique_ptr<MariaDbConnection> db_;
  std::string database_;  // the URL's, may be empty
  bool trxVisible_ = true;
};

}  // namespace

Result<std::unique_ptr<SourceDb>> SourceDb::connect(const std::string& url, const std::string& user,
                                                    const std::string& password, int timeoutSeconds) {
  if (isMariaDbUrl(url)) {
    FERRY_ASSIGN_OR_RETURN(auto address, parseMariaDbUrl(url));
    FERRY_ASSIGN_OR_RETURN(auto db, MariaDbConnection::connect(url, user, password, timeoutSeconds));
    // A bulk pass streams a table while the runtime may take its time between polls: the server
    // must not give up on a slow reader (net_write_timeout, 60 s by default).
    FERRY_RETURN_IF_ERROR(db->exec("SET SESSION net_write_timeout = 3600"));
    return std::unique_ptr<SourceDb>(new MySourceDb(std::move(db), address.database));
  }
  if (!isPostgresUrl(url)) {
    return Status::invalidArgument("connection.url: postgresql://, mysql:// or mariadb:// expected, got '" +
                                   url.substr(0, url.find(':')) + ":...'");
  }
  FERRY_ASSIGN_OR_RETURN(auto db, PgConnection::connect(url, user, password, timeoutSeconds));
  // Texts the source parses: ISO dates, UTC, ISO 8601 intervals, exact floats, hex bytea.
  FERRY_RETURN_IF_ERROR(db->exec(
      "SELECT set_config('TimeZone', 'UTC', false), set_config('DateStyle', 'ISO, YMD', false), "
      "set_config('IntervalStyle', 'iso_8601', false), set_config('extra_float_digits', '1', false), "
      "set_config('bytea_output', 'hex', false)"));
  return std::unique_ptr<SourceDb>(new PgSourceDb(std::move(db)));
}

}  // namespace ferry::connectors::jdbc
