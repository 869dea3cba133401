// An OpenMessaging (RocketMQ Connect API) source connector: found by the class scan (no
// manifests), validated by its own validate(KeyValue), which throws without a topic. It asks for one
// task but names no task class (a broken plugin).
package io.ferry.testplugins.om;

import io.openmessaging.KeyValue;
import io.openmessaging.connector.api.component.task.Task;
import io.openmessaging.connector.api.component.task.source.SourceConnector;
import java.util.List;

public class EchoSourceConnector extends SourceConnector {
  @Override public void validate(KeyValue config) {
    String topic = config.getString("topic");
    if (topic == null || topic.isEmpty()) throw new IllegalArgumentException("echo needs a topic");
  }
  @Override public void start(KeyValue config) {}
  @Override public void stop() {}
  @Override public List<KeyValue> taskConfigs(int maxTasks) { return List.of(new io.openmessaging.internal.DefaultKeyValue()); }
  @Override public Class<? extends Task> taskClass() { return null; }
}
