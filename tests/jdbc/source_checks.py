"""What both JdbcSource tests (PostgreSQL and MariaDB) check the same way. Standard library only."""
import collections
import threading
import time

from harness import wait_until


def kill9_mid_stream(w, ids, table_ids, insert_batch, first_rows, streamed):
    """A writer inserts a batch (insert_batch()) every 0.05 s while the source streams; once
    `streamed` rows arrived the worker is killed with kill -9, then started again. Every row of
    the table (table_ids()) must arrive; repeats are the rows read after the last committed
    position (how many depends on when the kill fell between two offset commits), never one of
    `first_rows` (committed before). `ids()` lists the ids at the far end."""
    stop = threading.Event()

    def writer():
        while not stop.is_set():
            insert_batch()
            time.sleep(0.05)
    wt = threading.Thread(target=writer)
    wt.start()
    try:
        wait_until(lambda: len(ids()) >= streamed, 60, "the new rows streaming")
        at_kill = len(ids())
        w.kill9()
        time.sleep(1)
    finally:
        stop.set()
        wt.join()
    every = set(table_ids())
    if at_kill >= len(every):
        raise AssertionError("the kill -9 came after everything was read: not mid-stream")
    w.start()
    wait_until(lambda: set(ids()) >= every, 120, f"all {len(every)} rows after the kill -9")
    got = ids()
    repeats = len(got) - len(set(got))
    if any(i in first_rows for i, c in collections.Counter(got).items() if c > 1):
        raise AssertionError(f"{repeats} repeats, some of rows read before the restart")
    print(f"ok   kill -9 at {at_kill} of {len(every)} rows: every row arrived; {repeats} repeats, all after the last "
          "committed position")
