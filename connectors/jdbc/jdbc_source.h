// JdbcSource: rows of PostgreSQL or MySQL/MariaDB tables (or of one query) as typed records, with
// Kafka Connect JDBC source's key names and semantics (connectors/jdbc/README.md). The database's
// own SQL sits behind jdbc::SourceDb (source_db.h).
//
// - mode=bulk reads every row of each table every poll.interval.ms; incrementing, timestamp and
//   timestamp+incrementing read the rows after the table's position, in the order of those
//   columns, batch.max.rows at a time. The position (per table) is the last row's column values;
//   a restart resumes right after the last committed row.
// - Timestamp modes read only rows older than the upper bound: now minus
//   timestamp.delay.interval.ms, and never past the start of the oldest transaction still open on
//   the server (when the user may see it: pg_stat_activity, InnoDB's INNODB_TRX): a row written by a transaction
//   that commits later carries a timestamp at or after that transaction's start, so it is still
//   ahead of the position when it becomes visible. Rows with equal timestamps are never split
//   between two reads in timestamp mode.
// - Each record's value is a struct named after the table, one field per column (nullable
//   columns optional); the key is null (ValueToKey makes one). Topic: topic.prefix + table name,
//   or topic.prefix alone for a query.
// - The connector lists the tables, splits them over tasks.max tasks, and looks again every
//   table.poll.interval.ms: a new or dropped table reconfigures the tasks.
//
// Threading: the connector's calls come from its owner thread, plus its table monitor thread;
// the task is called from its owner thread only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "connectors/jdbc/source_db.h"
#include "connectors/jdbc/source_types.h"
#include "ferry/connector.h"

namespace ferry::connectors {

class JdbcSourceConnector final : public SourceConnector {
 public:
  static const ConfigDef& definition();
  ~JdbcSourceConnector() override { stop(); }
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override;
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override;
  std::unique_ptr<SourceTask> createTask() override;

 private:
  // The tables to read now (qualified "schema.table"), from the server.
  Result<std::vector<std::string>> listTables();
  void monitor();

  StringMap config_;
  ConnectorContext* context_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::string> tables_;  // guarded by mu_
  std::thread monitor_;
};

class JdbcSourceTask final : public SourceTask {
 public:
  enum class Mode { kBulk, kIncrementing, kTimestamp, kTimestampIncrementing };

  std::string version() const override;
  Status start(const StringMap& config, SourceTaskContext& context) override;
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override;
  void stop() override;

 private:
  using Clock = std::chrono::steady_clock;
  // One table (or the query) and where its reading stands.
  struct Table {
    std::string qualified;  // "schema.table", or the query
    std::string name;       // the table's own name (topic, schema name)
    jdbc::SourceDb::Relation relation;  // empty for the query
    std::string from;       // SQL: the quoted table, or the query as a subquery
    std::string topic;
    StringMap partition;
    std::optional<std::string> incrementing;  // the last row's incrementing value
    std::optional<std::int64_t> timestampMicros;  // the last row's timestamp
    Clock::time_point due{};                  // when to read it next
    bool bulkOpen = false;                    // bulk: its cursor is open
    // Progress of its first load (bulk: of the current pass), reported to the runtime.
    bool loading = true;
    std::int64_t loadDone = 0;
    std::int64_t loadEstimate = -2;  // -2: not asked yet, -1: not known
    // What its rows look like (rebuilt when the result's columns change).
    std::string signature;  // SourceDb::signature of the columns the readers were built for
    std::vector<std::string> columnNames;
    std::vector<jdbc::ColumnReader> readers;
    SchemaPtr schema;
    std::vector<std::string> fieldPrefixes;  // ",\"name\":" (the first without the comma)
    int incrementingIndex = -1;
    std::vector<int> timestampIndexes;
    bool localTimestamps = false;  // the timestamp columns have no zone and db.timezone is not UTC
    std::size_t prefetchedLimit = 0;  // the next read was sent with this limit (0: none was)
  };

  Status connect();
  Status readTable(Table& t, std::vector<Record>& out, std::size_t max);
  Result<std::unique_ptr<jdbc::SourceRows>> query(Table& t, std::size_t limit);
  // The statement reading the `limit` rows after the position (`incrementing`, `timestampMicros`)
  // in the timestamp and incrementing modes.
  struct Statement {
    std::string sql;
    jdbc::SourceDb::Params params;
  };
  Result<Statement> statement(Table& t, std::size_t limit, const std::optional<std::string>& incrementing,
                              const std::optional<std::int64_t>& timestampMicros);
  Status describe(Table& t, const jdbc::SourceRows& rows);
  // db.timezone other than UTC with timestamp modes: the table's columns are described before
  // its first read, so positions are compared in the timestamp columns' own zone.
  Status describeFirst(Table& t);
  // A timestamp position (an instant) as a parameter for the table's timestamp columns: their
  // wall clock when they have no zone (db.timezone), UTC text otherwise.
  std::string timestampParam(const Table& t, std::int64_t utcMicros) const;
  // The upper bound's UTC text as a parameter for the table's timestamp columns.
  Result<std::string> boundParam(const Table& t);
  void reportProgress();
  bool reportedDone_ = false;
  // Drops the connection after a failure that may have broken it.
  Status failed(Status s);

  SourceTaskContext* context_ = nullptr;
  std::unique_ptr<jdbc::SourceDb> db_;
  std::string url_, user_, password_;
  Mode mode_ = Mode::kBulk;
  std::string incrementingColumn_;
  std::vector<std::string> timestampColumns_;
  std::string incrementingExpr_;  // the quoted incrementing column
  std::string timestampExpr_;     // COALESCE of the quoted timestamp columns
  std::int64_t delayMs_ = 0;
  std::chrono::milliseconds pollInterval_{5000};
  std::size_t batchMaxRows_ = 100;
  jdbc::NumericMapping numericMapping_ = jdbc::NumericMapping::kNone;
  std::shared_ptr<const core::TimeZone> zone_;  // db.timezone; null for UTC
  std::vector<Table> tables_;
  std::size_t next_ = 0;  // round robin over tables_
};

}  // namespace ferry::connectors
