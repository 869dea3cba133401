// HttpSink (see http_sink.h).
#include "connectors/http/http_sink.h"

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <pthread.h>

#include "connectors/common.h"
#include "core/backoff.h"
#include "core/clock.h"
#include "core/json_read.h"
#include "core/logging.h"

namespace ferry::connectors {

namespace {

constexpr std::int64_t kMaxRetryAfterMs = 10 * 60 * 1000;
constexpr std::size_t kMaxAnswerBytes = 64 * 1024;  // kept of an answer's body, for messages

std::string_view trimJson(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// A record's value as one JSON text of a batch body.
void appendJsonValue(std::string& out, const Record& r) {
  if (r.value.isNull()) {
    out += "null";
    return;
  }
  const std::string_view v = trimJson(r.value.view());
  if (!v.empty() && core::isJson(v)) {
    out += v;
    return;
  }
  out += nlohmann::json(std::string(r.value.view())).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

struct HttpSinkTask::Io {
  struct Request {
    std::string url;
    std::string body;
    std::vector<Record> records;
    int attempts = 0;
    std::int64_t retryAtMs = 0;
  };
  struct Lane {
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    char error[CURL_ERROR_SIZE] = {0};
    std::deque<Queued> waiting;      // taken from queue_, not in a request yet
    std::optional<Request> current;  // in flight, or waiting for its retry
    bool inFlight = false;
    std::string answer;              // body of the current answer (first kMaxAnswerBytes)
    std::string retryAfter;          // its Retry-After header
    core::Backoff backoff{100, 30000};
  };

  CURLM* multi = nullptr;
  httpc::ClientSettings settings;
  Format format = Format::kOne;
  std::string method = "POST";
  std::size_t batchMaxRecords = 500;
  std::size_t batchMaxBytes = 1 << 20;
  std::vector<std::unique_ptr<Lane>> lanes;

  ~Io() {
    for (auto& lane : lanes) {
      if (lane->inFlight && multi != nullptr) curl_multi_remove_handle(multi, lane->easy);
      if (lane->easy != nullptr) curl_easy_cleanup(lane->easy);
      curl_slist_free_all(lane->headers);
    }
    if (multi != nullptr) curl_multi_cleanup(multi);
  }

  static std::size_t onBody(char* data, std::size_t size, std::size_t n, void* user) {
    auto* lane = static_cast<Lane*>(user);
    const std::size_t bytes = size * n;
    if (lane->answer.size() < kMaxAnswerBytes)
      lane->answer.append(data, std::min(bytes, kMaxAnswerBytes - lane->answer.size()));
    return bytes;
  }
  static std::size_t onHeader(char* data, std::size_t size, std::size_t n, void* user) {
    auto* lane = static_cast<Lane*>(user);
    const std::size_t bytes = size * n;
    const std::string_view line(data, bytes);
    constexpr std::string_view kName = "retry-after:";
    if (line.size() > kName.size()) {
      bool match = true;
      for (std::size_t i = 0; i < kName.size() && match; ++i)
        match = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
      if (match) lane->retryAfter = std::string(line.substr(kName.size()));
    }
    return bytes;
  }

  Request build(Lane& lane) const {
    Request r;
    Queued first = std::move(lane.waiting.front());
    lane.waiting.pop_front();
    r.url = std::move(first.url);
    if (format == Format::kOne) {
      r.body = first.record.value.str();
      r.records.push_back(std::move(first.record));
      return r;
    }
    const bool array = format == Format::kJsonArray;
    if (array) r.body.push_back('[');
    auto add = [&](Record rec) {
      if (array && r.records.size() > 0) r.body.push_back(',');
      appendJsonValue(r.body, rec);
      if (!array) r.body.push_back('\n');
      r.records.push_back(std::move(rec));
    };
    add(std::move(first.record));
    while (!lane.waiting.empty() && r.records.size() < batchMaxRecords && lane.waiting.front().url == r.url &&
           r.body.size() + lane.waiting.front().record.value.size() + 2 <= batchMaxBytes) {
      add(std::move(lane.waiting.front().record));
      lane.waiting.pop_front();
    }
    if (array) r.body.push_back(']');
    return r;
  }

  void start(Lane& lane) {
    Request& r = *lane.current;
    lane.answer.clear();
    lane.retryAfter.clear();
    lane.error[0] = 0;
    curl_easy_setopt(lane.easy, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(lane.easy, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(lane.easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    curl_multi_add_handle(multi, lane.easy);
    lane.inFlight = true;
  }
};

const ConfigDef& HttpSinkConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("http.url", ConfigType::kString, std::nullopt, Importance::kHigh,
             "Target URL, a template: ${topic}, ${key}, ${header:<name>}, ${value:<json path>}, "
             "${timestamp} (bytes a URL may not hold are percent-encoded).",
             validators::nonEmptyString());
    d.define("http.method", ConfigType::kString, "POST", Importance::kMedium, "POST or PUT.",
             validators::oneOf({"POST", "PUT"}));
    d.define("http.batch.format", ConfigType::kString, "one", Importance::kHigh,
             "one: a request per record, its value as the body; json-array: a JSON array of "
             "record values per request; ndjson: one value per line.",
             validators::oneOf({"one", "json-array", "ndjson"}));
    d.define("http.batch.max.records", ConfigType::kInt, "500", Importance::kMedium,
             "Most records in one request (json-array, ndjson).", validators::atLeast(1));
    d.define("http.batch.max.bytes", ConfigType::kLong, "1048576", Importance::kMedium,
             "About the largest body of one batch request (a larger single record goes alone).",
             validators::atLeast(1));
    d.define("http.content.type", ConfigType::kString, "", Importance::kLow,
             "Content-Type of the requests; empty: application/json (one, json-array) or "
             "application/x-ndjson (ndjson).");
    d.define("http.max.in.flight", ConfigType::kInt, "4", Importance::kMedium,
             "Requests outstanding at once per task; records of one key stay in order.",
             validators::between(1, 256));
    d.define("http.retry.backoff.ms", ConfigType::kLong, "100", Importance::kLow,
             "First wait before a failed request is sent again (doubles after each failure).",
             validators::atLeast(1));
    d.define("http.retry.backoff.max.ms", ConfigType::kLong, "30000", Importance::kLow,
             "Longest wait between two attempts (a Retry-After answer may ask for more, up to 10 minutes).",
             validators::atLeast(1));
    d.define("http.max.buffered.records", ConfigType::kInt, "20000", Importance::kLow,
             "Records put and not answered yet beyond which the task takes no more in.", validators::atLeast(1));
    d.define("http.flush.timeout.ms", ConfigType::kLong, "60000", Importance::kLow,
             "How long flush() waits for final answers before it reports a retriable error.",
             validators::atLeast(100));
    httpc::defineClientKeys(d);
    return d;
  }();
  return def;
}

std::string HttpSinkConnector::version() const { return kVersion; }

void HttpSinkConnector::validate(const StringMap& config, ConfigValidation& v) const {
  auto p = definition().parse(config, false);
  if (!p.isOk()) return;
  if (auto t = core::RecordTemplate::parse(p->getString("http.url")); !t.isOk())
    v.errors["http.url"].push_back(t.status().message());
  const auto auth = p->getString("http.auth.type");
  if (auth == "bearer" && p->getString("http.auth.token").empty())
    v.errors["http.auth.token"].push_back("required when http.auth.type=bearer");
  if (auth == "basic" && p->getString("http.auth.user").empty())
    v.errors["http.auth.user"].push_back("required when http.auth.type=basic");
  if (p->getString("http.ssl.certificate.location").empty() != p->getString("http.ssl.key.location").empty())
    v.errors["http.ssl.key.location"].push_back("a client certificate needs its key (and a key its certificate)");
}

Status HttpSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "HttpSink"));
  FERRY_ASSIGN_OR_RETURN(auto url, core::RecordTemplate::parse(parsed.getString("http.url")));
  (void)url;
  config_ = config;
  return Status::ok();
}

Result<std::vector<StringMap>> HttpSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)), config_);
}

std::unique_ptr<SinkTask> HttpSinkConnector::createTask() { return std::make_unique<HttpSinkTask>(); }

HttpSinkTask::HttpSinkTask() : log_(core::logger("http-sink")) {}

HttpSinkTask::~HttpSinkTask() { stop(); }

std::string HttpSinkTask::version() const { return kVersion; }

Status HttpSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  stop();
  httpc::ensureCurlGlobalInit();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(HttpSinkConnector::definition(), config, "HttpSink task"));
  context_ = &context;
  FERRY_ASSIGN_OR_RETURN(auto url, core::RecordTemplate::parse(p.getString("http.url")));
  url_ = std::make_unique<core::RecordTemplate>(std::move(url));
  auto io = std::make_unique<Io>();
  auto open = [&context](const std::string& path) { return context.openLocalFile(path, LocalPath::kRead); };
  auto settings = httpc::clientSettings(p, open);
  if (!settings.isOk()) return settings.status().withContext("HttpSink");
  io->settings = std::move(*settings);
  const std::string format = p.getString("http.batch.format");
  io->format = format == "json-array" ? Format::kJsonArray : format == "ndjson" ? Format::kNdjson : Format::kOne;
  io->method = p.getString("http.method");
  for (char& c : io->method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  io->batchMaxRecords = static_cast<std::size_t>(p.getInt("http.batch.max.records"));
  io->batchMaxBytes = static_cast<std::size_t>(p.getLong("http.batch.max.bytes"));
  std::string contentType = p.getString("http.content.type");
  if (contentType.empty()) contentType = io->format == Format::kNdjson ? "application/x-ndjson" : "application/json";
  lanes_ = static_cast<std::size_t>(p.getInt("http.max.in.flight"));
  maxBuffered_ = static_cast<std::size_t>(p.getInt("http.max.buffered.records"));
  flushTimeoutMs_ = p.getLong("http.flush.timeout.ms");
  const std::int64_t backoff = p.getLong("http.retry.backoff.ms");
  const std::int64_t backoffMax = p.getLong("http.retry.backoff.max.ms");

  io->multi = curl_multi_init();
  if (io->multi == nullptr) return Status::internal("HttpSink: curl_multi_init failed");
  curl_multi_setopt(io->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(lanes_));
  for (std::size_t i = 0; i < lanes_; ++i) {
    auto lane = std::make_unique<Io::Lane>();
    lane->backoff = core::Backoff(backoff, backoffMax);
    lane->easy = curl_easy_init();
    if (lane->easy == nullptr) return Status::internal("HttpSink: curl_easy_init failed");
    lane->headers = httpc::applySettings(lane->easy, io->settings, {"Content-Type: " + contentType}, lane->error);
    if (lane->headers == nullptr) return Status::internal("HttpSink: out of memory for the request headers");
    curl_easy_setopt(lane->easy, CURLOPT_POST, 1L);
    if (io->method != "POST") curl_easy_setopt(lane->easy, CURLOPT_CUSTOMREQUEST, io->method.c_str());
    curl_easy_setopt(lane->easy, CURLOPT_WRITEFUNCTION, &Io::onBody);
    curl_easy_setopt(lane->easy, CURLOPT_WRITEDATA, lane.get());
    curl_easy_setopt(lane->easy, CURLOPT_HEADERFUNCTION, &Io::onHeader);
    curl_easy_setopt(lane->easy, CURLOPT_HEADERDATA, lane.get());
    curl_easy_setopt(lane->easy, CURLOPT_PRIVATE, lane.get());
    io->lanes.push_back(std::move(lane));
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
    outstanding_ = 0;
    queue_.clear();
    bad_.clear();
    lastError_.clear();
    blocked_ = false;
  }
  io_ = std::move(io);
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "http-sink-io");
    ioLoop();
  });
  log_->info("{} task {}: {} {} ({} lanes, format {})", context.connectorName(), context.taskId(),
             io_->method, url_->text(), lanes_, format);
  return Status::ok();
}

Status HttpSinkTask::reportBad() {
  std::vector<Bad> bad;
  {
    std::lock_guard lock(mu_);
    bad.swap(bad_);
  }
  for (std::size_t i = 0; i < bad.size(); ++i) {
    Status s = context_->reportBadRecord(bad[i].record, bad[i].reason);
    if (!s.isOk()) return s.withContext("HttpSink");
  }
  return Status::ok();
}

Status HttpSinkTask::put(std::vector<Record>& records) {
  if (!io_) return Status::failedPrecondition("HttpSink: put() before start()");
  FERRY_RETURN_IF_ERROR(reportBad());
  std::vector<Queued> batch;
  batch.reserve(records.size());
  for (Record& r : records) {
    auto url = url_->render(r);
    if (!url.isOk()) {
      Status s = context_->reportBadRecord(r, url.status().withContext("HttpSink: http.url"));
      if (!s.isOk()) return s;
      continue;
    }
    std::size_t lane = 0;
    if (r.key.isNull()) lane = nextLane_++ % lanes_;
    else lane = std::hash<std::string_view>{}(r.key.view()) % lanes_;
    batch.push_back(Queued{std::move(r), httpc::cleanUrl(*url), lane});
  }
  if (batch.empty()) return Status::ok();
  {
    std::lock_guard lock(mu_);
    outstanding_ += batch.size();
    for (auto& q : batch) queue_.push_back(std::move(q));
  }
  curl_multi_wakeup(io_->multi);
  return Status::ok();
}

bool HttpSinkTask::readyForPut() {
  std::lock_guard lock(mu_);
  if (outstanding_ < maxBuffered_) return true;
  blocked_ = true;
  return false;
}

Status HttpSinkTask::flush() {
  if (!io_) return Status::failedPrecondition("HttpSink: flush() before start()");
  std::size_t left = 0;
  std::string last;
  {
    std::unique_lock lock(mu_);
    settled_.wait_for(lock, std::chrono::milliseconds(flushTimeoutMs_),
                      [&] { return outstanding_ == 0 || stopping_; });
    left = outstanding_;
    last = lastError_;
  }
  FERRY_RETURN_IF_ERROR(reportBad());
  if (left > 0)
    return Status::retriable("HttpSink: " + std::to_string(left) + " record(s) still without a final answer after " +
                             std::to_string(flushTimeoutMs_) + " ms (http.flush.timeout.ms)" +
                             (last.empty() ? std::string() : "; last failure: " + last));
  return Status::ok();
}

void HttpSinkTask::ioLoop() {
  Io& io = *io_;
  const std::string& connector = context_->connectorName();
  // The records of a finished request have their final answer.
  auto settle = [&](std::size_t n, std::vector<Bad>* bad) {
    bool wake = false;
    {
      std::lock_guard lock(mu_);
      outstanding_ -= std::min(n, outstanding_);
      if (bad != nullptr)
        for (auto& b : *bad) bad_.push_back(std::move(b));
      if (blocked_ && outstanding_ <= maxBuffered_ / 2) {
        blocked_ = false;
        wake = true;
      }
    }
    settled_.notify_all();
    if (wake) context_->wake();
  };
  for (;;) {
    std::deque<Queued> taken;
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
      taken.swap(queue_);
    }
    for (auto& q : taken) io.lanes[q.lane]->waiting.push_back(std::move(q));
    std::int64_t now = core::monotonicMs();
    std::int64_t waitMs = 1000;
    for (auto& lanePtr : io.lanes) {
      Io::Lane& lane = *lanePtr;
      if (lane.inFlight) continue;
      if (!lane.current && !lane.waiting.empty()) lane.current = io.build(lane);
      if (!lane.current) continue;
      if (lane.current->retryAtMs > now) {
        waitMs = std::min(waitMs, lane.current->retryAtMs - now);
        continue;
      }
      io.start(lane);
    }
    int running = 0;
    curl_multi_perform(io.multi, &running);
    int left = 0;
    bool finished = false;
    while (CURLMsg* msg = curl_multi_info_read(io.multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Io::Lane* lane = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&lane));
      const CURLcode code = msg->data.result;
      curl_multi_remove_handle(io.multi, msg->easy_handle);
      if (lane == nullptr || !lane->current) continue;
      lane->inFlight = false;
      finished = true;
      Io::Request& r = *lane->current;
      long status = 0;
      curl_easy_getinfo(lane->easy, CURLINFO_RESPONSE_CODE, &status);
      if (code == CURLE_OK && status >= 200 && status < 300) {
        if (r.attempts > 0)
          log_->info("{}: {} accepted {} record(s) after {} failed attempt(s)", connector, r.url, r.records.size(),
                     r.attempts);
        settle(r.records.size(), nullptr);
        lane->current.reset();
        lane->backoff.reset();
        continue;
      }
      std::string why;
      bool retry = true;
      if (code != CURLE_OK) {
        why = r.url + ": " + (lane->error[0] != 0 ? std::string(lane->error) : curl_easy_strerror(code)) + " (" +
              curl_easy_strerror(code) + ")";
      } else {
        why = httpc::describeAnswer(status, r.url, lane->answer);
        retry = status == 408 || status == 429 || status >= 500;
      }
      if (!retry) {
        log_->warn("{}: {} record(s) refused: {}", connector, r.records.size(), why);
        std::vector<Bad> bad;
        bad.reserve(r.records.size());
        for (auto& rec : r.records) bad.push_back(Bad{std::move(rec), Status::invalidArgument(why)});
        settle(bad.size(), &bad);
        lane->current.reset();
        lane->backoff.reset();
        continue;
      }
      ++r.attempts;
      std::int64_t delay = lane->backoff.next();
      if (auto ra = httpc::parseRetryAfter(lane->retryAfter, core::nowMs()))
        delay = std::max(delay, std::min(*ra, kMaxRetryAfterMs));
      r.retryAtMs = core::monotonicMs() + delay;
      if (r.attempts == 1 || r.attempts % 10 == 0)
        log_->warn("{}: attempt {} for {} record(s) failed, retrying in {} ms: {}", connector, r.attempts,
                   r.records.size(), delay, why);
      std::lock_guard lock(mu_);
      lastError_ = why;
    }
    if (finished) continue;  // start the next requests at once
    curl_multi_poll(io.multi, nullptr, 0, static_cast<int>(std::max<std::int64_t>(waitMs, 0)), nullptr);
  }
}

void HttpSinkTask::stop() {
  if (!io_) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  settled_.notify_all();
  curl_multi_wakeup(io_->multi);
  if (thread_.joinable()) thread_.join();
  io_.reset();
  std::lock_guard lock(mu_);
  queue_.clear();  // not committed: read again after a restart
  bad_.clear();
}

}  // namespace ferry::connectors
