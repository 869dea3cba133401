// A sink that writes each record's value (its toString()) as a line of `file`, and reports every
// record whose value has a seq divisible by `errant.every` (0: none) to the ErrantRecordReporter
// instead.
package io.ferry.testplugins;

import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

public class ErrantSinkConnector extends SinkConnector {
  static final ConfigDef CONFIG = new ConfigDef()
      .define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "where the lines go")
      .define("errant.every", ConfigDef.Type.LONG, 3L, ConfigDef.Importance.LOW, "report seq % this == 0");
  private Map<String, String> props;

  @Override public String version() { return "0.0.1-test"; }
  @Override public ConfigDef config() { return CONFIG; }
  // context() casts to the connector kind's own context, as connectors that use it rely on.
  @Override public void start(Map<String, String> props) {
    if (context() == null) throw new IllegalStateException("no SinkConnectorContext");
    this.props = props;
  }
  @Override public Class<? extends Task> taskClass() { return ErrantTask.class; }
  @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(props); }
  @Override public void stop() {}

  public static class ErrantTask extends SinkTask {
    private Writer out;
    private long every;

    @Override public String version() { return "0.0.1-test"; }

    @Override public void start(Map<String, String> props) {
      every = Long.parseLong(props.getOrDefault("errant.every", "3"));
      try {
        out = new FileWriter(props.get("file"), true);
      } catch (IOException e) {
        throw new ConnectException(e);
      }
    }

    @Override public void put(Collection<SinkRecord> records) {
      try {
        for (SinkRecord r : records) {
          Struct v = (Struct) r.value();
          long seq = v.getInt64("seq");
          if (every > 0 && seq % every == 0) {
            context.errantRecordReporter().report(r, new IllegalArgumentException("seq " + seq + " refused on purpose"));
            continue;
          }
          out.write(v.getString("stream") + " " + seq + " key=" + r.key() + " header=" + r.headers().lastWithName("stream").value() + "\n");
        }
      } catch (IOException e) {
        throw new ConnectException(e);
      }
    }

    @Override public void flush(Map<TopicPartition, OffsetAndMetadata> offsets) {
      try {
        out.flush();
      } catch (IOException e) {
        throw new ConnectException(e);
      }
    }

    @Override public void stop() {
      try {
        if (out != null) out.close();
      } catch (IOException ignored) {
        // closing
      }
    }
  }
}
