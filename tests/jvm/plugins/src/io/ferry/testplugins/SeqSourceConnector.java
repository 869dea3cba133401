// A source of sequence-numbered typed records, for delivery tests of Java source tasks: each task
// writes `count` records (seq 0..count-1) of a Struct value {stream, seq, text} with an int64 key
// (seq) and a header, one source partition per task ({"stream": "<name>-<task>"}) and the offset
// {"seq": Long}. On start it reads its committed offset through the OffsetStorageReader and goes on
// after it, as real connectors resume. `batch` records per poll(), at most `rate` per second.
package io.ferry.testplugins;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class SeqSourceConnector extends SourceConnector {
  static final ConfigDef CONFIG = new ConfigDef()
      .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "where the records go")
      .define("count", ConfigDef.Type.LONG, 1000L, ConfigDef.Importance.HIGH, "records per task")
      .define("batch", ConfigDef.Type.INT, 100, ConfigDef.Importance.LOW, "records per poll()")
      .define("rate", ConfigDef.Type.INT, 0, ConfigDef.Importance.LOW, "records per second per task (0: no limit)")
      .define("exactly.once", ConfigDef.Type.STRING, "", ConfigDef.Importance.LOW, "what exactlyOnceSupport() answers");
  private Map<String, String> props;

  @Override public String version() { return "0.0.1-test"; }
  @Override public ConfigDef config() { return CONFIG; }
  // KIP-618's preflight: `exactly.once` = supported or unsupported answers so; absent, Kafka's
  // default (null: the connector does not say).
  @Override public org.apache.kafka.connect.source.ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {
    String said = props.get("exactly.once");
    if ("supported".equals(said)) return org.apache.kafka.connect.source.ExactlyOnceSupport.SUPPORTED;
    if ("unsupported".equals(said)) return org.apache.kafka.connect.source.ExactlyOnceSupport.UNSUPPORTED;
    return super.exactlyOnceSupport(props);
  }
  // context() casts to the connector kind's own context, as connectors that use it rely on.
  @Override public void start(Map<String, String> props) {
    if (context() == null) throw new IllegalStateException("no SourceConnectorContext");
    this.props = props;
  }
  @Override public Class<? extends Task> taskClass() { return SeqTask.class; }
  @Override public void stop() {}

  @Override public List<Map<String, String>> taskConfigs(int maxTasks) {
    List<Map<String, String>> out = new ArrayList<>();
    for (int i = 0; i < maxTasks; i++) {
      Map<String, String> c = new java.util.HashMap<>(props);
      c.put("task.index", Integer.toString(i));
      out.add(c);
    }
    return out;
  }

  public static class SeqTask extends SourceTask {
    static final Schema VALUE = SchemaBuilder.struct().name("io.ferry.test.Seq").version(1)
        .field("stream", Schema.STRING_SCHEMA).field("seq", Schema.INT64_SCHEMA)
        .field("text", Schema.OPTIONAL_STRING_SCHEMA).build();
    private String topic;
    private String stream;
    private long next;
    private long count;
    private int batch;
    private int rate;
    private volatile boolean stopping;
    private long started;
    private long sentSinceStart;

    @Override public String version() { return "0.0.1-test"; }

    @Override public void start(Map<String, String> props) {
      topic = props.get("topic");
      count = Long.parseLong(props.getOrDefault("count", "1000"));
      batch = Integer.parseInt(props.getOrDefault("batch", "100"));
      rate = Integer.parseInt(props.getOrDefault("rate", "0"));
      stream = props.get("name") + "-" + props.getOrDefault("task.index", "0");
      Map<String, Object> offset = context.offsetStorageReader().offset(Map.of("stream", stream));
      if (offset != null) {
        Object seq = offset.get("seq");
        if (!(seq instanceof Long)) throw new IllegalStateException("offset seq is " + seq + ", not a Long");
        next = (Long) seq + 1;
      }
      started = System.nanoTime();
    }

    @Override public List<SourceRecord> poll() throws InterruptedException {
      if (next >= count || stopping) {
        Thread.sleep(100);
        return null;
      }
      if (rate > 0) {
        long due = started + sentSinceStart * 1_000_000_000L / rate;
        long wait = due - System.nanoTime();
        if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
      }
      int n = (int) Math.min(batch, count - next);
      if (rate > 0) n = Math.min(n, Math.max(1, rate / 10));
      List<SourceRecord> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++, next++) {
        Struct v = new Struct(VALUE).put("stream", stream).put("seq", next).put("text", "record " + next);
        SourceRecord r = new SourceRecord(Map.of("stream", stream), Map.of("seq", next), topic, null,
            Schema.INT64_SCHEMA, next, VALUE, v, System.currentTimeMillis());
        r.headers().addString("stream", stream);
        out.add(r);
      }
      sentSinceStart += n;
      return out;
    }

    @Override public void stop() { stopping = true; }
  }
}
