// HttpSink (see http_sink.h).
#include "connectors/http/http_sink.h"

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <unordered_map>

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "connectors/common.h"
#include "core/backoff.h"
#include "core/clock.h"
#include "core/cloudevents.h"
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

namespace ce = core::cloudevents;

// The CloudEvent a record carries (see http_sink.h).
Result<ce::Event> eventOf(const Record& r) {
  const Header* ct = r.headers.last(ce::kContentTypeHeader);
  if (ct != nullptr && !ct->value.isNull() && ce::isStructuredContentType(ct->value.view(), /*orBatch=*/true)) {
    if (ce::isBatchContentType(ct->value.view()))
      return Status::invalidArgument("the record holds a CloudEvents batch, not one event");
    if (r.value.isNull()) return Status::invalidArgument("the record's content-type says a structured CloudEvent but it has no value");
    return ce::parseStructured(r.value.view());
  }
  if (!r.headers.has("ce_specversion"))
    return Status::invalidArgument(
        "the record is not a CloudEvent: no ce_specversion header and its content-type is not "
        "application/cloudevents+json (give it ce_* headers, e.g. with the CloudEvent transform, or a "
        "structured event as its value)");
  return ce::fromHeaders(r.headers, r.value);
}

}  // namespace

struct HttpSinkTask::Io {
  struct Request {
    std::string url;   // empty: constantUrl
    std::string body;  // empty for format one: the record's value is sent from its own buffer
    std::vector<Record> records;
    std::vector<std::string> headers;  // this request's own (cloudevents-binary)
    int attempts = 0;
    std::int64_t retryAtMs = 0;
  };
  struct Lane {
    CURL* easy = nullptr;
    CURLU* url = nullptr;  // constantUrl parsed once (CURLOPT_CURLU), or null: CURLOPT_URL per request
    curl_slist* headers = nullptr;
    curl_slist* requestHeaders = nullptr;  // headers plus the current request's own, or null
    char error[CURL_ERROR_SIZE] = {0};
    std::deque<Queued> waiting;  // taken from incoming_, not in a request yet
    // The request in flight, or waiting for its retry, when `busy` (its storage is reused).
    Request current;
    bool busy = false;
    bool inFlight = false;
    std::string urlSet;              // the URL last given to `easy` (not set again when the same)
    std::string answer;              // body of the current answer (first kMaxAnswerBytes)
    std::string retryAfter;          // its Retry-After header
    core::Backoff backoff{100, 30000};
  };
  // A socket libcurl asked to watch: the events it wants, and those the epoll set has.
  struct Watch {
    std::uint32_t want = 0;
    std::uint32_t have = 0;
  };

  CURLM* multi = nullptr;
  int epollFd = -1;
  int wakeFd = -1;
  httpc::ClientSettings settings;
  Format format = Format::kOne;
  std::string method = "POST";
  std::string constantUrl;  // http.url rendered once when it has no placeholder
  std::size_t batchMaxRecords = 500;
  std::size_t batchMaxBytes = 1 << 20;
  std::vector<std::unique_ptr<Lane>> lanes;
  std::unordered_map<curl_socket_t, Watch> watches;
  std::vector<curl_socket_t> changed;  // sockets whose `want` changed since the epoll set was updated

  ~Io() {
    for (auto& lane : lanes) {
      if (lane->inFlight && multi != nullptr) curl_multi_remove_handle(multi, lane->easy);
      if (lane->easy != nullptr) curl_easy_cleanup(lane->easy);
      if (lane->url != nullptr) curl_url_cleanup(lane->url);
      curl_slist_free_all(lane->headers);
      curl_slist_free_all(lane->requestHeaders);
    }
    if (multi != nullptr) curl_multi_cleanup(multi);
    if (epollFd >= 0) ::close(epollFd);
    if (wakeFd >= 0) ::close(wakeFd);
  }

  const std::string& urlOf(const Request& r) const { return r.url.empty() ? constantUrl : r.url; }

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
    if (line.size() > kName.size() && (line[0] == 'r' || line[0] == 'R')) {
      bool match = true;
      for (std::size_t i = 0; i < kName.size() && match; ++i)
        match = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
      if (match) lane->retryAfter = std::string(line.substr(kName.size()));
    }
    return bytes;
  }
  // libcurl's socket callback: what to watch on `s` (applied to the epoll set before the next
  // wait, so a socket removed and added again within one round costs no epoll_ctl).
  static int onSocket(CURL* easy, curl_socket_t s, int what, void* user, void* socketData) {
    (void)easy;
    (void)socketData;
    auto* io = static_cast<Io*>(user);
    std::uint32_t events = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT) events |= EPOLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT) events |= EPOLLOUT;
    Watch& w = io->watches[s];
    if (w.want != events || w.have != events) io->changed.push_back(s);
    w.want = events;
    return 0;
  }
  // libcurl closes its sockets through this: a closed socket leaves the epoll set by itself, so
  // its number, when libcurl opens another socket that gets it, is added afresh.
  static int onClose(void* user, curl_socket_t s) {
    auto* io = static_cast<Io*>(user);
    if (auto it = io->watches.find(s); it != io->watches.end()) it->second.have = 0;
    return ::close(s);
  }
  void applyWatches() {
    for (curl_socket_t s : changed) {
      auto it = watches.find(s);
      if (it == watches.end()) continue;
      Watch& w = it->second;
      if (w.want != w.have) {
        epoll_event e{};
        e.events = w.want;
        e.data.fd = s;
        if (w.want == 0) {
          ::epoll_ctl(epollFd, EPOLL_CTL_DEL, s, &e);  // fails harmlessly when libcurl closed it already
        } else if (::epoll_ctl(epollFd, w.have == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, s, &e) != 0) {
          // The socket was closed and its number reused meanwhile (MOD: ENOENT), or is still in the
          // set (ADD: EEXIST).
          ::epoll_ctl(epollFd, w.have == 0 ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &e);
        }
        w.have = w.want;
      }
      if (w.want == 0) watches.erase(it);
    }
    changed.clear();
  }
  // Runs what libcurl has due now (requests just added, timeouts).
  void runDue() {
    long ms = -1;
    curl_multi_timeout(multi, &ms);
    if (ms != 0) return;
    int running = 0;
    curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
  }

  // What a queued record adds to a batch body: its event's JSON, or its value.
  static std::size_t pieceSize(const Queued& q, bool events) { return events ? q.body.size() : q.record.value.size(); }

  // Makes the lane's next request of its waiting records.
  void build(Lane& lane) const {
    Request& r = lane.current;
    r.url.clear();
    r.body.clear();
    r.records.clear();
    r.headers.clear();
    r.attempts = 0;
    r.retryAtMs = 0;
    lane.busy = true;
    Queued& first = lane.waiting.front();
    r.url.swap(first.url);
    if (format == Format::kOne) {
      r.records.push_back(std::move(first.record));
      lane.waiting.pop_front();
      return;
    }
    if (format == Format::kCloudEventsStructured || format == Format::kCloudEventsBinary) {
      r.body.swap(first.body);
      r.headers.swap(first.headers);
      r.records.push_back(std::move(first.record));
      lane.waiting.pop_front();
      return;
    }
    const bool events = format == Format::kCloudEvents;
    const bool array = format == Format::kJsonArray || events;
    if (array) r.body.push_back('[');
    auto add = [&](Queued& q) {
      if (array && r.records.size() > 0) r.body.push_back(',');
      if (events) r.body += q.body;
      else appendJsonValue(r.body, q.record);
      if (!array) r.body.push_back('\n');
      r.records.push_back(std::move(q.record));
      lane.waiting.pop_front();
    };
    add(first);
    while (!lane.waiting.empty() && r.records.size() < batchMaxRecords && lane.waiting.front().url == r.url &&
           r.body.size() + pieceSize(lane.waiting.front(), events) + 2 <= batchMaxBytes)
      add(lane.waiting.front());
    if (array) r.body.push_back(']');
  }

  void start(Lane& lane) {
    Request& r = lane.current;
    lane.answer.clear();
    lane.retryAfter.clear();
    lane.error[0] = 0;
    if (!r.headers.empty()) {
      // The lane's headers and this request's own, in a list that lives until the next start.
      // (Out of memory for it, the request goes without them and the server's answer decides.)
      curl_slist* list = nullptr;
      bool complete = true;
      auto add = [&](const char* h) {
        curl_slist* next = complete ? curl_slist_append(list, h) : nullptr;
        if (next == nullptr) complete = false;
        else list = next;
      };
      for (const curl_slist* h = lane.headers; h != nullptr; h = h->next) add(h->data);
      for (const auto& h : r.headers) add(h.c_str());
      if (!complete) {
        curl_slist_free_all(list);
        list = nullptr;
      }
      curl_easy_setopt(lane.easy, CURLOPT_HTTPHEADER, list != nullptr ? list : lane.headers);
      curl_slist_free_all(lane.requestHeaders);
      lane.requestHeaders = list;
    }
    const std::string& url = urlOf(r);
    if (lane.url == nullptr && (url != lane.urlSet || lane.urlSet.empty())) {
      curl_easy_setopt(lane.easy, CURLOPT_URL, url.c_str());
      lane.urlSet = url;
    }
    // Format one: the body is the record's value, sent from its own (shared, immutable) buffer,
    // which the request keeps alive; a tombstone is an empty body.
    const char* body = r.body.data();
    std::size_t size = r.body.size();
    if (format == Format::kOne) {
      const Bytes& v = r.records.front().value;
      body = v.isNull() ? "" : v.data();
      size = v.size();
    }
    curl_easy_setopt(lane.easy, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(lane.easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(size));
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
             "record values per request; ndjson: one value per line; cloudevents: a CloudEvents batch "
             "(application/cloudevents-batch+json) of the records' events; cloudevents-structured: one "
             "application/cloudevents+json event per request; cloudevents-binary: one request per event, "
             "attributes as ce-* headers and the data as the body. A record's event is its structured "
             "value (content-type application/cloudevents+json) or its ce_* headers and value; a record "
             "that is no valid event is a bad record.",
             validators::oneOf({"one", "json-array", "ndjson", "cloudevents", "cloudevents-structured",
                                "cloudevents-binary"}));
    d.define("http.batch.max.records", ConfigType::kInt, "500", Importance::kMedium,
             "Most records in one request (json-array, ndjson, cloudevents).", validators::atLeast(1));
    d.define("http.batch.max.bytes", ConfigType::kLong, "1048576", Importance::kMedium,
             "About the largest body of one batch request (a larger single record goes alone).",
             validators::atLeast(1));
    d.define("http.content.type", ConfigType::kString, "", Importance::kLow,
             "Content-Type of the requests; empty: application/json (one, json-array) or "
             "application/x-ndjson (ndjson). The cloudevents formats set their own; for "
             "cloudevents-binary this is the Content-Type of an event without datacontenttype "
             "(empty: none).");
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
  constantUrl_ = url_->constant();
  auto io = std::make_unique<Io>();
  if (constantUrl_) {
    auto text = url_->render(Record{});
    if (!text.isOk()) return text.status().withContext("HttpSink: http.url");
    io->constantUrl = httpc::cleanUrl(*text);
  }
  auto open = [&context](const std::string& path) { return context.openLocalFile(path, LocalPath::kRead); };
  auto settings = httpc::clientSettings(p, open);
  if (!settings.isOk()) return settings.status().withContext("HttpSink");
  io->settings = std::move(*settings);
  const std::string format = p.getString("http.batch.format");
  io->format = format == "json-array"               ? Format::kJsonArray
               : format == "ndjson"                   ? Format::kNdjson
               : format == "cloudevents"              ? Format::kCloudEvents
               : format == "cloudevents-structured"   ? Format::kCloudEventsStructured
               : format == "cloudevents-binary"       ? Format::kCloudEventsBinary
                                                      : Format::kOne;
  format_ = io->format;
  io->method = p.getString("http.method");
  for (char& c : io->method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  io->batchMaxRecords = static_cast<std::size_t>(p.getInt("http.batch.max.records"));
  io->batchMaxBytes = static_cast<std::size_t>(p.getLong("http.batch.max.bytes"));
  std::string contentType = p.getString("http.content.type");
  binaryContentType_ = contentType;
  if (contentType.empty()) contentType = io->format == Format::kNdjson ? "application/x-ndjson" : "application/json";
  if (io->format == Format::kCloudEvents) contentType = ce::kBatchContentType;
  if (io->format == Format::kCloudEventsStructured) contentType = ce::kStructuredContentType;
  lanes_ = static_cast<std::size_t>(p.getInt("http.max.in.flight"));
  maxBuffered_ = static_cast<std::size_t>(p.getInt("http.max.buffered.records"));
  flushTimeoutMs_ = p.getLong("http.flush.timeout.ms");
  const std::int64_t backoff = p.getLong("http.retry.backoff.ms");
  const std::int64_t backoffMax = p.getLong("http.retry.backoff.max.ms");

  io->epollFd = ::epoll_create1(EPOLL_CLOEXEC);
  if (io->epollFd < 0) return Status::internal(std::string("HttpSink: epoll_create1: ") + std::strerror(errno));
  io->wakeFd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (io->wakeFd < 0) return Status::internal(std::string("HttpSink: eventfd: ") + std::strerror(errno));
  {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = io->wakeFd;
    if (::epoll_ctl(io->epollFd, EPOLL_CTL_ADD, io->wakeFd, &e) != 0)
      return Status::internal(std::string("HttpSink: epoll_ctl: ") + std::strerror(errno));
  }
  io->multi = curl_multi_init();
  if (io->multi == nullptr) return Status::internal("HttpSink: curl_multi_init failed");
  curl_multi_setopt(io->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(lanes_));
  curl_multi_setopt(io->multi, CURLMOPT_SOCKETFUNCTION, &Io::onSocket);
  curl_multi_setopt(io->multi, CURLMOPT_SOCKETDATA, io.get());
  for (std::size_t i = 0; i < lanes_; ++i) {
    auto lane = std::make_unique<Io::Lane>();
    lane->backoff = core::Backoff(backoff, backoffMax);
    lane->easy = curl_easy_init();
    if (lane->easy == nullptr) return Status::internal("HttpSink: curl_easy_init failed");
    // cloudevents-binary: each request says its own Content-Type (the event's datacontenttype).
    const std::vector<std::string> laneContentType =
        io->format == Format::kCloudEventsBinary ? std::vector<std::string>{} : std::vector{"Content-Type: " + contentType};
    lane->headers = httpc::applySettings(lane->easy, io->settings, laneContentType, lane->error);
    if (lane->headers == nullptr) return Status::internal("HttpSink: out of memory for the request headers");
    // The sink reads an answer only for its status and, on a refusal, its first bytes: no
    // Accept-Encoding (the server sends it as it is, and libcurl sets up no decoder per request).
    curl_easy_setopt(lane->easy, CURLOPT_ACCEPT_ENCODING, static_cast<const char*>(nullptr));
    curl_easy_setopt(lane->easy, CURLOPT_POST, 1L);
    if (io->method != "POST") curl_easy_setopt(lane->easy, CURLOPT_CUSTOMREQUEST, io->method.c_str());
    curl_easy_setopt(lane->easy, CURLOPT_WRITEFUNCTION, &Io::onBody);
    curl_easy_setopt(lane->easy, CURLOPT_WRITEDATA, lane.get());
    curl_easy_setopt(lane->easy, CURLOPT_HEADERFUNCTION, &Io::onHeader);
    curl_easy_setopt(lane->easy, CURLOPT_HEADERDATA, lane.get());
    curl_easy_setopt(lane->easy, CURLOPT_PRIVATE, lane.get());
    curl_easy_setopt(lane->easy, CURLOPT_CLOSESOCKETFUNCTION, &Io::onClose);
    curl_easy_setopt(lane->easy, CURLOPT_CLOSESOCKETDATA, io.get());
    // A constant URL is parsed once here rather than by libcurl for every request. (One libcurl
    // cannot parse as a URL is left to CURLOPT_URL, so each request fails as it would have.)
    if (!io->constantUrl.empty()) {
      lane->url = curl_url();
      if (lane->url != nullptr &&
          curl_url_set(lane->url, CURLUPART_URL, io->constantUrl.c_str(), CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) ==
              CURLUE_OK) {
        curl_easy_setopt(lane->easy, CURLOPT_CURLU, lane->url);
      } else if (lane->url != nullptr) {
        curl_url_cleanup(lane->url);
        lane->url = nullptr;
      }
    }
    io->lanes.push_back(std::move(lane));
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
    outstanding_ = 0;
    incoming_.assign(lanes_, {});
    bad_.clear();
    lastError_.clear();
    blocked_ = false;
  }
  wakeFd_ = io->wakeFd;
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
  std::vector<std::deque<Queued>> lanes(lanes_);
  std::size_t n = 0;
  for (Record& r : records) {
    Queued q{Record(), std::string(), 0, {}, {}};
    if (!constantUrl_) {
      auto url = url_->render(r);
      if (!url.isOk()) {
        Status s = context_->reportBadRecord(r, url.status().withContext("HttpSink: http.url"));
        if (!s.isOk()) return s;
        continue;
      }
      q.url = httpc::cleanUrl(*url);
    }
    if (r.key.isNull()) q.lane = nextLane_++ % lanes_;
    else q.lane = std::hash<std::string_view>{}(r.key.view()) % lanes_;
    if (Status st = renderEvent(r, q); !st.isOk()) {
      Status s = context_->reportBadRecord(r, st);
      if (!s.isOk()) return s;
      continue;
    }
    q.record = std::move(r);
    lanes[q.lane].push_back(std::move(q));
    ++n;
  }
  if (n == 0) return Status::ok();
  {
    std::lock_guard lock(mu_);
    outstanding_ += n;
    for (std::size_t i = 0; i < lanes_; ++i) {
      auto& in = incoming_[i];
      if (in.empty()) in.swap(lanes[i]);
      else std::move(lanes[i].begin(), lanes[i].end(), std::back_inserter(in));
    }
  }
  wakeIo();
  return Status::ok();
}

void HttpSinkTask::wakeIo() {
  const std::uint64_t one = 1;
  // Fails only when the counter is full (EAGAIN): the I/O thread has a wake-up pending anyway.
  [[maybe_unused]] const ssize_t n = ::write(wakeFd_, &one, sizeof one);
}

Status HttpSinkTask::renderEvent(const Record& r, Queued& q) const {
  if (format_ != Format::kCloudEvents && format_ != Format::kCloudEventsStructured &&
      format_ != Format::kCloudEventsBinary)
    return Status::ok();
  const char* where = format_ == Format::kCloudEvents             ? "HttpSink (http.batch.format=cloudevents)"
                      : format_ == Format::kCloudEventsStructured ? "HttpSink (http.batch.format=cloudevents-structured)"
                                                                  : "HttpSink (http.batch.format=cloudevents-binary)";
  auto event = eventOf(r);
  if (!event.isOk()) return event.status().withContext(where);
  if (format_ != Format::kCloudEventsBinary) {
    auto json = ce::renderStructured(*event);
    if (!json.isOk()) return json.status().withContext(where);
    q.body = std::move(*json);
    return Status::ok();
  }
  // Binary mode: the Kafka binding's headers of the event, renamed to the HTTP binding's.
  Headers attributes;
  if (Status st = ce::toHeaders(*event, attributes); !st.isOk()) return st.withContext(where);
  std::string contentType = binaryContentType_;
  for (const Header& h : attributes) {
    if (h.key == ce::kContentTypeHeader) {
      contentType = h.value.str();
      continue;
    }
    q.headers.push_back(std::string(ce::kHttpHeaderPrefix) + h.key.substr(ce::kHeaderPrefix.size()) + ": " +
                        ce::encodeHttpHeaderValue(h.value.view()));
  }
  // "Content-Type:" without a value keeps libcurl from sending its form type for a POST body.
  for (char& c : contentType)
    if (c == '\r' || c == '\n') c = ' ';
  q.headers.push_back(contentType.empty() ? std::string("Content-Type:") : "Content-Type: " + contentType);
  if (!event->data.isNull()) q.body = event->data.str();
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
  // What this round of the loop settled, handed to the task thread at once (one lock a round).
  std::size_t settled = 0;
  std::vector<Bad> bad;
  std::string failure;  // the round's last retriable failure
  auto publish = [&] {
    if (settled == 0 && failure.empty()) return;
    bool wake = false;
    bool drained = false;
    {
      std::lock_guard lock(mu_);
      outstanding_ -= std::min(settled, outstanding_);
      for (auto& b : bad) bad_.push_back(std::move(b));
      if (!failure.empty()) lastError_.swap(failure);
      if (blocked_ && outstanding_ <= maxBuffered_ / 2) {
        blocked_ = false;
        wake = true;
      }
      drained = outstanding_ == 0;
    }
    settled = 0;
    bad.clear();
    failure.clear();
    if (drained) settled_.notify_all();  // flush() waits for nothing outstanding
    if (wake) context_->wake();
  };
  // The connection as the answers show it (SinkTaskContext::reportConnection), reported when it
  // changes: connected on an answer, degraded while the target answers 408/429/5xx, reconnecting
  // while requests get no answer (refused, reset, timed out, garbage).
  int shown = -1;
  auto show = [&](ConnectionHealth::State state, const std::string& why) {
    if (static_cast<int>(state) == shown && state == ConnectionHealth::State::kConnected) return;
    shown = static_cast<int>(state);
    context_->reportConnection({state, why});
  };
  // The finished requests' answers: settled, or their retry scheduled. True when a lane is free.
  auto collect = [&] {
    bool finished = false;
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(io.multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Io::Lane* lane = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&lane));
      const CURLcode code = msg->data.result;
      curl_multi_remove_handle(io.multi, msg->easy_handle);
      if (lane == nullptr || !lane->busy) continue;
      lane->inFlight = false;
      finished = true;
      Io::Request& r = lane->current;
      long status = 0;
      curl_easy_getinfo(lane->easy, CURLINFO_RESPONSE_CODE, &status);
      if (code != CURLE_OK)
        show(ConnectionHealth::State::kReconnecting,
             io.urlOf(r) + ": " + (lane->error[0] != 0 ? std::string(lane->error) : curl_easy_strerror(code)));
      else if (status == 408 || status == 429 || status >= 500)
        show(ConnectionHealth::State::kDegraded, httpc::describeAnswer(status, io.urlOf(r), lane->answer));
      else
        show(ConnectionHealth::State::kConnected, "");
      if (code == CURLE_OK && status >= 200 && status < 300) {
        if (r.attempts > 0)
          log_->info("{}: {} accepted {} record(s) after {} failed attempt(s)", connector, io.urlOf(r),
                     r.records.size(), r.attempts);
        settled += r.records.size();
        r.records.clear();
        lane->busy = false;
        lane->backoff.reset();
        continue;
      }
      std::string why;
      bool retry = true;
      if (code != CURLE_OK) {
        why = io.urlOf(r) + ": " + (lane->error[0] != 0 ? std::string(lane->error) : curl_easy_strerror(code)) +
              " (" + curl_easy_strerror(code) + ")";
      } else {
        why = httpc::describeAnswer(status, io.urlOf(r), lane->answer);
        retry = status == 408 || status == 429 || status >= 500;
      }
      if (!retry) {
        log_->warn("{}: {} record(s) refused: {}", connector, r.records.size(), why);
        for (auto& rec : r.records) bad.push_back(Bad{std::move(rec), Status::invalidArgument(why)});
        settled += r.records.size();
        r.records.clear();
        lane->busy = false;
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
      failure = std::move(why);
    }
    return finished;
  };
  // Starts the next request of each free lane that has records (or a retry that is due); returns
  // how long until the next retry is due (at most 1 s).
  auto startFree = [&] {
    const std::int64_t now = core::monotonicMs();
    std::int64_t waitMs = 1000;
    for (auto& lanePtr : io.lanes) {
      Io::Lane& lane = *lanePtr;
      if (lane.inFlight) continue;
      if (!lane.busy && !lane.waiting.empty()) io.build(lane);
      if (!lane.busy) continue;
      if (lane.current.retryAtMs > now) {
        waitMs = std::min(waitMs, lane.current.retryAtMs - now);
        continue;
      }
      io.start(lane);
    }
    return waitMs;
  };
  std::vector<epoll_event> events(16);
  for (;;) {
    // Records put since the last round: a lane takes its incoming records when it has none left
    // waiting (a swap), else appends them.
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
      for (std::size_t i = 0; i < io.lanes.size(); ++i) {
        auto& in = incoming_[i];
        if (in.empty()) continue;
        auto& waiting = io.lanes[i]->waiting;
        if (waiting.empty()) waiting.swap(in);
        else std::move(in.begin(), in.end(), std::back_inserter(waiting));
        in.clear();
      }
    }
    std::int64_t waitMs = startFree();
    io.runDue();  // sends the requests just started
    const bool finished = collect();
    publish();
    if (finished) continue;  // start the next requests at once
    io.applyWatches();
    long curlMs = -1;
    curl_multi_timeout(io.multi, &curlMs);
    if (curlMs >= 0) waitMs = std::min<std::int64_t>(waitMs, curlMs);
    const int n = ::epoll_wait(io.epollFd, events.data(), static_cast<int>(events.size()),
                               static_cast<int>(std::max<std::int64_t>(waitMs, 0)));
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      const std::uint32_t ev = events[static_cast<std::size_t>(i)].events;
      if (fd == io.wakeFd) {
        std::uint64_t count = 0;
        [[maybe_unused]] const ssize_t r = ::read(io.wakeFd, &count, sizeof count);
        continue;
      }
      int mask = 0;
      if (ev & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) mask |= CURL_CSELECT_IN;
      if (ev & EPOLLOUT) mask |= CURL_CSELECT_OUT;
      if (ev & EPOLLERR) mask |= CURL_CSELECT_ERR;
      int running = 0;
      curl_multi_socket_action(io.multi, fd, mask, &running);
      // A lane this answer freed sends its next request now, before the other sockets are read:
      // the server works on it meanwhile.
      if (collect()) {
        startFree();
        io.runDue();
      }
    }
    io.runDue();  // timeouts, and what the sockets' events left due
    collect();    // published at the end of the next round, which starts the lanes it freed
  }
}

void HttpSinkTask::stop() {
  if (!io_) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  settled_.notify_all();
  wakeIo();
  if (thread_.joinable()) thread_.join();
  io_.reset();
  wakeFd_ = -1;
  std::lock_guard lock(mu_);
  incoming_.clear();  // not committed: read again after a restart
  bad_.clear();
}

}  // namespace ferry::connectors
