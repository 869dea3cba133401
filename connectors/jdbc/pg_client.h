// A small RAII wrapper over libpq (PostgreSQL's own client library, Debian's libpq-dev) for the
// JDBC-style connectors: connect, run statements with text parameters, classify errors.
//
// Errors map to ferry's codes by SQLSTATE class: a connection that is gone or a server shutting
// down (08, 57P, 53), a serialization failure or deadlock (40001, 40P01) are Unavailable
// (retriable); bad data (22) and integrity violations (23) are InvalidArgument naming the row's
// problem as the server words it; anything else (42: undefined table, syntax, privileges, ...)
// is FailedPrecondition. Messages never contain the password.
//
// Threading: one connection, one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "ferry/status.h"

struct pg_conn;
struct pg_result;

namespace ferry::connectors::jdbc {

// The rows of a query read in place, each value as PostgreSQL's text (no copy per value).
class PgRows {
 public:
  ~PgRows();
  PgRows(const PgRows&) = delete;
  PgRows& operator=(const PgRows&) = delete;
  int rows() const;
  int columns() const;
  std::string_view name(int column) const;
  unsigned typeOid(int column) const;
  int typeMod(int column) const;  // -1 when the type has none (numeric(p,s) has one)
  bool isNull(int row, int column) const;
  std::string_view value(int row, int column) const;

 private:
  friend class PgConnection;
  explicit PgRows(pg_result* r) : r_(r) {}
  pg_result* r_;
};

class PgConnection {
 public:
  // `url`: postgresql://host:port/db[?params] (a leading "jdbc:" is accepted, as Kafka Connect
  // users write it); user and password as given (empty = from the URL or libpq's defaults).
  static Result<std::unique_ptr<PgConnection>> connect(const std::string& url, const std::string& user,
                                                       const std::string& password, int timeoutSeconds);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs `sql` with text parameters ($1, $2, ...; nullopt = NULL). The rows of a query, each a
  // vector of nullable texts.
  using Row = std::vector<std::optional<std::string>>;
  Result<std::vector<Row>> query(const std::string& sql, const std::vector<std::optional<std::string>>& params = {});
  Status exec(const std::string& sql, const std::vector<std::optional<std::string>>& params = {});
  // As query(), with the columns' names and types and without copying the values.
  Result<std::unique_ptr<PgRows>> select(const std::string& sql,
                                         const std::vector<std::optional<std::string>>& params = {});

  // Runs `copySql` (COPY ... FROM STDIN, text format) and sends `data` (rows in COPY's text
  // format) as its input; the error of the COPY, classified as above, when it fails.
  Status copyIn(const std::string& copySql, std::string_view data);

  // The same two without waiting for the statement's answer: the server works on it while the
  // caller goes on; finish() collects the answer. One at a time, and nothing else may run on the
  // connection before finish(). An error returned here (the statement was not sent, or COPY did
  // not start) leaves nothing outstanding.
  Status copyInSend(const std::string& copySql, std::string_view data);
  Status sendParams(const std::string& sql, const std::vector<std::optional<std::string>>& params);
  // The answer of the statement sent last (classified as above); OK when nothing is outstanding.
  Status finish();
  // The rows of the query sent last with sendParams() (its error when it failed).
  Result<std::unique_ptr<PgRows>> finishSelect();
  bool outstanding() const { return outstanding_; }

  // False once the connection broke (reconnect).
  bool healthy() const;
  std::string serverVersion() const;

 private:
  explicit PgConnection(pg_conn* c) : c_(c) {}
  // The result of `sql`, or its error classified.
  Result<pg_result*> run(const std::string& sql, const std::vector<std::optional<std::string>>& params);
  // A failed result's error, classified (the connection's message when there is no result).
  Status failedResult(pg_result* r) const;
  pg_conn* c_;
  bool outstanding_ = false;  // a statement sent whose answer finish() has not collected
  Status sendError_;          // sending it failed: finish() reports this first
};

// Whether `url` names a PostgreSQL server: postgresql:// or postgres://, after an optional "jdbc:".
bool isPostgresUrl(std::string_view url);

// The server's SQLSTATE of the last error that Status came from ("" if none): kept in the
// message as "[SQLSTATE 23505]".
std::string sqlState(const Status& s);

}  // namespace ferry::connectors::jdbc
