// Running connectors and tasks for the worker (jvm/README.md, "Running connectors and tasks").
//
// Each connector and task the worker starts has a handle the worker chose. A source task polls on
// a thread of its own ("ferry-poll-<handle>") into a small queue; the worker's SOURCE_POLL takes
// from it without waiting, and the host tells the worker (READY) when the queue fills from empty,
// so an idle task costs the worker no thread. commitRecord() is called for the records the worker
// says are safe, in poll order, and commit() after it stored their positions. A task's stop()
// comes from the worker's TASK_STOP; a poll thread that does not end within the time given is
// interrupted and abandoned, as Kafka Connect abandons a task that does not stop.
//
// Threading: requests arrive on the host's request threads; the worker sends one request at a
// time per task (its task thread), except TASK_STOP, which may overlap a poll.
package io.ferry.jvmhost;

import java.io.DataInputStream;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.sink.SinkConnectorContext;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.apache.kafka.connect.source.SourceConnectorContext;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;

final class Runner {
  // What the runner needs of the channel.
  interface Channel {
    // An unsolicited frame to the worker (no answer).
    void event(int type, Wire.Out payload);
    // A request to the worker, answered by it (reverse call); the answer's payload.
    DataInputStream ask(int type, Wire.Out payload) throws IOException;
  }

  static final int EVENT_RECONFIGURE = 1;
  static final int EVENT_ERROR = 2;
  static final int EVENT_COMMIT = 3;
  // SinkTaskContext requests (the trailer of the OPEN, PUT and PRE_COMMIT answers).
  static final int REQUEST_SEEK = 0;
  static final int REQUEST_PAUSE = 1;
  static final int REQUEST_RESUME = 2;

  record Request(int kind, TopicPartition partition, long offset) {}

  private final Plugins plugins;
  private final Channel channel;
  private final ConcurrentHashMap<Long, ConnectorRun> connectors = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<Long, SourceRun> sources = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<Long, SinkRun> sinks = new ConcurrentHashMap<>();

  Runner(Plugins plugins, Channel channel) {
    this.plugins = plugins;
    this.channel = channel;
  }

  private Wire.Out event(long handle, int kind, String message) {
    return new Wire.Out().i64(handle).u8(kind).str(message);
  }

  // Runs `call` with `loader` as the thread's context loader (plugins load their own resources
  // and service implementations through it).
  static <T> T withLoader(ClassLoader loader, Main.Call<T> call) throws Exception {
    Thread t = Thread.currentThread();
    ClassLoader saved = t.getContextClassLoader();
    t.setContextClassLoader(loader);
    try {
      return call.run();
    } finally {
      t.setContextClassLoader(saved);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Connectors

  // Kafka's SourceConnector.context() and SinkConnector.context() cast the context to their own
  // kind: it is both.
  private final class ConnectorRun implements SourceConnectorContext, SinkConnectorContext {
    final long handle;
    final Connector connector;
    final ClassLoader loader;

    ConnectorRun(long handle, Connector connector, ClassLoader loader) {
      this.handle = handle;
      this.connector = connector;
      this.loader = loader;
    }

    @Override
    public void requestTaskReconfiguration() {
      channel.event(Main.EVENT, event(handle, EVENT_RECONFIGURE, ""));
    }

    @Override
    public void raiseError(Exception e) {
      channel.event(Main.EVENT, event(handle, EVENT_ERROR, Main.describe(e)));
    }

    @Override
    public PluginMetrics pluginMetrics() {
      return null;  // not offered (jvm/README.md)
    }

    // A connector's own reads of committed offsets are not offered (its tasks' are).
    @Override
    public OffsetStorageReader offsetStorageReader() {
      throw new UnsupportedOperationException("this runtime offers committed offsets to source tasks, not to connectors");
    }
  }

  void startConnector(long handle, String cls, Map<String, String> config) throws Exception {
    ClassLoader loader = plugins.loaderOf(cls);
    Connector c = withLoader(loader, () -> plugins.newConnector(cls));
    ConnectorRun run = new ConnectorRun(handle, c, loader);
    withLoader(loader, () -> {
      c.initialize(run);
      c.start(config);
      return null;
    });
    connectors.put(handle, run);
  }

  List<Map<String, String>> taskConfigs(long handle, int max) throws Exception {
    ConnectorRun run = connector(handle);
    return withLoader(run.loader, () -> run.connector.taskConfigs(max));
  }

  void stopConnector(long handle) throws Exception {
    ConnectorRun run = connectors.remove(handle);
    if (run == null) return;
    withLoader(run.loader, () -> {
      run.connector.stop();
      return null;
    });
  }

  private ConnectorRun connector(long handle) {
    ConnectorRun run = connectors.get(handle);
    if (run == null) throw new IllegalStateException("no connector with handle " + handle + " runs in this JVM host");
    return run;
  }

  private Task newTask(String connectorClass) throws Exception {
    ClassLoader loader = plugins.loaderOf(connectorClass);
    return withLoader(loader, () -> {
      // As Kafka Connect: a new connector instance names the task class.
      Connector c = plugins.newConnector(connectorClass);
      Task wrapped = OpenMessaging.newTask(c);
      if (wrapped != null) return wrapped;
      Class<? extends Task> tc = c.taskClass();
      return tc.getDeclaredConstructor().newInstance();
    });
  }

  void stopTask(long handle, long timeoutMs) throws Exception {
    SourceRun s = sources.remove(handle);
    if (s != null) {
      s.stop(timeoutMs);
      return;
    }
    SinkRun k = sinks.remove(handle);
    if (k != null) withLoader(k.loader, () -> {
      k.task.stop();
      return null;
    });
  }

  // ------------------------------------------------------------------------------------------
  // Source tasks

  private final class SourceRun implements SourceTaskContext, OffsetStorageReader {
    final long handle;
    final SourceTask task;
    final ClassLoader loader;
    final Map<String, String> config;
    final Records records = new Records();
    final ArrayDeque<SourceRecord> queue = new ArrayDeque<>();  // guarded by this
    final ArrayDeque<SourceRecord> sent = new ArrayDeque<>();   // sent to the worker, not yet committed
    final int capacity;
    Throwable failure;  // guarded by this: what ended the poll thread
    volatile boolean stopping;
    Thread poller;
    ThreadGroup group;

    SourceRun(long handle, SourceTask task, ClassLoader loader, Map<String, String> config, int capacity) {
      this.handle = handle;
      this.task = task;
      this.loader = loader;
      this.config = config;
      this.capacity = capacity;
    }

    @Override
    public Map<String, String> configs() {
      return config;
    }

    @Override
    public OffsetStorageReader offsetStorageReader() {
      return this;
    }

    @Override
    public PluginMetrics pluginMetrics() {
      return null;
    }

    @Override
    public <T> Map<String, Object> offset(Map<String, T> partition) {
      return offsets(Collections.singletonList(partition)).get(partition);
    }

    // Asks the worker for its committed positions.
    @Override
    public <T> Map<Map<String, T>, Map<String, Object>> offsets(Collection<Map<String, T>> partitions) {
      List<Map<String, T>> list = new ArrayList<>(partitions);
      Wire.Out o = new Wire.Out().i64(handle).i32(list.size());
      for (Map<String, T> p : list) o.map(Records.packMap(p));
      try {
        DataInputStream in = channel.ask(Main.OFFSETS_READ, o);
        int n = Wire.readCount(in);
        if (n != list.size()) throw new IOException("the worker answered " + n + " offsets for " + list.size() + " partitions");
        Map<Map<String, T>, Map<String, Object>> out = new HashMap<>();
        for (int i = 0; i < n; i++) {
          Map<String, Object> offset = Records.unpackMap(Wire.readOptionalMap(in));
          if (offset != null) out.put(list.get(i), offset);
        }
        return out;
      } catch (IOException e) {
        throw new ConnectException("cannot read committed offsets from the worker: " + e.getMessage(), e);
      }
    }

    // The poll thread's CPU (task.poll() and queueing, not the crossing): logged when it ends, for
    // bench/jvm/jvm_crossing.py.
    void pollLoop() {
      long polledRecords = 0;
      try {
        while (!stopping) {
          List<SourceRecord> batch;
          try {
            batch = task.poll();
          } catch (org.apache.kafka.connect.errors.RetriableException e) {
            // As Kafka Connect: logged, and polled again.
            System.err.println("ferry-jvm-host: source task " + handle + " poll(): " + Main.describe(e) + " (retrying)");
            Thread.sleep(100);
            continue;
          }
          if (batch == null || batch.isEmpty()) continue;
          polledRecords += batch.size();
          boolean wasEmpty;
          synchronized (this) {
            while (queue.size() >= capacity && !stopping) wait();
            if (stopping) return;
            wasEmpty = queue.isEmpty();
            queue.addAll(batch);
          }
          if (wasEmpty) channel.event(Main.READY, new Wire.Out().i64(handle));
        }
      } catch (InterruptedException e) {
        if (!stopping) fail(e);
      } catch (Throwable t) {
        fail(t);
      } finally {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long cpu = mx.isCurrentThreadCpuTimeSupported() ? mx.getCurrentThreadCpuTime() : -1;
        System.err.println("ferry-jvm-host: source task " + handle + " poll thread ended: cpu_ns=" + cpu + " records="
            + polledRecords);
      }
    }

    private void fail(Throwable t) {
      synchronized (this) {
        failure = t;
      }
      channel.event(Main.READY, new Wire.Out().i64(handle));
    }

    // Up to `max` records of the queue; the poll thread's failure once the queue is empty.
    Wire.Out poll(int id, int max) throws Throwable {
      List<SourceRecord> batch = new ArrayList<>();
      synchronized (this) {
        while (batch.size() < max && !queue.isEmpty()) batch.add(queue.poll());
        if (batch.isEmpty() && failure != null) throw failure;
        notifyAll();
      }
      sent.addAll(batch);
      Wire.Out o = new Wire.Out(id, Main.SOURCE_POLL | 0x80);
      records.writeSourceBatch(o, batch);
      return o;
    }

    // [i32 n][i32 queue, i64 offset]*n: the next n records sent are safe, where the backbone put
    // them (-1: not known; RecordMetadata.hasOffset() is then false).
    void acked(DataInputStream in) throws Exception {
      int n = in.readInt();
      if (n < 0 || n > sent.size()) throw new IllegalArgumentException("acknowledged " + n + " of " + sent.size() + " records");
      int[] queues = new int[n];
      long[] offsets = new long[n];
      for (int i = 0; i < n; i++) {
        queues[i] = in.readInt();
        offsets[i] = in.readLong();
      }
      withLoader(loader, () -> {
        for (int i = 0; i < n; i++) {
          SourceRecord r = sent.poll();
          int partition = queues[i] >= 0 ? queues[i] : r.kafkaPartition() == null ? 0 : r.kafkaPartition();
          TopicPartition tp = new TopicPartition(r.topic(), partition);
          task.commitRecord(r, new RecordMetadata(tp, offsets[i], 0, r.timestamp() == null ? -1 : r.timestamp(), -1, -1));
        }
        return null;
      });
    }

    void stop(long timeoutMs) throws Exception {
      stopping = true;
      synchronized (this) {
        notifyAll();
      }
      withLoader(loader, () -> {
        task.stop();
        return null;
      });
      Thread p = poller;
      if (p == null) return;
      p.join(Math.max(1, timeoutMs));
      if (p.isAlive()) {
        p.interrupt();
        p.join(100);
        if (p.isAlive())
          System.err.println("ferry-jvm-host: source task " + handle + " did not stop within " + timeoutMs
              + " ms; its poll thread is abandoned");
      }
      Thread[] left = new Thread[64];
      int n = group.enumerate(left);
      List<String> names = new ArrayList<>();
      for (int i = 0; i < n; i++) if (left[i] != p && left[i].isAlive()) names.add(left[i].getName());
      if (!names.isEmpty())
        System.err.println("ferry-jvm-host: source task " + handle + " (" + task.getClass().getName() + ") left "
            + names.size() + " thread(s) running after stop(): " + names);
    }
  }

  // The task starts on its poll thread, in a thread group of its own: the threads it starts are
  // in that group too, and those still running after stop() are named in the host's log.
  void startSourceTask(long handle, String connectorClass, Map<String, String> config, int capacity) throws Exception {
    Task t = newTask(connectorClass);
    if (!(t instanceof SourceTask)) throw new IllegalArgumentException(connectorClass + "'s task is not a SourceTask");
    SourceRun run = new SourceRun(handle, (SourceTask) t, plugins.loaderOf(connectorClass), config, Math.max(1, capacity));
    CompletableFuture<Void> started = new CompletableFuture<>();
    run.group = new ThreadGroup("ferry-task-" + handle);
    run.poller = new Thread(run.group, () -> {
      Thread.currentThread().setContextClassLoader(run.loader);
      try {
        run.task.initialize(run);
        run.task.start(config);
      } catch (Throwable e) {
        started.completeExceptionally(e);
        return;
      }
      started.complete(null);
      run.pollLoop();
    }, "ferry-poll-" + handle);
    run.poller.setDaemon(true);
    sources.put(handle, run);
    run.poller.start();
    try {
      started.get();
    } catch (java.util.concurrent.ExecutionException e) {
      sources.remove(handle);
      Throwable cause = e.getCause();
      if (cause instanceof Exception) throw (Exception) cause;
      throw new ConnectException(cause);
    }
  }

  Wire.Out poll(int id, long handle, int max, DataInputStream acked) throws Throwable {
    SourceRun run = source(handle);
    run.acked(acked);
    return run.poll(id, max);
  }

  void commit(long handle, DataInputStream acked) throws Exception {
    SourceRun run = source(handle);
    run.acked(acked);
    withLoader(run.loader, () -> {
      run.task.commit();
      return null;
    });
  }

  private SourceRun source(long handle) {
    SourceRun run = sources.get(handle);
    if (run == null) throw new IllegalStateException("no source task with handle " + handle + " runs in this JVM host");
    return run;
  }

  // ------------------------------------------------------------------------------------------
  // Sink tasks

  private final class SinkRun implements SinkTaskContext, ErrantRecordReporter {
    final long handle;
    final SinkTask task;
    final ClassLoader loader;
    final Map<String, String> config;
    final Records records = new Records();
    final Records.Form keyForm, valueForm;
    final Set<TopicPartition> assignment = new HashSet<>();
    final Map<TopicPartition, OffsetAndMetadata> current = new HashMap<>();
    // The batch being put and the records reported from it: (index, why).
    IdentityHashMap<SinkRecord, Integer> putting;
    final List<Object[]> reported = Collections.synchronizedList(new ArrayList<>());

    SinkRun(long handle, SinkTask task, ClassLoader loader, Map<String, String> config, Records.Form keyForm, Records.Form valueForm) {
      this.handle = handle;
      this.task = task;
      this.loader = loader;
      this.config = config;
      this.keyForm = keyForm;
      this.valueForm = valueForm;
    }

    @Override
    public Map<String, String> configs() {
      return config;
    }

    // offset(), pause() and resume(), in the order asked: passed to the worker with the answer to
    // the next open(), put() or preCommit() (Main.contextRequests), applied before its next poll.
    final List<Request> requests = new ArrayList<>();  // guarded by itself

    private void request(int kind, TopicPartition tp, long offset) {
      if (tp == null) throw new IllegalArgumentException("a null partition");
      synchronized (requests) {
        requests.add(new Request(kind, tp, offset));
      }
    }

    @Override
    public void offset(Map<TopicPartition, Long> offsets) {
      for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
        if (e.getValue() == null || e.getValue() < 0)
          throw new IllegalArgumentException("cannot rewind " + e.getKey() + " to offset " + e.getValue());
        request(REQUEST_SEEK, e.getKey(), e.getValue());
      }
    }

    @Override
    public void offset(TopicPartition tp, long offset) {
      offset(Map.of(tp, offset));
    }

    @Override
    public void timeout(long timeoutMs) {
      // The runtime retries a RetriableException with its own back-off (errors.retry.*).
    }

    @Override
    public Set<TopicPartition> assignment() {
      return Collections.unmodifiableSet(assignment);
    }

    @Override
    public void pause(TopicPartition... partitions) {
      for (TopicPartition tp : partitions) request(REQUEST_PAUSE, tp, -1);
    }

    @Override
    public void resume(TopicPartition... partitions) {
      for (TopicPartition tp : partitions) request(REQUEST_RESUME, tp, -1);
    }

    @Override
    public void requestCommit() {
      channel.event(Main.EVENT, event(handle, EVENT_COMMIT, ""));
    }

    @Override
    public ErrantRecordReporter errantRecordReporter() {
      return this;
    }

    @Override
    public PluginMetrics pluginMetrics() {
      return null;
    }

    // The worker applies errors.tolerance and the dead-letter topic when put() returns.
    @Override
    public Future<Void> report(SinkRecord record, Throwable error) {
      IdentityHashMap<SinkRecord, Integer> batch = putting;
      Integer index = batch == null ? null : batch.get(record);
      if (index == null && batch != null) {
        for (Map.Entry<SinkRecord, Integer> e : batch.entrySet()) {
          SinkRecord r = e.getKey();
          if (r.kafkaOffset() == record.kafkaOffset() && r.topic().equals(record.originalTopic())
              && r.kafkaPartition().equals(record.originalKafkaPartition())) {
            index = e.getValue();
            break;
          }
        }
      }
      if (index == null) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        f.completeExceptionally(new ConnectException("errant record reported outside put(): not one of the batch"));
        return f;
      }
      reported.add(new Object[] {index, Main.describe(error)});
      return CompletableFuture.completedFuture(null);
    }
  }

  void startSinkTask(long handle, String connectorClass, Map<String, String> config, int keyForm, int valueForm) throws Exception {
    Task t = newTask(connectorClass);
    if (!(t instanceof SinkTask)) throw new IllegalArgumentException(connectorClass + "'s task is not a SinkTask");
    SinkRun run = new SinkRun(handle, (SinkTask) t, plugins.loaderOf(connectorClass), config, Records.Form.of(keyForm), Records.Form.of(valueForm));
    withLoader(run.loader, () -> {
      run.task.initialize(run);
      run.task.start(config);
      return null;
    });
    sinks.put(handle, run);
  }

  private SinkRun sink(long handle) {
    SinkRun run = sinks.get(handle);
    if (run == null) throw new IllegalStateException("no sink task with handle " + handle + " runs in this JVM host");
    return run;
  }

  static List<TopicPartition> readPartitions(DataInputStream in) throws IOException {
    int n = Wire.readCount(in);
    List<TopicPartition> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) out.add(new TopicPartition(Wire.readString(in), in.readInt()));
    return out;
  }

  void open(long handle, DataInputStream in, boolean open) throws Exception {
    SinkRun run = sink(handle);
    List<TopicPartition> tps = readPartitions(in);
    withLoader(run.loader, () -> {
      if (open) {
        run.assignment.addAll(tps);
        run.task.open(tps);
      } else {
        run.task.close(tps);
        run.assignment.removeAll(tps);
        tps.forEach(run.current::remove);
      }
      return null;
    });
  }

  // put(); the records reported to the ErrantRecordReporter meanwhile: [index, why].
  List<Object[]> put(long handle, DataInputStream in) throws Exception {
    SinkRun run = sink(handle);
    List<SinkRecord> batch = run.records.readSinkBatch(in, run.keyForm, run.valueForm);
    IdentityHashMap<SinkRecord, Integer> index = new IdentityHashMap<>();
    for (int i = 0; i < batch.size(); i++) index.put(batch.get(i), i);
    run.reported.clear();
    run.putting = index;
    try {
      withLoader(run.loader, () -> {
        run.task.put(batch);
        return null;
      });
    } finally {
      run.putting = null;
    }
    for (SinkRecord r : batch)
      run.current.put(new TopicPartition(r.topic(), r.kafkaPartition()), new OffsetAndMetadata(r.kafkaOffset() + 1));
    synchronized (run.reported) {
      return new ArrayList<>(run.reported);
    }
  }

  // The sink task's offset()/pause()/resume() since the last answer: [i32 n][u8 kind, str topic,
  // i32 partition, i64 offset]*n.
  void contextRequests(long handle, Wire.Out o) {
    SinkRun run = sink(handle);
    List<Request> taken;
    synchronized (run.requests) {
      taken = new ArrayList<>(run.requests);
      run.requests.clear();
    }
    o.i32(taken.size());
    for (Request r : taken) o.u8(r.kind()).str(r.partition().topic()).i32(r.partition().partition()).i64(r.offset());
  }

  // flush() with the offsets of everything put so far.
  void flush(long handle) throws Exception {
    SinkRun run = sink(handle);
    withLoader(run.loader, () -> {
      run.task.flush(new HashMap<>(run.current));
      return null;
    });
  }

  // preCommit(offsets) (Kafka's default flushes them): the offsets safe to commit.
  Map<TopicPartition, OffsetAndMetadata> preCommit(long handle, DataInputStream in) throws Exception {
    SinkRun run = sink(handle);
    int n = Wire.readCount(in);
    Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) offsets.put(new TopicPartition(Wire.readString(in), in.readInt()), new OffsetAndMetadata(in.readLong()));
    return withLoader(run.loader, () -> {
      Map<TopicPartition, OffsetAndMetadata> safe = run.task.preCommit(offsets);
      return safe == null ? Map.of() : safe;
    });
  }
}
