#include "redis/resp.h"

#include <hiredis/read.h>

#include <array>
#include <charconv>
#include <new>

namespace ferry::redis {

std::string_view Reply::errorPrefix() const noexcept {
  if (type != Type::kError) return {};
  std::string_view s(str);
  return s.substr(0, s.find(' '));
}

std::string Reply::describe() const {
  switch (type) {
    case Type::kNil: return "(nil)";
    case Type::kInteger: return std::to_string(integer);
    case Type::kArray: return "[array of " + std::to_string(elements.size()) + "]";
    default: return str.size() <= 200 ? str : str.substr(0, 200) + "...";
  }
}

namespace {

struct ReaderState {
  std::size_t maxElements;
  bool* tooMany;
};

// Where the object for `task` lives: its slot in the parent array (sized by createArray), or a
// new root. Only roots are freed by hiredis (freeObject is called on the top-level object only).
Reply* objectFor(const redisReadTask* task) {
  if (task->parent != nullptr) {
    auto* parent = static_cast<Reply*>(task->parent->obj);
    if (parent == nullptr || task->idx < 0 ||
        static_cast<std::size_t>(task->idx) >= parent->elements.size())
      return nullptr;
    return &parent->elements[static_cast<std::size_t>(task->idx)];
  }
  return new (std::nothrow) Reply();
}

void* createString(const redisReadTask* task, char* str, std::size_t len) {
  try {
    Reply* r = objectFor(task);
    if (r == nullptr) return nullptr;
    r->type = task->type == REDIS_REPLY_ERROR    ? Reply::Type::kError
              : task->type == REDIS_REPLY_STATUS ? Reply::Type::kStatus
                                                 : Reply::Type::kString;
    r->str.assign(str, len);
    return r;
  } catch (...) {
    return nullptr;
  }
}

void* createArray(const redisReadTask* task, int elements) {
  auto* state = static_cast<ReaderState*>(task->privdata);
  if (elements < 0 || (state != nullptr && static_cast<std::size_t>(elements) > state->maxElements)) {
    if (state != nullptr) *state->tooMany = true;
    return nullptr;
  }
  try {
    Reply* r = objectFor(task);
    if (r == nullptr) return nullptr;
    r->type = Reply::Type::kArray;
    r->elements.resize(static_cast<std::size_t>(elements));
    return r;
  } catch (...) {
    return nullptr;
  }
}

void* createInteger(const redisReadTask* task, long long value) {
  Reply* r = objectFor(task);
  if (r == nullptr) return nullptr;
  r->type = Reply::Type::kInteger;
  r->integer = value;
  return r;
}

void* createNil(const redisReadTask* task) {
  Reply* r = objectFor(task);
  if (r == nullptr) return nullptr;
  r->type = Reply::Type::kNil;
  return r;
}

void freeObject(void* obj) { delete static_cast<Reply*>(obj); }

redisReplyObjectFunctions kFunctions = {createString, createArray, createInteger, createNil, freeObject};

}  // namespace

ReplyReader::ReplyReader(Limits limits) : limits_(limits) {
  reader_ = redisReaderCreateWithFunctions(&kFunctions);
  if (reader_ != nullptr) {
    reader_->privdata = new ReaderState{limits_.maxElements, &tooManyElements_};
    reader_->maxbuf = 1 << 20;  // keep up to 1 MB of buffer between replies
  }
}

ReplyReader::~ReplyReader() {
  if (reader_ != nullptr) {
    delete static_cast<ReaderState*>(reader_->privdata);
    redisReaderFree(reader_);
  }
}

std::size_t ReplyReader::buffered() const noexcept {
  return reader_ == nullptr || reader_->buf == nullptr ? 0 : reader_->len - reader_->pos;
}

Status ReplyReader::feed(const char* data, std::size_t n) {
  if (reader_ == nullptr) return Status::resourceExhausted("Redis reply reader: out of memory");
  if (reader_->err != 0) return Status::invalidArgument(std::string("Redis protocol error: ") + reader_->errstr);
  if (buffered() + n > limits_.maxBufferBytes)
    return Status::invalidArgument("Redis reply larger than " + std::to_string(limits_.maxBufferBytes) +
                                   " bytes refused");
  if (redisReaderFeed(reader_, data, n) != REDIS_OK)
    return Status::resourceExhausted(std::string("Redis reply reader: ") + reader_->errstr);
  return Status::ok();
}

Result<std::optional<Reply>> ReplyReader::next() {
  if (reader_ == nullptr) return Status::resourceExhausted("Redis reply reader: out of memory");
  void* obj = nullptr;
  if (redisReaderGetReply(reader_, &obj) != REDIS_OK) {
    if (tooManyElements_)
      return Status::invalidArgument("Redis protocol error: an array longer than " +
                                     std::to_string(limits_.maxElements) + " elements (or negative) refused");
    return Status::invalidArgument(std::string("Redis protocol error: ") + reader_->errstr);
  }
  if (obj == nullptr) return std::optional<Reply>();
  std::unique_ptr<Reply> root(static_cast<Reply*>(obj));
  return std::optional<Reply>(std::move(*root));
}

namespace {
// "<tag><n>\r\n"
void appendLength(std::string& out, char tag, std::size_t n) {
  char buf[24];
  buf[0] = tag;
  auto [end, ec] = std::to_chars(buf + 1, buf + sizeof buf - 2, n);
  (void)ec;  // 20 digits always fit
  *end++ = '\r';
  *end++ = '\n';
  out.append(buf, static_cast<std::size_t>(end - buf));
}

void appendBulk(std::string& out, std::string_view a) {
  appendLength(out, '$', a.size());
  out.append(a);
  out += "\r\n";
}
}  // namespace

void appendCommand(std::string& out, const std::vector<std::string>& args) {
  appendLength(out, '*', args.size());
  for (const std::string& a : args) appendBulk(out, a);
}

void appendCommand(std::string& out, const std::string_view* args, std::size_t count) {
  appendLength(out, '*', count);
  for (std::size_t i = 0; i < count; ++i) appendBulk(out, args[i]);
}

namespace {
constexpr std::array<std::uint16_t, 256> makeCrc16Table() {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    std::uint16_t c = static_cast<std::uint16_t>(i << 8);
    for (int b = 0; b < 8; ++b) c = static_cast<std::uint16_t>((c & 0x8000) ? (c << 1) ^ 0x1021 : c << 1);
    t[i] = c;
  }
  return t;
}
constexpr auto kCrc16 = makeCrc16Table();
}  // namespace

std::uint16_t keySlot(std::string_view key) noexcept {
  // A non-empty {...} hash tag: only its content is hashed.
  if (auto open = key.find('{'); open != std::string_view::npos) {
    auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
  }
  std::uint16_t crc = 0;
  for (unsigned char ch : key)
    crc = static_cast<std::uint16_t>((crc << 8) ^ kCrc16[((crc >> 8) ^ ch) & 0xff]);
  return static_cast<std::uint16_t>(crc & 16383);
}

}  // namespace ferry::redis
