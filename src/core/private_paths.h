// Paths that stay inside the worker: texts that leave it (REST error answers, status traces)
// show the worker's folders relative to them instead of as absolute paths, so an error answer
// does not tell a caller where the data directory lives. Log lines keep the full paths.
//
// A worker registers its data.dir once at start; tests register their own folders.
//
// Thread-safety: all functions are thread-safe (one process-wide list behind a mutex).
#pragma once

#include <string>
#include <string_view>

namespace ferry::core {

// From now on, `folder` (as given, and its absolute and canonical forms) is private: a path under
// it is shown relative to it ("store/configs.json"), the folder itself as `shownAs`.
void registerPrivateFolder(const std::string& folder, const std::string& shownAs = "data.dir");

// `text` with every private folder replaced as registerPrivateFolder says (longest first).
std::string withoutPrivatePaths(std::string_view text);

// `text` with every occurrence of `folder` + "/" removed: a message about files in `folder`
// naming them relative to it (for a component that knows its own folder).
std::string relativeTo(std::string_view text, const std::string& folder);

}  // namespace ferry::core
