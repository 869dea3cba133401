// transform_bench: records/s per core through ferry's transform chain (issue 7's proof).
//
// Builds runtime::TransformChain from a connector-style StringMap through a PluginRegistry with
// the built-ins, as a task does, and times chain.apply() over N distinct ~200-byte JSON sensor
// records generated up front. One thread; wall time (steady_clock) and this thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID); each scenario runs --repeats times over all records after one
// unreported warm-up pass, the median pass is reported. Prints one JSON object per scenario.
//
// Scenarios (--scenarios, comma-separated):
//   baseline      an empty chain: what copying the record, the empty apply and freeing cost
//   chain5        ReplaceField$Value (rename) -> InsertField$Value (static) -> MaskField$Value ->
//                 Cast$Value (a field to string) -> ValueToKey (the Kafka Connect SMTs the Java
//                 peer bench/transforms/SmtBench.java runs)
//   rule          the Rule transform: SELECT payload.temp AS t, topic FROM "sensors/+/data"
//                 WHERE payload.temp > 30
//   chain5+rule   the five transforms above, then the rule (temp is still there)
//   json-converter  not a chain: the JsonConverter (schemas.enable=false) fromRecord that a source
//                 task runs on the value after its chain (validation only)
//   json-schema-write, json-schema-read  (not run by default) JsonConverter with the record typed
//                 by an 11-field struct schema: the envelope written / read back
//
// Each timed record is a fresh copy of the generated one (a Record copy shares its buffers), so
// every pass transforms the same input; the copy is in `baseline`.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "ferry/record.h"
#include "ferry/schema.h"
#include "runtime/plugins.h"
#include "runtime/transform_chain.h"

namespace {

using ferry::Bytes;
using ferry::Record;
using ferry::StringMap;

constexpr char kRuleSql[] =
    R"(SELECT payload.temp AS t, topic FROM "sensors/+/data" WHERE payload.temp > 30)";

double cpuS(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// N distinct sensor readings of ~targetBytes bytes of compact JSON; about half have temp > 30
// (temp = 20.0 .. 40.9 by a fixed pseudo-random sequence, so runs are repeatable).
std::vector<Record> makeRecords(std::size_t n, std::size_t targetBytes) {
  std::vector<Record> out;
  out.reserve(n);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (std::size_t i = 0; i < n; ++i) {
    char device[16];
    std::snprintf(device, sizeof device, "dev-%05zu", i % 100000);
    const double temp = 20.0 + static_cast<double>(next() % 210) / 10.0;
    const double hum = 30.0 + static_cast<double>(next() % 500) / 10.0;
    char buf[512];
    const long long ts = 1764800000000LL + static_cast<long long>(i) * 37;
    const int battery = static_cast<int>(next() % 100);
    const int rssi = -40 - static_cast<int>(next() % 60);
    int len = std::snprintf(
        buf, sizeof buf,
        R"({"device":"%s","site":"plant-%d","temp":%.1f,"hum":%.1f,"ts":%lld,"status":"ok",)"
        R"("fw":"1.4.2","seq":%zu,"battery":%d,"rssi":%d,"note":")",
        device, static_cast<int>(i % 7), temp, hum, ts, i, battery, rssi);
    std::string v(buf, static_cast<std::size_t>(len));
    while (v.size() + 2 < targetBytes) v.push_back(static_cast<char>('a' + (v.size() + i) % 26));
    v += "\"}";
    Record r;
    r.topic = "sensors";
    r.value = Bytes(std::move(v));
    r.headers.add("mqtt.topic", std::string("sensors/") + device + "/data");
    r.timestampMs = 1764800000000LL + static_cast<std::int64_t>(i);
    out.push_back(std::move(r));
  }
  return out;
}

StringMap chain5Config(const std::string& suffixAliases = "") {
  StringMap c = {
      {"transforms.rename.type", "ReplaceField$Value"},
      {"transforms.rename.renames", "hum:humidity"},
      {"transforms.insert.type", "InsertField$Value"},
      {"transforms.insert.static.field", "region"},
      {"transforms.insert.static.value", "eu-west-1"},
      {"transforms.mask.type", "MaskField$Value"},
      {"transforms.mask.fields", "fw"},
      {"transforms.cast.type", "Cast$Value"},
      {"transforms.cast.spec", "seq:string"},
      {"transforms.key.type", "ValueToKey"},
      {"transforms.key.fields", "device"},
  };
  c["transforms"] = "rename,insert,mask,cast,key" + suffixAliases;
  return c;
}

StringMap ruleConfig() {
  return {{"transforms", "r"}, {"transforms.r.type", "Rule"}, {"transforms.r.sql", kRuleSql}};
}

struct Pass {
  double wallS = 0;
  double cpuS = 0;
  double processCpuS = 0;
  std::size_t kept = 0;
  std::size_t failed = 0;
};

template <typename Fn>
Pass timePass(const std::vector<Record>& records, Fn&& fn) {
  Pass p;
  const double c0 = cpuS(CLOCK_THREAD_CPUTIME_ID);
  const double p0 = cpuS(CLOCK_PROCESS_CPUTIME_ID);
  const auto t0 = std::chrono::steady_clock::now();
  for (const Record& in : records) {
    Record r = in;  // shares the buffers; the transforms replace them
    switch (fn(r)) {
      case 1: ++p.kept; break;
      case -1: ++p.failed; break;
      default: break;
    }
  }
  p.wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.cpuS = cpuS(CLOCK_THREAD_CPUTIME_ID) - c0;
  p.processCpuS = cpuS(CLOCK_PROCESS_CPUTIME_ID) - p0;
  return p;
}

template <typename Fn>
void runScenario(const std::string& name, const std::vector<Record>& records,
                 std::size_t recordBytes, int repeats, const std::string& extra, Fn&& fn) {
  timePass(records, fn);  // warm-up: caches, allocator pools
  std::vector<Pass> passes;
  for (int i = 0; i < repeats; ++i) passes.push_back(timePass(records, fn));
  std::vector<Pass> byWall = passes;
  std::sort(byWall.begin(), byWall.end(),
            [](const Pass& a, const Pass& b) { return a.wallS < b.wallS; });
  const Pass& med = byWall[byWall.size() / 2];
  auto median = [&passes](double Pass::*field) {
    std::vector<double> xs;
    for (const auto& p : passes) xs.push_back(p.*field);
    std::sort(xs.begin(), xs.end());
    return xs[xs.size() / 2];
  };
  const double cpu = median(&Pass::cpuS);
  const double processCpu = median(&Pass::processCpuS);
  const double n = static_cast<double>(records.size());
  std::string runs;
  for (const auto& p : passes) {
    if (!runs.empty()) runs += ", ";
    runs += std::to_string(static_cast<long long>(n / p.wallS + 0.5));
  }
  std::printf(
      "{\"scenario\": \"transforms\", \"case\": \"%s\", \"system\": \"ferry\", "
      "\"records\": %zu, \"bytes_per_record\": %zu, \"repeats\": %d, \"records_per_s\": %.0f, "
      "\"records_per_cpu_s\": %.0f, \"records_per_process_cpu_s\": %.0f, "
      "\"ns_per_record\": %.1f, \"cpu_ns_per_record\": %.1f, \"kept\": %zu, \"failed\": %zu, "
      "\"runs_records_per_s\": [%s]%s}\n",
      name.c_str(), records.size(), recordBytes, repeats, n / med.wallS, n / cpu, n / processCpu,
      med.wallS / n * 1e9, cpu / n * 1e9, med.kept, med.failed, runs.c_str(), extra.c_str());
  std::fflush(stdout);
}

// JSON parses and writes per record of a chain, when TransformChain counts them (the parse-once
// cache of transforms/json_cache.h); empty otherwise.
template <typename Chain>
std::string jsonCounts(const Chain& chain, std::uint64_t parses0, std::uint64_t writes0,
                       double records) {
  if constexpr (requires(const Chain& c) { c.jsonParses(); c.jsonWrites(); }) {
    char buf[128];
    std::snprintf(buf, sizeof buf,
                  ", \"json_parses_per_record\": %.2f, \"json_writes_per_record\": %.2f",
                  static_cast<double>(chain.jsonParses() - parses0) / records,
                  static_cast<double>(chain.jsonWrites() - writes0) / records);
    return buf;
  } else {
    (void)chain, (void)parses0, (void)writes0, (void)records;
    return "";
  }
}

template <typename Chain>
std::pair<std::uint64_t, std::uint64_t> jsonCounters(const Chain& chain) {
  if constexpr (requires(const Chain& c) { c.jsonParses(); c.jsonWrites(); }) {
    return {chain.jsonParses(), chain.jsonWrites()};
  } else {
    (void)chain;
    return {0, 0};
  }
}

int fail(const std::string& what) {
  std::fprintf(stderr, "transform_bench: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ferry transform chain benchmark (bench/run --scenarios transforms)"};
  std::size_t n = 100000;
  std::size_t recordBytes = 200;
  int repeats = 5;
  std::string scenarios = "baseline,chain5,rule,chain5+rule,json-converter";
  app.add_option("--records", n, "distinct records per pass")->check(CLI::PositiveNumber);
  app.add_option("--record-bytes", recordBytes, "JSON value size in bytes (about)")
      ->check(CLI::Range(160, 4096));
  app.add_option("--repeats", repeats, "timed passes per scenario (median reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--scenarios", scenarios,
                 "comma-separated: baseline,chain5,rule,chain5+rule,json-converter");
  std::string writeRecords;
  app.add_option("--write-records", writeRecords,
                 "also write the records to this file, one a line: <mqtt topic>\\t<JSON value> "
                 "(the Java peer's input)");
  CLI11_PARSE(app, argc, argv);

  ferry::runtime::PluginRegistry registry;
  if (auto s = ferry::runtime::registerBuiltins(registry); !s.isOk())
    return fail("built-ins: " + s.toString());

  const std::vector<Record> records = makeRecords(n, recordBytes);
  std::size_t total = 0;
  for (const auto& r : records) total += r.value.size();
  const std::size_t avgBytes = (total + n / 2) / n;
  if (!writeRecords.empty()) {
    std::FILE* f = std::fopen(writeRecords.c_str(), "w");
    if (f == nullptr) return fail("cannot write " + writeRecords);
    for (const auto& r : records) {
      const auto* h = r.headers.last("mqtt.topic");
      std::fprintf(f, "%.*s\t%.*s\n", static_cast<int>(h->value.size()), h->value.data(),
                   static_cast<int>(r.value.size()), r.value.data());
    }
    if (std::fclose(f) != 0) return fail("cannot write " + writeRecords);
  }

  // What each chain makes of the first record it keeps, on stderr.
  auto sample = [&](ferry::runtime::TransformChain& chain, const std::string& name) -> bool {
    for (const auto& in : records) {
      Record r = in;
      auto kept = chain.apply(r);
      if (!kept.isOk()) {
        fail(name + ": " + kept.status().toString());
        return false;
      }
      if (*kept) {
        std::fprintf(stderr, "transform_bench: %s: key=%s value=%s\n", name.c_str(),
                     r.key.str().c_str(), r.value.str().c_str());
        return true;
      }
    }
    return true;
  };

  std::string rest = scenarios;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string s = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    if (s.empty()) continue;
    if (s == "json-schema-write" || s == "json-schema-read") {
      // The cost of carrying a schema in Kafka Connect's envelope (JsonConverter, schemas.enable):
      // the sensor record typed by an 11-field struct schema, written (payload checked against the
      // schema, envelope built) or read back (envelope parsed, schema found in the cache, payload
      // checked and re-serialised).
      auto conv = registry.createConverter("JsonConverter");
      if (!conv.isOk()) return fail("JsonConverter: " + conv.status().toString());
      if (auto st = (*conv)->configure({}, false); !st.isOk()) return fail("JsonConverter: " + st.toString());
      auto& c = **conv;
      using ferry::SchemaBuilder;
      auto f = [](const SchemaBuilder& b) { return b.build().value(); };
      auto schema = f(SchemaBuilder::structure()
                          .name("sensors.Reading")
                          .field("device", f(SchemaBuilder::string()))
                          .field("site", f(SchemaBuilder::string()))
                          .field("temp", f(SchemaBuilder::float64()))
                          .field("hum", f(SchemaBuilder::float64()))
                          .field("ts", f(SchemaBuilder::int64()))
                          .field("status", f(SchemaBuilder::string()))
                          .field("fw", f(SchemaBuilder::string().optional()))
                          .field("seq", f(SchemaBuilder::int64()))
                          .field("battery", f(SchemaBuilder::int32()))
                          .field("rssi", f(SchemaBuilder::int32()))
                          .field("note", f(SchemaBuilder::string().optional())));
      std::vector<Record> written;
      std::size_t envelopeBytes = 0;
      for (const auto& in : records) {
        auto out = c.fromRecordWithSchema(in.topic, schema, in.value);
        if (!out.isOk()) return fail("json-schema-write: " + out.status().toString());
        Record r = in;
        r.value = *out;
        envelopeBytes += out->size();
        written.push_back(std::move(r));
      }
      char extra[96];
      std::snprintf(extra, sizeof extra, ", \"envelope_bytes_per_record\": %zu", (envelopeBytes + n / 2) / n);
      if (s == "json-schema-write") {
        runScenario(s, records, avgBytes, repeats, extra, [&](Record& r) -> int {
          auto out = c.fromRecordWithSchema(r.topic, schema, r.value);
          if (!out.isOk()) return -1;
          r.value = std::move(*out);
          return 1;
        });
      } else {
        runScenario(s, written, avgBytes, repeats, extra, [&](Record& r) -> int {
          auto out = c.toRecordWithSchema(r.topic, r.value);
          if (!out.isOk()) return -1;
          r.value = std::move(out->data);
          r.valueSchema = std::move(out->schema);
          return 1;
        });
      }
      continue;
    }
    if (s == "json-converter") {
      auto conv = registry.createConverter("JsonConverter");
      if (!conv.isOk()) return fail("JsonConverter: " + conv.status().toString());
      if (auto st = (*conv)->configure({{"schemas.enable", "false"}}, false); !st.isOk())
        return fail("JsonConverter: " + st.toString());
      auto& c = **conv;
      runScenario(s, records, avgBytes, repeats, "", [&c](Record& r) -> int {
        auto out = c.fromRecord(r.topic, r.value);
        if (!out.isOk()) return -1;
        r.value = std::move(*out);
        return 1;
      });
      continue;
    }
    StringMap config;
    if (s == "baseline") {
      config = {};
    } else if (s == "chain5") {
      config = chain5Config();
    } else if (s == "rule") {
      config = ruleConfig();
    } else if (s == "chain5+rule") {
      config = chain5Config(",r");
      for (auto& [k, v] : ruleConfig())
        if (k != "transforms") config[k] = v;
    } else {
      return fail("unknown scenario '" + s + "'");
    }
    auto chain = ferry::runtime::TransformChain::build(registry, config);
    if (!chain.isOk()) return fail(s + ": " + chain.status().toString());
    auto& c = **chain;
    if (!c.empty() && !sample(c, s)) return 1;
    // Counted over one extra untimed pass, so the timed passes are exactly the chain's work.
    const auto [parses0, writes0] = jsonCounters(c);
    for (const auto& in : records) {
      Record r = in;
      (void)c.apply(r);
    }
    const std::string counts = jsonCounts(c, parses0, writes0, static_cast<double>(records.size()));
    runScenario(s, records, avgBytes, repeats, counts, [&c](Record& r) -> int {
      auto kept = c.apply(r);
      if (!kept.isOk()) return -1;
      return *kept ? 1 : 0;
    });
  }
  return 0;
}
