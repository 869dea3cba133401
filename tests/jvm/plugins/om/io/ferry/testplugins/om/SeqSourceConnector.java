// An OpenMessaging (RocketMQ Connect API) source: task i of `tasks.max` emits `count` typed records
// (a Struct with an int64 seq, a string, a Timestamp and a Decimal; a string key; a `stream`
// extension) at about `rate` per second, its position {"seq": next} under {"stream": name}. It
// resumes from the committed position read through its OffsetStorageReader, and appends
// "<stream> <seq> <topic> <queue.id> <queue.offset>" to `commit.file` for every
// commit(record, metadata) the runtime makes.
package io.ferry.testplugins.om;

import io.openmessaging.KeyValue;
import io.openmessaging.connector.api.component.task.Task;
import io.openmessaging.connector.api.component.task.source.SourceConnector;
import io.openmessaging.connector.api.component.task.source.SourceTask;
import io.openmessaging.connector.api.data.ConnectRecord;
import io.openmessaging.connector.api.data.RecordOffset;
import io.openmessaging.connector.api.data.RecordPartition;
import io.openmessaging.connector.api.data.Schema;
import io.openmessaging.connector.api.data.SchemaBuilder;
import io.openmessaging.connector.api.data.Struct;
import io.openmessaging.connector.api.data.logical.Decimal;
import io.openmessaging.connector.api.data.logical.Timestamp;
import io.openmessaging.internal.DefaultKeyValue;
import java.io.FileWriter;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

public class SeqSourceConnector extends SourceConnector {
  private KeyValue config;

  @Override public void validate(KeyValue config) {
    if (config.getString("count", "").isEmpty()) throw new IllegalArgumentException("seq needs a count");
  }
  @Override public void start(KeyValue config) { this.config = config; }
  @Override public void stop() {}
  @Override public Class<? extends Task> taskClass() { return SeqTask.class; }
  @Override public List<KeyValue> taskConfigs(int maxTasks) {
    List<KeyValue> out = new ArrayList<>();
    for (int i = 0; i < maxTasks; i++) {
      KeyValue kv = new DefaultKeyValue();
      for (String k : config.keySet()) kv.put(k, config.getString(k));
      kv.put("task.index", i);
      out.add(kv);
    }
    return out;
  }

  public static class SeqTask extends SourceTask {
    static final Schema VALUE = SchemaBuilder.struct().name("io.ferry.test.OmSeq").version(2)
        .field("seq", SchemaBuilder.int64().build())
        .field("name", SchemaBuilder.string().build())
        .field("at", Timestamp.SCHEMA)
        .field("price", Decimal.schema(2))
        .build();
    static final Schema KEY = SchemaBuilder.string().build();
    String stream;
    long next, count, rate, started;
    long emitted;
    String commitFile;
    RecordPartition partition;

    @Override public void start(KeyValue config) {
      stream = config.getString("name") + "-" + config.getString("task.index");
      count = Long.parseLong(config.getString("count"));
      rate = Long.parseLong(config.getString("rate", "0"));
      commitFile = config.getString("commit.file", "");
      partition = new RecordPartition(Map.of("stream", stream));
      RecordOffset o = sourceTaskContext.offsetStorageReader().readOffset(partition);
      if (o != null && o.getOffset().get("seq") != null) next = Long.parseLong(o.getOffset().get("seq").toString());
      started = System.currentTimeMillis();
    }

    @Override public List<ConnectRecord> poll() throws InterruptedException {
      if (next >= count) {
        Thread.sleep(50);
        return null;
      }
      int n = 100;
      if (rate > 0) {
        long due = emitted * 1000 / rate - (System.currentTimeMillis() - started);
        if (due > 0) Thread.sleep(Math.min(due, 100));
        n = (int) Math.max(1, Math.min(100, rate / 20));
      }
      List<ConnectRecord> out = new ArrayList<>();
      for (int i = 0; i < n && next < count; i++, next++, emitted++) {
        Struct v = new Struct(VALUE);
        v.put("seq", next);
        v.put("name", "om \"" + stream + "\"");
        v.put("at", new java.util.Date(1_700_000_000_000L + next));
        v.put("price", BigDecimal.valueOf(next * 7 + 1, 2));
        ConnectRecord r = new ConnectRecord(partition, new RecordOffset(Map.of("seq", next + 1)),
            1_700_000_000_000L + next, KEY, stream + ":" + next, VALUE, v);
        r.addExtension("stream", stream);
        out.add(r);
      }
      return out;
    }

    @Override public void commit(ConnectRecord record, Map<String, String> metadata) {
      if (commitFile.isEmpty()) return;
      Struct v = (Struct) record.getData();
      try (FileWriter w = new FileWriter(commitFile, true)) {
        w.write(stream + " " + v.get("seq") + " " + metadata.get("topic") + " " + metadata.get("queue.id") + " "
            + metadata.get("queue.offset") + "\n");
      } catch (IOException e) {
        throw new RuntimeException(e);
      }
    }

    @Override public void stop() {}
  }
}
