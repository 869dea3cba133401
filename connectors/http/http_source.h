// HttpSource: events that arrive over HTTP, in one of two modes (http.mode).
//
// webhook (the default): an HTTP(S) server on http.listen takes POST/PUT requests. The path picks
// the topic (http.path -> `topic`, or any path below http.path through http.topic.template with
// ${path}); the body becomes events by its Content-Type (webhook_body.h: one JSON event, a JSON
// array, NDJSON, or raw bytes). Each event is a record whose Acknowledger belongs to its request:
// the 2xx answer goes out only once the runtime reported every record of the request safe (in
// the backbone, or flushed by the sink of a direct task), so a 2xx means at-least-once delivery
// end to end. A record released undelivered, http.ack.timeout.ms passing, or the task stopping
// answers 503 (with Retry-After): the sender sends again, and records already safe arrive twice.
// Refusals make no records: 401 (http.auth.type basic / bearer, credentials wrong or missing),
// 404 (no topic for the path), 405 (not POST/PUT), 413 (body above http.max.body.bytes), 400
// (malformed JSON / NDJSON, naming the line), 429 + Retry-After when more than
// http.max.pending.records records wait for their answer. Records: value = the event; key from
// http.key.header or http.key.json.path; headers content-type, http.path, those named by
// http.headers.include (lower-case names) and, for CloudEvents in binary mode, every ce-<attr>
// request header as ce_<attr> (the Kafka binding's names); each event of a CloudEvents batch
// (application/cloudevents-batch+json, a JSON array) is a record with content-type
// application/cloudevents+json; timestamp = arrival. No position: a webhook cannot be
// replayed, the sender's retry carries delivery. One task (the port is the connector's).
//
// poll (http.mode=poll): GET http.url every http.poll.interval.ms (at once again while pages
// come with records and a new cursor). A cursor from http.cursor.json.path of the answer or from
// the http.cursor.header header is sent as the query parameter http.cursor.param of the next
// request. Records are the elements of the JSON array at http.records.json.path (or the whole
// answer; an object is one record). The cursor is the records' position (partition {url},
// offset {cursor}): the page's last record carries the new cursor, the others the one the page was
// asked with, so a restart resumes from the committed cursor and at worst repeats one page.
// Failures (no answer, non-2xx, not JSON) are logged and retried after a growing backoff.
//
// Threading: start/poll/stop on the task thread. Webhook mode: the server's I/O thread parses
// requests and queues records under `Webhook::mu`, waking the runtime (kNotify) when the queue
// turns non-empty; acknowledgers run on whatever thread the runtime settles records and post
// the answer to the I/O thread. Poll mode is a kBlocking task: poll() performs the GET.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ferry/connector.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class HttpSourceConnector final : public SourceConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override;
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override;

 private:
  StringMap config_;
};

class HttpSourceTask final : public SourceTask {
 public:
  HttpSourceTask();
  ~HttpSourceTask() override;
  std::string version() const override;
  PollMode pollMode() const override { return webhook_ ? PollMode::kNotify : PollMode::kBlocking; }
  std::chrono::milliseconds idlePollDelay() const override;
  Status start(const StringMap& config, SourceTaskContext& context) override;
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override;
  void stop() override;

  // The webhook server's bound port (0 before start or in poll mode).
  int port() const noexcept;

  struct Webhook;  // http_source.cc
  struct Poller;

 private:
  std::shared_ptr<spdlog::logger> log_;
  SourceTaskContext* context_ = nullptr;
  std::shared_ptr<Webhook> webhook_;
  std::unique_ptr<Poller> poller_;
};

}  // namespace ferry::connectors
