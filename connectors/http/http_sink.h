// HttpSink: sends records to an HTTP endpoint with libcurl (see README.md for why libcurl).
//
// Requests: http.method (POST or PUT) to http.url, a core::RecordTemplate (${topic}, ${key},
// ${header:<name>}, ${value:<path>}, ...; bytes a URL may not hold are percent-encoded after
// rendering). http.batch.format=one sends each record's value as the body; json-array and ndjson
// send consecutive records of one lane with the same URL in one body (at most
// http.batch.max.records records and about http.batch.max.bytes bytes; a value that is not JSON
// is sent as a JSON string, a tombstone as null).
//
// CloudEvents (core/cloudevents.h): http.batch.format=cloudevents sends consecutive records of a
// lane with the same URL as one application/cloudevents-batch+json array, cloudevents-structured
// one application/cloudevents+json event per request, cloudevents-binary one request per record
// in the HTTP binding's binary mode (ce-<attr> headers, percent-encoded; Content-Type the
// datacontenttype; the body the data). A record's event is its value when its content-type header
// is application/cloudevents+json (a structured event, as the CloudEvent transform or
// CloudEventsConverter write it), else its ce_* headers and value (binary mode, as HttpSource,
// CloudEvent mode=binary or CloudEventsConverter write it). A record that is neither, or whose
// event is invalid, goes to SinkTaskContext::reportBadRecord at put() with the reason.
//
// Order and concurrency: records are spread over http.max.in.flight lanes, by a hash of the key
// (records without a key round robin). A lane has at most one request outstanding, so at most
// http.max.in.flight requests are in flight and records of one key never overtake each other, even
// across retries. Each lane keeps its own libcurl easy handle on one multi handle: connections are
// kept alive and reused.
//
// Answers: 2xx done. 408, 429, 5xx, and failures without an answer (refused, reset, timed out,
// not HTTP) are retried, for ever, after an exponential backoff (http.retry.backoff.ms doubling up
// to http.retry.backoff.max.ms), waiting at least what a Retry-After header says (seconds or an
// HTTP date, at most 10 minutes). Any other status (3xx, 4xx) means the records are bad: each of
// them goes to SinkTaskContext::reportBadRecord (errors.tolerance, dead letter queue) with the
// status and the first 512 bytes of the answer. flush() returns once every record put so far has
// its final answer (and its bad records are reported), or after http.flush.timeout.ms with a
// retriable error naming the last failure (the runtime retries the flush; records stay queued).
//
// Threading: put(), flush(), readyForPut() and stop() are the task thread's. One I/O thread
// ("http-sink-io") per task owns the multi handle, the easy handles and the lanes' requests and
// drives them with libcurl's socket interface on an epoll set of its own; the task thread hands
// each put()'s records over per lane through `incoming_` under `mu_` (one lock per put, not per
// record) and wakes it through an eventfd. The I/O thread hands back what its requests settled
// (counts, bad records) once per round of its loop, and wakes a flush() only when nothing is left
// outstanding. Bad records are reported on the task thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "connectors/http/http_client.h"
#include "core/record_template.h"
#include "ferry/connector.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class HttpSinkConnector final : public SinkConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override;
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;

 private:
  StringMap config_;
};

class HttpSinkTask final : public SinkTask {
 public:
  HttpSinkTask();
  ~HttpSinkTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  bool readyForPut() override;
  Status flush() override;
  void stop() override;

  struct Io;  // the I/O thread's state (http_sink.cc)

 private:
  enum class Format { kOne, kJsonArray, kNdjson, kCloudEvents, kCloudEventsStructured, kCloudEventsBinary };
  struct Queued {
    Record record;
    std::string url;                   // empty when http.url has no placeholder (Io::constantUrl)
    std::size_t lane = 0;
    std::string body;                  // CloudEvents formats: the event's JSON, or (binary) its data
    std::vector<std::string> headers;  // cloudevents-binary: "ce-<attr>: <value>", Content-Type
  };
  struct Bad {
    Record record;
    Status reason;
  };

  Status reportBad();
  // A CloudEvents format: the event `r` is (see the file comment) rendered into `q`.
  Status renderEvent(const Record& r, Queued& q) const;
  void ioLoop();
  void wakeIo();  // the I/O thread looks at incoming_ and stopping_

  std::shared_ptr<spdlog::logger> log_;
  SinkTaskContext* context_ = nullptr;
  std::unique_ptr<core::RecordTemplate> url_;
  bool constantUrl_ = false;  // http.url has no placeholder: rendered once, at start()
  Format format_ = Format::kOne;
  std::string binaryContentType_;  // cloudevents-binary: Content-Type of data without datacontenttype
  std::size_t lanes_ = 1;
  std::size_t nextLane_ = 0;  // task thread: round robin for records without a key
  std::size_t maxBuffered_ = 20000;
  std::int64_t flushTimeoutMs_ = 60000;

  std::mutex mu_;
  std::condition_variable settled_;  // nothing outstanding any more (flush), or stopping
  std::vector<std::deque<Queued>> incoming_;  // guarded by mu_: per lane, put and not yet taken by the I/O thread
  std::vector<Bad> bad_;             // guarded by mu_: final 3xx/4xx answers, not reported yet
  std::size_t outstanding_ = 0;      // guarded by mu_: put and without a final answer
  std::string lastError_;            // guarded by mu_: the last retriable failure, for messages
  bool stopping_ = false;            // guarded by mu_
  bool blocked_ = false;             // guarded by mu_: readyForPut() said no; wake() when room

  std::unique_ptr<Io> io_;
  int wakeFd_ = -1;  // an eventfd in the I/O thread's epoll set (owned by io_)
  std::thread thread_;
};

}  // namespace ferry::connectors
