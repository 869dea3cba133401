// The Kafka Connect side of tests/interop/test_json_schema_compat.py: Kafka Connect's own
// JsonConverter (schemas.enable=true, the default) on a fixed list of typed records, the same
// list json_schema_tool builds with ferry's SDK.
//
//   write      prints fromConnectData of each record, one envelope a line
//   roundtrip  reads envelopes a line from stdin; prints fromConnectData(toConnectData(line)),
//              so what Kafka Connect read from bytes another writer made is written again
//
// Run as a single-file program against the Kafka jars: java -cp '<kafka>/libs/*' JsonSchemaCompat.java write
// The value converter is used for every record (keys convert the same way).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.json.JsonConverter;

public class JsonSchemaCompat {
    static final String TOPIC = "compat";

    static List<SchemaAndValue> records() {
        List<SchemaAndValue> out = new ArrayList<>();
        Schema nested = SchemaBuilder.struct().name("inventory.Dims").field("w", Schema.INT32_SCHEMA)
                .field("h", Schema.OPTIONAL_INT32_SCHEMA).optional().build();
        Schema item = SchemaBuilder.struct().name("inventory.Item").version(2).doc("one row")
                .field("i8", Schema.INT8_SCHEMA)
                .field("i16", Schema.OPTIONAL_INT16_SCHEMA)
                .field("i32", SchemaBuilder.int32().defaultValue(42).build())
                .field("i64", Schema.INT64_SCHEMA)
                .field("f32", Schema.FLOAT32_SCHEMA)
                .field("f64", Schema.OPTIONAL_FLOAT64_SCHEMA)
                .field("ok", Schema.BOOLEAN_SCHEMA)
                .field("name", SchemaBuilder.string().doc("say \"hi\"\n").parameter("len", "10").build())
                .field("raw", Schema.OPTIONAL_BYTES_SCHEMA)
                .field("price", Decimal.builder(2).build())
                .field("day", Date.SCHEMA)
                .field("at", Time.SCHEMA)
                .field("ts", Timestamp.builder().optional().build())
                .field("id", SchemaBuilder.string().name("ferry.data.Uuid").version(1).build())
                .field("doc", SchemaBuilder.string().name("ferry.data.Json").version(1).optional().build())
                .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
                .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
                .field("byId", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).optional().build())
                .field("dims", nested)
                .build();
        Map<String, Integer> attrs = new LinkedHashMap<>();
        attrs.put("b", 2);
        attrs.put("a", 1);
        Map<Integer, String> byId = new LinkedHashMap<>();
        byId.put(7, "seven");
        byId.put(-1, "minus one");
        Struct row = new Struct(item)
                .put("i8", (byte) -128)
                .put("i16", null)
                .put("i32", 7)
                .put("i64", Long.MAX_VALUE)
                .put("f32", 1.5f)
                .put("f64", 0.1)
                .put("ok", true)
                .put("name", "é \u0001 tab\t \"q\" \\ 😀")
                .put("raw", new byte[] {0, 1, (byte) 0xff})
                .put("price", new BigDecimal("12.34"))
                .put("day", new java.util.Date(19000L * 86400000L))
                .put("at", new java.util.Date(3723000L))
                .put("ts", new java.util.Date(1700000000123L))
                .put("id", "0f8fad5b-d9cb-469f-a165-70867728950e")
                .put("doc", "{\"k\":[1,2]}")
                .put("tags", Arrays.asList("x", "y"))
                .put("attrs", attrs)
                .put("byId", byId)
                .put("dims", new Struct(nested).put("w", 3).put("h", null));
        out.add(new SchemaAndValue(item, row));
        // A null where the schema has a default: written as the default.
        out.add(new SchemaAndValue(item, new Struct(item)
                .put("i8", (byte) 1).put("i64", 0L).put("f32", -0.25f).put("ok", false).put("name", "")
                .put("price", new BigDecimal("-1.50")).put("day", new java.util.Date(0L))
                .put("at", new java.util.Date(0L)).put("id", "00000000-0000-0000-0000-000000000000")
                .put("tags", new ArrayList<String>()).put("attrs", new LinkedHashMap<String, Integer>())));
        out.add(new SchemaAndValue(SchemaBuilder.int64().name("counter").version(5).build(), 123456789012L));
        out.add(new SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, null));
        out.add(new SchemaAndValue(SchemaBuilder.int32().defaultValue(5).build(), null));
        out.add(new SchemaAndValue(Schema.BYTES_SCHEMA, new byte[] {104, 105}));
        out.add(new SchemaAndValue(SchemaBuilder.array(Decimal.builder(0).optional().build()).build(),
                Arrays.asList(new BigDecimal("1"), null, new BigDecimal("-129"))));
        out.add(new SchemaAndValue(SchemaBuilder.string().parameter("a", "1").parameter("b", "").build(), "x"));
        return out;
    }

    // The converter's bytes as they are (UTF-8 JSON), whatever the platform's default charset.
    static void line(byte[] bytes) {
        System.out.write(bytes, 0, bytes.length);
        System.out.write('\n');
    }

    public static void main(String[] args) throws Exception {
        JsonConverter c = new JsonConverter();
        c.configure(Map.of("schemas.enable", "true"), false);
        if (args.length == 1 && args[0].equals("write")) {
            for (SchemaAndValue r : records()) line(c.fromConnectData(TOPIC, r.schema(), r.value()));
        } else if (args.length == 1 && args[0].equals("roundtrip")) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                SchemaAndValue r = c.toConnectData(TOPIC, line.getBytes(StandardCharsets.UTF_8));
                line(c.fromConnectData(TOPIC, r.schema(), r.value()));
            }
        } else {
            System.err.println("usage: JsonSchemaCompat write|roundtrip");
            System.exit(2);
        }
        System.out.flush();
    }
}
