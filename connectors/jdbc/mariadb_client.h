// A small RAII wrapper over MariaDB Connector/C (Debian libmariadb-dev; it speaks to MariaDB and
// MySQL servers alike) for the JDBC-style connectors: connect, run statements, read rows with
// their column metadata, classify errors.
//
// The session is set up so that bad data is an error, not a warning, and values are read and
// written the same way on every server: sql_mode='STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'
// (no NO_BACKSLASH_ESCAPES: escape() and values.h's mysqlLiteral() rely on backslash escapes),
// time_zone='+00:00', character set utf8mb4. Automatic reconnection is off (a reconnect would
// silently lose an open transaction); one statement per call (multi-statements are off).
//
// Errors map to ferry's codes by the client's or server's error number (mysql_errno): a
// connection that is gone, refused, killed or a server shutting down (2002, 2003, 2006, 2013,
// 2055, 1053, 1927, ...), a deadlock (1213) or a lock wait timeout (1205) are Unavailable
// (retriable on a new connection); bad data and integrity violations (1062 duplicate, 1048 NULL,
// 1264 out of range, 1406 too long, 1366/1292 incorrect value, 4025/3819 CHECK, 1451/1452
// foreign key, ...) are InvalidArgument; anything else (1146 no table, 1045 access denied, 1064
// syntax, 1142 privilege, ...) is FailedPrecondition. Messages carry the server's text and
// "[errno N]"; they never contain the password.
//
// Threading: one connection, one thread at a time. The library is initialised once per process
// (thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "ferry/status.h"

struct st_mysql;
struct st_mysql_res;

namespace ferry::connectors::jdbc {

// Where to connect, from a URL: [jdbc:]mysql://host[:port][/database] or mariadb://... (port
// 3306 by default; an IPv6 host in brackets; "user[:password]@" before the host is accepted,
// percent-decoded). Parameters after '?' are refused (give them as keys). Exposed for tests.
struct MariaDbAddress {
  std::string host;
  unsigned port = 3306;
  std::string database;  // may be empty: then tables are named database.table
  std::string user, password;
};
Result<MariaDbAddress> parseMariaDbUrl(std::string_view url);
// Whether `url` is a MySQL/MariaDB URL (scheme mysql or mariadb, a leading jdbc: accepted).
bool isMariaDbUrl(std::string_view url);

class MariaDbConnection {
 public:
  // One column of a query's result, as the server describes it (mysql_fetch_fields).
  struct Column {
    std::string name;
    int type = 0;            // enum_field_types (MYSQL_TYPE_LONG, MYSQL_TYPE_NEWDECIMAL, ...)
    unsigned flags = 0;      // NOT_NULL_FLAG, PRI_KEY_FLAG, UNSIGNED_FLAG, BINARY_FLAG, ...
    unsigned decimals = 0;   // digits after the point (DECIMAL, DATETIME(n), TIME(n))
    unsigned long length = 0;  // the column's display width in bytes
    unsigned charsetnr = 0;  // 63 = binary
    // MariaDB's extended metadata (empty from servers without it, MySQL's among them): the data
    // type's own name where the protocol type does not say it ("uuid", "inet6"), and a format
    // ("json" for a JSON column, which is LONGTEXT on the wire).
    std::string typeName, format;
  };
  using Row = std::vector<std::optional<std::string>>;  // nullopt = NULL; bytes as sent
  struct QueryResult {
    std::vector<Column> columns;
    std::vector<Row> rows;
  };

  // `url` as parseMariaDbUrl takes it; `user`/`password` (when not empty) win over the URL's.
  // Connects over TCP (also for "localhost"), within `timeoutSeconds` (connect; reads and writes
  // time out after 10 minutes), and sets up the session as described above. A refused login or
  // an unknown database is FailedPrecondition, an unreachable server Unavailable.
  static Result<std::unique_ptr<MariaDbConnection>> connect(const std::string& url, const std::string& user,
                                                            const std::string& password, int timeoutSeconds);
  ~MariaDbConnection();
  MariaDbConnection(const MariaDbConnection&) = delete;
  MariaDbConnection& operator=(const MariaDbConnection&) = delete;

  // Runs one statement; its rows (all of them, held in memory) and column metadata, or nothing
  // for a statement without a result.
  Result<QueryResult> query(std::string_view sql);
  Status exec(std::string_view sql);
  // Runs `sql` and leaves its rows on the wire, to be read `maxRows` at a time with fetch()
  // (mysql_use_result: a table larger than memory is read in pieces). No other statement may run
  // on this connection until fetch() returned no rows or endStream() was called.
  Status stream(std::string_view sql);
  // The next rows of the stream (columns filled in every time); no rows at its end (which also
  // ends it).
  Result<QueryResult> fetch(std::size_t maxRows);
  // Ends the stream, dropping the rows not read (the client reads them off the wire).
  void endStream();
  bool streaming() const { return stream_ != nullptr; }
  // Rows changed by the last statement (mysql_affected_rows).
  std::uint64_t affectedRows() const;

  // Sends one statement without reading its answer (mysql_send_query): the server runs it while
  // the caller goes on; finish() reads the answer. Nothing else may run on the connection before
  // finish().
  Status send(std::string_view sql);
  // The answer of the statement sent last (an error classified as query()'s); OK when none is
  // outstanding.
  Status finish();
  // The rows of the query sent last with send() (its error when it failed).
  Result<QueryResult> finishQuery();
  bool outstanding() const { return outstanding_; }

  // `text` escaped for the inside of a '...' literal, for this connection's character set
  // (mysql_real_escape_string).
  std::string escape(std::string_view text) const;

  // False once an error said the connection is gone (reconnect).
  bool healthy() const { return c_ != nullptr && !broken_; }
  std::string serverVersion() const;      // "10.11.19-MariaDB-0+deb12u1-log"
  unsigned long serverVersionNumber() const;  // 101119
  bool isMariaDb() const;
  // @@max_allowed_packet, read once at connect: the largest statement the server takes.
  std::size_t maxAllowedPacket() const { return maxPacket_; }

 private:
  explicit MariaDbConnection(st_mysql* c) : c_(c) {}
  Status lastError(std::string_view what);
  st_mysql* c_;
  bool outstanding_ = false;  // a statement sent whose answer finish() has not read
  st_mysql_res* stream_ = nullptr;
  bool broken_ = false;
  std::size_t maxPacket_ = 4u << 20;
};

// The error number of the last error that Status came from (0 if none): kept in the message as
// "[errno 1062]".
unsigned mariaDbErrno(const Status& s);
// The code an error number maps to (see above), with `message` as its text.
Status classifyMariaDbError(unsigned errnum, const std::string& message);

}  // namespace ferry::connectors::jdbc
