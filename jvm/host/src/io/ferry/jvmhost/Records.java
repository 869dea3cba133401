// Records across the channel (jvm/README.md, "Records"): Kafka Connect's SourceRecord and
// SinkRecord <-> the worker's records.
//
// A key or value is written as one of
//   0 null (no schema)    1 raw bytes, schemaless    2 typed: [i32 schema id][payload or null]
// A typed payload is the data in the JSON form Kafka's JsonConverter writes as the envelope's
// "payload", which is how the worker keeps typed data (ferry/schema.h); each schema crosses once
// per task and direction, as its JsonConverter JSON under an id, and later records name the id.
// Schemaless data from a source: byte[] and ByteBuffer as they are, a String as its UTF-8, other
// objects (maps, lists, numbers) as JSON. Schemaless data to a sink is handed over as the
// connector's converter would have read it (see Form).
//
// Source partitions and offsets: the worker keeps them as string maps, so each value goes as its
// text and, when any value is not a String, the map gets one more entry, TYPES, naming the types
// of the others ({"position":"l"}), by which they are read back as the same Java types.
//
// Threading: one instance per task, used by one request at a time.
package io.ferry.jvmhost;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;

final class Records {
  static final String TYPES = "ferry.types";
  static final ObjectMapper JSON = new ObjectMapper();

  // How schemaless bytes reach a sink: as the connector's key/value converter would read them.
  enum Form {
    BYTES,   // ByteArrayConverter: byte[] with an optional bytes schema
    STRING,  // StringConverter: a String with an optional string schema
    JSON;    // JsonConverter without schemas: the parsed JSON, schemaless

    static Form of(int code) {
      return code == 1 ? STRING : code == 2 ? JSON : BYTES;
    }
  }

  // Shared by every task (their caches are synchronized): made once, so their configs are logged once.
  private static final JsonConverter payloads = converter(false);
  private static final JsonConverter envelopes = converter(true);
  private static final SimpleHeaderConverter headers = new SimpleHeaderConverter();
  // Source side: the schemas already sent, by identity first (records of one table share one
  // Schema object), then by equality.
  private final IdentityHashMap<Schema, Integer> sentByIdentity = new IdentityHashMap<>();
  private final HashMap<Schema, Integer> sentByEquality = new HashMap<>();
  private final List<Object[]> newSchemas = new ArrayList<>();
  private int nextSchemaId = 1;
  // Sink side: the schemas the worker sent, as JSON text.
  private final HashMap<Integer, String> received = new HashMap<>();

  private static JsonConverter converter(boolean schemas) {
    JsonConverter c = new JsonConverter();
    c.configure(Map.of("schemas.enable", Boolean.toString(schemas), "converter.type", "value"));
    return c;
  }

  // ------------------------------------------------------------------------------------------
  // Source records -> the worker

  // Writes `records` (a poll's batch): the schemas new to the worker first, then the records.
  void writeSourceBatch(Wire.Out o, List<SourceRecord> records) {
    // The schemas new to the worker go first: their ids are taken before the records are written.
    newSchemas.clear();
    for (SourceRecord r : records) {
      if (r.keySchema() != null) schemaId(r.keySchema());
      if (r.valueSchema() != null) schemaId(r.valueSchema());
    }
    o.i32(newSchemas.size());
    for (Object[] s : newSchemas) o.i32((Integer) s[0]).str((String) s[1]);
    o.i32(records.size());
    for (SourceRecord r : records) {
      o.str(r.topic()).i32(r.kafkaPartition() == null ? -1 : r.kafkaPartition());
      o.i64(r.timestamp() == null ? -1 : r.timestamp());
      writeData(o, r.topic(), r.keySchema(), r.key());
      writeData(o, r.topic(), r.valueSchema(), r.value());
      o.i32(r.headers().size());
      for (Header h : r.headers()) o.str(h.key()).bytes(headers.fromConnectHeader(r.topic(), h.key(), h.schema(), h.value()));
      o.map(packMap(r.sourcePartition()));
      o.map(packMap(r.sourceOffset()));
    }
  }

  private void writeData(Wire.Out o, String topic, Schema schema, Object value) {
    if (schema == null) {
      if (value == null) {
        o.u8(0);
      } else if (value instanceof byte[]) {
        o.u8(1).bytes((byte[]) value);
      } else if (value instanceof ByteBuffer) {
        ByteBuffer b = ((ByteBuffer) value).duplicate();
        byte[] a = new byte[b.remaining()];
        b.get(a);
        o.u8(1).bytes(a);
      } else if (value instanceof String) {
        o.u8(1).bytes(((String) value).getBytes(StandardCharsets.UTF_8));
      } else {
        o.u8(1).bytes(payloads.fromConnectData(topic, null, value));
      }
      return;
    }
    o.u8(2).i32(schemaId(schema));
    o.bytes(value == null && schema.defaultValue() == null ? null : payloads.fromConnectData(topic, schema, value));
  }

  private int schemaId(Schema s) {
    Integer id = sentByIdentity.get(s);
    if (id != null) return id;
    id = sentByEquality.get(s);
    if (id == null) {
      id = nextSchemaId++;
      sentByEquality.put(s, id);
      newSchemas.add(new Object[] {id, payloads.asJsonSchema(s).toString()});
    }
    if (sentByIdentity.size() < 10000) sentByIdentity.put(s, id);
    return id;
  }

  // ------------------------------------------------------------------------------------------
  // The worker's records -> sink records

  List<SinkRecord> readSinkBatch(DataInputStream in, Form keyForm, Form valueForm) throws IOException {
    int schemas = Wire.readCount(in);
    for (int i = 0; i < schemas; i++) received.put(in.readInt(), Wire.readString(in));
    int n = Wire.readCount(in);
    List<SinkRecord> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String topic = Wire.readString(in);
      int partition = in.readInt();
      long offset = in.readLong();
      long timestamp = in.readLong();
      SchemaAndValue key = readData(in, topic, keyForm);
      SchemaAndValue value = readData(in, topic, valueForm);
      ConnectHeaders hs = new ConnectHeaders();
      int nh = Wire.readCount(in);
      for (int j = 0; j < nh; j++) {
        String k = Wire.readString(in);
        byte[] v = Wire.readBytes(in);
        SchemaAndValue sv = headers.toConnectHeader(topic, k, v);
        hs.add(k, sv.value(), sv.schema());
      }
      out.add(new SinkRecord(topic, partition, key.schema(), key.value(), value.schema(), value.value(), offset,
          timestamp < 0 ? null : timestamp, timestamp < 0 ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME, hs));
    }
    return out;
  }

  private SchemaAndValue readData(DataInputStream in, String topic, Form form) throws IOException {
    int kind = in.readUnsignedByte();
    switch (kind) {
      case 0:
        return SchemaAndValue.NULL;
      case 1: {
        byte[] b = Wire.readBytes(in);
        switch (form) {
          case STRING:
            return new SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, b == null ? null : new String(b, StandardCharsets.UTF_8));
          case JSON:
            return payloads.toConnectData(topic, b);
          default:
            return new SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, b);
        }
      }
      case 2: {
        int id = in.readInt();
        byte[] payload = Wire.readBytes(in);
        String schema = received.get(id);
        if (schema == null) throw new IOException("record with unknown schema id " + id);
        String p = payload == null ? "null" : new String(payload, StandardCharsets.UTF_8);
        return envelopes.toConnectData(topic, ("{\"schema\":" + schema + ",\"payload\":" + p + "}").getBytes(StandardCharsets.UTF_8));
      }
      default:
        throw new IOException("bad data kind " + kind);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Source partitions and offsets <-> string maps

  static Map<String, String> packMap(Map<String, ?> m) {
    if (m == null) return null;
    Map<String, String> out = new TreeMap<>();
    ObjectNode types = null;
    for (Map.Entry<String, ?> e : m.entrySet()) {
      Object v = e.getValue();
      String type;
      String text;
      if (v instanceof String) {
        out.put(e.getKey(), (String) v);
        continue;
      } else if (v == null) {
        type = "n";
        text = "";
      } else if (v instanceof Long) {
        type = "l";
        text = v.toString();
      } else if (v instanceof Integer) {
        type = "i";
        text = v.toString();
      } else if (v instanceof Short) {
        type = "h";
        text = v.toString();
      } else if (v instanceof Byte) {
        type = "b";
        text = v.toString();
      } else if (v instanceof Double) {
        type = "d";
        text = v.toString();
      } else if (v instanceof Float) {
        type = "f";
        text = v.toString();
      } else if (v instanceof Boolean) {
        type = "z";
        text = v.toString();
      } else if (v instanceof byte[]) {
        type = "y";
        text = Base64.getEncoder().encodeToString((byte[]) v);
      } else {
        type = "j";
        try {
          text = JSON.writeValueAsString(v);
        } catch (IOException x) {
          throw new IllegalArgumentException("source partition/offset value of " + e.getKey() + " is not JSON: " + x);
        }
      }
      if (types == null) types = JSON.createObjectNode();
      types.put(e.getKey(), type);
      out.put(e.getKey(), text);
    }
    if (types != null) out.put(TYPES, types.toString());
    return out;
  }

  static Map<String, Object> unpackMap(Map<String, String> m) throws IOException {
    if (m == null) return null;
    Map<String, Object> out = new LinkedHashMap<>();
    JsonNode types = m.containsKey(TYPES) ? JSON.readTree(m.get(TYPES)) : null;
    for (Map.Entry<String, String> e : m.entrySet()) {
      if (e.getKey().equals(TYPES)) continue;
      String t = types == null || !types.has(e.getKey()) ? "s" : types.get(e.getKey()).asText();
      String v = e.getValue();
      Object o;
      switch (t) {
        case "n": o = null; break;
        case "l": o = Long.valueOf(v); break;
        case "i": o = Integer.valueOf(v); break;
        case "h": o = Short.valueOf(v); break;
        case "b": o = Byte.valueOf(v); break;
        case "d": o = Double.valueOf(v); break;
        case "f": o = Float.valueOf(v); break;
        case "z": o = Boolean.valueOf(v); break;
        case "y": o = Base64.getDecoder().decode(v); break;
        case "j": o = JSON.readValue(v, Object.class); break;
        default: o = v;
      }
      out.put(e.getKey(), o);
    }
    return out;
  }
}
