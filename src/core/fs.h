// File-system helpers shared by stores, the embedded backbone and connectors.
//
// atomicWriteFile() is the one way ferry replaces a small state file: write to a temporary file
// in the same folder, fsync it, rename it over the target, fsync the folder. After a crash the
// file holds either the old or the new contents, never a mix.
//
// Thread-safety: free functions, safe from any thread (callers serialise writes to one path).
#pragma once

#include <string>
#include <string_view>

#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry::core {

Status atomicWriteFile(const std::string& path, std::string_view contents);
// NotFound when the file does not exist.
Result<std::string> readFile(const std::string& path);
// mkdir -p.
Status ensureDir(const std::string& path);
// fsync a folder (after creating, renaming or deleting entries in it).
Status syncDir(const std::string& path);
// "<what> <path>: <strerror(errno)>" as an Unavailable/NotFound status.
Status errnoStatus(std::string_view what, const std::string& path, int err);

}  // namespace ferry::core
