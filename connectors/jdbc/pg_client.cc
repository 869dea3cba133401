// libpq wrapper (pg_client.h).
#include "connectors/jdbc/pg_client.h"

#include <libpq-fe.h>
#include <sys/socket.h>

#include <algorithm>
#include <string_view>
#include <utility>

namespace ferry::connectors::jdbc {
namespace {

struct ResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultFree>;

std::string trimmed(const char* m) {
  std::string s = m ? m : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

Status classify(const std::string& state, const std::string& message) {
  const std::string text = message + " [SQLSTATE " + (state.empty() ? "none" : state) + "]";
  const std::string_view cls = std::string_view(state).substr(0, 2);
  if (state.empty() || cls == "08" || cls == "53" || state.rfind("57P", 0) == 0 || state == "40001" ||
      state == "40P01")
    return Status::unavailable(text);
  if (cls == "22" || cls == "23") return Status::invalidArgument(text);
  return Status::failedPrecondition(text);
}

// The parameters as libpq takes them: texts, nullptr for NULL (pointing into `params`).
std::vector<const char*> textParams(const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  return values;
}

}  // namespace

Result<std::unique_ptr<PgConnection>> PgConnection::connect(const std::string& url, const std::string& user,
                                                            const std::string& password, int timeoutSeconds) {
  std::string dsn = url.rfind("jdbc:", 0) == 0 ? url.substr(5) : url;
  const std::string timeout = std::to_string(timeoutSeconds > 0 ? timeoutSeconds : 10);
  // Keys before dbname are defaults the URL's own parameters override (application_name=...).
  std::vector<const char*> keys = {"application_name", "dbname", "connect_timeout"};
  std::vector<const char*> values = {"ferry", dsn.c_str(), timeout.c_str()};
  if (!user.empty()) {
    keys.push_back("user");
    values.push_back(user.c_str());
  }
  if (!password.empty()) {
    keys.push_back("password");
    values.push_back(password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* c = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (c == nullptr) return Status::unavailable("PostgreSQL: out of memory while connecting");
  if (PQstatus(c) != CONNECTION_OK) {
    std::string why = trimmed(PQerrorMessage(c));
    PQfinish(c);
    // A refused password is not going to pass on a retry; an unreachable server may.
    if (why.find("password authentication failed") != std::string::npos ||
        why.find("no password supplied") != std::string::npos ||
        why.find("does not exist") != std::string::npos)
      return Status::failedPrecondition("PostgreSQL: " + why);
    return Status::unavailable("PostgreSQL: " + why);
  }
  // A send buffer that takes a whole batch's COPY data: PQputCopyData then returns at once and the
  // server reads the rows while the task prepares the next batch, where a small buffer held the
  // task until the server had read all but the last few kilobytes. The kernel caps it
  // (net.core.wmem_max).
  const int sndbuf = 8 << 20;
  (void)setsockopt(PQsocket(c), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  return std::unique_ptr<PgConnection>(new PgConnection(c));
}

PgConnection::~PgConnection() {
  if (c_) PQfinish(c_);
}

bool PgConnection::healthy() const { return c_ && PQstatus(c_) == CONNECTION_OK; }

std::string PgConnection::serverVersion() const {
  const int v = c_ ? PQserverVersion(c_) : 0;
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000);
}

Result<PGresult*> PgConnection::run(const std::string& sql, const std::vector<std::optional<std::string>>& params) {
  if (outstanding_) return Status::internal("PostgreSQL: a statement's answer was not collected");
  const std::vector<const char*> values = textParams(params);
  ResultPtr r(PQexecParams(c_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                           nullptr, 0));
  const auto st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return failedResult(r.get());
  return r.release();
}

Result<std::vector<PgConnection::Row>> PgConnection::query(const std::string& sql,
                                                           const std::vector<std::optional<std::string>>& params) {
  FERRY_ASSIGN_OR_RETURN(auto rows, select(sql, params));
  std::vector<Row> out;
  out.reserve(static_cast<std::size_t>(rows->rows()));
  for (int i = 0; i < rows->rows(); ++i) {
    Row row;
    row.reserve(static_cast<std::size_t>(rows->columns()));
    for (int j = 0; j < rows->columns(); ++j) {
      if (rows->isNull(i, j)) row.emplace_back(std::nullopt);
      else row.emplace_back(std::string(rows->value(i, j)));
    }
    out.push_back(std::move(row));
  }
  return out;
}

Result<std::unique_ptr<PgRows>> PgConnection::select(const std::string& sql,
                                                     const std::vector<std::optional<std::string>>& params) {
  FERRY_ASSIGN_OR_RETURN(auto* r, run(sql, params));
  return std::unique_ptr<PgRows>(new PgRows(r));
}

PgRows::~PgRows() { PQclear(r_); }
int PgRows::rows() const { return PQntuples(r_); }
int PgRows::columns() const { return PQnfields(r_); }
std::string_view PgRows::name(int column) const { return PQfname(r_, column); }
unsigned PgRows::typeOid(int column) const { return PQftype(r_, column); }
int PgRows::typeMod(int column) const { return PQfmod(r_, column); }
bool PgRows::isNull(int row, int column) const { return PQgetisnull(r_, row, column) != 0; }
std::string_view PgRows::value(int row, int column) const {
  return {PQgetvalue(r_, row, column), static_cast<std::size_t>(PQgetlength(r_, row, column))};
}

Status PgConnection::exec(const std::string& sql, const std::vector<std::optional<std::string>>& params) {
  return query(sql, params).status();
}

Status PgConnection::copyIn(const std::string& copySql, std::string_view data) {
  FERRY_RETURN_IF_ERROR(copyInSend(copySql, data));
  return finish();
}

Status PgConnection::copyInSend(const std::string& copySql, std::string_view data) {
  if (outstanding_) return Status::internal("PostgreSQL: a statement's answer was not collected");
  {
    ResultPtr r(PQexec(c_, copySql.c_str()));
    if (!r || PQresultStatus(r.get()) != PGRES_COPY_IN) return failedResult(r.get());
  }
  // Blocking connection: PQputCopyData queues and sends; 1 = done, -1 = failed. After
  // PQputCopyEnd the server answers with the COPY's result (collected by finish()), also when
  // sending failed: libpq then reports the broken connection there.
  outstanding_ = true;
  constexpr std::size_t kChunk = 1 << 20;
  for (std::size_t at = 0; at < data.size(); at += kChunk) {
    const auto n = std::min(kChunk, data.size() - at);
    if (PQputCopyData(c_, data.data() + at, static_cast<int>(n)) != 1) break;
  }
  if (PQputCopyEnd(c_, nullptr) != 1) sendError_ = classify("", "PostgreSQL: " + trimmed(PQerrorMessage(c_)));
  return Status::ok();
}

Status PgConnection::sendParams(const std::string& sql, const std::vector<std::optional<std::string>>& params) {
  if (outstanding_) return Status::internal("PostgreSQL: a statement's answer was not collected");
  const std::vector<const char*> values = textParams(params);
  if (PQsendQueryParams(c_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr,
                        0) != 1)
    return classify("", "PostgreSQL: " + trimmed(PQerrorMessage(c_)));
  outstanding_ = true;
  return Status::ok();
}

Status PgConnection::finish() {
  if (!outstanding_) return Status::ok();
  outstanding_ = false;
  Status out = std::exchange(sendError_, Status::ok());
  while (PGresult* raw = PQgetResult(c_)) {
    ResultPtr r(raw);
    const auto st = PQresultStatus(r.get());
    if (out.isOk() && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) out = failedResult(r.get());
  }
  return out;
}

Result<std::unique_ptr<PgRows>> PgConnection::finishSelect() {
  if (!outstanding_) return Status::internal("PostgreSQL: no statement was sent");
  outstanding_ = false;
  Status out = std::exchange(sendError_, Status::ok());
  std::unique_ptr<PgRows> rows;
  while (PGresult* raw = PQgetResult(c_)) {
    ResultPtr r(raw);
    if (!out.isOk() || rows) continue;  // read to the end: the connection is free only then
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) out = failedResult(r.get());
    else rows.reset(new PgRows(r.release()));
  }
  if (!out.isOk()) return out;
  if (!rows) return failedResult(nullptr);
  return rows;
}

Status PgConnection::failedResult(pg_result* r) const {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  return classify(state ? state : "", "PostgreSQL: " + trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(c_)));
}

bool isPostgresUrl(std::string_view url) {
  if (url.substr(0, 5) == "jdbc:") url.remove_prefix(5);
  return url.substr(0, 13) == "postgresql://" || url.substr(0, 11) == "postgres://";
}

std::string sqlState(const Status& s) {
  const std::string& m = s.message();
  const auto at = m.rfind("[SQLSTATE ");
  if (at == std::string::npos) return "";
  const auto end = m.find(']', at);
  return m.substr(at + 10, end == std::string::npos ? std::string::npos : end - at - 10);
}

}  // namespace ferry::connectors::jdbc
