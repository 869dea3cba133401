#include "redis/client.h"

#include <charconv>
#include <set>
#include <thread>

#include "core/logging.h"

namespace ferry::redis {
namespace {

constexpr std::size_t kSlots = 16384;

bool splitAddress(std::string_view address, std::string& host, std::uint16_t& port) {
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  host = std::string(address.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned v = 0;
  const auto* b = address.data() + colon + 1;
  const auto* e = address.data() + address.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || v == 0 || v > 65535) return false;
  port = static_cast<std::uint16_t>(v);
  return true;
}

}  // namespace

Result<std::unique_ptr<Client>> Client::connect(ClientOptions options) {
  if (options.seeds.empty()) return Status::invalidArgument("Redis: no server address given");
  std::unique_ptr<Client> c(new Client(std::move(options)));
  Status last = Status::unavailable("Redis: no server answered");
  for (const auto& [host, port] : c->options_.seeds) {
    const std::string address = host + ":" + std::to_string(port);
    auto conn = c->connectionTo(address);
    if (!conn.isOk()) {
      last = conn.status();
      if (last.code() == StatusCode::kInvalidArgument) return last;  // a refused login is not a down server
      continue;
    }
    if (!c->options_.cluster) {
      c->standalone_ = address;
      return c;
    }
    c->slots_.assign(kSlots, std::string());
    Status s = c->refreshSlots();
    if (s.isOk()) return c;
    last = s;
  }
  return last;
}

Result<Connection*> Client::connectionTo(const std::string& address) {
  auto it = connections_.find(address);
  if (it != connections_.end() && !it->second->broken()) return it->second.get();
  ConnectionOptions o = options_.connection;
  if (!splitAddress(address, o.host, o.port))
    return Status::invalidArgument("Redis: bad server address '" + address + "'");
  FERRY_ASSIGN_OR_RETURN(auto conn, Connection::connect(o));
  Connection* raw = conn.get();
  connections_[address] = std::move(conn);
  return raw;
}

Status Client::refreshSlots() {
  if (!options_.cluster) return Status::ok();
  refreshWanted_ = false;
  // Ask the nodes we know, then the seeds, until one answers.
  std::vector<std::string> candidates;
  for (const auto& [addr, conn] : connections_) candidates.push_back(addr);
  for (const auto& [host, port] : options_.seeds) candidates.push_back(host + ":" + std::to_string(port));
  Status last = Status::unavailable("Redis Cluster: no node answered CLUSTER SLOTS");
  for (const std::string& addr : candidates) {
    auto conn = connectionTo(addr);
    if (!conn.isOk()) {
      last = conn.status();
      continue;
    }
    auto reply = conn.value()->command({"CLUSTER", "SLOTS"});
    if (!reply.isOk()) {
      last = reply.status();
      continue;
    }
    const Reply& r = reply.value();
    if (r.isError()) {
      last = Status::invalidArgument("Redis " + addr + ": CLUSTER SLOTS: " + r.describe() +
                                     " (is redis.client.mode=cluster right for this server?)");
      continue;
    }
    if (!r.isArray()) continue;
    std::vector<std::string> slots(kSlots);
    const std::string queriedHost = addr.substr(0, addr.rfind(':'));
    for (const Reply& range : r.elements) {
      if (!range.isArray() || range.elements.size() < 3 || range.elements[0].type != Reply::Type::kInteger ||
          range.elements[1].type != Reply::Type::kInteger || !range.elements[2].isArray() ||
          range.elements[2].elements.size() < 2)
        continue;
      const Reply& master = range.elements[2];
      std::string host = master.elements[0].str;
      if (host.empty() || host == "?") host = queriedHost;
      const long long port = master.elements[1].integer;
      const long long lo = range.elements[0].integer;
      const long long hi = range.elements[1].integer;
      if (lo < 0 || hi >= static_cast<long long>(kSlots) || lo > hi || port <= 0 || port > 65535) continue;
      const std::string node = host + ":" + std::to_string(port);
      for (long long s = lo; s <= hi; ++s) slots[static_cast<std::size_t>(s)] = node;
    }
    slots_ = std::move(slots);
    return Status::ok();
  }
  return last;
}

std::vector<std::string> Client::nodes() const {
  if (!options_.cluster) return {standalone_};
  std::set<std::string> unique;
  for (const auto& s : slots_)
    if (!s.empty()) unique.insert(s);
  return {unique.begin(), unique.end()};
}

std::string Client::nodeFor(const std::string& key) const {
  if (!options_.cluster) return standalone_;
  if (!key.empty()) {
    const std::string& n = slots_[keySlot(key)];
    if (!n.empty()) return n;
  }
  for (const auto& s : slots_)
    if (!s.empty()) return s;
  return options_.seeds.front().first + ":" + std::to_string(options_.seeds.front().second);
}

Result<Connection*> Client::server() {
  if (options_.cluster) return Status::failedPrecondition("Redis Cluster: no single server connection");
  return connectionTo(standalone_);
}

Result<std::unique_ptr<Connection>> Client::dedicated(const std::string& key) {
  if (refreshWanted_) (void)refreshSlots();
  ConnectionOptions o = options_.connection;
  const std::string node = nodeFor(key);
  if (!splitAddress(node, o.host, o.port)) return Status::invalidArgument("Redis: bad server address '" + node + "'");
  return Connection::connect(o);
}

Result<Reply> Client::command(const Command& cmd, std::chrono::milliseconds extra) {
  if (refreshWanted_) (void)refreshSlots();
  const std::string node = nodeFor(cmd.key);
  FERRY_ASSIGN_OR_RETURN(Connection * conn, connectionTo(node));
  FERRY_ASSIGN_OR_RETURN(Reply r, conn->command(cmd.args, extra));
  return redirected(cmd, std::move(r), extra);
}

Result<Reply> Client::redirected(const Command& cmd, Reply reply, std::chrono::milliseconds extra) {
  for (int attempt = 0; attempt < options_.maxRedirects && reply.isError(); ++attempt) {
    const std::string_view prefix = reply.errorPrefix();
    if (prefix == "MOVED" || prefix == "ASK") {
      // "MOVED <slot> <host:port>"
      const std::string& s = reply.str;
      const auto sp1 = s.find(' ');
      const auto sp2 = s.find(' ', sp1 + 1);
      if (sp1 == std::string::npos || sp2 == std::string::npos) break;
      const std::string target = s.substr(sp2 + 1);
      FERRY_ASSIGN_OR_RETURN(Connection * conn, connectionTo(target));
      if (prefix == "MOVED") {
        unsigned slot = 0;
        auto [p, ec] = std::from_chars(s.data() + sp1 + 1, s.data() + sp2, slot);
        if (ec == std::errc() && slot < kSlots && !slots_.empty() && slots_[slot] != target) {
          slots_[slot] = target;
          core::logger("redis")->info("Redis Cluster: slot {} moved to {} (MOVED); reading the slot map again",
                                      slot, target);
        }
        refreshWanted_ = true;
        FERRY_ASSIGN_OR_RETURN(reply, conn->command(cmd.args, extra));
      } else {
        FERRY_ASSIGN_OR_RETURN(auto rs, conn->pipeline({{"ASKING"}, cmd.args}, extra));
        reply = std::move(rs[1]);
      }
      continue;
    }
    if (prefix == "TRYAGAIN" || prefix == "CLUSTERDOWN" || prefix == "LOADING") {
      std::this_thread::sleep_for(std::chrono::milliseconds(50 << attempt));
      if (prefix == "CLUSTERDOWN") (void)refreshSlots();
      const std::string node = nodeFor(cmd.key);
      FERRY_ASSIGN_OR_RETURN(Connection * conn, connectionTo(node));
      FERRY_ASSIGN_OR_RETURN(reply, conn->command(cmd.args, extra));
      continue;
    }
    break;
  }
  return reply;
}

Result<std::vector<Reply>> Client::pipeline(const std::vector<Command>& commands, std::chrono::milliseconds extra) {
  if (refreshWanted_) (void)refreshSlots();
  std::vector<Reply> replies(commands.size());
  if (commands.empty()) return replies;
  // Group by node, keeping each node's commands in the callers' order.
  std::map<std::string, std::vector<std::size_t>> byNode;
  for (std::size_t i = 0; i < commands.size(); ++i) byNode[nodeFor(commands[i].key)].push_back(i);
  const auto deadline = Clock::now() + options_.connection.timeout + extra;
  std::vector<std::pair<Connection*, const std::vector<std::size_t>*>> sent;
  for (const auto& [node, idx] : byNode) {
    FERRY_ASSIGN_OR_RETURN(Connection * conn, connectionTo(node));
    std::string out;
    for (std::size_t i : idx) appendCommand(out, commands[i].args);
    FERRY_RETURN_IF_ERROR(conn->write(out, deadline));
    sent.emplace_back(conn, &idx);
  }
  for (auto& [conn, idx] : sent) {
    for (std::size_t i : *idx) {
      FERRY_ASSIGN_OR_RETURN(replies[i], conn->read(deadline));
    }
  }
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (!replies[i].isError()) continue;
    const std::string_view p = replies[i].errorPrefix();
    if (p == "MOVED" || p == "ASK" || p == "TRYAGAIN" || p == "CLUSTERDOWN" || p == "LOADING") {
      FERRY_ASSIGN_OR_RETURN(replies[i], redirected(commands[i], std::move(replies[i]), extra));
    }
  }
  return replies;
}

}  // namespace ferry::redis
