"""ACL refusals reach the operator as a FAILED task with a clear trace, on every RocketMQ version
(4.9.x answers SYSTEM_ERROR with an AclException, 5.x NO_PERMISSION; either used to be retried
forever by ferry with the task shown RUNNING):

  (a) RocketMQSource signed with a wrong secret: its task is FAILED, the trace names the access
      key, and it stays FAILED (no silent retry loop);
  (b) RocketMQSink signed by a read-only account (Sub only): the task is FAILED naming the account
      and the PUB permission, and not one record reached the topic — the 4.9.x broker does not
      check the permission of batch sends, so ferry sends single messages to a 4.x broker when it
      signs (src/rocketmq/README.md);
  (c) the same sink with the admin account delivers every record.

Needs the secured cluster (S by default: NameServer $FERRY_ROCKETMQ_SECURE_NAMESRV,
127.0.0.1:39876; the rocketmq_compat label points it at D and F). Environment: FERRY_BIN,
FERRY_RMQ_TOOL (rmq_interop_tool)."""
import os
import random
import subprocess
import time

from harness import Worker, run, tmpdir, wait_until

NS = os.environ.get("FERRY_ROCKETMQ_SECURE_NAMESRV", "127.0.0.1:39876")
ADMIN = os.environ.get("FERRY_ROCKETMQ_SECURE_ACCESS_KEY", "ferryAdmin")
ADMIN_SECRET = os.environ.get("FERRY_ROCKETMQ_SECURE_SECRET_KEY", "ferrySecret12345")
READER = os.environ.get("FERRY_ROCKETMQ_SECURE_READER_KEY", "ferryReader")
READER_SECRET = os.environ.get("FERRY_ROCKETMQ_SECURE_READER_SECRET", "ferryReader12345")
TOOL = os.environ.get("FERRY_RMQ_TOOL", "")
RECORDS = 500


def tool(*args, timeout=300):
    assert TOOL, "FERRY_RMQ_TOOL (rmq_interop_tool) is not set"
    env = {**os.environ, "FERRY_RMQ_ACCESS_KEY": ADMIN, "FERRY_RMQ_SECRET_KEY": ADMIN_SECRET}
    p = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise AssertionError(f"rmq_interop_tool {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p.stdout


def consume_count(topic, group, expect, timeout_ms):
    """Messages the admin account reads from the topic (first offset on), as the tool counts."""
    out = tool("consume", "--namesrv", NS, "--topic", topic, "--group", group, "--count",
               str(expect), "--timeout-ms", str(timeout_ms), timeout=timeout_ms / 1000 + 60)
    return sum(1 for line in out.splitlines() if line.strip())


def task_state(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    tasks = s.get("tasks", []) if status == 200 else []
    return tasks[0] if tasks else {}


def main():
    run_id = random.randrange(1 << 30)
    d = tmpdir("rmq-acl-tasks")
    w = Worker(d)
    w.start()
    common = {"rocketmq.namesrv": NS, "rocketmq.request.timeout.ms": "3000"}

    # (a) a source with a wrong secret
    src_topic = f"ferry-acl-src-{run_id}"
    tool("create-topic", "--namesrv", NS, "--topic", src_topic, "--queues", "1")
    w.ok("POST", "/connectors", {"name": "bad-source", "config": {
        "connector.class": "RocketMQSource", "rocketmq.topics": src_topic, "topic": "acl-in",
        "rocketmq.access.key": ADMIN, "rocketmq.secret.key": "not-the-secret", **common}})
    t = wait_until(lambda: (lambda t: t if t.get("state") == "FAILED" else None)(
        task_state(w, "bad-source")), 60, "the wrongly signed source task FAILED", 0.25)
    assert f"'{ADMIN}'" in t.get("trace", ""), f"trace does not name the access key: {t}"
    assert "not-the-secret" not in t.get("trace", ""), "the secret leaked into the trace"
    time.sleep(3)
    again = task_state(w, "bad-source")
    assert again.get("state") == "FAILED", f"the refused source left FAILED by itself: {again}"
    print("(a) wrong secret: source FAILED:", t["trace"].splitlines()[0][:200], flush=True)

    # (b) a sink with the read-only account
    sink_topic = f"ferry-acl-sink-{run_id}"
    tool("create-topic", "--namesrv", NS, "--topic", sink_topic, "--queues", "2")
    w.ok("POST", "/connectors", {"name": "gen", "config": {
        "connector.class": "DatagenSource", "topic": "acl-out", "max.records": str(RECORDS),
        "format": "string"}})
    w.ok("POST", "/connectors", {"name": "reader-sink", "config": {
        "connector.class": "RocketMQSink", "topics": "acl-out", "rocketmq.topic": sink_topic,
        "rocketmq.access.key": READER, "rocketmq.secret.key": READER_SECRET, **common}})
    t = wait_until(lambda: (lambda t: t if t.get("state") == "FAILED" else None)(
        task_state(w, "reader-sink")), 60, "the read-only account's sink task FAILED", 0.25)
    trace = t.get("trace", "")
    assert f"'{READER}'" in trace and "PUB" in trace, f"trace does not name account + PUB: {t}"
    print("(b) read-only account: sink FAILED:", trace.splitlines()[0][:200], flush=True)
    w.ok("DELETE", "/connectors/reader-sink")

    # (c) the admin account delivers; then the topic holds exactly the admin sink's records
    w.ok("POST", "/connectors", {"name": "admin-sink", "config": {
        "connector.class": "RocketMQSink", "topics": "acl-out", "rocketmq.topic": sink_topic,
        "rocketmq.access.key": ADMIN, "rocketmq.secret.key": ADMIN_SECRET, **common}})
    n = consume_count(sink_topic, f"ferry-acl-check-{run_id}", RECORDS, 30000)
    assert n == RECORDS, f"{n} messages in {sink_topic}, expected exactly {RECORDS} " \
                         "(none from the read-only account)"
    print(f"(c) admin account: {n} records delivered, none from the read-only account", flush=True)
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
