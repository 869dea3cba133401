#!/usr/bin/env python3
"""The two databases the JDBC connectors are tested against, checked with their own clients.

scripts/services/postgres and scripts/services/mariadb must be running (scripts/test starts them
for the `jdbc` label). Over TCP to 127.0.0.1 with user ferry and its password, with psql
(PGPASSWORD) and the mariadb client (--password), this checks for each server:
  - the ferry user logs in to database ferry with the right password;
  - a wrong password is refused: the client exits non-zero with an authentication error;
  - the user can CREATE TABLE, INSERT, SELECT the row back (UTF-8 text included) and DROP it;
  - PostgreSQL: wal_level=logical, server_version 15.x;
    MariaDB: log_bin=ON, binlog_format=ROW, version 10.11.x.
Fails (exit 1, a message per failed check), never skips, when a server is down or a client is
missing. Overrides: FERRY_POSTGRES_URL, FERRY_MARIADB_URL, FERRY_PSQL, FERRY_MARIADB_CLIENT.
Python standard library only.
"""
import os
import shutil
import subprocess
import sys
import urllib.parse

PG_URL = os.environ.get("FERRY_POSTGRES_URL", "postgresql://ferry:ferry-test-pw@127.0.0.1:15432/ferry")
MARIADB_URL = os.environ.get("FERRY_MARIADB_URL", "mysql://ferry:ferry-test-pw@127.0.0.1:13306/ferry")
WRONG_PASSWORD = "not-the-ferry-password"
# Non-ASCII on purpose: the round trip also checks that both servers store UTF-8 unchanged.
ROW_TEXT = "ferry jdbc \u2713 gr\u00fc\u00dfe \U0001F680"
TABLE = f"ferry_services_check_{os.getpid()}"
TIMEOUT = 30

failures = []


def check(ok, what, detail=""):
    if ok:
        print(f"ok    {what}")
    else:
        print(f"FAIL  {what}" + (f": {detail}" if detail else ""))
        failures.append(what)
    return ok


def parse(url):
    u = urllib.parse.urlsplit(url)
    return {
        "host": u.hostname,
        "port": str(u.port),
        "user": urllib.parse.unquote(u.username or ""),
        "password": urllib.parse.unquote(u.password or ""),
        "db": u.path.lstrip("/"),
    }


def find_tool(env, *names):
    if os.environ.get(env):
        return os.environ[env]
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def run(argv, env=None):
    """(exit code, stdout, stderr) of a client run; a hang counts as a failure, not an exception."""
    try:
        p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {TIMEOUT}s"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def one_line(s):
    s = " ".join(s.split())
    return s[:300] or "(no output)"


# ---- PostgreSQL --------------------------------------------------------------------------------

def psql(c, password, sql):
    psql_bin = find_tool("FERRY_PSQL", "psql") or "/usr/lib/postgresql/15/bin/psql"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(PGPASSWORD=password, PGCONNECT_TIMEOUT="10", PGCLIENTENCODING="UTF8",
               PGPASSFILE=os.devnull, PGSSLMODE="disable")
    argv = [psql_bin, "-X", "-q", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1",
            "-h", c["host"], "-p", c["port"], "-U", c["user"], "-d", c["db"], "-c", sql]
    return run(argv, env)


def check_postgres():
    c = parse(PG_URL)
    where = f"postgres {c['user']}@{c['host']}:{c['port']}/{c['db']}"
    print(f"== {where} ({PG_URL})")
    if not (find_tool("FERRY_PSQL", "psql") or os.path.exists("/usr/lib/postgresql/15/bin/psql")):
        check(False, "psql client present", "not found (scripts/deps jdbc)")
        return

    rc, out, err = psql(c, c["password"], "SELECT current_user, current_database()")
    if not check(rc == 0 and out.strip() == f"{c['user']}\t{c['db']}",
                 f"{where}: login with the right password",
                 f"exit {rc}: {one_line(err or out)} (is scripts/services/postgres running?)"):
        return

    rc, out, err = psql(c, WRONG_PASSWORD, "SELECT 1")
    check(rc != 0 and "password authentication failed" in err,
          f"{where}: wrong password refused",
          f"exit {rc}, expected non-zero with 'password authentication failed': {one_line(err or out)}")

    rc, out, err = psql(c, c["password"], "SHOW wal_level")
    check(rc == 0 and out.strip() == "logical", "postgres: wal_level = logical",
          f"exit {rc}: got {one_line(out)} {one_line(err) if rc else ''}")
    rc, out, err = psql(c, c["password"], "SHOW server_version")
    check(rc == 0 and out.strip().startswith("15."), f"postgres: server_version 15.x ({out.strip()})",
          f"exit {rc}: got {one_line(out)} {one_line(err) if rc else ''}")

    quoted = ROW_TEXT.replace("'", "''")
    rc, out, err = psql(c, c["password"],
                        f"CREATE TABLE {TABLE} (id integer PRIMARY KEY, txt text NOT NULL);"
                        f"INSERT INTO {TABLE} VALUES (42, '{quoted}');")
    if check(rc == 0, f"postgres: CREATE TABLE {TABLE} + INSERT", f"exit {rc}: {one_line(err)}"):
        rc, out, err = psql(c, c["password"], f"SELECT id, txt FROM {TABLE}")
        check(rc == 0 and out.rstrip("\n") == f"42\t{ROW_TEXT}", "postgres: SELECT returns the row",
              f"exit {rc}: got {out!r} {one_line(err) if rc else ''}")
    rc, out, err = psql(c, c["password"], f"DROP TABLE IF EXISTS {TABLE}")
    check(rc == 0, "postgres: DROP TABLE", f"exit {rc}: {one_line(err)}")
    rc, out, err = psql(c, c["password"], f"SELECT count(*) FROM pg_tables WHERE tablename = '{TABLE}'")
    check(rc == 0 and out.strip() == "0", "postgres: table gone", f"exit {rc}: got {one_line(out + err)}")


# ---- MariaDB -----------------------------------------------------------------------------------

def mariadb(c, password, sql):
    client = find_tool("FERRY_MARIADB_CLIENT", "mariadb", "mysql")
    # --no-defaults: neither /etc/mysql nor ~/.my.cnf changes what is tested.
    argv = [client, "--no-defaults", "--protocol=TCP", "-h", c["host"], "-P", c["port"],
            "-u", c["user"], f"--password={password}", "--connect-timeout=10",
            "--default-character-set=utf8mb4", "--batch", "--skip-column-names", "--raw",
            "-D", c["db"], "-e", sql]
    return run(argv)


def check_mariadb():
    c = parse(MARIADB_URL)
    where = f"mariadb {c['user']}@{c['host']}:{c['port']}/{c['db']}"
    print(f"== {where} ({MARIADB_URL})")
    if not find_tool("FERRY_MARIADB_CLIENT", "mariadb", "mysql"):
        check(False, "mariadb client present", "not found (scripts/deps jdbc)")
        return

    rc, out, err = mariadb(c, c["password"], "SELECT CURRENT_USER(), DATABASE()")
    if not check(rc == 0 and out.strip() == f"{c['user']}@{c['host']}\t{c['db']}",
                 f"{where}: login with the right password",
                 f"exit {rc}: {one_line(err or out)} (is scripts/services/mariadb running?)"):
        return

    rc, out, err = mariadb(c, WRONG_PASSWORD, "SELECT 1")
    check(rc != 0 and "Access denied" in err and "1045" in err,
          f"{where}: wrong password refused",
          f"exit {rc}, expected non-zero with 'ERROR 1045 ... Access denied': {one_line(err or out)}")

    rc, out, err = mariadb(c, c["password"],
                           "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES"
                           " WHERE VARIABLE_NAME IN ('LOG_BIN', 'BINLOG_FORMAT', 'VERSION')")
    vars_ = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
    vars_ = {k.lower(): v for k, v in vars_.items()}
    if check(rc == 0 and len(vars_) == 3, "mariadb: read log_bin, binlog_format, version",
             f"exit {rc}: {one_line(err or out)}"):
        check(vars_["log_bin"] == "ON", "mariadb: log_bin = ON", f"got {vars_['log_bin']!r}")
        check(vars_["binlog_format"] == "ROW", "mariadb: binlog_format = ROW",
              f"got {vars_['binlog_format']!r}")
        check(vars_["version"].startswith("10.11.") and "MariaDB" in vars_["version"],
              f"mariadb: version 10.11.x ({vars_['version']})", f"got {vars_['version']!r}")

    quoted = ROW_TEXT.replace("\\", "\\\\").replace("'", "''")
    rc, out, err = mariadb(c, c["password"],
                           f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, txt VARCHAR(200) NOT NULL)"
                           f" ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;"
                           f"INSERT INTO {TABLE} VALUES (42, '{quoted}');")
    if check(rc == 0, f"mariadb: CREATE TABLE {TABLE} + INSERT", f"exit {rc}: {one_line(err)}"):
        rc, out, err = mariadb(c, c["password"], f"SELECT id, txt FROM {TABLE}")
        check(rc == 0 and out.rstrip("\n") == f"42\t{ROW_TEXT}", "mariadb: SELECT returns the row",
              f"exit {rc}: got {out!r} {one_line(err) if rc else ''}")
    rc, out, err = mariadb(c, c["password"], f"DROP TABLE IF EXISTS {TABLE}")
    check(rc == 0, "mariadb: DROP TABLE", f"exit {rc}: {one_line(err)}")
    rc, out, err = mariadb(c, c["password"],
                           "SELECT COUNT(*) FROM information_schema.TABLES"
                           f" WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{TABLE}'")
    check(rc == 0 and out.strip() == "0", "mariadb: table gone", f"exit {rc}: got {one_line(out + err)}")


def main():
    check_postgres()
    check_mariadb()
    if failures:
        print(f"\n{len(failures)} check(s) FAILED:")
        for f in failures:
            print(f"  - {f}")
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
