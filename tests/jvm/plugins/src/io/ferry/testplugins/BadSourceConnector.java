// A source task that misbehaves as users' tasks do, chosen by `mode`:
//   start-throws  start() throws;
//   hang-poll     poll() never returns, not even when interrupted;
//   leak-threads  start() starts threads that never end (non-daemon), poll() returns nothing;
//   oom           poll() allocates until the JVM runs out of heap.
package io.ferry.testplugins;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class BadSourceConnector extends SourceConnector {
  static final ConfigDef CONFIG = new ConfigDef()
      .define("mode", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "how to misbehave");
  private Map<String, String> props;

  @Override public String version() { return "0.0.1-test"; }
  @Override public ConfigDef config() { return CONFIG; }
  @Override public void start(Map<String, String> props) { this.props = props; }
  @Override public Class<? extends Task> taskClass() { return BadTask.class; }
  @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(props); }
  @Override public void stop() {}

  public static class BadTask extends SourceTask {
    static final List<byte[]> HOARD = new ArrayList<>();
    private String mode;

    @Override public String version() { return "0.0.1-test"; }

    @Override public void start(Map<String, String> props) {
      mode = props.get("mode");
      if ("start-throws".equals(mode)) throw new IllegalStateException("start() fails on purpose");
      if ("leak-threads".equals(mode)) {
        for (int i = 0; i < 3; i++) {
          Thread t = new Thread(() -> {
            for (;;) {
              try {
                Thread.sleep(60_000);
              } catch (InterruptedException ignored) {
                // leaks on purpose
              }
            }
          }, "leaked-by-bad-task");
          t.start();
        }
      }
    }

    @Override public List<SourceRecord> poll() throws InterruptedException {
      if ("hang-poll".equals(mode)) {
        for (;;) {
          try {
            Thread.sleep(60_000);
          } catch (InterruptedException ignored) {
            // hangs on purpose
          }
        }
      }
      if ("oom".equals(mode)) {
        for (;;) HOARD.add(new byte[16 << 20]);
      }
      Thread.sleep(100);
      return null;
    }

    @Override public void stop() {}
  }
}
