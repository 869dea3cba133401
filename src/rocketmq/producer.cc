// Producer: one Attempt object per send carries the encoded request and the retry state through
// the async callbacks; the synchronous calls wait on a promise fed by the same path, so retries
// behave identically for both.
#include "rocketmq/producer.h"

#include <future>
#include <optional>
#include <random>
#include <utility>

#include "core/backoff.h"
#include "core/clock.h"
#include "core/logging.h"

namespace ferry::rocketmq {
namespace {

bool retriableCode(std::int32_t code) {
  switch (code) {
    case 1: case 2: case 14: case 16: case 17: case 204: case 205: case 1500: return true;
    default: return false;
  }
}

// The Java producer retries every code above. A 16 NO_PERMISSION is worth another attempt (on
// another broker) only when it is a broker's or topic's write permission ("the topic[..] sending
// message is forbidden"); an ACL refusal (16 on 5.x, 1 + AclException on 4.x, which the client
// turns into 16) fails the same way again.
bool retriableResponse(const RemotingCommand& r) {
  if (!retriableCode(r.code)) return false;
  if (isAclRefusal(r)) {
    return r.code == kRespNoPermission && r.remark &&
           r.remark->find("sending message is forbidden") != std::string::npos;
  }
  return true;
}

std::uint64_t randomStart() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

std::uint32_t keyHash(std::string_view key) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : key) {
    h ^= c;
    h *= 16777619u;
  }
  return h & 0x7fffffffu;
}

struct Producer::Attempt {
  std::string topic;
  bool batch = false;
  std::int32_t flag = 0;
  std::string body;
  std::int32_t sysFlag = 0;  // COMPRESSED (+ zlib type) when the body was compressed
  std::string properties;  // encoded header properties
  std::string msgId;       // UNIQ_KEY(s)
  // A batch sent as single SEND_MESSAGE_V2s (a signing client and a 4.x broker, see run()):
  // the messages, how many are stored, and what the stored ones answered.
  std::string versionCheckedFor;  // broker address whose version decided `split`
  bool split = false;
  std::vector<OutgoingMessage> parts;
  std::size_t partsDone = 0;
  SendResult partsResult;
  QueueSelection selection;
  TopicRoute route;
  std::vector<MessageQueue> queues;
  MessageQueue queue;
  int attemptsLeft = 0;
  bool attemptsUsed = false;  // sent at least once (sendPrepared() resets the retry state)
  std::optional<core::RetryBudget> busy;  // from the broker's first SYSTEM_BUSY answer
  std::uint64_t epoch = 0;  // Producer::epoch_ when it was prepared
  SendCallback callback;
};

namespace {

// SYSTEM_BUSY: the pause before the next try grows from 10 ms to 400 ms (ProducerOptions::busyRetryMs).
constexpr std::int64_t kBusyDelayInitialMs = 10;
constexpr std::int64_t kBusyDelayMaxMs = 400;

// The callback is dropped once called: it may hold the attempt (a PreparedSend kept for a resend).
void finish(Producer::Attempt& a, Result<SendResult> result) {
  SendCallback cb = std::exchange(a.callback, nullptr);
  cb(std::move(result));
}

}  // namespace

Producer::Producer(RocketmqClient& client, ProducerOptions options)
    : client_(client), options_(std::move(options)), counter_(randomStart()) {}

Producer::~Producer() = default;

Result<std::shared_ptr<Producer::Attempt>> Producer::prepare(std::vector<OutgoingMessage>& messages,
                                                             const QueueSelection& selection,
                                                             bool batch) {
  if (messages.empty()) return Status::invalidArgument("rocketmq send: no message");
  const std::string& topic = messages.front().topic;
  if (topic.empty()) return Status::invalidArgument("rocketmq send: message without a topic");
  for (const auto& m : messages) {
    if (m.topic != topic) {
      return Status::invalidArgument("rocketmq batch send: messages of different topics ('" +
                                     topic + "', '" + m.topic + "')");
    }
    if (m.body.empty()) {
      return Status::invalidArgument("rocketmq send: empty message body (topic '" + topic +
                                     "'); RocketMQ refuses empty bodies");
    }
  }
  // Like the Java producer, the size is checked before compression (a broker would accept a
  // compressed body that a Java client refuses).
  std::size_t total = 0;
  for (const auto& m : messages) total += m.body.size();
  if (options_.maxMessageBytes > 0 && total > static_cast<std::size_t>(options_.maxMessageBytes)) {
    return Status::invalidArgument("rocketmq send: " + std::string(batch ? "batch bodies of " : "body of ") +
                                   std::to_string(total) + " bytes over the limit of " +
                                   std::to_string(options_.maxMessageBytes) +
                                   " (the broker's default maxMessageSize; ProducerOptions::maxMessageBytes)");
  }
  auto attempt = std::make_shared<Attempt>();
  attempt->topic = topic;
  attempt->batch = batch;
  attempt->selection = selection;
  if (selection.kind == QueueSelection::Kind::kDefault) {
    attempt->selection.kind = QueueSelection::Kind::kRoundRobin;
    if (options_.selector == ProducerOptions::Selector::kKeyHash) {
      auto keys = messages.front().properties.find(kPropKeys);
      if (keys != messages.front().properties.end() && !keys->second.empty()) {
        attempt->selection = QueueSelection::byKey(keys->second);
      }
    }
  }
  // Everything that can fail comes before `messages` are touched (a caller keeps them to retry).
  FERRY_RETURN_IF_ERROR(route(*attempt));
  if (!batch) {
    OutgoingMessage& m = messages.front();
    auto& props = m.properties;
    if (props.find(kPropUniqKey) == props.end()) props[kPropUniqKey] = newUniqKey();
    if (props.find(kPropWait) == props.end()) props[kPropWait] = "true";
    attempt->msgId = props[kPropUniqKey];
    attempt->flag = m.flag;
    attempt->properties = encodeProperties(props);
    attempt->body = std::move(m.body);
    // Like the Java producer: a single message's body at or over the threshold is sent
    // zlib-compressed (level 5) with sysFlag COMPRESSED | ZLIB type; batches never are.
    if (options_.compressOverBytes > 0 &&
        attempt->body.size() >= static_cast<std::size_t>(options_.compressOverBytes)) {
      auto packed = compressZlib(attempt->body, 5);
      if (packed.isOk() && packed->size() < attempt->body.size()) {
        attempt->body = std::move(*packed);
        attempt->sysFlag = kSysFlagCompressedZlib;
      }
    }
  } else {
    for (auto& m : messages) {
      if (m.properties.find(kPropUniqKey) == m.properties.end()) {
        m.properties[kPropUniqKey] = newUniqKey();
      }
      // Every message carries WAIT as the Java client's do (5.5.x stores a batch's messages
      // with their own properties only, without the wrapper's).
      if (m.properties.find(kPropWait) == m.properties.end()) m.properties[kPropWait] = "true";
      if (!attempt->msgId.empty()) attempt->msgId += ",";
      attempt->msgId += m.properties[kPropUniqKey];
    }
    // As the Java client's MessageBatch: the wrapper carries WAIT only. 4.x and 5.3 brokers
    // append the wrapper's properties to every inner message's (the last duplicate wins when
    // read), so a UNIQ_KEY here would give the whole batch one message id.
    attempt->properties = encodeProperties({{kPropWait, "true"}});
    attempt->body = encodeBatchBody(messages);
  }
  return attempt;
}

Status Producer::route(Attempt& a) {
  FERRY_ASSIGN_OR_RETURN(a.route, client_.queryRoute(a.topic));
  a.queues = a.route.publishQueues();
  if (a.queues.empty() && a.selection.kind != QueueSelection::Kind::kExplicit) {
    return Status::unavailable("rocketmq send: topic '" + a.topic + "' has no writable queue");
  }
  a.attemptsLeft = options_.retries < 0 ? 0 : options_.retries;
  a.busy.reset();
  a.epoch = epoch_.load();
  if (!pickQueue(a, {})) {
    return Status::notFound("rocketmq send: broker '" + a.selection.brokerName +
                            "' does not host topic '" + a.topic + "'");
  }
  return Status::ok();
}

bool Producer::pickQueue(Attempt& a, const std::string& avoidBroker) {
  switch (a.selection.kind) {
    case QueueSelection::Kind::kExplicit:
      a.queue = {a.topic, a.selection.brokerName, a.selection.queueId};
      return a.route.masterAddress(a.selection.brokerName).has_value();
    case QueueSelection::Kind::kKeyHash:
      a.queue = a.queues[keyHash(a.selection.key) % a.queues.size()];
      return true;
    default: {
      const std::uint64_t start = counter_.fetch_add(1, std::memory_order_relaxed);
      const std::size_t n = a.queues.size();
      if (!avoidBroker.empty()) {
        for (std::size_t i = 0; i < n; ++i) {
          const auto& q = a.queues[(start + i) % n];
          if (q.brokerName != avoidBroker) {
            a.queue = q;
            return true;
          }
        }
      }
      a.queue = a.queues[start % n];
      return true;
    }
  }
}

namespace {

RemotingCommand sendRequest(const std::string& group, const std::string& topic,
                            const MessageQueue& queue, bool v1, bool batch, std::int32_t sysFlag,
                            std::int32_t flag, const std::string& properties, std::string body) {
  RemotingCommand req;
  req.code = batch ? kCodeSendBatchMessage : (v1 ? kCodeSendMessage : kCodeSendMessageV2);
  auto& f = req.extFields;
  f[v1 ? "producerGroup" : "a"] = group;
  f[v1 ? "topic" : "b"] = topic;
  f[v1 ? "defaultTopic" : "c"] = "TBW102";
  f[v1 ? "defaultTopicQueueNums" : "d"] = "4";
  f[v1 ? "queueId" : "e"] = std::to_string(queue.queueId);
  f[v1 ? "sysFlag" : "f"] = std::to_string(sysFlag);
  f[v1 ? "bornTimestamp" : "g"] = std::to_string(core::nowMs());
  f[v1 ? "flag" : "h"] = std::to_string(flag);
  f[v1 ? "properties" : "i"] = properties;
  f[v1 ? "reconsumeTimes" : "j"] = "0";
  f[v1 ? "unitMode" : "k"] = "false";
  f[v1 ? "batch" : "m"] = batch ? "true" : "false";
  f[v1 ? "bname" : "n"] = queue.brokerName;
  req.body = std::move(body);
  return req;
}

}  // namespace

void Producer::retryOrFail(const std::shared_ptr<Attempt>& a, const Result<RemotingCommand>& r) {
  Status error;
  bool retry = false;
  bool busy = false;
  const std::string what = "send to " + a->queue.toString();
  if (r.isOk()) {
    error = responseStatus(*r, what);
    retry = retriableResponse(*r);
    busy = r->code == kRespSystemBusy && options_.busyRetryMs > 0;
    if (r->code == kRespTopicNotExist) client_.invalidateRoute(a->topic);
  } else {
    error = r.status().withContext(what);
    retry = r.status().code() == StatusCode::kUnavailable ||
            r.status().code() == StatusCode::kTimeout;
  }
  if (retry && a->epoch != epoch_.load()) {
    finish(*a, error.withContext("not retried: abandoned"));  // abandonRetries() since it was prepared
    return;
  }
  if (busy) {
    if (!a->busy) a->busy.emplace(options_.busyRetryMs, kBusyDelayMaxMs, core::Clock::system(), kBusyDelayInitialMs);
    const std::optional<std::int64_t> delay = a->busy->onFailure();
    if (!delay) {
      finish(*a, error.withContext("still busy after " + std::to_string(a->busy->retries() + 1) +
                                   " answer(s) over " + std::to_string(a->busy->failingForMs()) + " ms"));
      return;
    }
    // ±50 %, so the sends a busy broker refused together do not all come back together.
    thread_local std::minstd_rand random(std::random_device{}());
    const std::int64_t jittered = *delay / 2 + static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(*delay + 1));
    pickQueue(*a, a->queue.brokerName);
    client_.runAfter(std::chrono::milliseconds(jittered), [this, a, error] {
      if (a->epoch != epoch_.load()) {
        finish(*a, error.withContext("not retried: abandoned"));
        return;
      }
      run(a);
    });
    return;
  }
  if (!retry || a->attemptsLeft <= 0) {
    finish(*a, std::move(error));
    return;
  }
  --a->attemptsLeft;
  pickQueue(*a, a->queue.brokerName);
  run(a);
}

void Producer::run(std::shared_ptr<Attempt> a) {
  auto addr = a->route.masterAddress(a->queue.brokerName);
  if (!addr) {
    finish(*a, Status::unavailable("rocketmq send: broker '" + a->queue.brokerName +
                                    "' has no master in the route of '" + a->topic + "'"));
    return;
  }
  // A 4.x broker with ACL 1.0 checks no topic permission for SEND_BATCH_MESSAGE (its
  // PlainAccessValidator has no case for code 320), so an account without PUB could write
  // through a batch. A signing client therefore sends a batch to a 4.x broker (or one whose
  // version cannot be told) as single SEND_MESSAGE_V2s, which that broker does check.
  if (a->batch && client_.signsRequests() && a->versionCheckedFor != *addr) {
    a->versionCheckedFor = *addr;
    client_.brokerVersionAsync(*addr, [this, a](Result<std::int32_t> v) {
      a->split = !v.isOk() || isV4OrOlder(*v);
      run(a);
    });
    return;
  }
  if (a->batch && a->split) {
    runSplit(a, *addr);
    return;
  }
  RemotingCommand req =
      sendRequest(options_.group, a->topic, a->queue, options_.useV1Header && !a->batch, a->batch,
                  a->sysFlag, a->flag, a->properties, a->body);
  client_.invokeAsync(*addr, std::move(req), options_.sendTimeoutMs, [this, a](
                                                                         Result<RemotingCommand> r) {
    if (r.isOk() && r->code == kRespSuccess) {
      SendResult out;
      out.brokerName = a->queue.brokerName;
      out.queueId = static_cast<std::int32_t>(r->extInt("queueId").value_or(a->queue.queueId));
      out.queueOffset = r->extInt("queueOffset").value_or(-1);
      out.msgId = a->msgId;
      out.offsetMsgId = r->ext("msgId").value_or("");
      finish(*a, std::move(out));
      return;
    }
    retryOrFail(a, r);
  });
}

// One message of a split batch after the other (not pipelined: a broker runs sends on several
// threads, so pipelined sends to one queue could be stored out of order and with gaps between
// the offsets of one batch). A retry resumes with the first message not yet stored.
void Producer::runSplit(std::shared_ptr<Attempt> a, const std::string& addr) {
  if (a->parts.empty()) {
    auto parts = decodeBatchBody(a->body);
    if (!parts.isOk()) {
      finish(*a, parts.status().withContext("rocketmq send: splitting a batch"));
      return;
    }
    a->parts = std::move(parts).value();
  }
  OutgoingMessage& m = a->parts[a->partsDone];
  if (m.properties.find(kPropWait) == m.properties.end()) m.properties[kPropWait] = "true";
  RemotingCommand req = sendRequest(options_.group, a->topic, a->queue, false, false, 0, m.flag,
                                    encodeProperties(m.properties), m.body);
  client_.invokeAsync(addr, std::move(req), options_.sendTimeoutMs, [this, a, addr](
                                                                        Result<RemotingCommand> r) {
    if (r.isOk() && r->code == kRespSuccess) {
      SendResult& out = a->partsResult;
      if (a->partsDone == 0) {
        out.brokerName = a->queue.brokerName;
        out.queueId = static_cast<std::int32_t>(r->extInt("queueId").value_or(a->queue.queueId));
        out.queueOffset = r->extInt("queueOffset").value_or(-1);
        out.msgId = a->msgId;
      } else {
        out.offsetMsgId += ",";
      }
      out.offsetMsgId += r->ext("msgId").value_or("");
      out.queueOffsets.push_back(r->extInt("queueOffset").value_or(-1));
      if (++a->partsDone == a->parts.size()) {
        finish(*a, std::move(out));
        return;
      }
      runSplit(a, addr);
      return;
    }
    retryOrFail(a, r);
  });
}

void Producer::sendAsync(OutgoingMessage message, const QueueSelection& selection,
                         SendCallback callback) {
  std::vector<OutgoingMessage> one;
  one.push_back(std::move(message));
  auto a = prepare(one, selection, false);
  if (!a.isOk()) {
    callback(a.status());
    return;
  }
  (*a)->callback = std::move(callback);
  run(*a);
}

void Producer::sendBatchAsync(std::vector<OutgoingMessage> messages,
                              const QueueSelection& selection, SendCallback callback) {
  auto a = prepare(messages, selection, true);
  if (!a.isOk()) {
    callback(a.status());
    return;
  }
  (*a)->callback = std::move(callback);
  run(*a);
}

Result<Producer::PreparedSend> Producer::prepareSend(std::vector<OutgoingMessage>& messages,
                                                     const QueueSelection& selection) {
  PreparedSend p;
  p.count_ = messages.size();
  FERRY_ASSIGN_OR_RETURN(p.attempt_, prepare(messages, selection, messages.size() > 1));
  messages.clear();
  return p;
}

void Producer::sendPrepared(const PreparedSend& p, SendCallback callback) {
  const std::shared_ptr<Attempt>& a = p.attempt_;
  if (!a) {
    callback(Status::invalidArgument("rocketmq send: an empty PreparedSend"));
    return;
  }
  if (a->attemptsUsed) {
    // Sent before: a fresh retry budget, the current epoch, and the route as it is now.
    if (Status s = route(*a); !s.isOk()) {
      callback(std::move(s));
      return;
    }
  }
  a->attemptsUsed = true;
  a->callback = std::move(callback);
  run(a);
}

Result<SendResult> Producer::send(OutgoingMessage message, const QueueSelection& selection) {
  auto promise = std::make_shared<std::promise<Result<SendResult>>>();
  auto future = promise->get_future();
  sendAsync(std::move(message), selection,
            [promise](Result<SendResult> r) { promise->set_value(std::move(r)); });
  return future.get();
}

Result<SendResult> Producer::sendBatch(std::vector<OutgoingMessage> messages,
                                       const QueueSelection& selection) {
  auto promise = std::make_shared<std::promise<Result<SendResult>>>();
  auto future = promise->get_future();
  sendBatchAsync(std::move(messages), selection,
                 [promise](Result<SendResult> r) { promise->set_value(std::move(r)); });
  return future.get();
}

}  // namespace ferry::rocketmq
