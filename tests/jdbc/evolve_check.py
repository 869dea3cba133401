"""auto.evolve, the same check for both JdbcSink tests (PostgreSQL and MariaDB): records whose
schema gains optional fields add nullable columns, the rows before keep NULL in them; a required
field the table lacks fails the task naming the column; without auto.evolve the new field is not
added. Standard library only."""
import os
import time

from connect_envelope import envelope, field, prim
from harness import wait_until


def check_auto_evolve(w, d, run, sink_config, columns_of, select):
    """`columns_of(table)`: the table's column names, lower case, or [] when it does not exist;
    `select(sql_of_columns, table)`: rows as lists of texts (None for NULL), ordered by id."""
    table = f"evolve_{run}"
    v1 = {"type": "struct", "name": "ev", "optional": False,
          "fields": [field(prim("int64"), "id"), field(prim("string"), "a")]}
    v2 = {**v1, "fields": v1["fields"] + [field(prim("string", True), "b"), field(prim("int32", True), "c")]}
    src = os.path.join(d, f"{table}.jsonl")
    with open(src, "w") as f:
        for i in range(1, 4):
            f.write(envelope(v1, {"id": i, "a": f"a{i}"}) + "\n")
        for i in range(4, 7):
            f.write(envelope(v2, {"id": i, "a": f"a{i}", "b": f"b{i}", "c": i * 10}) + "\n")
    w.ok("POST", "/connectors", {"name": "evolve-src", "config": {
        "connector.class": "FileStreamSource", "file": src, "topic": table}})
    w.ok("POST", "/connectors", {"name": "evolve-sink", "config": sink_config(
        table, **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", "auto.create": "true",
                  "auto.evolve": "true"})})

    def six():
        try:
            return len(select("id", table)) == 6
        except AssertionError:
            return False
    wait_until(six, 60, "6 rows, 3 of them with the new fields")
    if sorted(columns_of(table)) != ["a", "b", "c", "id"]:
        raise AssertionError(f"auto.evolve: columns {columns_of(table)}, expected id, a, b, c")
    got = select("id, a, b, c", table)
    want = [[str(i), f"a{i}", None, None] for i in range(1, 4)] + [[str(i), f"a{i}", f"b{i}", str(i * 10)]
                                                                   for i in range(4, 7)]
    if got != want:
        raise AssertionError(f"auto.evolve: rows {got}, expected {want}")

    # A required field the table lacks: the task fails naming the column, nothing of it written.
    v3 = {**v2, "fields": v2["fields"] + [field(prim("int64"), "must")]}
    with open(src, "a") as f:
        f.write(envelope(v3, {"id": 7, "a": "a7", "b": None, "c": None, "must": 1}) + "\n")

    def failed():
        status, s = w.rest("GET", "/connectors/evolve-sink/status")
        tasks = s.get("tasks", []) if status == 200 else []
        return tasks[0] if tasks and tasks[0].get("state") == "FAILED" else None
    wait_until(failed, 60, "the sink FAILED on a required field without a column")
    trace = failed().get("trace", "")
    if "must" not in trace or "required" not in trace:
        raise AssertionError(f"the failure does not name the required field: {trace[:300]!r}")
    if len(select("id", table)) != 6 or "must" in columns_of(table):
        raise AssertionError("a row or column of the refused record was written")
    w.ok("DELETE", "/connectors/evolve-sink")
    w.ok("DELETE", "/connectors/evolve-src")

    # Without auto.evolve the table is left as it is: the new field's record fails the task.
    plain = f"evolve_off_{run}"
    src2 = os.path.join(d, f"{plain}.jsonl")
    with open(src2, "w") as f:
        f.write(envelope(v1, {"id": 1, "a": "a1"}) + "\n")
        f.write(envelope(v2, {"id": 2, "a": "a2", "b": "b2", "c": 20}) + "\n")
    w.ok("POST", "/connectors", {"name": "evolve-off-src", "config": {
        "connector.class": "FileStreamSource", "file": src2, "topic": plain}})
    w.ok("POST", "/connectors", {"name": "evolve-off-sink", "config": sink_config(
        plain, **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", "auto.create": "true",
                  "batch.size": "1"})})
    time.sleep(3)
    if sorted(columns_of(plain)) != ["a", "id"]:
        raise AssertionError(f"without auto.evolve the table changed: {columns_of(plain)}")
    w.ok("DELETE", "/connectors/evolve-off-sink")
    w.ok("DELETE", "/connectors/evolve-off-src")
    print("ok   auto.evolve: 2 optional fields added as nullable columns (earlier rows NULL there), a required "
          "field without a column fails the task naming it, and without auto.evolve the table is left alone")
