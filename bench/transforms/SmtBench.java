// The Kafka Connect peer of transform_bench (bench/run --scenarios transforms): the same records
// through Apache Kafka Connect's own JsonConverter and SMTs, in one thread.
//
// Per record, as a Connect task does for a bytes-in/bytes-out JSON pipeline: JsonConverter
// (schemas.enable=false) toConnectData of the value bytes -> a SinkRecord with one header
// (mqtt.topic) -> the SMTs in order (schemaless Map values) -> JsonConverter fromConnectData of the
// key and the value. Input: the records file written by `transform_bench --write-records`, one
// record a line: "<mqtt topic>\t<JSON value>". Each case warms up (JIT) for --warmup-s seconds
// over all records, then runs --repeats timed passes; the median pass is printed as one JSON
// object (the fields of transform_bench, plus "peer": "kafka-connect-smt").
//
// Cases: chain5 (ReplaceField$Value renames hum:humidity, InsertField$Value static region,
// MaskField$Value fw, Cast$Value seq:string, ValueToKey device), json-schema-write and
// json-schema-read (JsonConverter with schemas.enable=true on the records typed by an 11-field
// struct schema: fromConnectData of a Struct / toConnectData of an envelope), converters-only (the same
// round trip with no SMT), rule-projection (ReplaceField$Value include=temp renames=temp:t,
// InsertField$Value topic.field=topic: the SELECT part of the rule only; Connect's SMTs have no
// condition on a value field, so nothing is filtered out).
//
// Compiled and run by bench/run against the Kafka jars of scripts/services/kafka; nothing of the
// build lands in the repository.

import java.io.BufferedReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.transforms.Cast;
import org.apache.kafka.connect.transforms.InsertField;
import org.apache.kafka.connect.transforms.MaskField;
import org.apache.kafka.connect.transforms.ReplaceField;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.ValueToKey;

public final class SmtBench {
  private static String[] topics;
  private static byte[][] values;
  private static long sink;  // keeps the JIT from dropping the work

  private static <T extends Transformation<SinkRecord>> T smt(T t, String... kv) {
    Map<String, String> cfg = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) cfg.put(kv[i], kv[i + 1]);
    t.configure(cfg);
    return t;
  }

  private static List<Transformation<SinkRecord>> chain(String name) {
    List<Transformation<SinkRecord>> c = new ArrayList<>();
    switch (name) {
      case "chain5":
        c.add(smt(new ReplaceField.Value<>(), "renames", "hum:humidity"));
        c.add(smt(new InsertField.Value<>(), "static.field", "region", "static.value", "eu-west-1"));
        c.add(smt(new MaskField.Value<>(), "fields", "fw"));
        c.add(smt(new Cast.Value<>(), "spec", "seq:string"));
        c.add(smt(new ValueToKey<>(), "fields", "device"));
        break;
      case "rule-projection":
        c.add(smt(new ReplaceField.Value<>(), "include", "temp", "renames", "temp:t"));
        c.add(smt(new InsertField.Value<>(), "topic.field", "topic"));
        break;
      case "converters-only":
      case "json-schema-write":
      case "json-schema-read":
        break;
      default:
        throw new IllegalArgumentException("unknown case " + name);
    }
    return c;
  }

  private static JsonConverter converter(boolean isKey) {
    JsonConverter c = new JsonConverter();
    Map<String, String> cfg = new HashMap<>();
    cfg.put("schemas.enable", "false");
    c.configure(cfg, isKey);
    return c;
  }

  // json-schema-write / json-schema-read: Kafka Connect's JsonConverter (schemas.enable=true) on
  // the records typed by the 11-field struct schema transform_bench uses, each record's Struct
  // (write) or envelope (read) made up front.
  private static final Schema READING = SchemaBuilder.struct().name("sensors.Reading")
      .field("device", Schema.STRING_SCHEMA).field("site", Schema.STRING_SCHEMA)
      .field("temp", Schema.FLOAT64_SCHEMA).field("hum", Schema.FLOAT64_SCHEMA)
      .field("ts", Schema.INT64_SCHEMA).field("status", Schema.STRING_SCHEMA)
      .field("fw", Schema.OPTIONAL_STRING_SCHEMA).field("seq", Schema.INT64_SCHEMA)
      .field("battery", Schema.INT32_SCHEMA).field("rssi", Schema.INT32_SCHEMA)
      .field("note", Schema.OPTIONAL_STRING_SCHEMA).build();
  private static Struct[] structs;
  private static byte[][] envelopes;
  private static JsonConverter schemaConv;

  private static void prepareSchemaCases(JsonConverter plain) {
    schemaConv = new JsonConverter();
    Map<String, String> cfg = new HashMap<>();
    cfg.put("schemas.enable", "true");
    schemaConv.configure(cfg, false);
    structs = new Struct[values.length];
    envelopes = new byte[values.length][];
    for (int i = 0; i < values.length; i++) {
      Map<?, ?> m = (Map<?, ?>) plain.toConnectData(topics[i], values[i]).value();
      Struct s = new Struct(READING)
          .put("device", m.get("device")).put("site", m.get("site"))
          .put("temp", ((Number) m.get("temp")).doubleValue()).put("hum", ((Number) m.get("hum")).doubleValue())
          .put("ts", ((Number) m.get("ts")).longValue()).put("status", m.get("status")).put("fw", m.get("fw"))
          .put("seq", ((Number) m.get("seq")).longValue()).put("battery", ((Number) m.get("battery")).intValue())
          .put("rssi", ((Number) m.get("rssi")).intValue()).put("note", m.get("note"));
      structs[i] = s;
      envelopes[i] = schemaConv.fromConnectData(topics[i], READING, s);
    }
  }

  private static long schemaPass(boolean write) {
    for (int i = 0; i < values.length; i++) {
      if (write) {
        sink += schemaConv.fromConnectData(topics[i], READING, structs[i]).length;
      } else {
        SchemaAndValue v = schemaConv.toConnectData(topics[i], envelopes[i]);
        sink += ((Struct) v.value()).schema().fields().size();
      }
    }
    return values.length;
  }

  // What a case makes of the first record, on stderr (to compare with transform_bench's sample).
  private static void sample(String name, List<Transformation<SinkRecord>> smts, JsonConverter keyConv,
                             JsonConverter valueConv) {
    String topic = topics[0];
    SchemaAndValue v = valueConv.toConnectData(topic, values[0]);
    SinkRecord r = new SinkRecord(topic, 0, null, null, v.schema(), v.value(), 0);
    for (Transformation<SinkRecord> t : smts) r = t.apply(r);
    byte[] k = r.key() == null ? null : keyConv.fromConnectData(r.topic(), r.keySchema(), r.key());
    byte[] out = valueConv.fromConnectData(r.topic(), r.valueSchema(), r.value());
    System.err.println("SmtBench: " + name + ": key=" + (k == null ? "" : new String(k, StandardCharsets.UTF_8))
        + " value=" + new String(out, StandardCharsets.UTF_8));
  }

  // One pass over every record: returns how many were kept.
  private static long pass(List<Transformation<SinkRecord>> smts, JsonConverter keyConv,
                           JsonConverter valueConv) {
    long kept = 0;
    for (int i = 0; i < values.length; i++) {
      String topic = topics[i];
      SchemaAndValue v = valueConv.toConnectData(topic, values[i]);
      ConnectHeaders headers = new ConnectHeaders();
      headers.addString("mqtt.topic", topic);
      SinkRecord r = new SinkRecord(topic, 0, null, null, v.schema(), v.value(), i,
                                    1764800000000L + i, TimestampType.CREATE_TIME, headers);
      for (Transformation<SinkRecord> t : smts) {
        r = t.apply(r);
        if (r == null) break;
      }
      if (r == null) continue;
      byte[] k = r.key() == null ? null : keyConv.fromConnectData(r.topic(), r.keySchema(), r.key());
      byte[] out = valueConv.fromConnectData(r.topic(), r.valueSchema(), r.value());
      sink += out.length + (k == null ? 0 : k.length);
      kept++;
    }
    return kept;
  }

  private static double median(double[] xs) {
    double[] s = xs.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  public static void main(String[] args) throws Exception {
    String file = null;
    int repeats = 5;
    double warmupS = 4;
    String cases = "chain5,converters-only,rule-projection";
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--records-file": file = args[++i]; break;
        case "--repeats": repeats = Integer.parseInt(args[++i]); break;
        case "--warmup-s": warmupS = Double.parseDouble(args[++i]); break;
        case "--cases": cases = args[++i]; break;
        default: throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    List<String> t = new ArrayList<>();
    List<byte[]> v = new ArrayList<>();
    long bytes = 0;
    try (BufferedReader in = Files.newBufferedReader(Paths.get(file), StandardCharsets.UTF_8)) {
      for (String line; (line = in.readLine()) != null; ) {
        int tab = line.indexOf('\t');
        t.add(line.substring(0, tab));
        byte[] b = line.substring(tab + 1).getBytes(StandardCharsets.UTF_8);
        v.add(b);
        bytes += b.length;
      }
    }
    topics = t.toArray(new String[0]);
    values = v.toArray(new byte[0][]);
    int n = values.length;
    long bytesPerRecord = Math.round((double) bytes / n);

    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    JsonConverter keyConv = converter(true);
    JsonConverter valueConv = converter(false);
    for (String name : cases.split(",")) {
      List<Transformation<SinkRecord>> smts = chain(name);
      final boolean schemaCase = name.startsWith("json-schema-");
      if (schemaCase && structs == null) prepareSchemaCases(valueConv);
      final boolean write = name.equals("json-schema-write");
      java.util.function.LongSupplier onePass =
          schemaCase ? () -> schemaPass(write) : () -> pass(smts, keyConv, valueConv);
      if (!schemaCase) sample(name, smts, keyConv, valueConv);
      long w0 = System.nanoTime();
      int warmPasses = 0;
      while (System.nanoTime() - w0 < warmupS * 1e9 || warmPasses < 3) {
        onePass.getAsLong();
        warmPasses++;
      }
      double[] wall = new double[repeats];
      double[] cpu = new double[repeats];
      double[] proc = new double[repeats];
      long kept = 0;
      for (int r = 0; r < repeats; r++) {
        long c0 = threads.getCurrentThreadCpuTime();
        long p0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        kept = onePass.getAsLong();
        wall[r] = (System.nanoTime() - t0) / 1e9;
        cpu[r] = (threads.getCurrentThreadCpuTime() - c0) / 1e9;
        proc[r] = (os.getProcessCpuTime() - p0) / 1e9;
      }
      double mw = median(wall), mc = median(cpu), mp = median(proc);
      StringBuilder runs = new StringBuilder();
      for (double w : wall) runs.append(runs.length() == 0 ? "" : ", ").append(Math.round(n / w));
      System.out.printf(
          "{\"scenario\": \"transforms\", \"case\": \"%s\", \"peer\": \"kafka-connect-smt\", "
              + "\"version\": \"%s\", \"records\": %d, \"bytes_per_record\": %d, \"repeats\": %d, "
              + "\"warmup_passes\": %d, \"records_per_s\": %d, \"records_per_cpu_s\": %d, "
              + "\"records_per_process_cpu_s\": %d, \"ns_per_record\": %.1f, "
              + "\"cpu_ns_per_record\": %.1f, \"kept\": %d, \"runs_records_per_s\": [%s]}%n",
          name, AppInfoParser.getVersion(), n, bytesPerRecord, repeats, warmPasses,
          Math.round(n / mw), Math.round(n / mc), Math.round(n / mp), mw / n * 1e9, mc / n * 1e9,
          kept, runs);
      System.out.flush();
    }
    System.err.println("SmtBench: checksum " + sink);
  }
}
