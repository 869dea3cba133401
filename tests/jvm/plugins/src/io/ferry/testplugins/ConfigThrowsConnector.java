// A connector whose config() throws: describing it fails, the worker and the other plugins do not.
package io.ferry.testplugins;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

public class ConfigThrowsConnector extends SourceConnector {
  @Override public String version() { return "0.0.1-test"; }
  @Override public ConfigDef config() { throw new IllegalStateException("config() is broken on purpose"); }
  @Override public void start(Map<String, String> props) {}
  @Override public Class<? extends Task> taskClass() { return null; }
  @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(); }
  @Override public void stop() {}
}
