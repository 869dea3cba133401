// MariaDB Connector/C wrapper (mariadb_client.h).
#include "connectors/jdbc/mariadb_client.h"

#include <mysql.h>

#include <charconv>
#include <mutex>

#include "core/percent.h"

namespace ferry::connectors::jdbc {
namespace {

constexpr unsigned kReadWriteTimeoutSeconds = 600;

// The client library's global state (mysql_library_init is not thread-safe on first use).
void initLibraryOnce() {
  static std::once_flag once;
  std::call_once(once, [] { (void)mysql_library_init(0, nullptr, nullptr); });
}

bool connectionGone(unsigned e) {
  switch (e) {
    case 2001:  // CR_SOCKET_CREATE_ERROR
    case 2002:  // CR_CONNECTION_ERROR (socket)
    case 2003:  // CR_CONN_HOST_ERROR (refused, unreachable)
    case 2004:  // CR_IPSOCK_ERROR
    case 2005:  // CR_UNKNOWN_HOST (name resolution may come back)
    case 2006:  // CR_SERVER_GONE_ERROR
    case 2011:  // CR_TCP_CONNECTION
    case 2012:  // CR_SERVER_HANDSHAKE_ERR
    case 2013:  // CR_SERVER_LOST
    case 2026:  // CR_SSL_CONNECTION_ERROR
    case 2055:  // CR_SERVER_LOST_EXTENDED
    case 1040:  // ER_CON_COUNT_ERROR: too many connections
    case 1053:  // ER_SERVER_SHUTDOWN
    case 1077:  // ER_NORMAL_SHUTDOWN
    case 1078:  // ER_GOT_SIGNAL
    case 1079:  // ER_SHUTDOWN_COMPLETE
    case 1152:  // ER_ABORTING_CONNECTION
    case 1158:  // ER_NET_READ_ERROR
    case 1159:  // ER_NET_READ_INTERRUPTED
    case 1160:  // ER_NET_ERROR_ON_WRITE
    case 1161:  // ER_NET_WRITE_INTERRUPTED
    case 1184:  // ER_NEW_ABORTING_CONNECTION
    case 1203:  // ER_TOO_MANY_USER_CONNECTIONS
    case 1927:  // ER_CONNECTION_KILLED (MariaDB: KILL <id>)
      return true;
    default: return false;
  }
}

bool dataError(unsigned e) {
  switch (e) {
    case 1022:  // ER_DUP_KEY
    case 1048:  // ER_BAD_NULL_ERROR
    case 1062:  // ER_DUP_ENTRY
    case 1169:  // ER_DUP_UNIQUE
    case 1216:  // ER_NO_REFERENCED_ROW
    case 1217:  // ER_ROW_IS_REFERENCED
    case 1263:  // ER_WARN_NULL_TO_NOTNULL
    case 1264:  // ER_WARN_DATA_OUT_OF_RANGE
    case 1265:  // WARN_DATA_TRUNCATED
    case 1292:  // ER_TRUNCATED_WRONG_VALUE (dates, UUIDs, ...)
    case 1300:  // ER_INVALID_CHARACTER_STRING
    case 1364:  // ER_NO_DEFAULT_FOR_FIELD
    case 1365:  // ER_DIVISION_BY_ZERO
    case 1366:  // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
    case 1367:  // ER_ILLEGAL_VALUE_FOR_TYPE
    case 1406:  // ER_DATA_TOO_LONG
    case 1411:  // ER_WRONG_VALUE_FOR_TYPE
    case 1451:  // ER_ROW_IS_REFERENCED_2
    case 1452:  // ER_NO_REFERENCED_ROW_2
    case 1557:  // ER_FOREIGN_DUPLICATE_KEY
    case 1586:  // ER_DUP_ENTRY_WITH_KEY_NAME
    case 1690:  // ER_DATA_OUT_OF_RANGE
    case 1859:  // ER_DUP_UNKNOWN_IN_INDEX
    case 3140:  // MySQL ER_INVALID_JSON_TEXT
    case 3819:  // MySQL ER_CHECK_CONSTRAINT_VIOLATED
    case 4025:  // MariaDB ER_CONSTRAINT_FAILED (CHECK, JSON_VALID of a JSON column)
      return true;
    default: return false;
  }
}

std::string percentDecoded(std::string_view s) { return core::percentDecode(s); }

std::string_view withoutJdbc(std::string_view url) {
  if (url.substr(0, 5) == "jdbc:") url.remove_prefix(5);
  return url;
}

}  // namespace

bool isMariaDbUrl(std::string_view url) {
  url = withoutJdbc(url);
  return url.substr(0, 8) == "mysql://" || url.substr(0, 10) == "mariadb://";
}

Result<MariaDbAddress> parseMariaDbUrl(std::string_view url) {
  auto bad = [](const std::string& why) {
    return Status::invalidArgument("connection.url: " + why + " (expected mysql://host:port/database)");
  };
  std::string_view rest = withoutJdbc(url);
  if (rest.substr(0, 8) == "mysql://") rest.remove_prefix(8);
  else if (rest.substr(0, 10) == "mariadb://") rest.remove_prefix(10);
  else return bad("not a mysql:// or mariadb:// URL");
  if (rest.find('\0') != std::string_view::npos) return bad("a NUL character");
  if (rest.find('?') != std::string_view::npos)
    return bad("parameters after '?' are not supported: give the user and password as connection.user and "
               "connection.password");
  MariaDbAddress a;
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && db.back() == '/') db.remove_suffix(1);
    if (db.find('/') != std::string_view::npos) return bad("a path with more than the database name");
    a.database = percentDecoded(db);
  }
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view info = authority.substr(0, at);
    const auto colon = info.find(':');
    a.user = percentDecoded(info.substr(0, colon));
    if (colon != std::string_view::npos) a.password = percentDecoded(info.substr(colon + 1));
    authority.remove_prefix(at + 1);
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 host without its ']'");
    a.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("unexpected text after the host");
      port = after.substr(1);
    }
  } else {
    const auto colon = authority.rfind(':');
    a.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (a.host.empty()) return bad("no host");
  if (!port.empty()) {
    unsigned p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p == 0 || p > 65535)
      return bad("port '" + std::string(port) + "' is not a number from 1 to 65535");
    a.port = p;
  }
  return a;
}

Status classifyMariaDbError(unsigned errnum, const std::string& message) {
  const std::string text = message + " [errno " + std::to_string(errnum) + "]";
  if (errnum == 0 || connectionGone(errnum) || errnum == 1205 /* lock wait timeout */ ||
      errnum == 1213 /* deadlock */)
    return Status::unavailable(text);
  if (dataError(errnum)) return Status::invalidArgument(text);
  return Status::failedPrecondition(text);
}

unsigned mariaDbErrno(const Status& s) {
  const std::string& m = s.message();
  const auto at = m.rfind("[errno ");
  if (at == std::string::npos) return 0;
  unsigned n = 0;
  std::from_chars(m.data() + at + 7, m.data() + m.size(), n);
  return n;
}

Result<std::unique_ptr<MariaDbConnection>> MariaDbConnection::connect(const std::string& url, const std::string& user,
                                                                      const std::string& password, int timeoutSeconds) {
  FERRY_ASSIGN_OR_RETURN(auto a, parseMariaDbUrl(url));
  if (!user.empty()) a.user = user;
  if (!password.empty()) a.password = password;
  initLibraryOnce();
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return Status::unavailable("MariaDB: out of memory while connecting");
  std::unique_ptr<MariaDbConnection> conn(new MariaDbConnection(m));
  const unsigned connectTimeout = static_cast<unsigned>(timeoutSeconds > 0 ? timeoutSeconds : 10);
  const unsigned ioTimeout = kReadWriteTimeoutSeconds;
  const unsigned protocol = MYSQL_PROTOCOL_TCP;
  my_bool reconnect = 0;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &connectTimeout);
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &ioTimeout);
  mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &ioTimeout);
  mysql_options(m, MYSQL_OPT_PROTOCOL, &protocol);
  mysql_options(m, MYSQL_OPT_RECONNECT, &reconnect);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  if (!mysql_real_connect(m, a.host.c_str(), a.user.c_str(), a.password.c_str(),
                          a.database.empty() ? nullptr : a.database.c_str(), a.port, nullptr, 0)) {
    const unsigned e = mysql_errno(m);
    return classifyMariaDbError(e, std::string("MariaDB: ") + mysql_error(m));
  }
  // autocommit: a statement outside START TRANSACTION commits by itself, whatever the server's
  // default (JdbcSink's inserts sent without waiting rely on it).
  FERRY_RETURN_IF_ERROR(conn->exec(
      "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00', autocommit = 1"));
  FERRY_ASSIGN_OR_RETURN(auto packet, conn->query("SELECT @@max_allowed_packet"));
  if (!packet.rows.empty() && packet.rows[0].size() == 1 && packet.rows[0][0]) {
    std::size_t n = 0;
    const std::string& t = *packet.rows[0][0];
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    if (ec == std::errc() && n >= 1024) conn->maxPacket_ = n;
  }
  return conn;
}

MariaDbConnection::~MariaDbConnection() {
  if (stream_) mysql_free_result(stream_);
  if (c_) mysql_close(c_);
}

Status MariaDbConnection::lastError(std::string_view what) {
  const unsigned e = mysql_errno(c_);
  Status s = classifyMariaDbError(e, "MariaDB: " + std::string(e ? mysql_error(c_) : what));
  if (connectionGone(e) || e == 0) broken_ = true;
  return s;
}

namespace {

std::vector<MariaDbConnection::Column> columnsOf(MYSQL_RES* res) {
  const unsigned n = mysql_num_fields(res);
  const MYSQL_FIELD* fields = mysql_fetch_fields(res);
  std::vector<MariaDbConnection::Column> out;
  out.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    const MYSQL_FIELD& f = fields[i];
    MariaDbConnection::Column c{std::string(f.name ? f.name : "", f.name_length), static_cast<int>(f.type), f.flags,
                                f.decimals, f.length, f.charsetnr, {}, {}};
    MARIADB_CONST_STRING attr{};
    if (mariadb_field_attr(&attr, &f, MARIADB_FIELD_ATTR_DATA_TYPE_NAME) == 0 && attr.str)
      c.typeName.assign(attr.str, attr.length);
    if (mariadb_field_attr(&attr, &f, MARIADB_FIELD_ATTR_FORMAT_NAME) == 0 && attr.str)
      c.format.assign(attr.str, attr.length);
    out.push_back(std::move(c));
  }
  return out;
}

// Appends up to `max` rows of `res` to `out`; the number read.
std::size_t readRows(MYSQL_RES* res, std::vector<MariaDbConnection::Row>& out, std::size_t max) {
  const unsigned n = mysql_num_fields(res);
  std::size_t read = 0;
  while (read < max) {
    MYSQL_ROW r = mysql_fetch_row(res);
    if (r == nullptr) break;
    const unsigned long* lengths = mysql_fetch_lengths(res);
    MariaDbConnection::Row row;
    row.reserve(n);
    for (unsigned i = 0; i < n; ++i) {
      if (r[i] == nullptr) row.emplace_back(std::nullopt);
      else row.emplace_back(std::string(r[i], lengths[i]));
    }
    out.push_back(std::move(row));
    ++read;
  }
  return read;
}

}  // namespace

Result<MariaDbConnection::QueryResult> MariaDbConnection::query(std::string_view sql) {
  FERRY_RETURN_IF_ERROR(send(sql));
  return finishQuery();
}

Result<MariaDbConnection::QueryResult> MariaDbConnection::finishQuery() {
  if (!outstanding_) return Status::internal("MariaDB: no statement was sent");
  outstanding_ = false;
  if (mysql_read_query_result(c_) != 0) return lastError("query failed");
  QueryResult out;
  MYSQL_RES* res = mysql_store_result(c_);
  if (res == nullptr) {
    if (mysql_field_count(c_) == 0) return out;  // a statement without rows
    return lastError("reading the result failed");
  }
  out.columns = columnsOf(res);
  out.rows.reserve(mysql_num_rows(res));
  readRows(res, out.rows, static_cast<std::size_t>(-1));
  mysql_free_result(res);
  return out;
}

Status MariaDbConnection::send(std::string_view sql) {
  if (!healthy()) return Status::unavailable("MariaDB: the connection is closed");
  if (stream_ || outstanding_) return Status::internal("MariaDB: a statement while another is being answered");
  if (mysql_send_query(c_, sql.data(), static_cast<unsigned long>(sql.size())) != 0) return lastError("query failed");
  outstanding_ = true;
  return Status::ok();
}

Status MariaDbConnection::finish() {
  if (!outstanding_) return Status::ok();
  outstanding_ = false;
  if (mysql_read_query_result(c_) != 0) return lastError("query failed");
  if (MYSQL_RES* res = mysql_store_result(c_)) mysql_free_result(res);  // none for an INSERT
  return Status::ok();
}

Status MariaDbConnection::stream(std::string_view sql) {
  if (!healthy()) return Status::unavailable("MariaDB: the connection is closed");
  if (stream_) return Status::internal("MariaDB: a second stream on one connection");
  if (outstanding_) return Status::internal("MariaDB: a statement's answer was not read");
  if (mysql_real_query(c_, sql.data(), static_cast<unsigned long>(sql.size())) != 0) return lastError("query failed");
  stream_ = mysql_use_result(c_);
  if (stream_ == nullptr) return lastError("reading the result failed");
  return Status::ok();
}

Result<MariaDbConnection::QueryResult> MariaDbConnection::fetch(std::size_t maxRows) {
  if (!stream_) return Status::internal("MariaDB: fetch without a stream");
  QueryResult out;
  out.columns = columnsOf(stream_);
  const std::size_t n = readRows(stream_, out.rows, maxRows);
  if (n < maxRows) {
    // The end, or an error that cut the stream short (mysql_fetch_row returns NULL for both).
    if (mysql_errno(c_) != 0) {
      Status s = lastError("reading rows failed");
      endStream();
      return s;
    }
    endStream();
  }
  return out;
}

void MariaDbConnection::endStream() {
  if (!stream_) return;
  mysql_free_result(stream_);
  stream_ = nullptr;
}

Status MariaDbConnection::exec(std::string_view sql) { return query(sql).status(); }

std::uint64_t MariaDbConnection::affectedRows() const { return c_ ? mysql_affected_rows(c_) : 0; }

std::string MariaDbConnection::escape(std::string_view text) const {
  std::string out(text.size() * 2 + 1, '\0');
  const unsigned long n =
      mysql_real_escape_string(c_, out.data(), text.data(), static_cast<unsigned long>(text.size()));
  out.resize(n);
  return out;
}

std::string MariaDbConnection::serverVersion() const {
  const char* v = c_ ? mysql_get_server_info(c_) : nullptr;
  return v ? v : "";
}

unsigned long MariaDbConnection::serverVersionNumber() const { return c_ ? mysql_get_server_version(c_) : 0; }

bool MariaDbConnection::isMariaDb() const { return serverVersion().find("MariaDB") != std::string::npos; }

}  // namespace ferry::connectors::jdbc
