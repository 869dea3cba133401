// The JVM connector host (jvm/README.md): one process per worker, started and supervised by it,
// that loads Kafka Connect connector plugins from plugin.path in class loaders of their own and
// answers the worker's requests over the channel it was given as standard input (a Unix socket
// of a socketpair, read and written). System.out is moved to standard error first, so that nothing a
// connector prints can break the channel; the worker logs the host's standard error.
//
// Usage: java -cp <host jar>:<connect-api>:<kafka-clients>:<slf4j> io.ferry.jvmhost.Main PLUGIN_FOLDER...
package io.ferry.jvmhost;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;

public final class Main {
  static final int PROTOCOL_VERSION = 3;

  // Requests (the worker's) and their answers (type | 0x80); 0xFF is a failure.
  static final int HELLO = 1;
  static final int PLUGINS = 2;
  static final int CONFIG_DEF = 3;
  static final int VALIDATE = 4;
  static final int CONNECTOR_START = 5;
  static final int TASK_CONFIGS = 6;
  static final int CONNECTOR_STOP = 7;
  static final int SOURCE_TASK_START = 8;
  static final int SOURCE_POLL = 9;
  static final int SOURCE_COMMIT = 10;
  static final int SINK_TASK_START = 11;
  static final int SINK_OPEN = 12;
  static final int SINK_CLOSE = 13;
  static final int SINK_PUT = 14;
  static final int SINK_PRE_COMMIT = 15;
  static final int SINK_FLUSH = 16;
  static final int TASK_STOP = 17;
  // The host's own frames to the worker: a request it answers (OFFSETS_READ) and events.
  static final int OFFSETS_READ = 0x40;
  static final int EVENT = 0x41;
  static final int READY = 0x42;
  static final int FAILED = 0xFF;

  private final Plugins plugins = new Plugins();
  private final Runner runner;
  private final OutputStream out;
  // The host's requests to the worker waiting for their answers, by id.
  private final ConcurrentHashMap<Integer, CompletableFuture<Wire.Frame>> asked = new ConcurrentHashMap<>();
  private final AtomicInteger nextAsk = new AtomicInteger(1);
  private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "ferry-request");
    t.setDaemon(true);
    return t;
  });

  private Main(List<String> pluginFolders, OutputStream out) {
    this.out = out;
    plugins.scan(pluginFolders);
    runner = new Runner(plugins, new Runner.Channel() {
      @Override
      public void event(int type, Wire.Out payload) {
        send(new Wire.Out(0, type).append(payload));
      }

      @Override
      public DataInputStream ask(int type, Wire.Out payload) throws IOException {
        return Main.this.ask(type, payload);
      }
    });
  }

  private void send(Wire.Out frame) {
    try {
      frame.send(out);
    } catch (IOException e) {
      System.err.println("ferry-jvm-host: cannot write to the worker (" + e + "); exiting");
      System.exit(2);
    }
  }

  // A request to the worker; waits for its answer (up to 60 s).
  DataInputStream ask(int type, Wire.Out payload) throws IOException {
    int id = nextAsk.getAndIncrement();
    CompletableFuture<Wire.Frame> answer = new CompletableFuture<>();
    asked.put(id, answer);
    try {
      send(new Wire.Out(id, type).append(payload));
      Wire.Frame f = answer.get(60, TimeUnit.SECONDS);
      if (f.type == FAILED) throw new IOException(Wire.readString(f.body));
      if (f.type != (type | 0x80)) throw new IOException("the worker answered type " + f.type);
      return f.body;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while waiting for the worker");
    } catch (ExecutionException | TimeoutException e) {
      throw new IOException("the worker did not answer: " + e);
    } finally {
      asked.remove(id);
    }
  }

  static String describe(Throwable t) {
    return t.getClass().getName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
  }

  public static void main(String[] args) throws IOException {
    // The channel: the socket the worker gave as stdin. Everything printed goes
    // to stderr from now on.
    // Standard input is a Unix socket, written as well as read: standard output is the log's
    // (the JVM writes there itself, e.g. when it runs out of heap).
    OutputStream channelOut = new BufferedOutputStream(new FileOutputStream(FileDescriptor.in), 1 << 16);
    DataInputStream channelIn = new DataInputStream(new BufferedInputStream(new FileInputStream(FileDescriptor.in), 1 << 16));
    System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
    Main host = new Main(Arrays.asList(args), channelOut);
    host.serve(channelIn);
    // The worker closed the channel: it stopped, or it is gone. Nothing may outlive it.
    System.exit(0);
  }

  private void serve(DataInputStream in) throws IOException {
    for (;;) {
      Wire.Frame f = Wire.read(in);
      if (f == null) return;
      if ((f.type & 0x80) != 0) {  // the worker's answer to one of the host's requests
        CompletableFuture<Wire.Frame> waiting = asked.get(f.id);
        if (waiting != null) waiting.complete(f);
        continue;
      }
      pool.execute(() -> answer(f));
    }
  }

  private void answer(Wire.Frame f) {
    Wire.Out reply;
    try {
      reply = handle(f);
    } catch (Throwable t) {
      reply = failure(f.id, t);
    }
    send(reply);
  }

  static Wire.Out failure(int id, Throwable t) {
    StringWriter trace = new StringWriter();
    t.printStackTrace(new PrintWriter(trace));
    // Retriable as Kafka Connect takes it: the worker retries the call after its back-off.
    boolean retriable = t instanceof org.apache.kafka.connect.errors.RetriableException
        || t instanceof org.apache.kafka.common.errors.RetriableException;
    return new Wire.Out(id, FAILED).str(t.getClass().getName()).str(String.valueOf(t.getMessage())).str(trace.toString())
        .bool(retriable);
  }

  private Wire.Out handle(Wire.Frame f) throws Throwable {
    switch (f.type) {
      case HELLO:
        return new Wire.Out(f.id, HELLO | 0x80)
            .i32(PROTOCOL_VERSION)
            .str(System.getProperty("java.version"))
            .str(System.getProperty("java.vendor"))
            .i64(Runtime.getRuntime().maxMemory());
      case PLUGINS: {
        Wire.Out o = new Wire.Out(f.id, PLUGINS | 0x80).i32(plugins.byClass.size());
        for (Plugins.Plugin p : plugins.byClass.values())
          o.str(p.className).u8(p.kind).u8(p.openMessaging ? 1 : 0).str(p.version).str(p.location);
        o.i32(plugins.problems.size());
        for (String[] pr : plugins.problems) o.str(pr[0]).str(pr[1]);
        return o;
      }
      case CONFIG_DEF: {
        String cls = Wire.readString(f.body);
        if (plugins.plugin(cls).openMessaging) return new Wire.Out(f.id, CONFIG_DEF | 0x80).i32(0);  // it has no ConfigDef
        ConfigDef def = withLoader(cls, () -> plugins.newConnector(cls).config());
        Wire.Out o = new Wire.Out(f.id, CONFIG_DEF | 0x80);
        List<ConfigDef.ConfigKey> keys = new ArrayList<>(def.configKeys().values());
        o.i32(keys.size());
        for (ConfigDef.ConfigKey k : keys) {
          boolean hasDefault = k.hasDefault();
          String dflt = hasDefault && k.defaultValue != null ? ConfigDef.convertToString(k.defaultValue, k.type) : null;
          List<String> recommended = new ArrayList<>();
          if (k.validator instanceof ConfigDef.ValidString) {
            // "[a, b, c]" is how ValidString describes itself: its values, for forms.
            String s = k.validator.toString();
            if (s.startsWith("[") && s.endsWith("]"))
              for (String v : s.substring(1, s.length() - 1).split(",")) if (!v.isBlank()) recommended.add(v.trim());
          }
          o.str(k.name).str(k.type.name()).bool(hasDefault).str(dflt).str(k.importance == null ? "MEDIUM" : k.importance.name())
              .str(k.documentation == null ? "" : k.documentation).str(k.group == null ? "" : k.group)
              .str(k.displayName == null ? "" : k.displayName).strings(recommended);
        }
        return o;
      }
      case VALIDATE: {
        String cls = Wire.readString(f.body);
        Map<String, String> config = Wire.readMap(f.body);
        if (plugins.plugin(cls).openMessaging) return validateOpenMessaging(f.id, cls, config);
        List<ConfigValue> values = withLoader(cls, () -> {
          Connector c = plugins.newConnector(cls);
          List<ConfigValue> out = new ArrayList<>(c.validate(config).configValues());
          ConfigValue eos = exactlyOncePreflight(c, config);
          if (eos != null) out.add(eos);
          return out;
        });
        Wire.Out o = new Wire.Out(f.id, VALIDATE | 0x80).i32(values.size());
        for (ConfigValue v : values) {
          Object value = v.value();
          String text = value == null ? null
              : value instanceof org.apache.kafka.common.config.types.Password ? "[hidden]" : String.valueOf(value);
          o.str(v.name()).str(text).strings(v.errorMessages());
        }
        return o;
      }
      case CONNECTOR_START: {
        long handle = f.body.readLong();
        String cls = Wire.readString(f.body);
        runner.startConnector(handle, cls, Wire.readMap(f.body));
        return new Wire.Out(f.id, f.type | 0x80);
      }
      case TASK_CONFIGS: {
        long handle = f.body.readLong();
        List<Map<String, String>> configs = runner.taskConfigs(handle, f.body.readInt());
        Wire.Out o = new Wire.Out(f.id, f.type | 0x80).i32(configs.size());
        for (Map<String, String> c : configs) o.map(c);
        return o;
      }
      case CONNECTOR_STOP:
        runner.stopConnector(f.body.readLong());
        return new Wire.Out(f.id, f.type | 0x80);
      case SOURCE_TASK_START: {
        long handle = f.body.readLong();
        String cls = Wire.readString(f.body);
        Map<String, String> config = Wire.readMap(f.body);
        runner.startSourceTask(handle, cls, config, f.body.readInt());
        return new Wire.Out(f.id, f.type | 0x80);
      }
      case SOURCE_POLL: {
        long handle = f.body.readLong();
        int max = f.body.readInt();
        return runner.poll(f.id, handle, max, f.body);
      }
      case SOURCE_COMMIT: {
        long handle = f.body.readLong();
        runner.commit(handle, f.body);
        return new Wire.Out(f.id, f.type | 0x80);
      }
      case SINK_TASK_START: {
        long handle = f.body.readLong();
        String cls = Wire.readString(f.body);
        Map<String, String> config = Wire.readMap(f.body);
        int keyForm = f.body.readUnsignedByte();
        runner.startSinkTask(handle, cls, config, keyForm, f.body.readUnsignedByte());
        return new Wire.Out(f.id, f.type | 0x80);
      }
      case SINK_OPEN:
      case SINK_CLOSE: {
        long handle = f.body.readLong();
        runner.open(handle, f.body, f.type == SINK_OPEN);
        Wire.Out o = new Wire.Out(f.id, f.type | 0x80);
        if (f.type == SINK_OPEN) runner.contextRequests(handle, o);
        return o;
      }
      case SINK_PUT: {
        long handle = f.body.readLong();
        List<Object[]> reported = runner.put(handle, f.body);
        Wire.Out o = new Wire.Out(f.id, f.type | 0x80).i32(reported.size());
        for (Object[] r : reported) o.i32((Integer) r[0]).str((String) r[1]);
        runner.contextRequests(handle, o);
        return o;
      }
      case SINK_PRE_COMMIT: {
        long handle = f.body.readLong();
        Map<TopicPartition, OffsetAndMetadata> safe = runner.preCommit(handle, f.body);
        Wire.Out o = new Wire.Out(f.id, f.type | 0x80).i32(safe.size());
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : safe.entrySet())
          o.str(e.getKey().topic()).i32(e.getKey().partition()).i64(e.getValue().offset());
        runner.contextRequests(handle, o);
        return o;
      }
      case SINK_FLUSH:
        runner.flush(f.body.readLong());
        return new Wire.Out(f.id, f.type | 0x80);
      case TASK_STOP: {
        long handle = f.body.readLong();
        runner.stopTask(handle, f.body.readLong());
        return new Wire.Out(f.id, f.type | 0x80);
      }
      default:
        throw new IllegalArgumentException("unknown request type " + f.type);
    }
  }

  // KIP-618's preflight, as Kafka Connect's: with exactly.once.support=required a source connector
  // must answer SUPPORTED from exactlyOnceSupport(config); an error on that key otherwise. (The
  // worker refuses the task when exactly.once.source.support is not enabled; connector-defined
  // transaction boundaries are refused by the framework's own keys.)
  static ConfigValue exactlyOncePreflight(Connector c, Map<String, String> config) {
    if (!(c instanceof SourceConnector) || !"required".equals(config.get("exactly.once.support"))) return null;
    ConfigValue v = new ConfigValue("exactly.once.support", "required", new ArrayList<>(), new ArrayList<>());
    try {
      ExactlyOnceSupport said = ((SourceConnector) c).exactlyOnceSupport(config);
      if (said == null)
        v.addErrorMessage("exactly.once.support=required, but " + c.getClass().getName() + " does not say whether it "
            + "supports exactly-once delivery (its exactlyOnceSupport() returns null); use requested if it does");
      else if (said != ExactlyOnceSupport.SUPPORTED)
        v.addErrorMessage("exactly.once.support=required, but " + c.getClass().getName()
            + " does not support exactly-once delivery with this configuration (exactlyOnceSupport() says " + said + ")");
    } catch (RuntimeException e) {
      v.addErrorMessage("exactly.once.support=required, but " + c.getClass().getName() + ".exactlyOnceSupport() failed: "
          + describe(e));
    }
    return v.errorMessages().isEmpty() ? null : v;
  }

  // An OpenMessaging connector's validate(KeyValue) throws on a bad config: its message becomes
  // one error on connector.class (it names no key).
  private Wire.Out validateOpenMessaging(int id, String cls, Map<String, String> config) throws Exception {
    String error = withLoader(cls, () -> {
      io.openmessaging.KeyValue kv = new io.openmessaging.internal.DefaultKeyValue();
      config.forEach(kv::put);
      io.openmessaging.connector.api.component.connector.Connector<?> c =
          (io.openmessaging.connector.api.component.connector.Connector<?>) plugins.newInstance(cls);
      try {
        c.validate(kv);
        return null;
      } catch (RuntimeException e) {
        return e.getMessage() == null ? e.toString() : e.getMessage();
      }
    });
    Wire.Out o = new Wire.Out(id, VALIDATE | 0x80);
    if (error == null) return o.i32(0);
    return o.i32(1).str("connector.class").str(cls).strings(List.of(error));
  }

  interface Call<T> {
    T run() throws Exception;
  }

  // Runs `call` with the plugin's class loader as the thread's context loader (Runner.withLoader).
  private <T> T withLoader(String cls, Call<T> call) throws Exception {
    return Runner.withLoader(plugins.loaderOf(cls), call);
  }
}
