// Fuzz target: the code that turns a store file's text into state (checksum check, then the
// strict parse) must never crash or hang on any bytes, and must either load or report damage.
// Each input goes through two paths that must agree:
//   - internal::*StateFromText for configs, positions and status (one copy, as an open checks it);
//   - the whole open: the bytes written as configs.json / positions.json / status.json in a
//     scratch folder (no .prev), opened by openFile*Store.
// What loads must survive a write and a reload unchanged; configs and positions that do not load
// are DataLoss or Incompatible; status never fails to open for damage (it starts empty).
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/logging.h"
#include "store/state.h"
#include "store/store.h"

namespace {

using namespace ferry;
using namespace ferry::store;

// One scratch folder per process, removed at exit.
class Scratch {
 public:
  Scratch() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "ferry-fuzz-store-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
    ferry::core::logger("store")->set_level(spdlog::level::off);  // a warning per input otherwise
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& dir() const { return dir_; }
  // Makes `name` hold exactly `bytes`, with no .prev copy beside it.
  void put(const std::string& name, std::string_view bytes) const {
    std::error_code ec;
    std::filesystem::remove(dir_ + "/" + name + ".prev", ec);
    std::ofstream out(dir_ + "/" + name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) std::abort();
  }

 private:
  std::string dir_;
};

const Scratch& scratch() {
  static Scratch s;
  return s;
}

bool damageOrNewer(const Status& s) {
  return s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kIncompatible;
}

void check(bool ok) {
  if (!ok) std::abort();
}

void configs(std::string_view in) {
  auto text = internal::configStateFromText(in, "configs.json");
  if (!text.isOk()) check(damageOrNewer(text.status()));
  scratch().put("configs.json", in);
  auto opened = openFileConfigStore(scratch().dir());
  if (!text.isOk()) {
    check(!opened.isOk() && opened.status().code() == text.status().code());
    return;
  }
  check(opened.isOk());
  auto all = (*opened)->loadAll();
  check(all.isOk());
  internal::ConfigState loaded{*all};
  check(internal::toJson(loaded) == internal::toJson(*text));
  // Written back (format 2, with checksum) by a change that changes nothing, and read again:
  // the same state, no warning.
  if (text->connectors.empty()) return;
  const auto& [name, entry] = *text->connectors.begin();
  if ((*opened)->putTargetState(name, entry.target).isOk()) {
    auto again = openFileConfigStore(scratch().dir());
    check(again.isOk() && (*again)->openWarnings().empty());
    auto reloaded = (*again)->loadAll();
    check(reloaded.isOk());
    check(internal::toJson(internal::ConfigState{*reloaded}) == internal::toJson(*text));
  }
}

void positions(std::string_view in) {
  auto text = internal::positionStateFromText(in, "positions.json");
  if (!text.isOk()) check(damageOrNewer(text.status()));
  scratch().put("positions.json", in);
  auto opened = openFilePositionStore(scratch().dir());
  if (!text.isOk()) {
    check(!opened.isOk() && opened.status().code() == text.status().code());
    return;
  }
  check(opened.isOk());
  for (const auto& [connector, partitions] : text->connectors) {
    auto all = (*opened)->getAll(connector);
    check(all.isOk() && all->size() == partitions.size());
    for (const Position& p : *all) check(partitions.at(p.partition) == p.offset);
  }
}

void statuses(std::string_view in) {
  auto text = internal::statusStateFromText(in, "status.json");
  if (!text.isOk()) check(damageOrNewer(text.status()));
  scratch().put("status.json", in);
  auto opened = openFileStatusStore(scratch().dir());
  if (!text.isOk() && text.status().code() == StatusCode::kIncompatible) {
    check(!opened.isOk() && opened.status().code() == StatusCode::kIncompatible);
    return;
  }
  check(opened.isOk());  // damage is never fatal for the status cache
  if (!text.isOk()) {
    check((*opened)->openWarnings().size() == 1);
    return;
  }
  for (const auto& [connector, c] : text->connectors) {
    check((*opened)->connector(connector).has_value() == c.connector.has_value());
    check((*opened)->tasks(connector).size() == c.tasks.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  configs(in);
  positions(in);
  statuses(in);
  return 0;
}
