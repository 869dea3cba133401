// Fuzz target: the embedded log's open-time recovery of a whole segment file. Any bytes (a torn,
// damaged or hostile file) must be recovered without a crash, a hang or an over-read, and:
//   - recoverSegment's answer is consistent: intact records in increasing offset order, damaged
//     ranges in order, each followed by an intact record, the tail running to the end;
//   - the real log opened on a folder holding these bytes as its only segment serves exactly the
//     intact records recoverSegment found (the ones before a torn tail), each at its own offset,
//     and never hands out an offset at or below one it serves.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "backbone/embedded/embedded.h"
#include "backbone/embedded/segment_codec.h"
#include "core/logging.h"

namespace {

using namespace ferry;
using namespace ferry::backbone;
using namespace std::chrono_literals;

struct Intact {
  std::int64_t offset;
  std::string value;
};

// Walks the data the way recoverSegment describes it and checks every claim.
std::vector<Intact> checkRecovered(std::string_view in, const segment::Recovered& r) {
  std::vector<Intact> intact;
  std::size_t pos = 0, damage = 0;
  std::int64_t last = -1;
  while (pos < in.size()) {
    if (damage < r.damage.size() && r.damage[damage].pos == pos) {
      const auto& d = r.damage[damage++];
      if (d.len == 0 || pos + d.len > in.size() || d.afterOffset != last) std::abort();
      pos += d.len;
      continue;
    }
    if (r.tail && r.tail->pos == pos) {
      if (pos + r.tail->len != in.size() || pos != r.goodEnd || r.tail->afterOffset != last) std::abort();
      break;
    }
    segment::Decoded d = segment::decodeOne(in.substr(pos));
    if (d.state != segment::DecodeState::kOk || d.message.offset <= last) std::abort();
    if (damage > 0 && r.damage[damage - 1].pos + r.damage[damage - 1].len == pos &&
        r.damage[damage - 1].nextOffset != d.message.offset)
      std::abort();
    last = d.message.offset;
    intact.push_back(Intact{d.message.offset, d.message.value.str()});
    pos += d.consumed;
    if (pos > r.goodEnd) std::abort();
  }
  if (damage != r.damage.size() || intact.size() != r.records) std::abort();
  if (r.lastOffset != last || (r.records > 0 && r.firstOffset != intact.front().offset)) std::abort();
  if (!r.tail && pos != in.size()) std::abort();
  for (std::size_t i = 0; i < r.index.size(); ++i) {
    segment::Decoded d = segment::decodeOne(in.substr(r.index[i].second));
    if (d.state != segment::DecodeState::kOk || d.message.offset != r.index[i].first) std::abort();
    if (i > 0 && r.index[i].first <= r.index[i - 1].first) std::abort();
  }
  return intact;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    core::logger("backbone")->set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const segment::Recovered r = segment::recoverSegment(in, 0, 4);
  const std::vector<Intact> intact = checkRecovered(in, r);

  // The real log on a folder holding these bytes as segment 0 of topic t, queue 0.
  char tmpl[] = "/tmp/ferry-fuzz-seg-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  if (dir == nullptr) std::abort();
  const std::filesystem::path root(dir);
  std::filesystem::create_directories(root / "topics" / "t" / "0");
  {
    std::ofstream(root / "topics.json") << "{\"topics\": {\"t\": 1}}";
    std::ofstream seg(root / "topics" / "t" / "0" / "00000000000000000000.log", std::ios::binary);
    seg.write(in.data(), static_cast<std::streamsize>(in.size()));
  }
  EmbeddedOptions o;
  o.dir = root.string();
  o.fsync = FsyncPolicy::kNever;
  auto b = openEmbeddedBackbone(o);
  if (!b.isOk()) std::abort();
  auto c = (*b)->createConsumer("g", "m", {});
  if (!c.isOk() || !(*c)->subscribe({"t"}, nullptr).isOk()) std::abort();
  std::vector<Message> got, batch;
  for (int round = 0; round < 10000; ++round) {
    batch.clear();
    auto n = (*c)->poll(batch, 1000, 0ms);
    if (!n.isOk()) std::abort();
    if (*n == 0) break;
    got.insert(got.end(), batch.begin(), batch.end());
  }
  if (got.size() != intact.size()) std::abort();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i].offset != intact[i].offset || got[i].value.str() != intact[i].value) std::abort();
  const std::int64_t end = (*b)->admin().endOffsets("t")->at({"t", 0});
  if (!intact.empty() && end <= intact.back().offset) std::abort();
  (*c)->close();
  (*b)->close();
  b->reset();
  std::filesystem::remove_all(root);
  return 0;
}
