"""Connector-driven task reconfiguration in distributed mode (RocketMQ clusters A and B of
scripts/services/rocketmq; the cluster runs on A's backbone).

Two `ferry distributed` workers run a RocketMQReplicator A -> B whose topics are a regex. The
connector instance (on whichever worker owns it) watches A's topics; when a matching topic appears
it asks for task reconfiguration, and the new task configs - which name the topics - must reach
every worker: GET /connectors/<c>/tasks on both shows the new topic, the tasks run the new configs
(RUNNING, new epochs), and the new topic's messages arrive on B with nothing lost (duplicates
from the restart allowed: at-least-once). Then the worker
that owns the connector instance is kill -9ed and another topic appears: the instance restarts on
the survivor and the reconfiguration still reaches the tasks.

Environment: FERRY_BIN, FERRY_RMQ_TOOL, FERRY_ROCKETMQ_NAMESRV (A), FERRY_ROCKETMQ_NAMESRV_B (B)."""
import json
import random

from cluster_check import make_workers
from harness import run, wait_until
from test_rocketmq_replicator import NS_A, NS_B, TOOL, reachable, tool
from test_rocketmq_replicator_topology import count

SESSION_MS = 2000


def task_topics(w, name):
    status, tasks = w.rest("GET", f"/connectors/{name}/tasks")
    if status != 200:
        return None
    return [t["config"].get("replicator.task.topics", "") for t in tasks]


def all_running(w, name):
    status, st = w.rest("GET", f"/connectors/{name}/status")
    return status == 200 and st["connector"]["state"] == "RUNNING" and st["tasks"] and \
        all(t["state"] == "RUNNING" for t in st["tasks"])


def main():
    assert TOOL, "FERRY_RMQ_TOOL (rmq_interop_tool) not built"
    reachable(NS_A)
    reachable(NS_B)
    run_id = random.randrange(1 << 30)
    base = {"backbone": "rocketmq", "backbone.rocketmq.namesrv": NS_A, "cluster.name": f"recfg{run_id}",
            "cluster.session.timeout.ms": str(SESSION_MS), "cluster.heartbeat.interval.ms": "300",
            "offset.flush.interval.ms": "500"}
    workers = make_workers("recfg", base, 2)
    for w in workers:
        w.start(timeout=60)
    w1, w2 = workers
    prefix = f"ferry-recfg-{run_id}"
    first = f"{prefix}-1"
    tool("create-topic", "--namesrv", NS_A, "--topic", first, "--queues", "2")
    name = f"pick-{run_id}"
    w1.ok("POST", "/connectors", {"name": name, "config": {
        "connector.class": "RocketMQReplicator", "source.namesrv": NS_A, "target.namesrv": NS_B,
        "source.alias": "A", "target.alias": "B", "topics.regex": prefix + "-.*", "tasks.max": "2",
        "topic.rename": "${topic}-copy", "topics.refresh.interval.ms": "1000",
        "source.rebalance.interval.ms": "1000", "heartbeats.topic": "", "source.from": "first"}})
    wait_until(lambda: all(task_topics(w, name) == [first, first] for w in workers), 60,
               "task configs naming the first topic on both workers", 0.2)
    wait_until(lambda: all_running(w2, name), 60, "connector and tasks RUNNING", 0.2)

    for step, topic in ((1, f"{prefix}-2"), (2, f"{prefix}-3")):
        before = epochs_of(w1, name)  # both workers still live here
        if step == 2:  # the instance's owner dies first; the survivor's instance must do it
            owner = before[-1][0]
            victim = w1 if owner == "w1" else w2
            survivor = w2 if victim is w1 else w1
            victim.kill9()
            wait_until(lambda: all_running(survivor, name) and
                       all(o == survivor.ok("GET", "/cluster")["worker"] for o, _, _ in epochs_of(survivor, name).values()),
                       30, "everything on the survivor", 0.1)
            live = [survivor]
        else:
            live = workers
        tool("create-topic", "--namesrv", NS_A, "--topic", topic, "--queues", "2")
        tool("produce", "--namesrv", NS_A, "--topic", topic, "--count", "300", "--seed", str(50 + step), "--batch", "8")
        want = ",".join(sorted([t for t in (first, f"{prefix}-2", f"{prefix}-3")][:step + 1]))

        def reconfigured():
            return all(task_topics(w, name) is not None and
                       all(",".join(sorted(x.split(","))) == want for x in task_topics(w, name)) for w in live)
        wait_until(reconfigured, 60, f"task configs naming {want} on every live worker", 0.2)
        wait_until(lambda: all_running(live[0], name), 60, "tasks RUNNING with the new configs", 0.2)
        after = epochs_of(live[0], name)
        restarted = [t for t in after if t >= 0 and t in before and after[t][1] != before[t][1]]
        # At-least-once: the tasks restart with the new configs and may re-read from their last
        # committed offsets, so duplicates are allowed; every one of the 300 must be there.
        def seqs():
            rows = count(NS_B, topic + "-copy", run_id)
            got = {int(m["props"]["seq"]) for m in rows}
            return (got, len(rows)) if got >= set(range(300)) else None
        got, total = wait_until(seqs, 120, f"all 300 of {topic} replicated to B", 1.0)
        assert got == set(range(300)), f"unexpected sequence numbers on B: {sorted(got - set(range(300)))[:10]}"
        print(json.dumps({"test": "reconfigure", "step": step, "topics": want, "live_workers": len(live),
                          "tasks_restarted": len(restarted), "replicated": 300, "duplicates": total - 300}),
              flush=True)
    for w in workers:
        if w.proc.poll() is None:
            w.stop()


def epochs_of(w, name):
    c = w.ok("GET", "/cluster")
    return {a.get("task", -1): (a["owner"], a["epoch"], a["state"]) for a in c["assignment"] if a["connector"] == name}


if __name__ == "__main__":
    run(main)
