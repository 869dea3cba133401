// An OpenMessaging (RocketMQ Connect API) sink: writes each record of OmSeq shape as one line
// "<key> seq=<seq> name=<name> at=<millis> price=<price> stream=<extension> topic=<partition topic>",
// flushed in flush(). Records whose seq % `report.every` == 1 (report.every > 0) are reported to
// the ErrorRecordReporter instead.
package io.ferry.testplugins.om;

import io.openmessaging.KeyValue;
import io.openmessaging.connector.api.component.task.Task;
import io.openmessaging.connector.api.component.task.sink.SinkConnector;
import io.openmessaging.connector.api.component.task.sink.SinkTask;
import io.openmessaging.connector.api.data.ConnectRecord;
import io.openmessaging.connector.api.data.RecordOffset;
import io.openmessaging.connector.api.data.RecordPartition;
import io.openmessaging.connector.api.data.Struct;
import io.openmessaging.connector.api.errors.ConnectException;
import java.io.FileWriter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

public class FileSinkConnector extends SinkConnector {
  private KeyValue config;

  @Override public void validate(KeyValue config) {
    if (config.getString("file", "").isEmpty()) throw new IllegalArgumentException("the sink needs a file");
  }
  @Override public void start(KeyValue config) { this.config = config; }
  @Override public void stop() {}
  @Override public Class<? extends Task> taskClass() { return FileTask.class; }
  @Override public List<KeyValue> taskConfigs(int maxTasks) {
    List<KeyValue> out = new ArrayList<>();
    for (int i = 0; i < maxTasks; i++) out.add(config);
    return out;
  }

  public static class FileTask extends SinkTask {
    FileWriter out;
    long reportEvery;

    @Override public void start(KeyValue config) {
      reportEvery = Long.parseLong(config.getString("report.every", "0"));
      try {
        out = new FileWriter(config.getString("file"), true);
      } catch (IOException e) {
        throw new ConnectException(e);
      }
    }

    @Override public void put(List<ConnectRecord> records) {
      try {
        for (ConnectRecord r : records) {
          Struct v = (Struct) r.getData();
          long seq = (Long) v.get("seq");
          if (reportEvery > 0 && seq % reportEvery == 1) {
            sinkTaskContext.errorRecordReporter().report(r, new IllegalStateException("seq " + seq + " refused"));
            continue;
          }
          java.util.Date at = (java.util.Date) v.get("at");
          out.write(r.getKey() + " seq=" + seq + " name=" + v.get("name") + " at=" + at.getTime() + " price="
              + v.get("price") + " stream=" + r.getExtension("stream") + " topic="
              + r.getPosition().getPartition().getPartition().get("topic") + "\n");
        }
      } catch (IOException e) {
        throw new ConnectException(e);
      }
    }

    @Override public void flush(Map<RecordPartition, RecordOffset> offsets) {
      try {
        out.flush();
      } catch (IOException e) {
        throw new ConnectException(e);
      }
    }

    @Override public void stop() {
      try {
        out.close();
      } catch (IOException e) {
        // closing
      }
    }
  }
}
