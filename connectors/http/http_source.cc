// HttpSource (see http_source.h).
#include "connectors/http/http_source.h"

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "connectors/common.h"
#include "connectors/http/http_client.h"
#include "connectors/http/webhook_body.h"
#include "connectors/http/webhook_server.h"
#include "core/backoff.h"
#include "core/base64.h"
#include "core/clock.h"
#include "core/json_bounds.h"
#include "core/logging.h"

namespace ferry::connectors {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Compares without an early exit, so the time taken does not tell how much of a secret matched.
bool sameSecret(std::string_view given, std::string_view secret) {
  if (secret.empty()) return false;
  std::size_t diff = given.size() ^ secret.size();
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(secret[i % secret.size()]);
  return diff == 0;
}

std::string jsonError(std::string_view message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

httpc::WebhookAnswer answerOf(int status, std::string message, int retryAfterSeconds = -1) {
  httpc::WebhookAnswer a;
  a.status = status;
  a.body = jsonError(message);
  if (retryAfterSeconds >= 0) a.headers.emplace_back("Retry-After", std::to_string(retryAfterSeconds));
  return a;
}

// "/hooks/a/b" below "/hooks" -> "a.b"; characters a topic name should not hold become '_'.
std::string topicPart(std::string_view rest) {
  while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string out;
  for (char c : rest) {
    if (c == '/') out.push_back('.');
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') out.push_back(c);
    else out.push_back('_');
  }
  return out;
}

std::string stripSlash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Webhook mode

struct HttpSourceTask::Webhook : std::enable_shared_from_this<HttpSourceTask::Webhook> {
  // One request's answer: sent once every record is settled (or at the first failure).
  struct Request {
    Request(std::shared_ptr<Webhook> w, std::uint64_t i, std::size_t n, httpc::Reply r, std::int64_t deadline)
        : webhook(std::move(w)), id(i), count(n), remaining(n), reply(std::move(r)), deadlineMs(deadline) {}
    void settle(bool ok) {
      webhook->settled(1);
      if (!ok) {
        finish(webhook->failure(503, "a record of this request could not be stored; send it again"));
        return;
      }
      if (remaining.fetch_sub(1) == 1) {
        httpc::WebhookAnswer a;
        a.status = 200;
        a.body = "{\"accepted\":" + std::to_string(count) + "}";
        finish(std::move(a));
      }
    }
    void finish(httpc::WebhookAnswer a) {
      if (answered.exchange(true)) return;
      webhook->forget(id);
      reply(std::move(a));
    }
    std::shared_ptr<Webhook> webhook;
    const std::uint64_t id;
    const std::size_t count;
    std::atomic<std::size_t> remaining;
    std::atomic<bool> answered{false};
    httpc::Reply reply;
    const std::int64_t deadlineMs;  // steady ms: answered 503 when not safe by then
  };

  struct RecordAck final : Acknowledger {
    explicit RecordAck(std::shared_ptr<Request> r) : request(std::move(r)) {}
    ~RecordAck() override { release(false); }  // dropped without a word: not safe
    void ack() noexcept override {
      if (!done.exchange(true)) request->settle(true);
    }
    // A record dropped on purpose (a filter, a tolerated error) was handled: it counts as safe.
    void release(bool delivered) noexcept override {
      if (!done.exchange(true)) request->settle(delivered);
    }
    std::shared_ptr<Request> request;
    std::atomic<bool> done{false};
  };

  // Settings (immutable after start).
  std::string path = "/";
  std::string topic;
  std::string topicTemplate;
  std::string authType = "none";
  std::string token;
  std::string basic;  // "user:password"
  std::size_t maxPending = 10000;
  int retryAfterSeconds = 1;
  std::int64_t ackTimeoutMs = 30000;
  std::vector<std::string> includeHeaders;  // lower-case
  std::string keyHeader;                    // lower-case
  std::unique_ptr<httpc::JsonPath> keyPath;
  std::shared_ptr<spdlog::logger> log;
  std::string name;

  std::mutex mu;
  std::condition_variable cv;       // records arrived (a poll() waiting with maxWait > 0)
  std::deque<Record> queue;         // guarded by mu
  std::size_t pending = 0;          // guarded by mu: records accepted and not settled
  std::uint64_t nextId = 0;         // guarded by mu
  std::map<std::uint64_t, std::weak_ptr<Request>> open;  // guarded by mu: not answered yet
  SourceTaskContext* context = nullptr;  // guarded by mu; null once stopped
  bool closed = false;                   // guarded by mu
  std::int64_t lastSweepMs = 0;          // task thread

  std::unique_ptr<httpc::WebhookServer> server;

  httpc::WebhookAnswer failure(int status, std::string message) const {
    return answerOf(status, std::move(message), retryAfterSeconds);
  }

  void settled(std::size_t n) {
    std::lock_guard lock(mu);
    pending -= std::min(n, pending);
  }
  void forget(std::uint64_t id) {
    std::lock_guard lock(mu);
    open.erase(id);
  }

  // The topic for a request path; nullopt when the path is not served.
  std::optional<std::string> topicFor(const std::string& requestPath) const {
    const std::string p = stripSlash(requestPath.empty() ? "/" : requestPath);
    if (topicTemplate.empty()) {
      if (p != path) return std::nullopt;
      return topic;
    }
    std::string rest;
    if (path == "/") rest = p;
    else if (p.compare(0, path.size(), path) == 0 && (p.size() == path.size() || p[path.size()] == '/'))
      rest = p.substr(path.size());
    else return std::nullopt;
    std::string part = topicPart(rest);
    if (part.empty()) return std::nullopt;
    std::string out;
    const std::string_view t = topicTemplate;
    std::size_t at = 0;
    while (at < t.size()) {
      std::size_t ph = t.find("${path}", at);
      if (ph == std::string_view::npos) {
        out += t.substr(at);
        break;
      }
      out += t.substr(at, ph - at);
      out += part;
      at = ph + 7;
    }
    return out;
  }

  bool authorized(const httpc::WebhookRequest& req) const {
    if (authType == "none") return true;
    const std::string* h = req.header("authorization");
    if (h == nullptr) return false;
    std::string_view v = *h;
    const std::size_t space = v.find(' ');
    if (space == std::string_view::npos) return false;
    const std::string scheme = lower(v.substr(0, space));
    std::string_view cred = v.substr(space + 1);
    while (!cred.empty() && cred.front() == ' ') cred.remove_prefix(1);
    if (authType == "bearer") return scheme == "bearer" && sameSecret(cred, token);
    if (scheme != "basic") return false;
    auto decoded = core::base64Decode(cred);
    return decoded && sameSecret(*decoded, basic);
  }

  std::optional<httpc::WebhookAnswer> checkHeader(const httpc::WebhookRequest& req) const {
    if (req.method != "POST" && req.method != "PUT") {
      auto a = answerOf(405, "only POST and PUT are accepted");
      a.headers.emplace_back("Allow", "POST, PUT");
      return a;
    }
    if (!topicFor(req.path)) return answerOf(404, "no topic is mapped to this path");
    if (!authorized(req)) {
      auto a = answerOf(401, "missing or wrong credentials");
      a.headers.emplace_back("WWW-Authenticate", authType == "bearer" ? "Bearer" : "Basic realm=\"ferry\"");
      return a;
    }
    return std::nullopt;
  }

  // On the server's I/O thread: never blocks.
  void handle(httpc::WebhookRequest&& req, httpc::Reply reply) {
    auto topicName = topicFor(req.path);
    if (!topicName) return reply(answerOf(404, "no topic is mapped to this path"));
    const std::string* ct = req.header("content-type");
    const std::string contentType = ct != nullptr ? *ct : std::string();
    httpc::BodyOptions options;
    options.keyPath = keyPath.get();
    options.keyFromPartitionKey = keyHeader.empty();
    options.maxEvents = std::max<std::size_t>(maxPending, 1);
    // CloudEvents in the HTTP binding's binary mode: one event, its attributes in ce-* headers.
    const bool binaryEvent = httpc::isBinaryCloudEvent(req.headers, contentType);
    Result<std::vector<httpc::WebhookEvent>> events = std::vector<httpc::WebhookEvent>();
    if (binaryEvent) {
      auto one = httpc::parseBinaryCloudEvent(req.headers, contentType, req.body, options);
      if (one.isOk()) events->push_back(std::move(*one));
      else events = one.status();
    } else {
      events = httpc::parseWebhookBody(contentType, req.body, options);
    }
    if (!events.isOk()) {
      log->debug("{}: 400 for {} from {}: {}", name, req.path, req.remoteAddr, events.status().message());
      return reply(answerOf(400, events.status().message()));
    }
    const std::size_t n = events->size();
    if (n == 0) {
      httpc::WebhookAnswer a;
      a.body = "{\"accepted\":0}";
      return reply(std::move(a));
    }
    std::uint64_t id = 0;
    {
      std::lock_guard lock(mu);
      if (closed) return reply(failure(503, "the connector is stopping"));
      if (pending > 0 && pending + n > maxPending)
        return reply(failure(429, "too many events wait to be stored (http.max.pending.records); send again later"));
      pending += n;  // reserved; every record settles once, giving it back
      id = ++nextId;
    }
    auto request = std::make_shared<Request>(shared_from_this(), id, n, std::move(reply),
                                             core::monotonicMs() + ackTimeoutMs);
    const std::int64_t now = core::nowMs();
    const std::int64_t receivedNs = core::monotonicNs();
    Bytes contentTypeBytes = ct != nullptr ? Bytes::copyOf(*ct) : Bytes();
    Bytes pathBytes = Bytes::copyOf(req.path);
    Bytes headerKey;
    if (!keyHeader.empty())
      if (const std::string* k = req.header(keyHeader)) headerKey = Bytes::copyOf(*k);
    std::vector<std::pair<std::string, Bytes>> kept;
    for (const auto& name : includeHeaders)
      if (const std::string* v = req.header(name)) kept.emplace_back(name, Bytes::copyOf(*v));
    std::vector<Record> records;
    records.reserve(n);
    for (auto& e : *events) {
      Record r;
      r.topic = *topicName;
      if (e.hasValue) r.value = Bytes(std::move(e.value));
      if (!headerKey.isNull()) r.key = headerKey;
      else if (e.key) r.key = Bytes(std::move(*e.key));
      // A CloudEvent's headers are its attributes (content-type is its datacontenttype).
      if (!e.headers.empty()) r.headers = std::move(e.headers);
      else if (!contentTypeBytes.isNull()) r.headers.add("content-type", contentTypeBytes);
      r.headers.add("http.path", pathBytes);
      for (const auto& [hn, hv] : kept) r.headers.add(hn, hv);
      r.timestampMs = now;
      r.receivedNs = receivedNs;
      r.acknowledger = std::make_shared<RecordAck>(request);
      records.push_back(std::move(r));
    }
    SourceTaskContext* wake = nullptr;
    {
      std::lock_guard lock(mu);
      if (!closed) {
        open[id] = request;
        const bool wasEmpty = queue.empty();
        for (auto& r : records) queue.push_back(std::move(r));
        records.clear();
        if (wasEmpty) wake = context;
      }
    }
    // Stopped meanwhile: dropping the records releases them, which answers 503.
    records.clear();
    if (wake != nullptr) {
      cv.notify_one();
      wake->wakeup();
    }
  }

  // Task thread: answers 503 for requests that waited longer than http.ack.timeout.ms.
  void sweep() {
    const std::int64_t now = core::monotonicMs();
    if (now - lastSweepMs < 200) return;
    lastSweepMs = now;
    std::vector<std::shared_ptr<Request>> late;
    {
      std::lock_guard lock(mu);
      for (auto& [id, weak] : open)
        if (auto r = weak.lock(); r && r->deadlineMs <= now) late.push_back(std::move(r));
    }
    for (auto& r : late)
      r->finish(failure(503, "the events were not stored within http.ack.timeout.ms; send them again"));
  }

  // Whether a sender waits for the answer of records handed on.
  bool awaiting() {
    std::lock_guard lock(mu);
    return !open.empty();
  }

  std::size_t take(std::vector<Record>& out, std::size_t maxRecords, std::chrono::milliseconds maxWait) {
    std::unique_lock lock(mu);
    if (queue.empty() && maxWait.count() > 0) cv.wait_for(lock, maxWait, [&] { return closed || !queue.empty(); });
    std::size_t n = 0;
    while (!queue.empty() && n < maxRecords) {
      out.push_back(std::move(queue.front()));
      queue.pop_front();
      ++n;
    }
    return n;
  }

  void close() {
    std::deque<Record> dropped;
    std::vector<std::shared_ptr<Request>> unanswered;
    {
      std::lock_guard lock(mu);
      closed = true;
      context = nullptr;
      dropped.swap(queue);
      for (auto& [id, weak] : open)
        if (auto r = weak.lock()) unanswered.push_back(std::move(r));
    }
    cv.notify_all();
    for (auto& r : dropped)
      if (r.acknowledger) r.acknowledger->release(false);
    dropped.clear();
    for (auto& r : unanswered) r->finish(failure(503, "the connector is stopping; send the events again"));
    if (server) server->stop();
  }
};

// ---------------------------------------------------------------------------------------------
// Poll mode

struct HttpSourceTask::Poller {
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  char error[CURL_ERROR_SIZE] = {0};
  httpc::ClientSettings settings;
  std::string url;
  std::int64_t intervalMs = 10000;
  std::unique_ptr<httpc::JsonPath> cursorPath;
  std::string cursorHeader;  // lower-case
  std::string cursorParam = "cursor";
  std::unique_ptr<httpc::JsonPath> recordsPath;
  std::unique_ptr<httpc::JsonPath> keyPath;
  std::string topic;
  std::string cursor;
  StringMap partition;
  std::int64_t nextAtMs = 0;
  core::Backoff backoff{1000, 60000};
  int failures = 0;
  std::deque<Record> page;  // records of the last answer not yet returned
  std::string body;
  std::string cursorHeaderValue;
  std::shared_ptr<spdlog::logger> log;
  std::string name;

  ~Poller() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    curl_slist_free_all(headers);
  }

  static std::size_t onBody(char* data, std::size_t size, std::size_t n, void* user) {
    auto* p = static_cast<Poller*>(user);
    const std::size_t bytes = size * n;
    if (p->body.size() + bytes > (64u << 20)) return 0;  // refuse answers above 64 MiB
    p->body.append(data, bytes);
    return bytes;
  }
  static std::size_t onHeader(char* data, std::size_t size, std::size_t n, void* user) {
    auto* p = static_cast<Poller*>(user);
    const std::size_t bytes = size * n;
    if (p->cursorHeader.empty()) return bytes;
    std::string_view line(data, bytes);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return bytes;
    if (lower(line.substr(0, colon)) != p->cursorHeader) return bytes;
    std::string_view v = line.substr(colon + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
    p->cursorHeaderValue = std::string(v);
    return bytes;
  }

  void failed(const std::string& why) {
    ++failures;
    const std::int64_t delay = backoff.next();
    nextAtMs = core::monotonicMs() + delay;
    if (failures == 1 || failures % 10 == 0)
      log->warn("{}: polling {} failed ({} in a row), next attempt in {} ms: {}", name, url, failures, delay, why);
  }

  // One GET; fills `page`.
  void fetch() {
    std::string target = url;
    if (!cursor.empty())
      target += (url.find('?') == std::string::npos ? "?" : "&") + httpc::encodeComponent(cursorParam) + "=" +
                httpc::encodeComponent(cursor);
    body.clear();
    cursorHeaderValue.clear();
    error[0] = 0;
    curl_easy_setopt(easy, CURLOPT_URL, target.c_str());
    const CURLcode code = curl_easy_perform(easy);
    if (code != CURLE_OK) return failed(target + ": " + (error[0] != 0 ? std::string(error) : curl_easy_strerror(code)));
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status >= 300) return failed(httpc::describeAnswer(status, target, body));
    auto doc = core::parseJsonBounded<nlohmann::json>(body, core::kRecordJsonLimits);
    if (!doc.isOk()) return failed(target + ": the answer is not JSON: " + doc.status().message());
    std::string next = cursor;
    if (cursorPath) {
      if (const nlohmann::json* c = cursorPath->find(*doc))
        if (auto text = httpc::jsonText(*c)) next = *text;
    } else if (!cursorHeader.empty() && !cursorHeaderValue.empty()) {
      next = cursorHeaderValue;
    }
    std::vector<const nlohmann::json*> items;
    const nlohmann::json* at = recordsPath ? recordsPath->find(*doc) : &*doc;
    if (at != nullptr && at->is_array()) {
      for (const auto& e : *at) items.push_back(&e);
    } else if (at != nullptr && !at->is_null()) {
      items.push_back(at);
    }
    const std::int64_t now = core::nowMs();
    for (std::size_t i = 0; i < items.size(); ++i) {
      Record r;
      r.topic = topic;
      r.value = Bytes(items[i]->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      if (keyPath)
        if (const nlohmann::json* k = keyPath->find(*items[i]))
          if (auto text = httpc::jsonText(*k)) r.key = Bytes(std::move(*text));
      r.timestampMs = now;
      r.position.partition = partition;
      // Only the page's last record moves the cursor: a restart after part of a page was
      // committed asks for the same page again (duplicates, nothing lost).
      r.position.offset = {{"cursor", i + 1 == items.size() ? next : cursor}};
      page.push_back(std::move(r));
    }
    failures = 0;
    backoff.reset();
    const bool moved = next != cursor;
    cursor = next;
    nextAtMs = core::monotonicMs() + (!items.empty() && moved ? 0 : intervalMs);
  }
};

// ---------------------------------------------------------------------------------------------

const ConfigDef& HttpSourceConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("http.mode", ConfigType::kString, "webhook", Importance::kHigh,
             "webhook: an HTTP server takes events; poll: GET http.url on an interval.",
             validators::oneOf({"webhook", "poll"}));
    d.define("topic", ConfigType::kString, "", Importance::kHigh,
             "Topic of the records (webhook: of requests to http.path; poll: of every record).");
    // webhook
    d.define("http.listen", ConfigType::kString, "127.0.0.1:8080", Importance::kHigh,
             "webhook: host:port the server listens on (0.0.0.0:<port> for every interface).");
    d.define("http.path", ConfigType::kString, "/", Importance::kMedium,
             "webhook: the path served (with http.topic.template: the prefix of the paths served).");
    d.define("http.topic.template", ConfigType::kString, "", Importance::kMedium,
             "webhook: topic for any path below http.path, ${path} standing for the rest of the path "
             "('/' becomes '.', other characters outside [A-Za-z0-9._-] '_'); empty: use `topic`.");
    d.define("http.max.body.bytes", ConfigType::kLong, "10485760", Importance::kMedium,
             "webhook: largest request body; larger ones are answered 413.", validators::atLeast(1));
    d.define("http.max.pending.records", ConfigType::kInt, "10000", Importance::kMedium,
             "webhook: records accepted and not yet safe beyond which requests are answered 429.",
             validators::atLeast(1));
    d.define("http.retry.after.seconds", ConfigType::kInt, "1", Importance::kLow,
             "webhook: the Retry-After of 429 and 503 answers.", validators::atLeast(0));
    d.define("http.ack.timeout.ms", ConfigType::kLong, "30000", Importance::kLow,
             "webhook: a request whose records are not all safe by then is answered 503.",
             validators::atLeast(100));
    d.define("http.max.connections", ConfigType::kInt, "1024", Importance::kLow,
             "webhook: open connections; more are closed at once.", validators::atLeast(1));
    d.define("http.ssl.cert", ConfigType::kString, "", Importance::kMedium,
             "webhook: PEM certificate chain of the server; with http.ssl.key the server speaks HTTPS.");
    d.localPath("http.ssl.cert", LocalPath::kRead);
    d.define("http.ssl.key", ConfigType::kString, "", Importance::kMedium, "webhook: PEM private key of http.ssl.cert.");
    d.localPath("http.ssl.key", LocalPath::kRead);
    d.define("http.headers.include", ConfigType::kList, "", Importance::kLow,
             "webhook: request headers copied to record headers (besides content-type and http.path).");
    d.define("http.key.header", ConfigType::kString, "", Importance::kLow,
             "webhook: request header whose value is the record key (set: a CloudEvent's partitionkey "
             "is not the key).");
    d.define("http.key.json.path", ConfigType::kString, "", Importance::kLow,
             "JSON path in each event of the record key (e.g. $.id); empty: no key, except that a webhook "
             "CloudEvent's partitionkey extension is its key when neither this nor http.key.header is set.");
    // poll
    d.define("http.url", ConfigType::kString, "", Importance::kHigh, "poll: the URL to GET.");
    d.define("http.poll.interval.ms", ConfigType::kLong, "10000", Importance::kMedium,
             "poll: time between requests (a page with records and a new cursor is followed at once).",
             validators::atLeast(1));
    d.define("http.cursor.json.path", ConfigType::kString, "", Importance::kMedium,
             "poll: JSON path in the answer of the next cursor.");
    d.define("http.cursor.header", ConfigType::kString, "", Importance::kMedium,
             "poll: answer header holding the next cursor (when http.cursor.json.path is empty).");
    d.define("http.cursor.param", ConfigType::kString, "cursor", Importance::kMedium,
             "poll: query parameter the cursor is sent as.");
    d.define("http.cursor.initial", ConfigType::kString, "", Importance::kLow,
             "poll: cursor of the first request when none was committed; empty: no parameter.");
    d.define("http.records.json.path", ConfigType::kString, "", Importance::kMedium,
             "poll: JSON path of the array of records in the answer; empty: the whole answer.");
    httpc::defineClientKeys(d);
    return d;
  }();
  return def;
}

std::string HttpSourceConnector::version() const { return kVersion; }

void HttpSourceConnector::validate(const StringMap& config, ConfigValidation& v) const {
  auto p = definition().parse(config, false);
  if (!p.isOk()) return;
  const bool poll = p->getString("http.mode") == "poll";
  if (poll) {
    if (p->getString("http.url").empty()) v.errors["http.url"].push_back("required when http.mode=poll");
    if (p->getString("topic").empty()) v.errors["topic"].push_back("required when http.mode=poll");
  } else if (p->getString("topic").empty() && p->getString("http.topic.template").empty()) {
    v.errors["topic"].push_back("set topic or http.topic.template");
  }
  for (const char* key : {"http.key.json.path", "http.cursor.json.path", "http.records.json.path"})
    if (auto path = httpc::JsonPath::parse(p->getString(key)); !path.isOk())
      v.errors[key].push_back(path.status().message());
  const auto auth = p->getString("http.auth.type");
  if (auth == "bearer" && p->getString("http.auth.token").empty())
    v.errors["http.auth.token"].push_back("required when http.auth.type=bearer");
  if (auth == "basic" && p->getString("http.auth.user").empty())
    v.errors["http.auth.user"].push_back("required when http.auth.type=basic");
  if (p->getString("http.ssl.cert").empty() != p->getString("http.ssl.key").empty())
    v.errors["http.ssl.key"].push_back("http.ssl.cert and http.ssl.key go together");
}

Status HttpSourceConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "HttpSource"));
  ConfigValidation v;
  validate(config, v);
  if (!v.errors.empty()) return Status::invalidArgument("HttpSource: " + v.summary());
  (void)parsed;
  config_ = config;
  return Status::ok();
}

Result<std::vector<StringMap>> HttpSourceConnector::taskConfigs(int maxTasks) {
  (void)maxTasks;
  // One task: the listening port (or the polled cursor) belongs to the connector.
  return std::vector<StringMap>{config_};
}

std::unique_ptr<SourceTask> HttpSourceConnector::createTask() { return std::make_unique<HttpSourceTask>(); }

HttpSourceTask::HttpSourceTask() : log_(core::logger("http-source")) {}

HttpSourceTask::~HttpSourceTask() { stop(); }

std::string HttpSourceTask::version() const { return kVersion; }

int HttpSourceTask::port() const noexcept { return webhook_ && webhook_->server ? webhook_->server->port() : 0; }

Status HttpSourceTask::start(const StringMap& config, SourceTaskContext& context) {
  stop();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(HttpSourceConnector::definition(), config, "HttpSource task"));
  context_ = &context;
  auto open = [&context](const std::string& path) { return context.openLocalFile(path, LocalPath::kRead); };
  std::unique_ptr<httpc::JsonPath> keyPath;
  if (auto text = p.getString("http.key.json.path"); !text.empty()) {
    FERRY_ASSIGN_OR_RETURN(auto path, httpc::JsonPath::parse(text));
    keyPath = std::make_unique<httpc::JsonPath>(std::move(path));
  }
  const std::string name = context.connectorName();

  if (p.getString("http.mode") == "poll") {
    httpc::ensureCurlGlobalInit();
    auto poller = std::make_unique<Poller>();
    poller->log = log_;
    poller->name = name;
    poller->url = p.getString("http.url");
    poller->topic = p.getString("topic");
    if (poller->url.empty() || poller->topic.empty())
      return Status::invalidArgument("HttpSource: http.mode=poll needs http.url and topic");
    poller->intervalMs = p.getLong("http.poll.interval.ms");
    if (auto text = p.getString("http.cursor.json.path"); !text.empty()) {
      FERRY_ASSIGN_OR_RETURN(auto path, httpc::JsonPath::parse(text));
      poller->cursorPath = std::make_unique<httpc::JsonPath>(std::move(path));
    }
    if (auto text = p.getString("http.records.json.path"); !text.empty()) {
      FERRY_ASSIGN_OR_RETURN(auto path, httpc::JsonPath::parse(text));
      poller->recordsPath = std::make_unique<httpc::JsonPath>(std::move(path));
    }
    poller->keyPath = std::move(keyPath);
    poller->cursorHeader = lower(p.getString("http.cursor.header"));
    poller->cursorParam = p.getString("http.cursor.param");
    auto settings = httpc::clientSettings(p, open);
    if (!settings.isOk()) return settings.status().withContext("HttpSource");
    poller->settings = std::move(*settings);
    poller->easy = curl_easy_init();
    if (poller->easy == nullptr) return Status::internal("HttpSource: curl_easy_init failed");
    poller->headers = httpc::applySettings(poller->easy, poller->settings, {"Accept: application/json"}, poller->error);
    if (poller->headers == nullptr) return Status::internal("HttpSource: out of memory for the request headers");
    curl_easy_setopt(poller->easy, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(poller->easy, CURLOPT_WRITEFUNCTION, &Poller::onBody);
    curl_easy_setopt(poller->easy, CURLOPT_WRITEDATA, poller.get());
    curl_easy_setopt(poller->easy, CURLOPT_HEADERFUNCTION, &Poller::onHeader);
    curl_easy_setopt(poller->easy, CURLOPT_HEADERDATA, poller.get());
    poller->partition = {{"url", poller->url}};
    poller->cursor = p.getString("http.cursor.initial");
    if (auto committed = context.committedOffset(poller->partition)) {
      if (auto it = committed->find("cursor"); it != committed->end()) poller->cursor = it->second;
    }
    log_->info("{} task {}: polling {} every {} ms from cursor '{}'", name, context.taskId(), poller->url,
               poller->intervalMs, poller->cursor);
    poller_ = std::move(poller);
    return Status::ok();
  }

  auto w = std::make_shared<Webhook>();
  w->log = log_;
  w->name = name;
  w->path = stripSlash(p.getString("http.path"));
  if (w->path.empty() || w->path.front() != '/') w->path = "/" + w->path;
  w->topic = p.getString("topic");
  w->topicTemplate = p.getString("http.topic.template");
  if (w->topic.empty() && w->topicTemplate.empty())
    return Status::invalidArgument("HttpSource: set topic or http.topic.template");
  w->authType = lower(p.getString("http.auth.type"));
  w->token = p.getString("http.auth.token");
  w->basic = p.getString("http.auth.user") + ":" + p.getString("http.auth.password");
  if (w->authType == "bearer" && w->token.empty())
    return Status::invalidArgument("HttpSource: http.auth.token is required when http.auth.type=bearer");
  if (w->authType == "basic" && p.getString("http.auth.user").empty())
    return Status::invalidArgument("HttpSource: http.auth.user is required when http.auth.type=basic");
  w->maxPending = static_cast<std::size_t>(p.getInt("http.max.pending.records"));
  w->retryAfterSeconds = p.getInt("http.retry.after.seconds");
  w->ackTimeoutMs = p.getLong("http.ack.timeout.ms");
  for (const auto& h : p.getList("http.headers.include")) w->includeHeaders.push_back(lower(h));
  w->keyHeader = lower(p.getString("http.key.header"));
  w->keyPath = std::move(keyPath);
  w->context = &context;

  httpc::WebhookServerOptions options;
  const std::string listen = p.getString("http.listen");
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Status::invalidArgument("HttpSource: http.listen '" + listen + "' is not host:port");
  options.host = listen.substr(0, colon);
  if (options.host.size() >= 2 && options.host.front() == '[' && options.host.back() == ']')
    options.host = options.host.substr(1, options.host.size() - 2);
  try {
    std::size_t used = 0;
    options.port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1 || options.port < 0 || options.port > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    return Status::invalidArgument("HttpSource: http.listen '" + listen + "' has no valid port");
  }
  options.maxBodyBytes = static_cast<std::uint64_t>(p.getLong("http.max.body.bytes"));
  options.maxConnections = static_cast<std::size_t>(p.getInt("http.max.connections"));
  if (auto cert = p.getString("http.ssl.cert"); !cert.empty()) {
    FERRY_ASSIGN_OR_RETURN(options.certPem, httpc::readLocalFile(cert, open, "http.ssl.cert"));
    FERRY_ASSIGN_OR_RETURN(options.keyPem, httpc::readLocalFile(p.getString("http.ssl.key"), open, "http.ssl.key"));
  }
  Webhook* raw = w.get();
  options.checkHeader = [raw](const httpc::WebhookRequest& req) { return raw->checkHeader(req); };
  options.handle = [raw](httpc::WebhookRequest&& req, httpc::Reply reply) { raw->handle(std::move(req), std::move(reply)); };
  w->server = std::make_unique<httpc::WebhookServer>(std::move(options));
  if (Status s = w->server->start(); !s.isOk()) return s.withContext("HttpSource");
  log_->info("{} task {}: webhook server on {}:{}{} ({}), path {}", name, context.taskId(), listen.substr(0, colon),
             w->server->port(), p.getString("http.ssl.cert").empty() ? "" : " (TLS)", w->authType, w->path);
  webhook_ = std::move(w);
  return Status::ok();
}

Result<std::size_t> HttpSourceTask::poll(std::vector<Record>& out, std::size_t maxRecords,
                                         std::chrono::milliseconds maxWait) {
  if (maxRecords == 0) maxRecords = 1;
  if (webhook_) {
    webhook_->sweep();
    const std::size_t n = webhook_->take(out, maxRecords, maxWait);
    // Senders wait for their answer until the records are safe: ask for the commit that makes
    // them so now rather than at the next offset.flush.interval.ms (up to a second per request).
    if (n > 0 && context_ != nullptr) context_->requestCommit();
    return n;
  }
  if (!poller_) return Status::failedPrecondition("HttpSource: poll() before start()");
  Poller& p = *poller_;
  if (p.page.empty()) {
    const std::int64_t now = core::monotonicMs();
    if (now < p.nextAtMs) {
      const auto wait = std::min<std::int64_t>(p.nextAtMs - now, maxWait.count());
      if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait));
      if (core::monotonicMs() < p.nextAtMs) return std::size_t{0};
    }
    p.fetch();
  }
  std::size_t n = 0;
  while (!p.page.empty() && n < maxRecords) {
    out.push_back(std::move(p.page.front()));
    p.page.pop_front();
    ++n;
  }
  return n;
}

std::chrono::milliseconds HttpSourceTask::idlePollDelay() const {
  // The runtime hands acknowledgements (records safe in the backbone) to the task's loop when it
  // runs, and an idle notify task runs at the latest after this delay: while a sender waits for
  // its answer, come back soon, or each answer waits out the idle delay (500 ms).
  if (webhook_ && webhook_->awaiting()) return std::chrono::milliseconds(2);
  return std::chrono::milliseconds(500);
}

void HttpSourceTask::stop() {
  if (webhook_) {
    webhook_->close();
    webhook_.reset();
  }
  poller_.reset();
}

}  // namespace ferry::connectors
