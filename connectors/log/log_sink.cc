// LogSink and BlackholeSink (see log_sink.h).
#include "connectors/log/log_sink.h"

#include <algorithm>

#include "connectors/common.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

void appendShown(std::string& out, const Bytes& b, std::size_t maxBytes) {
  if (b.isNull()) {
    out += "null";
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string_view v = b.view();
  const std::size_t n = std::min(v.size(), maxBytes);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(v[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (n < v.size()) out += "...(" + std::to_string(v.size()) + " bytes)";
}

}  // namespace

const ConfigDef& LogSinkConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("log.to", ConfigType::kString, "stdout", Importance::kMedium,
             "Where lines go: 'stdout' or 'log' (the worker's log, logger 'log-sink').",
             validators::oneOf({"stdout", "log"}));
    d.define("log.max.bytes", ConfigType::kInt, "1024", Importance::kLow,
             "The most bytes of each key and value shown; longer ones are cut and their size "
             "given.", validators::atLeast(0));
    return d;
  }();
  return def;
}

std::string LogSinkConnector::version() const { return kVersion; }

Status LogSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "LogSink"));
  (void)parsed;
  return Status::ok();
}

Result<std::vector<StringMap>> LogSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)));
}

std::unique_ptr<SinkTask> LogSinkConnector::createTask() { return std::make_unique<LogSinkTask>(); }

LogSinkTask::LogSinkTask() : LogSinkTask(stdout) {}

LogSinkTask::LogSinkTask(std::FILE* out) : log_(core::logger("log-sink")), out_(out) {}

std::string LogSinkTask::version() const { return kVersion; }

Status LogSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(LogSinkConnector::definition(), config, "LogSink"));
  toLog_ = parsed.getString("log.to") == "log";
  maxBytes_ = static_cast<std::size_t>(parsed.getInt("log.max.bytes"));
  return Status::ok();
}

std::string LogSinkTask::format(const Record& r, std::size_t maxBytes) {
  std::string line;
  line.reserve(r.topic.size() + std::min(r.value.size(), maxBytes) + 48);
  line += r.topic;
  line += '[';
  line += r.queue ? std::to_string(*r.queue) : std::string("-");
  line += "]@";
  line += std::to_string(r.offset);
  line += " key=";
  appendShown(line, r.key, maxBytes);
  line += " value=";
  appendShown(line, r.value, maxBytes);
  return line;
}

Status LogSinkTask::put(std::vector<Record>& records) {
  std::string chunk;
  for (const Record& r : records) {
    if (toLog_) {
      log_->info("{}", format(r, maxBytes_));
    } else {
      chunk += format(r, maxBytes_);
      chunk.push_back('\n');
    }
  }
  if (!chunk.empty() && std::fwrite(chunk.data(), 1, chunk.size(), out_) != chunk.size())
    return Status::unavailable("LogSink: writing to stdout failed");
  return Status::ok();
}

Status LogSinkTask::flush() {
  if (!toLog_) std::fflush(out_);
  return Status::ok();
}

void LogSinkTask::stop() { (void)flush(); }

const ConfigDef& BlackholeSinkConnector::definition() {
  static const ConfigDef def;
  return def;
}

std::string BlackholeSinkConnector::version() const { return kVersion; }

Status BlackholeSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)config;
  (void)context;
  return Status::ok();
}

Result<std::vector<StringMap>> BlackholeSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)));
}

std::unique_ptr<SinkTask> BlackholeSinkConnector::createTask() {
  return std::make_unique<BlackholeSinkTask>();
}

std::string BlackholeSinkTask::version() const { return kVersion; }

Status BlackholeSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  (void)config;
  name_ = context.connectorName() + "-" + std::to_string(context.taskId());
  records_ = 0;
  bytes_ = 0;
  return Status::ok();
}

Status BlackholeSinkTask::put(std::vector<Record>& records) {
  records_ += records.size();
  for (const Record& r : records) bytes_ += r.key.size() + r.value.size();
  return Status::ok();
}

void BlackholeSinkTask::stop() {
  core::logger("blackhole-sink")->info("{}: dropped {} records, {} bytes of keys and values", name_,
                                       records_, bytes_);
}

}  // namespace ferry::connectors
