// OpenMessaging (RocketMQ Connect API) connectors run through the Kafka Connect path
// (jvm/README.md, "OpenMessaging connectors").
//
// An OpenMessaging connector is wrapped in a Kafka Connect SourceConnector or SinkConnector, and
// its tasks in Kafka Connect tasks: the runner, the channel and the records' encoding serve both
// APIs unchanged. What the wrappers translate:
//   - configs: Map<String,String> <-> KeyValue (DefaultKeyValue); each task config also gets the
//     connector's `name`, `connect.topicname` and `connect.topicnames` (RocketMQ Connect copies
//     them into every task config);
//   - source records: ConnectRecord -> SourceRecord. The topic is the record's `topic` extension,
//     else `connect.topicname`; the other extensions become string headers; RecordPartition /
//     RecordOffset maps become the source partition / offset;
//   - commit(record, metadata) after the record is safe, with the metadata RocketMQ Connect gives:
//     topic, queue.id, queue.offset (where the backbone put it); commit() after positions are stored;
//   - sink records: SinkRecord -> ConnectRecord with RecordPartition {topic, queueId} and
//     RecordOffset {queueOffset} (strings, as RocketMQ Connect's); headers become extensions;
//     flush/preCommit offsets both ways; ErrorRecordReporter -> the ErrantRecordReporter;
//   - schemas and values: OpenMessaging's schema model <-> Kafka Connect's, type by type (its
//     Decimal/Date/Time/Timestamp logical types to Kafka's; DATETIME to Timestamp).
package io.ferry.jvmhost;

import io.openmessaging.KeyValue;
import io.openmessaging.connector.api.component.connector.ConnectorContext;
import io.openmessaging.connector.api.data.ConnectRecord;
import io.openmessaging.connector.api.data.Field;
import io.openmessaging.connector.api.data.FieldType;
import io.openmessaging.connector.api.data.RecordOffset;
import io.openmessaging.connector.api.data.RecordPartition;
import io.openmessaging.internal.DefaultKeyValue;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;

final class OpenMessaging {
  static final String TOPIC_NAME = "connect.topicname";
  static final String TOPIC_NAMES = "connect.topicnames";
  private static final String OM_DECIMAL = "io.openmessaging.connector.api.data.logical.Decimal";
  private static final String OM_DATE = "io.openmessaging.connector.api.data.logical.Date";
  private static final String OM_TIME = "io.openmessaging.connector.api.data.logical.Time";
  private static final String OM_TIMESTAMP = "io.openmessaging.connector.api.data.logical.Timestamp";

  private OpenMessaging() {}

  // The Kafka Connect connector that runs `om` (an OpenMessaging SourceConnector or SinkConnector).
  static Connector wrap(Object om) {
    if (om instanceof io.openmessaging.connector.api.component.task.source.SourceConnector s) return new Source(s);
    if (om instanceof io.openmessaging.connector.api.component.task.sink.SinkConnector s) return new Sink(s);
    throw new IllegalArgumentException(om.getClass().getName() + " is neither an OpenMessaging SourceConnector nor a SinkConnector");
  }

  // A wrapped connector's task: its own task class, wrapped.
  static Task newTask(Connector c) throws Exception {
    if (c instanceof Source s) return new SourceTaskAdapter((io.openmessaging.connector.api.component.task.source.SourceTask) instance(s.om.taskClass()));
    if (c instanceof Sink s) return new SinkTaskAdapter((io.openmessaging.connector.api.component.task.sink.SinkTask) instance(s.om.taskClass()));
    return null;
  }

  private static Object instance(Class<?> c) throws Exception {
    if (c == null) throw new IllegalArgumentException("the OpenMessaging connector names no task class");
    return c.getDeclaredConstructor().newInstance();
  }

  static KeyValue keyValue(Map<String, String> config) {
    KeyValue kv = new DefaultKeyValue();
    config.forEach((k, v) -> {
      if (k != null && v != null) kv.put(k, v);
    });
    return kv;
  }

  static Map<String, String> map(KeyValue kv) {
    Map<String, String> out = new LinkedHashMap<>();
    if (kv != null) for (String k : kv.keySet()) out.put(k, kv.getString(k));
    return out;
  }

  static String version(Object om) {
    String v = om.getClass().getPackage() == null ? null : om.getClass().getPackage().getImplementationVersion();
    return v == null ? "unknown" : v;
  }

  // ------------------------------------------------------------------------------------------
  // Connectors

  private static List<Map<String, String>> taskConfigs(io.openmessaging.connector.api.component.connector.Connector<?> om,
                                                       Map<String, String> config, int max) {
    List<KeyValue> configs = om.taskConfigs(max);
    List<Map<String, String>> out = new ArrayList<>();
    if (configs == null) return out;
    for (KeyValue kv : configs) {
      Map<String, String> m = map(kv);
      for (String k : List.of("name", TOPIC_NAME, TOPIC_NAMES))
        if (config.containsKey(k)) m.putIfAbsent(k, config.get(k));
      out.add(m);
    }
    return out;
  }

  private static ConnectorContext omContext(org.apache.kafka.connect.connector.ConnectorContext kafka) {
    return new ConnectorContext() {
      @Override public void requestTaskReconfiguration() {
        kafka.requestTaskReconfiguration();
      }
      @Override public void raiseError(Exception e) {
        kafka.raiseError(e);
      }
    };
  }

  // What both wrappers do with the OpenMessaging connector they hold.
  static final class Held {
    final io.openmessaging.connector.api.component.connector.Connector<?> om;
    private Map<String, String> config = Map.of();

    Held(io.openmessaging.connector.api.component.connector.Connector<?> om) {
      this.om = om;
    }

    void start(Map<String, String> props, org.apache.kafka.connect.connector.ConnectorContext context) {
      config = props;
      KeyValue kv = keyValue(props);
      om.validate(kv);
      om.init(omContext(context));
      om.start(kv);
    }

    List<Map<String, String>> taskConfigs(int max) {
      return OpenMessaging.taskConfigs(om, config, max);
    }
  }

  static final class Source extends org.apache.kafka.connect.source.SourceConnector {
    final io.openmessaging.connector.api.component.task.source.SourceConnector om;
    private final Held held;

    Source(io.openmessaging.connector.api.component.task.source.SourceConnector om) {
      this.om = om;
      this.held = new Held(om);
    }

    @Override public String version() { return OpenMessaging.version(om); }
    @Override public void start(Map<String, String> props) { held.start(props, context()); }
    @Override public Class<? extends Task> taskClass() { return SourceTaskAdapter.class; }
    @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return held.taskConfigs(maxTasks); }
    @Override public void stop() { om.stop(); }
    @Override public ConfigDef config() { return new ConfigDef(); }
  }

  static final class Sink extends org.apache.kafka.connect.sink.SinkConnector {
    final io.openmessaging.connector.api.component.task.sink.SinkConnector om;
    private final Held held;

    Sink(io.openmessaging.connector.api.component.task.sink.SinkConnector om) {
      this.om = om;
      this.held = new Held(om);
    }

    @Override public String version() { return OpenMessaging.version(om); }
    @Override public void start(Map<String, String> props) { held.start(props, context()); }
    @Override public Class<? extends Task> taskClass() { return SinkTaskAdapter.class; }
    @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return held.taskConfigs(maxTasks); }
    @Override public void stop() { om.stop(); }
    @Override public ConfigDef config() { return new ConfigDef(); }
  }

  // ------------------------------------------------------------------------------------------
  // Source tasks

  static final class SourceTaskAdapter extends org.apache.kafka.connect.source.SourceTask {
    final io.openmessaging.connector.api.component.task.source.SourceTask om;
    private String topic;
    // Records handed to the runtime, not yet committed: the OpenMessaging record each came from.
    private final Map<SourceRecord, ConnectRecord> pending = java.util.Collections.synchronizedMap(new IdentityHashMap<>());
    private final Schemas schemas = new Schemas();

    SourceTaskAdapter(io.openmessaging.connector.api.component.task.source.SourceTask om) {
      this.om = om;
    }

    @Override public String version() {
      return OpenMessaging.version(om);
    }

    @Override public void start(Map<String, String> props) {
      topic = props.get(TOPIC_NAME);
      KeyValue kv = keyValue(props);
      org.apache.kafka.connect.storage.OffsetStorageReader reader = context.offsetStorageReader();
      om.init(new io.openmessaging.connector.api.component.task.source.SourceTaskContext() {
        @Override public io.openmessaging.connector.api.storage.OffsetStorageReader offsetStorageReader() {
          return new io.openmessaging.connector.api.storage.OffsetStorageReader() {
            @Override public RecordOffset readOffset(RecordPartition partition) {
              Map<String, Object> o = reader.offset(partition.getPartition());
              return o == null ? null : new RecordOffset(o);
            }
            @Override public Map<RecordPartition, RecordOffset> readOffsets(Collection<RecordPartition> partitions) {
              List<Map<String, Object>> keys = new ArrayList<>();
              for (RecordPartition p : partitions) keys.add(new HashMap<>(p.getPartition()));
              Map<Map<String, Object>, Map<String, Object>> got = reader.offsets(keys);
              Map<RecordPartition, RecordOffset> out = new HashMap<>();
              for (RecordPartition p : partitions) {
                Map<String, Object> o = got.get(p.getPartition());
                if (o != null) out.put(p, new RecordOffset(o));
              }
              return out;
            }
          };
        }
        @Override public String getConnectorName() {
          return props.getOrDefault("name", "");
        }
        @Override public String getTaskName() {
          return props.getOrDefault("name", "");
        }
        @Override public KeyValue configs() {
          return kv;
        }
      });
      om.validate(kv);
      om.start(kv);
    }

    @Override public List<SourceRecord> poll() throws InterruptedException {
      List<ConnectRecord> batch;
      try {
        batch = om.poll();
      } catch (io.openmessaging.connector.api.errors.RetriableException e) {
        throw new org.apache.kafka.connect.errors.RetriableException(e.getMessage(), e);
      }
      if (batch == null || batch.isEmpty()) return null;
      List<SourceRecord> out = new ArrayList<>(batch.size());
      for (ConnectRecord r : batch) {
        SourceRecord s = toKafka(r);
        pending.put(s, r);
        out.add(s);
      }
      return out;
    }

    private SourceRecord toKafka(ConnectRecord r) {
      String t = r.getExtensions() == null ? null : r.getExtensions().getString("topic");
      if (t == null || t.isEmpty()) t = topic;
      if (t == null || t.isEmpty())
        throw new ConnectException("OpenMessaging source record without a topic: set " + TOPIC_NAME
            + " in the connector's config (or a 'topic' extension on the record)");
      Map<String, ?> partition = r.getPosition() == null || r.getPosition().getPartition() == null ? null
          : r.getPosition().getPartition().getPartition();
      Map<String, ?> offset = r.getPosition() == null || r.getPosition().getOffset() == null ? null
          : r.getPosition().getOffset().getOffset();
      Schema keySchema = schemas.toKafka(r.getKeySchema());
      Schema valueSchema = schemas.toKafka(r.getSchema());
      ConnectHeaders headers = new ConnectHeaders();
      if (r.getExtensions() != null)
        for (String k : r.getExtensions().keySet())
          if (!k.equals("topic")) headers.addString(k, r.getExtensions().getString(k));
      return new SourceRecord(partition, offset, t, null, keySchema, toKafkaValue(keySchema, r.getKey()),
          valueSchema, toKafkaValue(valueSchema, r.getData()), r.getTimestamp(), headers);
    }

    @Override public void commitRecord(SourceRecord record, RecordMetadata metadata) {
      ConnectRecord r = pending.remove(record);
      if (r == null) return;
      Map<String, String> m = new HashMap<>();
      if (metadata != null) {
        m.put("topic", metadata.topic());
        m.put("queue.id", String.valueOf(metadata.partition()));
        if (metadata.hasOffset()) m.put("queue.offset", String.valueOf(metadata.offset()));
      }
      om.commit(r, m);
    }

    @Override public void commit() {
      om.commit();
    }

    @Override public void stop() {
      om.stop();
    }
  }

  // ------------------------------------------------------------------------------------------
  // Sink tasks

  static RecordPartition partition(TopicPartition tp) {
    Map<String, String> m = new HashMap<>();
    m.put("topic", tp.topic());
    m.put("queueId", String.valueOf(tp.partition()));
    return new RecordPartition(m);
  }

  static RecordOffset offset(long next) {
    return new RecordOffset(Map.of("queueOffset", String.valueOf(next)));
  }

  static TopicPartition topicPartition(RecordPartition p) {
    Map<String, ?> m = p.getPartition();
    Object topic = m.get("topic"), queue = m.get("queueId");
    if (topic == null || queue == null) throw new ConnectException("not a partition of this runtime: " + m);
    return new TopicPartition(topic.toString(), Integer.parseInt(queue.toString()));
  }

  static long offsetOf(RecordOffset o) {
    Object v = o.getOffset().get("queueOffset");
    if (v == null) throw new ConnectException("not an offset of this runtime: " + o.getOffset());
    return Long.parseLong(v.toString());
  }

  static Map<RecordPartition, RecordOffset> toOm(Map<TopicPartition, OffsetAndMetadata> offsets) {
    Map<RecordPartition, RecordOffset> out = new HashMap<>();
    offsets.forEach((tp, om) -> out.put(partition(tp), offset(om.offset())));
    return out;
  }

  static final class SinkTaskAdapter extends org.apache.kafka.connect.sink.SinkTask {
    final io.openmessaging.connector.api.component.task.sink.SinkTask om;
    private final Schemas schemas = new Schemas();
    private IdentityHashMap<ConnectRecord, SinkRecord> putting;

    SinkTaskAdapter(io.openmessaging.connector.api.component.task.sink.SinkTask om) {
      this.om = om;
    }

    @Override public String version() {
      return OpenMessaging.version(om);
    }

    @Override public void start(Map<String, String> props) {
      KeyValue kv = keyValue(props);
      org.apache.kafka.connect.sink.SinkTaskContext kafka = context;
      om.init(new io.openmessaging.connector.api.component.task.sink.SinkTaskContext() {
        @Override public String getConnectorName() {
          return props.getOrDefault("name", "");
        }
        @Override public String getTaskName() {
          return props.getOrDefault("name", "");
        }
        @Override public KeyValue configs() {
          return kv;
        }
        @Override public void resetOffset(RecordPartition p, RecordOffset o) {
          kafka.offset(topicPartition(p), offsetOf(o));
        }
        @Override public void resetOffset(Map<RecordPartition, RecordOffset> offsets) {
          Map<TopicPartition, Long> m = new HashMap<>();
          offsets.forEach((p, o) -> m.put(topicPartition(p), offsetOf(o)));
          kafka.offset(m);
        }
        @Override public void pause(List<RecordPartition> ps) {
          kafka.pause(ps.stream().map(OpenMessaging::topicPartition).toArray(TopicPartition[]::new));
        }
        @Override public void resume(List<RecordPartition> ps) {
          kafka.resume(ps.stream().map(OpenMessaging::topicPartition).toArray(TopicPartition[]::new));
        }
        @Override public Set<RecordPartition> assignment() {
          Set<RecordPartition> out = new HashSet<>();
          for (TopicPartition tp : kafka.assignment()) out.add(partition(tp));
          return out;
        }
        @Override public io.openmessaging.connector.api.component.task.sink.ErrorRecordReporter errorRecordReporter() {
          org.apache.kafka.connect.sink.ErrantRecordReporter r = kafka.errantRecordReporter();
          return (record, error) -> {
            IdentityHashMap<ConnectRecord, SinkRecord> batch = putting;
            SinkRecord s = batch == null ? null : batch.get(record);
            if (s == null) throw new ConnectException("errant record reported outside put(): not one of the batch");
            r.report(s, error);
          };
        }
      });
      om.validate(kv);
      om.start(kv);
    }

    @Override public void put(Collection<SinkRecord> records) {
      List<ConnectRecord> batch = new ArrayList<>(records.size());
      IdentityHashMap<ConnectRecord, SinkRecord> index = new IdentityHashMap<>();
      for (SinkRecord s : records) {
        io.openmessaging.connector.api.data.Schema keySchema = schemas.toOm(s.keySchema());
        io.openmessaging.connector.api.data.Schema valueSchema = schemas.toOm(s.valueSchema());
        ConnectRecord r = new ConnectRecord(partition(new TopicPartition(s.topic(), s.kafkaPartition())),
            offset(s.kafkaOffset()), s.timestamp(), keySchema, toOmValue(keySchema, s.key()), valueSchema,
            toOmValue(valueSchema, s.value()));
        for (Header h : s.headers()) r.addExtension(h.key(), h.value() == null ? null : String.valueOf(h.value()));
        batch.add(r);
        index.put(r, s);
      }
      putting = index;
      try {
        om.put(batch);
      } catch (io.openmessaging.connector.api.errors.RetriableException e) {
        throw new org.apache.kafka.connect.errors.RetriableException(e.getMessage(), e);
      } finally {
        putting = null;
      }
    }

    @Override public void flush(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
      om.flush(toOm(currentOffsets));
    }

    @Override public Map<TopicPartition, OffsetAndMetadata> preCommit(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
      Map<RecordPartition, RecordOffset> safe = om.preCommit(toOm(currentOffsets));
      Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
      if (safe != null) safe.forEach((p, o) -> out.put(topicPartition(p), new OffsetAndMetadata(offsetOf(o))));
      return out;
    }

    @Override public void stop() {
      om.stop();
    }
  }

  // ------------------------------------------------------------------------------------------
  // Schemas and values

  // Both directions, each schema converted once (schemas are usually shared by many records).
  static final class Schemas {
    private final IdentityHashMap<io.openmessaging.connector.api.data.Schema, Schema> toKafka = new IdentityHashMap<>();
    private final IdentityHashMap<Schema, io.openmessaging.connector.api.data.Schema> toOm = new IdentityHashMap<>();

    synchronized Schema toKafka(io.openmessaging.connector.api.data.Schema s) {
      if (s == null) return null;
      Schema k = toKafka.get(s);
      if (k == null) {
        k = kafkaSchema(s);
        toKafka.put(s, k);
      }
      return k;
    }

    synchronized io.openmessaging.connector.api.data.Schema toOm(Schema s) {
      if (s == null) return null;
      io.openmessaging.connector.api.data.Schema o = toOm.get(s);
      if (o == null) {
        o = omSchema(s);
        toOm.put(s, o);
      }
      return o;
    }
  }

  static Schema kafkaSchema(io.openmessaging.connector.api.data.Schema s) {
    String name = s.getName();
    SchemaBuilder b;
    if (OM_DECIMAL.equals(name)) {
      String scale = s.getParameters() == null ? null : s.getParameters().get("scale");
      b = org.apache.kafka.connect.data.Decimal.builder(scale == null ? 0 : Integer.parseInt(scale));
    } else if (OM_DATE.equals(name)) {
      b = org.apache.kafka.connect.data.Date.builder();
    } else if (OM_TIME.equals(name)) {
      b = org.apache.kafka.connect.data.Time.builder();
    } else if (OM_TIMESTAMP.equals(name) || s.getFieldType() == FieldType.DATETIME) {
      b = org.apache.kafka.connect.data.Timestamp.builder();
    } else {
      switch (s.getFieldType()) {
        case INT8: b = SchemaBuilder.int8(); break;
        case INT16: b = SchemaBuilder.int16(); break;
        case INT32: b = SchemaBuilder.int32(); break;
        case INT64: b = SchemaBuilder.int64(); break;
        case FLOAT32: b = SchemaBuilder.float32(); break;
        case FLOAT64: b = SchemaBuilder.float64(); break;
        case BOOLEAN: b = SchemaBuilder.bool(); break;
        case STRING: b = SchemaBuilder.string(); break;
        case BYTES: b = SchemaBuilder.bytes(); break;
        case ARRAY: b = SchemaBuilder.array(kafkaSchema(s.getValueSchema())); break;
        case MAP: b = SchemaBuilder.map(kafkaSchema(s.getKeySchema()), kafkaSchema(s.getValueSchema())); break;
        case STRUCT: {
          b = SchemaBuilder.struct();
          if (s.getFields() != null) for (Field f : s.getFields()) b.field(f.getName(), kafkaSchema(f.getSchema()));
          break;
        }
        default: throw new ConnectException("OpenMessaging schema type " + s.getFieldType() + " has no Kafka Connect type");
      }
      if (name != null) b.name(name);
      if (s.getParameters() != null && !s.getParameters().isEmpty()) b.parameters(s.getParameters());
    }
    if (s.isOptional()) b.optional();
    if (s.getVersion() != null) b.version(s.getVersion());
    if (s.getDoc() != null) b.doc(s.getDoc());
    if (s.getDefaultValue() != null) b.defaultValue(toKafkaValue(b, s.getDefaultValue()));
    return b.build();
  }

  static io.openmessaging.connector.api.data.Schema omSchema(Schema s) {
    String name = s.name();
    io.openmessaging.connector.api.data.SchemaBuilder b;
    if (org.apache.kafka.connect.data.Decimal.LOGICAL_NAME.equals(name)) {
      String scale = s.parameters() == null ? null : s.parameters().get(org.apache.kafka.connect.data.Decimal.SCALE_FIELD);
      b = io.openmessaging.connector.api.data.logical.Decimal.builder(scale == null ? 0 : Integer.parseInt(scale));
    } else if (org.apache.kafka.connect.data.Date.LOGICAL_NAME.equals(name)) {
      b = io.openmessaging.connector.api.data.logical.Date.builder();
    } else if (org.apache.kafka.connect.data.Time.LOGICAL_NAME.equals(name)) {
      b = io.openmessaging.connector.api.data.logical.Time.builder();
    } else if (org.apache.kafka.connect.data.Timestamp.LOGICAL_NAME.equals(name)) {
      b = io.openmessaging.connector.api.data.logical.Timestamp.builder();
    } else {
      switch (s.type()) {
        case INT8: b = io.openmessaging.connector.api.data.SchemaBuilder.int8(); break;
        case INT16: b = io.openmessaging.connector.api.data.SchemaBuilder.int16(); break;
        case INT32: b = io.openmessaging.connector.api.data.SchemaBuilder.int32(); break;
        case INT64: b = io.openmessaging.connector.api.data.SchemaBuilder.int64(); break;
        case FLOAT32: b = io.openmessaging.connector.api.data.SchemaBuilder.float32(); break;
        case FLOAT64: b = io.openmessaging.connector.api.data.SchemaBuilder.float64(); break;
        case BOOLEAN: b = io.openmessaging.connector.api.data.SchemaBuilder.bool(); break;
        case STRING: b = io.openmessaging.connector.api.data.SchemaBuilder.string(); break;
        case BYTES: b = io.openmessaging.connector.api.data.SchemaBuilder.bytes(); break;
        case ARRAY: b = io.openmessaging.connector.api.data.SchemaBuilder.array(omSchema(s.valueSchema())); break;
        case MAP: b = io.openmessaging.connector.api.data.SchemaBuilder.map(omSchema(s.keySchema()), omSchema(s.valueSchema())); break;
        case STRUCT: {
          b = io.openmessaging.connector.api.data.SchemaBuilder.struct();
          for (org.apache.kafka.connect.data.Field f : s.fields()) b.field(f.name(), omSchema(f.schema()));
          break;
        }
        default: throw new ConnectException("Kafka Connect schema type " + s.type() + " has no OpenMessaging type");
      }
      if (name != null) b.name(name);
      if (s.parameters() != null && !s.parameters().isEmpty()) b.parameters(s.parameters());
    }
    if (s.isOptional()) b.optional();
    if (s.version() != null) b.version(s.version());
    if (s.doc() != null) b.doc(s.doc());
    return b.build();
  }

  // Values keep their Java types (numbers, String, byte[], BigDecimal, java.util.Date, List, Map);
  // structs are rebuilt field by field.
  static Object toKafkaValue(Schema schema, Object v) {
    if (v == null || schema == null) return v;
    switch (schema.type()) {
      case STRUCT: {
        io.openmessaging.connector.api.data.Struct in = (io.openmessaging.connector.api.data.Struct) v;
        Struct out = new Struct(schema);
        for (org.apache.kafka.connect.data.Field f : schema.fields()) out.put(f, toKafkaValue(f.schema(), in.get(f.name())));
        return out;
      }
      case ARRAY: {
        List<Object> out = new ArrayList<>();
        for (Object e : (List<?>) v) out.add(toKafkaValue(schema.valueSchema(), e));
        return out;
      }
      case MAP: {
        Map<Object, Object> out = new LinkedHashMap<>();
        ((Map<?, ?>) v).forEach((k, e) -> out.put(toKafkaValue(schema.keySchema(), k), toKafkaValue(schema.valueSchema(), e)));
        return out;
      }
      default:
        return v;
    }
  }

  static Object toOmValue(io.openmessaging.connector.api.data.Schema schema, Object v) {
    if (v == null || schema == null) return v;
    switch (schema.getFieldType()) {
      case STRUCT: {
        Struct in = (Struct) v;
        io.openmessaging.connector.api.data.Struct out = new io.openmessaging.connector.api.data.Struct(schema);
        for (Field f : schema.getFields()) out.put(f.getName(), toOmValue(f.getSchema(), in.get(f.getName())));
        return out;
      }
      case ARRAY: {
        List<Object> out = new ArrayList<>();
        for (Object e : (List<?>) v) out.add(toOmValue(schema.getValueSchema(), e));
        return out;
      }
      case MAP: {
        Map<Object, Object> out = new LinkedHashMap<>();
        ((Map<?, ?>) v).forEach((k, e) -> out.put(toOmValue(schema.getKeySchema(), k), toOmValue(schema.getValueSchema(), e)));
        return out;
      }
      default:
        return v;
    }
  }
}
