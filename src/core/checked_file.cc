// Checked JSON state files (checked_file.h).
//
// Why the current copy is verified before it becomes .prev: after a fallback (the current copy
// was damaged and .prev was loaded), the next write must not turn the damaged copy into .prev and
// so drop the last good one. Reading a small state file once more per write costs far less than
// the fsyncs the write does anyway.
#include "core/checked_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "core/crc32c.h"
#include "core/fs.h"
#include "core/json_bounds.h"

namespace ferry::core {
namespace {

using nlohmann::json;

bool nestedTooDeeply(std::string_view text) {
  int depth = 0;
  bool inString = false;
  bool escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxCheckedDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

bool isChecksumValue(std::string_view v) {
  if (v.size() != kChecksumPrefix.size() + 8) return false;
  if (v.substr(0, kChecksumPrefix.size()) != kChecksumPrefix) return false;
  for (char c : v.substr(kChecksumPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// One copy on disk: its document, or why it cannot be used (NotFound for a missing file, DataLoss
// for a damaged one). `readError` marks a file that could not be read, `verdict` another error of
// `accept`: both end the search for a usable copy.
struct Copy {
  Result<CheckedText> text = Status::notFound("");
  bool readError = false;
  bool verdict = false;
};

Copy readCopy(const std::string& path, const JsonCheck& accept) {
  Copy c;
  Result<std::string> bytes = readFile(path);
  if (!bytes.isOk()) {
    c.readError = bytes.status().code() != StatusCode::kNotFound;
    c.text = bytes.status();
    return c;
  }
  c.text = parseCheckedJson(*bytes);
  if (!c.text.isOk() || !accept) return c;
  Status accepted = accept(c.text->doc, path);
  if (!accepted.isOk()) {
    c.verdict = accepted.code() != StatusCode::kDataLoss;
    c.text = accepted;
  }
  return c;
}

// doc.dump(), or InvalidArgument for a string that is not valid UTF-8.
Result<std::string> compactDump(const json& doc) {
  try {
    return doc.dump();
  } catch (const json::exception& e) {
    return Status::invalidArgument(std::string("cannot write JSON: ") + e.what() +
                                   " (every name and value must be valid UTF-8)");
  }
}

std::string checksumOf(std::string_view compact) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(crc32c(compact)));
  return std::string(kChecksumPrefix) + buf;
}

}  // namespace

Result<std::string> jsonChecksum(const json& doc) {
  Result<std::string> compact = compactDump(doc);
  if (!compact.isOk()) return compact.status();
  return checksumOf(*compact);
}

Result<CheckedText> parseCheckedJson(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    // nlohmann's parser stops at a NUL byte and would accept whatever came before it.
    return Status::dataLoss("damaged: it contains a NUL byte");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return Status::dataLoss(text.empty() ? "damaged: the file is empty"
                                         : "damaged: the file holds only white space");
  }
  if (nestedTooDeeply(text)) {
    return Status::dataLoss("damaged: nested more than " + std::to_string(kMaxCheckedDepth) +
                            " levels deep");
  }
  CheckedText out;
  auto parsed = parseJsonBounded<json>(text, JsonLimits{kMaxCheckedDepth, SIZE_MAX});
  if (!parsed.isOk())
    return Status::dataLoss("damaged: not valid JSON (" + parsed.status().message() + ")");
  out.doc = std::move(*parsed);
  if (!out.doc.is_object()) return Status::dataLoss("damaged: not a JSON object");
  auto it = out.doc.find(std::string(kChecksumMember));
  if (it == out.doc.end()) {
    // A bit flip in the member's name leaves a checksum under another name: that is damage,
    // not a file without a checksum.
    for (const auto& [key, value] : out.doc.items()) {
      if (value.is_string() && value.get_ref<const std::string&>().rfind(kChecksumPrefix, 0) == 0) {
        return Status::dataLoss("damaged: member '" + key +
                                "' holds a checksum (a damaged \"checksum\" member)");
      }
    }
    out.checked = false;
    return out;
  }
  if (!it->is_string() || !isChecksumValue(it->get_ref<const std::string&>())) {
    return Status::dataLoss("damaged: its \"checksum\" member is not \"crc32c:\" and 8 hex digits");
  }
  std::string stated = it->get<std::string>();
  out.doc.erase(it);
  Result<std::string> actual = jsonChecksum(out.doc);
  if (!actual.isOk()) return Status::dataLoss("damaged: " + actual.status().message());
  if (*actual != stated) {
    return Status::dataLoss("damaged: checksum mismatch (the file says " + stated +
                            ", its contents give " + *actual + ")");
  }
  out.checked = true;
  return out;
}

Status writeCheckedJson(const std::string& path, const json& doc) {
  return writeCheckedJson(path, doc, {});
}

Status writeCheckedJson(const std::string& path, const json& doc, const JsonCheck& accept) {
  if (!doc.is_object()) {
    return Status::invalidArgument("cannot write " + path + ": the document is not a JSON object");
  }
  if (doc.contains(std::string(kChecksumMember))) {
    return Status::invalidArgument("cannot write " + path +
                                   ": the document already has a \"checksum\" member");
  }
  Result<std::string> compact = compactDump(doc);
  if (!compact.isOk()) {
    return Status::invalidArgument("cannot write " + path + ": " + compact.status().message());
  }
  if (nestedTooDeeply(*compact)) {
    return Status::invalidArgument("cannot write " + path + ": nested more than " +
                                   std::to_string(kMaxCheckedDepth) + " levels deep");
  }
  json withSum = doc;
  withSum[std::string(kChecksumMember)] = checksumOf(*compact);
  std::string text = withSum.dump(1, ' ') + "\n";  // cannot throw: dump() above succeeded

  const std::string tmp = path + ".tmp";
  Status written = writeSyncedFile(tmp, text, 0600);
  if (!written.isOk()) return written;

  // Keep the current copy as .prev, when it is a usable one (see the top of this file).
  Result<std::string> current = readFile(path);
  bool usable = false;
  if (current.isOk()) {
    Result<CheckedText> parsed = parseCheckedJson(*current);
    usable = parsed.isOk() && (!accept || accept(parsed->doc, path).isOk());
  }
  if (usable) {
    const std::string link = path + ".prev.tmp";
    if (::unlink(link.c_str()) != 0 && errno != ENOENT) return errnoStatus("remove", link, errno);
    if (::link(path.c_str(), link.c_str()) == 0) {
      // Same inode as `path`, which is about to be replaced: an older file may be 0644.
      if (::chmod(link.c_str(), 0600) != 0) return errnoStatus("chmod", link, errno);
    } else {
      int err = errno;
      // A file system without hard links: write the copy we just read instead.
      if (err != EPERM && err != ENOTSUP && err != EXDEV && err != EMLINK) {
        return errnoStatus("link " + path + " to", link, err);
      }
      Status copied = writeSyncedFile(link, *current, 0600);
      if (!copied.isOk()) return copied;
    }
    const std::string prev = path + ".prev";
    if (::rename(link.c_str(), prev.c_str()) != 0) return errnoStatus("rename onto", prev, errno);
    // rename() does nothing when both names are links to one file (current and .prev are after
    // a crash between the two renames): the temporary name must still go.
    if (::unlink(link.c_str()) != 0 && errno != ENOENT) return errnoStatus("remove", link, errno);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return errnoStatus("rename onto", path, errno);
  return syncDir(parentDir(path));
}

Result<CheckedJson> readCheckedJson(const std::string& path) { return readCheckedJson(path, {}); }

Result<CheckedJson> readCheckedJson(const std::string& path, const JsonCheck& accept) {
  Copy cur = readCopy(path, accept);
  if (cur.text.isOk()) {
    CheckedJson out;
    out.doc = std::move(cur.text->doc);
    if (cur.text->checked) {
      out.from = CheckedJson::From::kCurrent;
    } else {
      out.from = CheckedJson::From::kUnchecked;
      out.warning = path + " has no \"checksum\" member (written by an older version, or edited "
                    "by hand): loaded without a check";
    }
    return out;
  }
  // A file we cannot read may well be whole: falling back would hide the newer copy.
  if (cur.readError || cur.verdict) return cur.text.status();
  const bool curMissing = cur.text.status().code() == StatusCode::kNotFound;
  const std::string curProblem = curMissing ? "is missing" : "is " + cur.text.status().message();

  const std::string prevPath = path + ".prev";
  Copy prev = readCopy(prevPath, accept);
  if (prev.text.isOk()) {
    CheckedJson out;
    out.doc = std::move(prev.text->doc);
    out.from = CheckedJson::From::kPrevious;
    out.warning = path + " " + curProblem + "; using the previous copy " + prevPath +
                  (prev.text->checked ? "" : " (which has no checksum: loaded without a check)");
    return out;
  }
  if (prev.verdict) return prev.text.status();
  if (prev.readError) {
    return Status::unavailable(path + " " + curProblem + ", and the previous copy " + prevPath +
                               " cannot be read: " + prev.text.status().message());
  }
  const bool prevMissing = prev.text.status().code() == StatusCode::kNotFound;
  if (curMissing && prevMissing) return Status::notFound("no such file: " + path);
  const std::string prevProblem =
      prevMissing ? "is missing" : "is " + prev.text.status().message();
  return Status::dataLoss("no usable copy: " + path + " " + curProblem + "; " + prevPath + " " +
                          prevProblem);
}

}  // namespace ferry::core
