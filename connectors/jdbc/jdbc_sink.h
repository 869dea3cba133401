// JdbcSink: typed records into PostgreSQL or MySQL/MariaDB tables, with Kafka Connect JDBC sink's
// key names and semantics (connectors/jdbc/README.md). connection.url's scheme picks the dialect
// (postgresql:// or mysql:// / mariadb://): a small seam (JdbcSinkTask::Dialect, jdbc_sink.cc)
// holds the connection, the quoting, the value texts, the column types and the statements of
// each server; the record-to-row mapping, batching, transactions and error handling are shared.
//
// - Records need a value schema (a struct; value.converter=JsonConverter with schemas.enable=true
//   gives one from the backbone); a record without one is a bad record (errors.tolerance).
// - Each put() is one transaction: its rows are written in bulk (PostgreSQL: COPY ... FROM STDIN for
//   inserts, multi-row INSERT ... ON CONFLICT DO UPDATE for upserts; MySQL/MariaDB: multi-row
//   INSERT [... ON DUPLICATE KEY UPDATE] within max_allowed_packet; DELETE for tombstones). A
//   put() whose rows make one insert or upsert statement (one shape, within batch.size and, on
//   MySQL/MariaDB, max_allowed_packet) sends it without waiting: the server works on it while the
//   task turns the next batch into rows; its answer (and an upsert's COMMIT: a worker killed
//   before leaves nothing of it, so it cannot land after the replay of its own records) comes at
//   the next put(), flush() or preCommit(); an insert commits by itself. The runtime commits offsets only after flush()/preCommit(), so they never run
//   ahead of the table. A statement that fails on a row's data (SQLSTATE 22/23) wrote nothing and
//   is written again row by row under savepoints: the bad rows are reported (errors.tolerance,
//   dead letters with the database's message), the good ones kept. A lost connection or a server
//   restart is retriable: put() or flush() says Unavailable and the runtime retries on a new
//   connection (committing no offsets meanwhile); upserts make the replay exact.
//
// Threading: the connector and its task are called from their owner thread only.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <string>
#include <tuple>
#include <vector>

#include "connectors/jdbc/values.h"
#include "core/timezone.h"
#include "ferry/connector.h"

namespace ferry::connectors {

class JdbcSinkConnector final : public SinkConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override;
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;

 private:
  StringMap config_;
};

class JdbcSinkTask final : public SinkTask {
 public:
  JdbcSinkTask();
  ~JdbcSinkTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  // The batch sent without waiting, answered (or written again). Unavailable while the server is
  // away: the runtime then commits nothing and flushes again at the next commit.
  Status flush() override { return settle(); }
  void stop() override;

  enum class InsertMode { kInsert, kUpsert, kUpdate };
  enum class PkMode { kNone, kRecordKey, kRecordValue, kKafka };
  class Dialect;  // jdbc_sink.cc: PostgreSQL, MySQL/MariaDB

 private:
  // What the rows of one topic, key schema and value schema share (and tombstones apart): the
  // table, its columns and where each column's data comes from. Made once per schema object, not
  // per row (building the names per row was ~10 % of the sink's CPU at 100-byte rows).
  struct Layout {
    std::string topic;
    SchemaPtr keySchema, valueSchema;  // held: `schemas` points into them
    bool remove = false;               // tombstones (delete.enabled): the key's columns only
    std::string table;                 // quoted identifier (the dialect's quoting)
    std::vector<std::string> columns;  // quoted, pk columns first
    std::vector<const Schema*> schemas;  // each column's, for auto.create and the value texts
    std::size_t pkCount = 0;
    std::string shape;  // table + columns: rows of one shape share a statement
    enum class From { kTopic, kQueue, kOffset, kKey, kKeyField, kValueField };
    struct Source {
      From from;
      std::string name;  // the field (kKeyField, kValueField) and the name errors give
      std::size_t field = 0;  // kValueField: its position in the value schema's fields
    };
    std::vector<Source> sources;  // one per column
  };
  // One row to write: its layout, its values, and the record it came from (for bad-record reports).
  struct Row {
    std::shared_ptr<const Layout> layout;
    std::vector<std::optional<std::string>> values;  // the dialect's text (PostgreSQL) or literal (MySQL)
    const Record* record = nullptr;
    const std::string& table() const { return layout->table; }
    const std::vector<std::string>& columns() const { return layout->columns; }
    const std::vector<const Schema*>& schemas() const { return layout->schemas; }
    std::size_t pkCount() const { return layout->pkCount; }
    const std::string& shape() const { return layout->shape; }
    bool remove() const { return layout->remove; }  // a tombstone with delete.enabled
    // Whether `o` can go into the same statement: the same columns of the same table, and both
    // deletes or neither.
    bool sameStatement(const Row& o) const {
      return layout == o.layout || (remove() == o.remove() && shape() == o.shape());
    }
  };
  Result<std::shared_ptr<const Layout>> layoutOf(const Record& r, bool remove);
  Result<std::optional<Row>> rowOf(const Record& r);
  Status ensureTable(const Row& row);
  // The dialect's value text of `v`, with Timestamps as db.timezone's wall clock.
  Result<std::optional<std::string>> valueOf(const Schema& s, const jdbc::Json& v, const std::string& field);
  // auto.evolve: adds the columns `row` has and its table lacks (nullable).
  Status evolveTable(const Row& row);
  Status connect();
  Status writeAll(const std::vector<Row>& rows);
  Status writeOneByOne(const std::vector<Row>& rows);
  // `rows` as one statement's group (one shape, within batch.size and the dialect's limit), or
  // empty when they take more.
  std::vector<const Row*> oneStatement(const std::vector<Row>& rows) const;
  // Collects the answer of the batch sent without waiting; when it failed, writes that batch
  // again at once (row by row after a data error). OK when none is outstanding.
  Status settle();

  SinkTaskContext* context_ = nullptr;
  // The batch sent last without waiting for the server's answer (Dialect::send): its records and
  // rows, kept until settle() saw it written.
  struct Pending {
    std::vector<Record> records;
    std::vector<Row> rows;  // Row::record points into `records`
    bool failed = false;    // its statement failed: written again by settle() until that passes
    bool rowByRow = false;  // it failed on a row's data: written again row by row
  };
  std::optional<Pending> pending_;
  std::unique_ptr<Dialect> dialect_;  // made by start() from the URL; owns the connection
  std::string url_, user_, password_;
  InsertMode insertMode_ = InsertMode::kInsert;
  PkMode pkMode_ = PkMode::kNone;
  std::vector<std::string> pkFields_;
  std::set<std::string> fieldsWhitelist_;
  std::string tableFormat_ = "${topic}";
  bool autoCreate_ = false;
  bool autoEvolve_ = false;
  std::shared_ptr<const core::TimeZone> zone_;  // db.timezone; null for UTC
  bool deleteEnabled_ = false;
  bool quote_ = true;
  std::size_t batchSize_ = 3000;
  std::set<std::string> knownTables_;  // tables seen to exist (or created) on this connection
  // auto.evolve: each table's columns, quoted (lower case where names fold), read once per connection.
  std::map<std::string, std::set<std::string>> tableColumns_;
  std::set<std::string> evolvedShapes_;  // Row::shape values checked against their table
  // Quoted names by topic (the table) and by field (the column): the dialect's quoting is fixed,
  // so these never go stale; bounded.
  std::unordered_map<std::string, std::string> tableNames_, columnNames_;
  // Reads a row's fields straight from simdjson's DOM, without building the value's whole
  // nlohmann document (jdbc_sink.cc).
  struct Fields;
  std::unique_ptr<Fields> fields_;
  // Layouts by topic, key schema, value schema and tombstone (bounded), and the last one used.
  using LayoutKey = std::tuple<std::string, const Schema*, const Schema*, bool>;
  std::map<LayoutKey, std::shared_ptr<const Layout>> layouts_;
  std::shared_ptr<const Layout> lastLayout_;
};

}  // namespace ferry::connectors
