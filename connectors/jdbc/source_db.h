// What JdbcSource reads through: one seam over the two client libraries, so the task's reading
// logic (modes, positions, batches, progress) is written once. PostgreSQL goes through libpq
// (pg_client.h), MySQL and MariaDB through Connector/C (mariadb_client.h); each knows its own
// SQL for the catalog, the quoting of names and values, reading a whole table in pieces, the
// upper bound of the timestamp modes and the row estimate.
//
// Threading: one SourceDb, one thread at a time (a task's, or the connector's table monitor's own).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/jdbc/source_types.h"
#include "ferry/result.h"

namespace ferry::connectors::jdbc {

// Rows of one read, each value as the server's text.
class SourceRows {
 public:
  virtual ~SourceRows() = default;
  virtual int rows() const = 0;
  virtual int columns() const = 0;
  virtual std::string_view name(int column) const = 0;
  virtual bool isNull(int row, int column) const = 0;
  virtual std::string_view value(int row, int column) const = 0;
};

class SourceDb {
 public:
  using Params = std::vector<std::optional<std::string>>;
  struct Relation {
    std::string schema;  // PostgreSQL: the schema; MySQL: the database
    std::string table;
  };

  // By the URL's scheme: postgresql:// or mysql:// / mariadb:// (a leading jdbc: accepted). The
  // session reads dates in ISO form and times in UTC.
  static Result<std::unique_ptr<SourceDb>> connect(const std::string& url, const std::string& user,
                                                   const std::string& password, int timeoutSeconds);
  virtual ~SourceDb() = default;

  virtual bool healthy() const = 0;
  // A name from the config as a quoted identifier ("name" or `name`); never SQL.
  virtual Result<std::string> identifier(std::string_view name) const = 0;
  // `value` (a position's text) in a statement: "$n" with the value added to `params`
  // (PostgreSQL), or a literal (MySQL: an integer as it is, anything else quoted and escaped).
  virtual std::string param(Params& params, const std::string& value) const = 0;
  virtual Result<std::unique_ptr<SourceRows>> select(const std::string& sql, const Params& params) = 0;
  // Sends the query `sql` without waiting (libpq's PQsendQueryParams, Connector/C's
  // mysql_send_query): the server runs it while the caller works, and takePrefetched() returns its
  // rows (or its error). Any other statement on the connection first reads and drops them; then,
  // or when the send failed, takePrefetched() answers null.
  virtual void prefetch(const std::string& sql, const Params& params) = 0;
  virtual Result<std::unique_ptr<SourceRows>> takePrefetched() = 0;

  // Every row of `from`, read `n` at a time from one snapshot (a cursor in a read-only
  // transaction; a streamed result). No other statement runs until the last piece (fewer than n
  // rows) was read or closeBulk().
  virtual Status openBulk(const std::string& from) = 0;
  virtual Result<std::unique_ptr<SourceRows>> fetchBulk(std::size_t n) = 0;
  virtual Status closeBulk() = 0;

  // The tables and views the user may read, of `types` (TABLE, VIEW, ...), in `schema` (empty:
  // every schema but the system ones; MySQL: the URL's database if it names one), ordered.
  virtual Result<std::vector<Relation>> listTables(const std::vector<std::string>& types, const std::string& schema) = 0;
  // Timestamp modes read rows older than this ("YYYY-MM-DD HH:MM:SS.ffffff", UTC): now minus
  // `delayMs`, and not past the start of the oldest transaction still open on the server.
  virtual Result<std::string> upperBound(std::int64_t delayMs) = 0;
  // How many rows the table holds, from the server's statistics (or counted when it has none);
  // -1 when not known.
  virtual std::int64_t estimateRows(const Relation& table, const std::string& from) = 0;

  // A text that changes when the columns of `rows` (names, types) do.
  virtual std::string signature(const SourceRows& rows) const = 0;
  // The reader of each column of `rows`; `table` (empty schema and table for a query) says which
  // columns are NOT NULL; `zone` (null: UTC) is db.timezone, the zone of timestamps without one.
  virtual Result<std::vector<ColumnReader>> describe(const SourceRows& rows, const Relation& table,
                                                     const std::string& from, NumericMapping mapping,
                                                     const std::shared_ptr<const core::TimeZone>& zone) = 0;
};

}  // namespace ferry::connectors::jdbc
