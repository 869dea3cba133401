// Checked JSON state files: a small JSON document that carries its own checksum and keeps the
// copy it replaced, so that a damaged file (a bit flip that is still valid JSON, a truncation, an
// empty file after a crash of the disk) is detected and the previous good copy used instead.
//
// Format: the document, indented (readable and editable by an operator), with one more top-level
// member "checksum": "crc32c:<8 lowercase hex digits>", the CRC32C of the compact dump of the
// document without that member (nlohmann::json sorts object keys, so the compact dump is
// canonical: re-parsing and dumping gives the same bytes).
//
// Files next to `path` (all in the same folder):
//   path            the current copy; it exists at every moment once it was first written
//   path.prev       the copy `path` held before the last successful write (a hard link to it)
//   path.tmp        the next copy while it is being written (left behind by a crash; ignored)
//   path.prev.tmp   the hard link being renamed over path.prev (likewise)
// Someone who lists the folder (e.g. to find every group's file) must skip the .prev/.tmp names.
//
// Thread-safety: free functions, safe from any thread; at most one writer per path at a time
// (the caller serialises writes to one path, e.g. with the mutex that guards the state). Reading
// while another thread writes the same path sees the old or the new copy, never a mix.
//
// Failure behaviour: writeCheckedJson returns OK only once the new copy is durable (file and
// folder fsynced); when it fails, `path` still holds a whole, valid copy (the old one, or, if it
// failed after the last rename, the new one). readCheckedJson never returns half a document: a
// copy is used whole or not at all.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry::core {

// The member name and the prefix of its value.
inline constexpr std::string_view kChecksumMember = "checksum";
inline constexpr std::string_view kChecksumPrefix = "crc32c:";
// Arrays and objects nested deeper than this are refused on write and damage on read (dumping
// recurses; no state file nests more than a handful of levels).
inline constexpr int kMaxCheckedDepth = 64;

// "crc32c:<8 hex>" of doc.dump() (doc without the "checksum" member). Throws nothing; returns
// InvalidArgument when a string in `doc` is not valid UTF-8 (JSON cannot hold it).
Result<std::string> jsonChecksum(const nlohmann::json& doc);

// Replaces `path` atomically with `doc` written as indented JSON plus a member "checksum"
// ("crc32c:<8 hex>", CRC32C of doc.dump()), file mode 0600; the file it replaces is kept as
// `path + ".prev"` (hard link the current file to a temporary name, rename that over .prev, then
// rename the new temp file over path, fsync the folder: `path` exists at every moment).
// One writer per path.
//
// The current file becomes .prev only when it is itself usable (its checksum matches, or it has
// none: an older format); a damaged current file is replaced without touching .prev, so .prev
// keeps the last good copy. The .prev link is made 0600 too (an older file may have been 0644).
// On a file system without hard links the current file's bytes are written as the copy instead.
// Cost: besides the writes and two fsyncs, the current file is read and checked once.
//
// Errors: InvalidArgument when `doc` is not an object, already has a "checksum" member, holds a
// string that is not valid UTF-8, or nests deeper than kMaxCheckedDepth (nothing is written);
// Unavailable (naming the file and the errno text) when a file-system call fails.
Status writeCheckedJson(const std::string& path, const nlohmann::json& doc);

struct CheckedJson {
  nlohmann::json doc;  // without the "checksum" member
  enum class From { kCurrent, kPrevious, kUnchecked } from = From::kCurrent;
  std::string warning;  // why the current file was not used as is ("" when it was)
};

// The current file when its checksum matches; else the .prev copy when its checksum matches
// (warning says what was wrong with the current one); a file without any "checksum" member (an
// older format, or edited by hand by an operator who removed the line) is accepted as kUnchecked
// with a warning. NotFound when neither file exists; DataLoss naming both files and what is wrong
// with each when neither is usable.
//
// Details:
// - A current file without a checksum is kUnchecked (it is preferred to .prev: it is newer).
//   When the current file is missing or damaged and .prev has no checksum, .prev is used as
//   kPrevious and the warning says it was not checked.
// - "Damaged" means: empty, not valid JSON, a NUL byte, not a JSON object, a "checksum" member
//   that is not "crc32c:" + 8 lowercase hex digits, a checksum that does not match, or another
//   top-level member whose value looks like a checksum (a bit flip in the member's name).
// - A missing current file with a usable .prev is kPrevious (a crash cannot cause this; someone
//   deleted the file), with a warning.
// - A file that exists but cannot be read (permissions, I/O error) is not treated as damaged:
//   the error is returned as is (Unavailable naming the file), since falling back would hide
//   the newer copy.
Result<CheckedJson> readCheckedJson(const std::string& path);

// A further check of a copy's document, for readers that know what the document must look like
// (`file` names the copy, for messages). DataLoss makes the copy unusable exactly like a checksum
// mismatch (its message is the reason given); any other error is returned by readCheckedJson as
// is, without trying another copy (e.g. Incompatible: a file of a newer format must not be
// replaced by an older copy). Called for the current copy first, and for .prev only when the
// current one was not usable, so the last copy it returned OK for is the one returned.
using JsonCheck = std::function<Status(const nlohmann::json& doc, const std::string& file)>;
// readCheckedJson with `accept` as part of what makes a copy usable.
Result<CheckedJson> readCheckedJson(const std::string& path, const JsonCheck& accept);
// writeCheckedJson where the current file becomes .prev only when `accept` also returns OK for
// it, so that .prev stays a copy this reader can load.
Status writeCheckedJson(const std::string& path, const nlohmann::json& doc,
                        const JsonCheck& accept);

// The checking half of readCheckedJson for one copy: `text` as read from a file. Returns the
// document without its "checksum" member and whether it had one; DataLoss with a short reason
// ("damaged: not valid JSON (...)", "damaged: checksum mismatch (...)") for a damaged copy.
// Never throws, whatever the bytes (fuzzed).
struct CheckedText {
  nlohmann::json doc;
  bool checked = false;  // false: the text had no "checksum" member
};
Result<CheckedText> parseCheckedJson(std::string_view text);

}  // namespace ferry::core
