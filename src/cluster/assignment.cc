// Assignment strategies (see assignment.h).
#include "cluster/assignment.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace ferry::cluster {

std::string Unit::toString() const { return task < 0 ? connector : connector + "-" + std::to_string(task); }

namespace {

std::uint64_t fnv1a64(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  // Spread the low-entropy tail (FNV mixes the last bytes weakly).
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

// Owners and per-worker unit lists, kept in sync.
struct Book {
  std::map<std::string, std::set<Unit>> held;  // worker -> units, every live worker present
  std::map<Unit, std::string> owner;

  explicit Book(const std::vector<WorkerInfo>& workers) {
    for (const auto& w : workers) held[w.id];
  }
  void give(const Unit& u, const std::string& w) {
    if (auto it = owner.find(u); it != owner.end()) held[it->second].erase(u);
    owner[u] = w;
    held[w].insert(u);
  }
  // Least loaded by count, ties by id.
  std::string leastLoaded() const {
    const std::string* best = nullptr;
    std::size_t n = SIZE_MAX;
    for (const auto& [w, units] : held)
      if (units.size() < n) {
        n = units.size();
        best = &w;
      }
    return *best;
  }
  std::string mostLoaded() const {
    const std::string* best = nullptr;
    std::size_t n = 0;
    for (const auto& [w, units] : held)
      if (best == nullptr || units.size() > n) {
        n = units.size();
        best = &w;
      }
    return *best;
  }
};

class StickyBalanced final : public AssignmentStrategy {
 public:
  std::string name() const override { return "sticky-balanced"; }
  std::map<Unit, std::string> assign(const AssignmentInput& in) const override {
    Book book(in.workers);
    const std::size_t n = in.workers.size();
    const std::size_t cap = (in.units.size() + n - 1) / n;
    std::vector<Unit> orphans;
    for (const auto& [u, cost] : in.units) {
      auto it = in.current.find(u);
      if (it != in.current.end() && book.held.count(it->second) && book.held[it->second].size() < cap)
        book.give(u, it->second);
      else
        orphans.push_back(u);
    }
    for (const auto& u : orphans) book.give(u, book.leastLoaded());
    // Even out: move the last unit of the most loaded worker while the spread exceeds one.
    for (;;) {
      const std::string hi = book.mostLoaded(), lo = book.leastLoaded();
      if (book.held[hi].size() <= book.held[lo].size() + 1) break;
      book.give(*book.held[hi].rbegin(), lo);
    }
    return book.owner;
  }
};

class ConsistentHashing final : public AssignmentStrategy {
 public:
  explicit ConsistentHashing(int vnodes) : vnodes_(std::max(1, vnodes)) {}
  std::string name() const override { return "consistent-hashing"; }
  std::map<Unit, std::string> assign(const AssignmentInput& in) const override {
    std::map<std::uint64_t, std::string> ring;
    for (const auto& w : in.workers)
      for (int i = 0; i < vnodes_; ++i) ring.emplace(fnv1a64(w.id + "#" + std::to_string(i)), w.id);
    std::map<Unit, std::string> out;
    for (const auto& [u, cost] : in.units) {
      auto it = ring.lower_bound(fnv1a64(u.toString()));
      if (it == ring.end()) it = ring.begin();
      out[u] = it->second;
    }
    return out;
  }

 private:
  int vnodes_;
};

class LoadWeighted final : public AssignmentStrategy {
 public:
  explicit LoadWeighted(double tolerance) : tolerance_(std::max(0.0, tolerance)) {}
  std::string name() const override { return "load-weighted"; }
  std::map<Unit, std::string> assign(const AssignmentInput& in) const override {
    double totalCost = 0, totalCap = 0;
    std::map<std::string, double> capacity, load;
    for (const auto& w : in.workers) {
      capacity[w.id] = w.capacity > 0 ? w.capacity : 1.0;
      totalCap += capacity[w.id];
      load[w.id] = 0;
    }
    for (const auto& [u, c] : in.units) totalCost += std::max(0.0, c);
    auto fair = [&](const std::string& w) { return totalCost * capacity[w] / totalCap; };
    std::map<Unit, std::string> out;
    std::vector<std::pair<double, Unit>> orphans;
    // Keep units in a stable order (heaviest first) so that what stays is deterministic.
    std::vector<std::pair<double, Unit>> byCost;
    for (const auto& [u, c] : in.units) byCost.emplace_back(std::max(0.0, c), u);
    std::sort(byCost.begin(), byCost.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [c, u] : byCost) {
      auto it = in.current.find(u);
      if (it != in.current.end() && load.count(it->second) &&
          load[it->second] + c <= fair(it->second) * (1 + tolerance_) + 1e-9) {
        out[u] = it->second;
        load[it->second] += c;
      } else {
        orphans.emplace_back(c, u);
      }
    }
    for (const auto& [c, u] : orphans) {
      const std::string* best = nullptr;
      double bestRatio = 0;
      for (const auto& w : in.workers) {
        const double r = (load[w.id] + c) / capacity[w.id];
        if (best == nullptr || r < bestRatio - 1e-12) {
          best = &w.id;
          bestRatio = r;
        }
      }
      out[u] = *best;
      load[*best] += c;
    }
    return out;
  }

 private:
  double tolerance_;
};

}  // namespace

std::unique_ptr<AssignmentStrategy> makeStickyBalanced() { return std::make_unique<StickyBalanced>(); }
std::unique_ptr<AssignmentStrategy> makeConsistentHashing(int virtualNodes) {
  return std::make_unique<ConsistentHashing>(virtualNodes);
}
std::unique_ptr<AssignmentStrategy> makeLoadWeighted(double tolerance) {
  return std::make_unique<LoadWeighted>(tolerance);
}

Result<std::unique_ptr<AssignmentStrategy>> makeStrategy(const std::string& name) {
  if (name == "sticky-balanced") return makeStickyBalanced();
  if (name == "consistent-hashing") return makeConsistentHashing();
  if (name == "load-weighted") return makeLoadWeighted();
  return Status::invalidArgument("unknown assignment strategy '" + name +
                                 "' (sticky-balanced, consistent-hashing, load-weighted)");
}

}  // namespace ferry::cluster
