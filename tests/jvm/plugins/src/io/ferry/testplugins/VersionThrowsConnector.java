// A sink connector whose version() throws (listed as "unknown") and whose validate() adds a
// cross-field error of its own to the ConfigDef's.
package io.ferry.testplugins;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

public class VersionThrowsConnector extends SinkConnector {
  static final ConfigDef DEF = new ConfigDef()
      .define("mode", ConfigDef.Type.STRING, "append", ConfigDef.ValidString.in("append", "upsert"),
              ConfigDef.Importance.HIGH, "How rows are written.")
      .define("key.columns", ConfigDef.Type.LIST, "", ConfigDef.Importance.MEDIUM, "Key columns for upsert.")
      .define("password", ConfigDef.Type.PASSWORD, null, ConfigDef.Importance.LOW, "A secret.");

  @Override public String version() { throw new UnsupportedOperationException("no version on purpose"); }
  @Override public ConfigDef config() { return DEF; }

  @Override public Config validate(Map<String, String> props) {
    Config c = super.validate(props);
    if ("upsert".equals(props.get("mode")) && props.getOrDefault("key.columns", "").isEmpty())
      for (ConfigValue v : c.configValues())
        if (v.name().equals("key.columns")) v.addErrorMessage("upsert needs key.columns");
    return c;
  }

  @Override public void start(Map<String, String> props) {}
  @Override public Class<? extends Task> taskClass() { return null; }
  @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(); }
  @Override public void stop() {}
}
