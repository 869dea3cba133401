// A sink that steers its consumer through SinkTaskContext, for tests of offset(), pause() and
// resume(). It writes one line per record put, "rec <partition> <offset> <millis>", flushed at
// every put, and its own moves as "rewind <partition> <to> <last offset put before it> <millis>",
// "pause <partition> <millis>", "resume <partition> <millis>":
//   - rewind.offset = R: the first time a partition's record at offset R is put, it calls
//     context.offset(tp, R - rewind.by) (once per partition);
//   - pause.offset = P, pause.ms = M: the first time a partition's (pause.partition's, if set)
//     record at offset P is put, it calls context.pause(tp), and context.resume(tp) M ms later
//     from a thread of its own;
//   - retriable.offset = X: the first put() of a batch holding a partition's record at offset X
//     throws a RetriableException before writing anything (once per partition).
package io.ferry.testplugins;

import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

public class SteeringSinkConnector extends SinkConnector {
  static final ConfigDef CONFIG = new ConfigDef()
      .define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "where the lines go")
      .define("rewind.offset", ConfigDef.Type.LONG, -1L, ConfigDef.Importance.LOW, "rewind when this offset is put")
      .define("rewind.by", ConfigDef.Type.LONG, 100L, ConfigDef.Importance.LOW, "how far back")
      .define("pause.offset", ConfigDef.Type.LONG, -1L, ConfigDef.Importance.LOW, "pause when this offset is put")
      .define("pause.ms", ConfigDef.Type.LONG, 3000L, ConfigDef.Importance.LOW, "for how long")
      .define("pause.partition", ConfigDef.Type.INT, -1, ConfigDef.Importance.LOW, "only this partition (-1: each)")
      .define("retriable.offset", ConfigDef.Type.LONG, -1L, ConfigDef.Importance.LOW,
          "throw a RetriableException, once per partition, from the put() of a batch holding this offset");
  private Map<String, String> props;

  @Override public String version() { return "0.0.1-test"; }
  @Override public ConfigDef config() { return CONFIG; }
  @Override public void start(Map<String, String> props) { this.props = props; }
  @Override public Class<? extends Task> taskClass() { return SteeringTask.class; }
  @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(props); }
  @Override public void stop() {}

  public static class SteeringTask extends SinkTask {
    private Writer out;
    private long rewindAt, rewindBy, pauseAt, pauseMs;
    private int pausePartition;
    private long retriableAt;
    private final Set<Integer> refused = new HashSet<>();
    private final Set<Integer> rewound = new HashSet<>(), paused = new HashSet<>();

    @Override public String version() { return "0.0.1-test"; }

    @Override public void start(Map<String, String> props) {
      rewindAt = Long.parseLong(props.getOrDefault("rewind.offset", "-1"));
      rewindBy = Long.parseLong(props.getOrDefault("rewind.by", "100"));
      pauseAt = Long.parseLong(props.getOrDefault("pause.offset", "-1"));
      pauseMs = Long.parseLong(props.getOrDefault("pause.ms", "3000"));
      pausePartition = Integer.parseInt(props.getOrDefault("pause.partition", "-1"));
      retriableAt = Long.parseLong(props.getOrDefault("retriable.offset", "-1"));
      try {
        out = new FileWriter(props.get("file"), true);
      } catch (IOException e) {
        throw new ConnectException(e);
      }
    }

    private synchronized void line(String s) {
      try {
        out.write(s + "\n");
        out.flush();
      } catch (IOException e) {
        throw new ConnectException(e);
      }
    }

    @Override public void put(Collection<SinkRecord> records) {
      for (SinkRecord r : records) {
        if (r.kafkaOffset() == retriableAt && refused.add(r.kafkaPartition())) {
          line("retriable " + r.kafkaPartition() + " " + System.currentTimeMillis());
          throw new org.apache.kafka.connect.errors.RetriableException("offset " + retriableAt + " refused once, on purpose");
        }
      }
      java.util.Map<Integer, Long> rewinding = new java.util.HashMap<>();  // partition -> last offset of this batch
      for (SinkRecord r : records) {
        int p = r.kafkaPartition();
        long o = r.kafkaOffset();
        line("rec " + p + " " + o + " " + System.currentTimeMillis());
        TopicPartition tp = new TopicPartition(r.topic(), p);
        if (rewinding.containsKey(p)) rewinding.put(p, o);
        if (o == rewindAt && rewound.add(p)) {
          // As in Kafka Connect, the rest of this batch is put too: the rewind applies to what is
          // read next.
          context.offset(tp, o - rewindBy);
          rewinding.put(p, o);
        }
        if (o == pauseAt && (pausePartition < 0 || pausePartition == p) && paused.add(p)) {
          context.pause(tp);
          line("pause " + p + " " + System.currentTimeMillis());
          Thread t = new Thread(() -> {
            try {
              Thread.sleep(pauseMs);
            } catch (InterruptedException e) {
              return;
            }
            line("resume " + p + " " + System.currentTimeMillis());
            context.resume(tp);
          }, "steering-resume-" + p);
          t.setDaemon(true);
          t.start();
        }
      }
      rewinding.forEach((p, last) -> line("rewind " + p + " " + (rewindAt - rewindBy) + " " + last + " "
          + System.currentTimeMillis()));
    }

    @Override public void flush(Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> offsets) {}

    @Override public void stop() {
      try {
        out.close();
      } catch (IOException e) {
        // closing
      }
    }
  }
}
