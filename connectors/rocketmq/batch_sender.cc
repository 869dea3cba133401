// BatchSender (see batch_sender.h).
#include "connectors/rocketmq/batch_sender.h"

#include "core/thread.h"
#include "rocketmq/client.h"

namespace ferry::connectors::rmq {

BatchSender::BatchSender(rocketmq::Producer& producer, bool ordered, std::size_t maxInFlight)
    : producer_(producer), ordered_(ordered), maxInFlight_(maxInFlight == 0 ? 1 : maxInFlight) {}

BatchSender::~BatchSender() {
  {
    std::lock_guard lock(shared_->mu);
    shared_->stopping = true;
  }
  shared_->probeCv.notify_all();
  if (probe_.joinable()) probe_.join();
  waitIdle();
}

bool BatchSender::resendKept() {
  std::vector<Batch> again;
  {
    std::lock_guard lock(shared_->mu);
    if (!shared_->fatal.isOk()) return false;
    again.swap(shared_->retry);
    shared_->retryKeys.clear();
    shared_->retryError = Status::ok();
  }
  for (Batch& p : again) send(std::move(p));
  return !again.empty();
}

void BatchSender::watchHealth(rocketmq::RocketmqClient& client,
                              std::function<void(const ConnectionHealth&)> report,
                              std::int64_t probeMs) {
  {
    std::lock_guard lock(shared_->mu);
    shared_->health = std::move(report);
  }
  probe_ = core::namedThread("rmq-probe", [this, &client, probeMs] { probeLoop(client, probeMs); });
}

std::optional<ConnectionHealth> BatchSender::Shared::outcomeLocked(const Status& s,
                                                                  const std::string& topic) {
  if (!health) return std::nullopt;
  if (s.isOk()) {
    if (!lost) return std::nullopt;
    lost = false;
    return ConnectionHealth{};
  }
  // Only a peer that cannot be reached is a connection matter; other failures fail the task or
  // are the broker's answer (busy: retried by the producer).
  if (s.code() != StatusCode::kUnavailable && s.code() != StatusCode::kTimeout)
    return std::nullopt;
  lost = true;
  probeTopic = topic;
  probeCv.notify_all();
  return ConnectionHealth{ConnectionHealth::State::kReconnecting, s.message()};
}

void BatchSender::probeLoop(rocketmq::RocketmqClient& client, std::int64_t probeMs) {
  auto shared = shared_;
  std::unique_lock lock(shared->mu);
  while (!shared->stopping) {
    if (!shared->lost || shared->probeTopic.empty()) {
      shared->probeCv.wait(lock);
      continue;
    }
    shared->probeCv.wait_for(lock, std::chrono::milliseconds(probeMs));
    if (shared->stopping || !shared->lost) continue;
    const std::string topic = shared->probeTopic;
    lock.unlock();
    bool reachable = false;
    if (auto route = client.queryRoute(topic); route.isOk()) {
      reachable = !route->brokerDatas.empty();
      for (const auto& b : route->brokerDatas) {
        auto master = b.master();
        rocketmq::RemotingCommand req;
        req.code = 28;  // GET_BROKER_RUNTIME_INFO: any answer says the broker is back
        if (!master || !client.invoke(*master, std::move(req), probeMs).isOk()) {
          reachable = false;
          break;
        }
      }
    }
    lock.lock();
    if (!reachable || shared->stopping || !shared->lost) continue;
    shared->lost = false;
    auto report = shared->health;
    lock.unlock();
    report(ConnectionHealth{});  // the kept sends go out at the runtime's next flush()
    lock.lock();
  }
}

void BatchSender::send(Batch p) {
  auto shared = shared_;
  if (!p.prepared) {
    if (!p.messages.empty()) p.topic = p.messages.front().topic;
    auto prepared = producer_.prepareSend(p.messages, p.selection);
    if (!prepared.isOk()) {
      // Refused before any send (an oversize body, no route yet): as a failed send. A retriable
      // refusal keeps the messages (untouched) for flush() to send again.
      std::optional<ConnectionHealth> report;
      std::function<void(const ConnectionHealth&)> health;
      {
        std::lock_guard lock(shared->mu);
        report = shared->outcomeLocked(prepared.status(), p.topic);
        health = shared->health;
        shared->failedLocked(std::move(p), prepared.status(), ordered_);
      }
      if (report) health(*report);
      return;
    }
    p.prepared = std::move(prepared).value();
  }
  const std::size_t n = p.prepared.messages();
  const bool ordered = ordered_;
  std::uint64_t epoch = 0;
  {
    std::unique_lock lock(shared->mu);
    // Ordered: a key with a failed batch waiting for flush() queues behind it (also when the
    // failure arrives while this batch waits for its turn), so the resend does not land after a
    // later batch of the key.
    bool queueBehind = false;
    shared->cv.wait(lock, [&] {
      if (ordered && shared->retryKeys.count(p.orderKey) != 0) {
        queueBehind = true;
        return true;
      }
      if (shared->inFlight > 0 && shared->inFlight + n > maxInFlight_) return false;
      if (!ordered) return true;
      auto it = shared->keysInFlight.find(p.orderKey);
      return it == shared->keysInFlight.end() || it->second == 0;
    });
    if (queueBehind) {
      shared->retry.push_back(std::move(p));
      return;
    }
    shared->inFlight += n;
    if (ordered) ++shared->keysInFlight[p.orderKey];
    epoch = shared->epochs.started();
  }
  const rocketmq::Producer::PreparedSend prepared = p.prepared;
  auto done = [shared, n, ordered, epoch, p = std::move(p)](Result<rocketmq::SendResult> r) mutable {
    if (r.isOk() && p.onSent) p.onSent(*r);
    core::FlushEpochs::Callback waiter;
    Status answer;
    std::unique_lock lock(shared->mu);
    if (ordered) {
      auto it = shared->keysInFlight.find(p.orderKey);
      if (it != shared->keysInFlight.end() && --it->second <= 0) shared->keysInFlight.erase(it);
    }
    std::optional<ConnectionHealth> report =
        shared->outcomeLocked(r.isOk() ? Status::ok() : r.status(), p.topic);
    auto health = report ? shared->health : nullptr;
    if (!r.isOk()) shared->failedLocked(std::move(p), r.status(), ordered);
    shared->inFlight -= n;
    shared->epochs.ended(epoch);
    waiter = shared->takeWaiterIfDoneLocked(answer);
    shared->cv.notify_all();
    lock.unlock();
    if (report) health(*report);
    if (waiter) waiter(std::move(answer));
  };
  producer_.sendPrepared(prepared, std::move(done));
}

void BatchSender::Shared::failedLocked(Batch&& batch, const Status& s, bool ordered) {
  if (!s.isRetriable()) {
    if (fatal.isOk()) fatal = s;
    return;
  }
  if (retry.empty()) retryError = s;
  if (ordered) retryKeys.insert(batch.orderKey);
  retry.push_back(std::move(batch));
}

core::FlushEpochs::Callback BatchSender::Shared::takeWaiterIfDoneLocked(Status& result) {
  auto waiter = epochs.takeIfDone();
  if (!waiter) return nullptr;
  if (!fatal.isOk()) {
    result = fatal.withContext(waiterWho);
  } else if (!retry.empty()) {
    result = Status::retriable(waiterWho + ": " + std::to_string(retry.size()) +
                               " sends failed: " + retryError.toString());
  } else {
    result = Status::ok();
  }
  return waiter;
}

void BatchSender::flushAsync(const std::string& who, std::function<void(Status)> done) {
  Status result;
  core::FlushEpochs::Callback now;
  {
    std::lock_guard lock(shared_->mu);
    shared_->waiterWho = who;
    shared_->epochs.await(std::move(done));
    now = shared_->takeWaiterIfDoneLocked(result);
  }
  if (now) now(std::move(result));
}

Status BatchSender::fatal() const {
  std::lock_guard lock(shared_->mu);
  return shared_->fatal;
}

std::size_t BatchSender::inFlight() const {
  std::lock_guard lock(shared_->mu);
  return shared_->inFlight;
}

void BatchSender::waitIdle() {
  std::unique_lock lock(shared_->mu);
  shared_->cv.wait(lock, [&] { return shared_->inFlight == 0; });
}

Status BatchSender::flush(const std::string& who) {
  waitIdle();
  {
    std::lock_guard lock(shared_->mu);
    if (!shared_->fatal.isOk()) return shared_->fatal.withContext(who);
  }
  if (!resendKept()) return Status::ok();
  waitIdle();
  std::lock_guard lock(shared_->mu);
  if (!shared_->fatal.isOk()) return shared_->fatal.withContext(who);
  if (!shared_->retry.empty())
    return Status::retriable(who + ": " + std::to_string(shared_->retry.size()) +
                             " sends failed: " + shared_->retryError.toString());
  return Status::ok();
}

}  // namespace ferry::connectors::rmq
