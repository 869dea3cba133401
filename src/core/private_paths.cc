// Private folders (see private_paths.h).
#include "core/private_paths.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

namespace ferry::core {
namespace {

std::mutex g_mu;
std::vector<std::pair<std::string, std::string>> g_folders;  // guarded by g_mu: folder, shown as

void replaceAll(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// Replaces `folder` where it stands for itself: not where it is the start of a longer name
// ("/data" in "/data2").
void replaceWhole(std::string& s, std::string_view folder, std::string_view to) {
  for (std::size_t at = s.find(folder); at != std::string::npos;) {
    const std::size_t end = at + folder.size();
    const char next = end < s.size() ? s[end] : ' ';
    const bool partOfName = std::isalnum(static_cast<unsigned char>(next)) || next == '_' ||
                            next == '-' || next == '.';
    if (partOfName) {
      at = s.find(folder, end);
      continue;
    }
    s.replace(at, folder.size(), to);
    at = s.find(folder, at + to.size());
  }
}

std::string trimmed(std::string folder) {
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
  return folder;
}

}  // namespace

void registerPrivateFolder(const std::string& folder, const std::string& shownAs) {
  if (folder.empty()) return;
  std::vector<std::string> forms{trimmed(folder)};
  std::error_code ec;
  auto abs = std::filesystem::absolute(folder, ec);
  if (!ec) forms.push_back(trimmed(abs.lexically_normal().string()));
  auto canon = std::filesystem::weakly_canonical(folder, ec);
  if (!ec) forms.push_back(trimmed(canon.string()));
  std::lock_guard lock(g_mu);
  for (auto& f : forms) {
    if (f == "/" || f == "." || f.empty()) continue;  // would rewrite every path
    bool known = false;
    for (const auto& [have, shown] : g_folders) known |= (have == f);
    if (!known) g_folders.emplace_back(std::move(f), shownAs);
  }
  // Longest first: a folder inside another private folder is replaced before its parent.
  std::sort(g_folders.begin(), g_folders.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

std::string withoutPrivatePaths(std::string_view text) {
  std::string out(text);
  std::lock_guard lock(g_mu);
  for (const auto& [folder, shown] : g_folders) {
    if (out.find(folder) == std::string::npos) continue;
    replaceAll(out, folder + "/", "");
    replaceWhole(out, folder, shown);
  }
  return out;
}

std::string relativeTo(std::string_view text, const std::string& folder) {
  std::string out(text);
  const std::string f = trimmed(folder);
  if (f.empty() || f == "/") return out;
  replaceAll(out, f + "/", "");
  return out;
}

}  // namespace ferry::core
