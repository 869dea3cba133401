// DatagenSource (see datagen_source.h). The hot loop builds each value straight into one
// std::string (std::to_chars, no streams) and hands it to Bytes without another copy.
#include "connectors/datagen/datagen_source.h"

#include <unistd.h>

#include <random>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <thread>

#include "connectors/common.h"
#include "core/clock.h"

namespace ferry::connectors {
namespace {

void appendInt(std::string& s, std::int64_t v) {
  char tmp[24];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof(tmp), v);
  (void)ec;
  s.append(tmp, p);
}

}  // namespace

const ConfigDef& DatagenSourceConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("topic", ConfigType::kString, std::nullopt, Importance::kHigh,
             "The backbone topic the generated records are written to.",
             validators::nonEmptyString());
    d.define("format", ConfigType::kString, "json", Importance::kMedium,
             "Value format: 'string' (\"<task>-<seq>\"), 'json' ({\"task\",\"seq\",\"ts\"}) or "
             "'bytes' (value.size bytes starting with the sequence number) or 'trace' "
             "(\"<task>-<seq> <run> <ts>\": run is new at every task start - process id and a random "
             "number - so tests can tell which run of a task wrote a record and when).",
             validators::oneOf({"string", "json", "bytes", "trace"}));
    d.define("rate", ConfigType::kDouble, "0", Importance::kMedium,
             "Records per second per task; 0 produces as fast as possible.",
             validators::atLeast(0));
    d.define("max.records", ConfigType::kLong, "-1", Importance::kMedium,
             "Records each task produces before it goes idle; -1 is unlimited.",
             validators::atLeast(-1));
    d.define("value.size", ConfigType::kInt, "100", Importance::kLow,
             "Value size in bytes for format=bytes.", validators::atLeast(1));
    d.define("key.mode", ConfigType::kString, "none", Importance::kLow,
             "Record keys: 'none' (null) or 'seq' (the decimal sequence number).",
             validators::oneOf({"none", "seq"}));
    return d;
  }();
  return def;
}

std::string DatagenSourceConnector::version() const { return kVersion; }

Status DatagenSourceConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "DatagenSource"));
  (void)parsed;
  return Status::ok();
}

Result<std::vector<StringMap>> DatagenSourceConnector::taskConfigs(int maxTasks) {
  // Each task generates its own sequence; the task number comes from the task context.
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)));
}

std::unique_ptr<SourceTask> DatagenSourceConnector::createTask() {
  return std::make_unique<DatagenSourceTask>();
}

std::string DatagenSourceTask::version() const { return kVersion; }

Status DatagenSourceTask::start(const StringMap& config, SourceTaskContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(DatagenSourceConnector::definition(), config,
                                                  "DatagenSource task"));
  topic_ = parsed.getString("topic");
  const std::string format = parsed.getString("format");
  format_ = format == "string" ? Format::kString
            : format == "bytes"  ? Format::kBytes
            : format == "trace"  ? Format::kTrace
                                 : Format::kJson;
  {
    std::random_device rd;
    run_ = std::to_string(::getpid()) + "." + std::to_string(rd() % 1000000000);
  }
  rate_ = parsed.getDouble("rate");
  maxRecords_ = parsed.getLong("max.records");
  valueSize_ = static_cast<std::size_t>(parsed.getInt("value.size"));
  keySeq_ = parsed.getString("key.mode") == "seq";
  taskText_ = std::to_string(context.taskId());
  partition_ = {{"datagen.task", taskText_}};
  seq_ = 0;
  if (auto committed = context.committedOffset(partition_)) {
    auto it = committed->find("seq");
    std::int64_t v = 0;
    if (it != committed->end()) {
      const std::string& s = it->second;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size() || v < 0)
        return Status::dataLoss("DatagenSource: committed offset seq='" + s +
                                "' is not a sequence number");
      seq_ = v;
    }
  }
  // 100 ms worth of records may be produced at once (at least one).
  burst_ = std::max(1.0, rate_ / 10.0);
  tokens_ = 1.0;
  lastRefill_ = std::chrono::steady_clock::now();
  return Status::ok();
}

void DatagenSourceTask::refill(std::chrono::steady_clock::time_point now) {
  const double seconds = std::chrono::duration<double>(now - lastRefill_).count();
  lastRefill_ = now;
  tokens_ = std::min(burst_, tokens_ + seconds * rate_);
}

std::chrono::milliseconds DatagenSourceTask::idlePollDelay() const {
  using std::chrono::milliseconds;
  if (maxRecords_ >= 0 && seq_ >= maxRecords_) return milliseconds(500);  // done: nothing more comes
  if (rate_ <= 0 || tokens_ >= 1.0) return milliseconds(1);
  // When the bucket holds the next token (refilled at the last poll).
  const double ms = (1.0 - tokens_) / rate_ * 1000.0;
  return milliseconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(ms))));
}

std::string DatagenSourceTask::value(std::int64_t seq, std::int64_t nowMs) const {
  std::string v;
  switch (format_) {
    case Format::kString:
      v.reserve(taskText_.size() + 21);
      v.append(taskText_);
      v.push_back('-');
      appendInt(v, seq);
      break;
    case Format::kJson:
      v.reserve(taskText_.size() + 64);
      v.append("{\"task\":");
      v.append(taskText_);
      v.append(",\"seq\":");
      appendInt(v, seq);
      v.append(",\"ts\":");
      appendInt(v, nowMs);
      v.push_back('}');
      break;
    case Format::kTrace:
      v.append(taskText_);
      v.push_back('-');
      appendInt(v, seq);
      v.push_back(' ');
      v.append(run_);
      v.push_back(' ');
      appendInt(v, nowMs);
      break;
    case Format::kBytes:
      v.reserve(valueSize_);
      appendInt(v, seq);
      if (v.size() > valueSize_) v.resize(valueSize_);
      v.resize(valueSize_, 'x');
      break;
  }
  return v;
}

Result<std::size_t> DatagenSourceTask::poll(std::vector<Record>& out, std::size_t maxRecords,
                                            std::chrono::milliseconds maxWait) {
  using Clock = std::chrono::steady_clock;
  std::size_t want = maxRecords;
  if (maxRecords_ >= 0) want = std::min<std::size_t>(want, static_cast<std::size_t>(
                                                               std::max<std::int64_t>(0, maxRecords_ - seq_)));
  if (want == 0) {
    if (maxWait.count() > 0) std::this_thread::sleep_for(maxWait);
    return std::size_t{0};
  }
  if (rate_ > 0) {
    const auto deadline = Clock::now() + maxWait;
    refill(Clock::now());
    if (tokens_ < 1.0) {
      // Wait for one token, but no longer than maxWait.
      const auto need = std::chrono::duration<double>((1.0 - tokens_) / rate_);
      const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(need);
      std::this_thread::sleep_until(std::min(until, deadline));
      refill(Clock::now());
      if (tokens_ < 1.0) return std::size_t{0};
    }
    want = std::min<std::size_t>(want, static_cast<std::size_t>(tokens_));
    tokens_ -= static_cast<double>(want);
  }
  const std::int64_t nowMs = core::nowMs();
  out.reserve(out.size() + want);
  for (std::size_t i = 0; i < want; ++i) {
    const std::int64_t n = seq_++;
    Record& r = out.emplace_back();
    r.topic = topic_;
    r.value = Bytes(value(n, nowMs));
    if (keySeq_) {
      std::string k;
      appendInt(k, n);
      r.key = Bytes(std::move(k));
    }
    r.timestampMs = nowMs;
    r.position.partition = partition_;
    std::string next;
    appendInt(next, seq_);
    r.position.offset.emplace("seq", std::move(next));
  }
  return want;
}

}  // namespace ferry::connectors
