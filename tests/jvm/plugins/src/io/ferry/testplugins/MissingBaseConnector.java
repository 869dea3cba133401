// A connector whose base class is not in its jar (a missing dependency): it cannot be loaded, and
// is reported rather than listed.
package io.ferry.testplugins;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;

public class MissingBaseConnector extends Missing {
  @Override public String version() { return "1"; }
  @Override public ConfigDef config() { return new ConfigDef(); }
  @Override public void start(Map<String, String> props) {}
  @Override public Class<? extends Task> taskClass() { return null; }
  @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(); }
  @Override public void stop() {}
}
