// File-system helpers shared by stores, the embedded backbone and connectors.
//
// atomicWriteFile() is the one way ferry replaces a small file: write to a temporary file in the
// same folder, fsync it, rename it over the target, fsync the folder. After a crash the file
// holds either the old or the new contents, never a mix. State files a worker reads back at start
// use checked_file.h on top of this (checksum and a previous copy).
//
// Thread-safety: free functions, safe from any thread (callers serialise writes to one path).
// Failure behaviour: errors are values naming the path and the errno text; a failed
// atomicWriteFile leaves the target as it was (a `path.tmp` may be left behind and is overwritten
// by the next write).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry::core {

// Replaces `path` with `contents` (temp file `path + ".tmp"`, fsync, rename, fsync of the
// folder). The new file has exactly `mode` (default 0600: state files may hold credentials), also
// when it replaces a file with another mode.
Status atomicWriteFile(const std::string& path, std::string_view contents, unsigned mode = 0600);
// Creates or truncates `path`, sets its mode to exactly `mode`, writes `contents` and fsyncs the
// file (not the folder). The first half of atomicWriteFile, for callers that rename themselves.
Status writeSyncedFile(const std::string& path, std::string_view contents, unsigned mode = 0600);
// NotFound when the file does not exist; Unavailable (with the errno text) when it cannot be read.
Result<std::string> readFile(const std::string& path);
// mkdir -p; fsyncs the parent of every folder it creates (a new folder's name is durable only
// once its parent is fsynced). An existing folder is OK; an existing non-folder is Unavailable.
// New folders get `mode` (default 0700: ferry's folders hold configs and records; the umask may
// only remove bits). An existing folder keeps its mode (restrictMode tightens one).
Status ensureDir(const std::string& path, unsigned mode = 0700);
// Removes the group and other bits of `path` (a folder or file) when it has any, keeping the
// owner's. Returns the mode it had when it changed it, nullopt when it was already private.
Result<std::optional<unsigned>> restrictMode(const std::string& path);
// Reads exactly `size` bytes at `offset` of the open file `fd` (retrying short reads and EINTR);
// Unavailable naming `path` when the file ends first or a read fails.
Result<std::string> readAt(int fd, std::uint64_t offset, std::size_t size, const std::string& path);
// fsync a folder (after creating, renaming or deleting entries in it).
Status syncDir(const std::string& path);
// The folder that holds `path` ("." for a bare file name).
std::string parentDir(const std::string& path);
// "<what> <path>: <strerror(errno)>" as an Unavailable/NotFound status.
Status errnoStatus(std::string_view what, const std::string& path, int err);

}  // namespace ferry::core
