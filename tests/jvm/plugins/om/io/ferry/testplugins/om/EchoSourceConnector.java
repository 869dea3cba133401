// An OpenMessaging (RocketMQ Connect API) source connector: found by the class scan (no
// manifests), validated by its own validate(KeyValue), which throws without a topic.
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
  @Override public List<KeyValue> taskConfigs(int maxTasks) { return List.of(); }
  @Override public Class<? extends Task> taskClass() { return null; }
}
