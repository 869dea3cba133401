// MQTT packet codec (see codec.h). Section numbers refer to the MQTT 5.0 specification; 3.1.1
// packets are the same without properties and reason codes where noted.
#include "mqtt/codec.h"

#include "core/topic_filter.h"

namespace ferry::mqtt {
namespace {

enum class PropType { kByte, kTwo, kFour, kVarint, kString, kBinary, kPair, kUnknown };

PropType propType(std::uint8_t id) {
  switch (id) {
    case prop::kPayloadFormat: case prop::kRequestProblemInfo: case prop::kRequestResponseInfo:
    case prop::kMaximumQos: case prop::kRetainAvailable: case prop::kWildcardSubAvailable:
    case prop::kSubIdAvailable: case prop::kSharedSubAvailable:
      return PropType::kByte;
    case prop::kServerKeepAlive: case prop::kReceiveMaximum: case prop::kTopicAliasMaximum:
    case prop::kTopicAlias:
      return PropType::kTwo;
    case prop::kMessageExpiry: case prop::kSessionExpiry: case prop::kWillDelay:
    case prop::kMaximumPacketSize:
      return PropType::kFour;
    case prop::kSubscriptionId: return PropType::kVarint;
    case prop::kContentType: case prop::kResponseTopic: case prop::kAssignedClientId:
    case prop::kAuthMethod: case prop::kResponseInfo: case prop::kServerReference:
    case prop::kReasonString:
      return PropType::kString;
    case prop::kCorrelationData: case prop::kAuthData: return PropType::kBinary;
    case prop::kUserProperty: return PropType::kPair;
    default: return PropType::kUnknown;
  }
}

// --- writing -------------------------------------------------------------------------------

struct Writer {
  std::string out;
  Status error;
  void u8(std::uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u16(std::uint16_t v) {
    u8(static_cast<std::uint8_t>(v >> 8));
    u8(static_cast<std::uint8_t>(v));
  }
  void u32(std::uint32_t v) {
    u16(static_cast<std::uint16_t>(v >> 16));
    u16(static_cast<std::uint16_t>(v));
  }
  void bytes(std::string_view s, const char* what) {
    if (s.size() > 65535) {
      if (error.isOk()) error = Status::invalidArgument(std::string(what) + " longer than 65,535 bytes");
      return;
    }
    u16(static_cast<std::uint16_t>(s.size()));
    out.append(s.data(), s.size());
  }
  void properties(const Properties& props) {
    Writer w;
    for (const Property& p : props.items) {
      w.u8(p.id);
      switch (propType(p.id)) {
        case PropType::kByte: w.u8(static_cast<std::uint8_t>(p.number)); break;
        case PropType::kTwo: w.u16(static_cast<std::uint16_t>(p.number)); break;
        case PropType::kFour: w.u32(p.number); break;
        case PropType::kVarint:
          if (p.number > kMaxVarint && w.error.isOk()) w.error = Status::invalidArgument("subscription identifier too large");
          appendVarint(w.out, p.number);
          break;
        case PropType::kString: case PropType::kBinary: w.bytes(p.text, "property"); break;
        case PropType::kPair:
          w.bytes(p.text, "user property name");
          w.bytes(p.value, "user property value");
          break;
        case PropType::kUnknown:
          if (w.error.isOk()) w.error = Status::invalidArgument("unknown property id " + std::to_string(p.id));
          break;
      }
    }
    if (!w.error.isOk() && error.isOk()) error = w.error;
    appendVarint(out, static_cast<std::uint32_t>(w.out.size()));
    out += w.out;
  }
};

// --- reading -------------------------------------------------------------------------------

struct Reader {
  std::string_view in;
  std::size_t pos = 0;
  std::string error;

  bool fail(std::string why) {
    if (error.empty()) error = std::move(why);
    return false;
  }
  std::size_t left() const { return in.size() - pos; }
  bool u8(std::uint8_t& v) {
    if (left() < 1) return fail("truncated");
    v = static_cast<std::uint8_t>(in[pos++]);
    return true;
  }
  bool u16(std::uint16_t& v) {
    std::uint8_t a, b;
    if (!u8(a) || !u8(b)) return false;
    v = static_cast<std::uint16_t>(a << 8 | b);
    return true;
  }
  bool u32(std::uint32_t& v) {
    std::uint16_t a, b;
    if (!u16(a) || !u16(b)) return false;
    v = static_cast<std::uint32_t>(a) << 16 | b;
    return true;
  }
  bool varint(std::uint32_t& v) {
    v = 0;
    for (int i = 0; i < 4; ++i) {
      std::uint8_t b;
      if (!u8(b)) return false;
      v |= static_cast<std::uint32_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0) return true;
    }
    return fail("variable byte integer longer than 4 bytes");
  }
  bool bytes(std::string& s) {
    std::uint16_t n;
    if (!u16(n)) return false;
    if (left() < n) return fail("string or binary field runs past the packet");
    s.assign(in.substr(pos, n));
    pos += n;
    return true;
  }
  bool properties(Properties& props) {
    std::uint32_t len;
    if (!varint(len)) return false;
    if (left() < len) return fail("properties run past the packet");
    Reader r{in.substr(pos, len), 0, {}};
    pos += len;
    while (r.left() > 0) {
      std::uint32_t id32;
      if (!r.varint(id32)) return fail("properties: " + r.error);
      Property p;
      p.id = static_cast<std::uint8_t>(id32);
      bool ok = true;
      switch (id32 > 0x7F ? PropType::kUnknown : propType(p.id)) {
        case PropType::kByte: { std::uint8_t v; ok = r.u8(v); p.number = v; break; }
        case PropType::kTwo: { std::uint16_t v; ok = r.u16(v); p.number = v; break; }
        case PropType::kFour: ok = r.u32(p.number); break;
        case PropType::kVarint: ok = r.varint(p.number); break;
        case PropType::kString: case PropType::kBinary: ok = r.bytes(p.text); break;
        case PropType::kPair: ok = r.bytes(p.text) && r.bytes(p.value); break;
        case PropType::kUnknown: return fail("unknown property id " + std::to_string(id32));
      }
      if (!ok) return fail("properties: " + r.error);
      props.items.push_back(std::move(p));
    }
    return true;
  }
};

bool hasV5Body(Version v) { return v == Version::k5; }

std::uint8_t fixedFlags(const Packet& p) {
  switch (p.type) {
    case PacketType::kPublish:
      return static_cast<std::uint8_t>((p.dup ? 0x8 : 0) | (p.qos << 1) | (p.retain ? 1 : 0));
    case PacketType::kPubrel: case PacketType::kSubscribe: case PacketType::kUnsubscribe: return 0x2;
    default: return 0;
  }
}

}  // namespace

const char* packetTypeName(PacketType t) noexcept {
  switch (t) {
    case PacketType::kConnect: return "CONNECT";
    case PacketType::kConnack: return "CONNACK";
    case PacketType::kPublish: return "PUBLISH";
    case PacketType::kPuback: return "PUBACK";
    case PacketType::kPubrec: return "PUBREC";
    case PacketType::kPubrel: return "PUBREL";
    case PacketType::kPubcomp: return "PUBCOMP";
    case PacketType::kSubscribe: return "SUBSCRIBE";
    case PacketType::kSuback: return "SUBACK";
    case PacketType::kUnsubscribe: return "UNSUBSCRIBE";
    case PacketType::kUnsuback: return "UNSUBACK";
    case PacketType::kPingreq: return "PINGREQ";
    case PacketType::kPingresp: return "PINGRESP";
    case PacketType::kDisconnect: return "DISCONNECT";
    case PacketType::kAuth: return "AUTH";
  }
  return "?";
}

std::optional<std::uint32_t> Properties::number(std::uint8_t id) const {
  for (const auto& p : items)
    if (p.id == id) return p.number;
  return std::nullopt;
}

std::optional<std::string> Properties::text(std::uint8_t id) const {
  for (const auto& p : items)
    if (p.id == id) return p.text;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> Properties::userProperties() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : items)
    if (p.id == prop::kUserProperty) out.emplace_back(p.text, p.value);
  return out;
}

void Properties::setNumber(std::uint8_t id, std::uint32_t v) {
  for (auto& p : items)
    if (p.id == id) {
      p.number = v;
      return;
    }
  items.push_back({id, v, {}, {}});
}

void Properties::setText(std::uint8_t id, std::string v) {
  for (auto& p : items)
    if (p.id == id) {
      p.text = std::move(v);
      return;
    }
  items.push_back({id, 0, std::move(v), {}});
}

void Properties::addUser(std::string key, std::string value) {
  items.push_back({prop::kUserProperty, 0, std::move(key), std::move(value)});
}

void appendVarint(std::string& out, std::uint32_t value) {
  do {
    std::uint8_t b = value & 0x7F;
    value >>= 7;
    if (value > 0) b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (value > 0);
}

Frame frame(std::string_view data, std::size_t maxPacket) {
  Frame f;
  if (data.size() < 2) return f;
  std::uint32_t len = 0;
  std::size_t i = 1;
  for (; i < 5; ++i) {
    if (i >= data.size()) return f;  // need more
    const auto b = static_cast<std::uint8_t>(data[i]);
    len |= static_cast<std::uint32_t>(b & 0x7F) << (7 * (i - 1));
    if ((b & 0x80) == 0) break;
  }
  if (i == 5) {
    f.state = Frame::State::kInvalid;
    f.error = "remaining length longer than 4 bytes";
    return f;
  }
  const std::size_t total = i + 1 + len;
  if (total > maxPacket) {
    f.state = Frame::State::kInvalid;
    f.error = "packet of " + std::to_string(total) + " bytes over the limit of " + std::to_string(maxPacket);
    return f;
  }
  if (data.size() < total) return f;
  f.state = Frame::State::kOk;
  f.size = total;
  return f;
}

Result<std::string> encode(const Packet& p, Version version) {
  const bool v5 = hasV5Body(p.type == PacketType::kConnect ? p.version : version);
  Writer w;
  switch (p.type) {
    case PacketType::kConnect: {
      if (!p.username && p.password && !v5)
        return Status::invalidArgument("MQTT 3.1.1 CONNECT: a password needs a username");
      if (p.willQos > 2) return Status::invalidArgument("will QoS must be 0, 1 or 2");
      w.bytes("MQTT", "protocol name");
      w.u8(static_cast<std::uint8_t>(p.version));
      std::uint8_t flags = 0;
      if (p.username) flags |= 0x80;
      if (p.password) flags |= 0x40;
      if (p.hasWill) flags = static_cast<std::uint8_t>(flags | 0x04 | (p.willQos << 3) | (p.willRetain ? 0x20 : 0));
      if (p.cleanStart) flags |= 0x02;
      w.u8(flags);
      w.u16(p.keepAliveS);
      if (v5) w.properties(p.properties);
      w.bytes(p.clientId, "client id");
      if (p.hasWill) {
        if (v5) w.properties(p.willProperties);
        w.bytes(p.willTopic, "will topic");
        w.bytes(p.willPayload, "will payload");
      }
      if (p.username) w.bytes(*p.username, "username");
      if (p.password) w.bytes(*p.password, "password");
      break;
    }
    case PacketType::kConnack:
      w.u8(p.sessionPresent ? 1 : 0);
      w.u8(p.reasonCode);
      if (v5) w.properties(p.properties);
      break;
    case PacketType::kPublish:
      if (p.qos > 2) return Status::invalidArgument("PUBLISH QoS must be 0, 1 or 2");
      if (p.qos > 0 && p.packetId == 0) return Status::invalidArgument("PUBLISH QoS > 0 needs a packet id");
      if (p.topic.empty() && !(v5 && p.properties.number(prop::kTopicAlias)))
        return Status::invalidArgument("PUBLISH without a topic");
      w.bytes(p.topic, "topic");
      if (p.qos > 0) w.u16(p.packetId);
      if (v5) w.properties(p.properties);
      w.out += p.payload;
      break;
    case PacketType::kPuback: case PacketType::kPubrec: case PacketType::kPubrel:
    case PacketType::kPubcomp:
      if (p.packetId == 0) return Status::invalidArgument(std::string(packetTypeName(p.type)) + " needs a packet id");
      w.u16(p.packetId);
      if (v5 && (p.reasonCode != 0 || !p.properties.empty())) {
        w.u8(p.reasonCode);
        if (!p.properties.empty()) w.properties(p.properties);
      }
      break;
    case PacketType::kSubscribe:
      if (p.subscriptions.empty()) return Status::invalidArgument("SUBSCRIBE without a topic filter");
      if (p.packetId == 0) return Status::invalidArgument("SUBSCRIBE needs a packet id");
      w.u16(p.packetId);
      if (v5) w.properties(p.properties);
      for (const auto& s : p.subscriptions) {
        if (s.qos > 2) return Status::invalidArgument("subscription QoS must be 0, 1 or 2");
        w.bytes(s.filter, "topic filter");
        std::uint8_t o = s.qos;
        if (v5) {
          if (s.retainHandling > 2) return Status::invalidArgument("retain handling must be 0, 1 or 2");
          o = static_cast<std::uint8_t>(o | (s.noLocal ? 0x4 : 0) | (s.retainAsPublished ? 0x8 : 0) |
                                        (s.retainHandling << 4));
        }
        w.u8(o);
      }
      break;
    case PacketType::kSuback: case PacketType::kUnsuback:
      w.u16(p.packetId);
      if (v5) w.properties(p.properties);
      if (v5 || p.type == PacketType::kSuback)
        for (std::uint8_t c : p.reasonCodes) w.u8(c);
      break;
    case PacketType::kUnsubscribe:
      if (p.subscriptions.empty()) return Status::invalidArgument("UNSUBSCRIBE without a topic filter");
      if (p.packetId == 0) return Status::invalidArgument("UNSUBSCRIBE needs a packet id");
      w.u16(p.packetId);
      if (v5) w.properties(p.properties);
      for (const auto& s : p.subscriptions) w.bytes(s.filter, "topic filter");
      break;
    case PacketType::kPingreq: case PacketType::kPingresp: break;
    case PacketType::kDisconnect: case PacketType::kAuth:
      if (p.type == PacketType::kAuth && !v5) return Status::invalidArgument("AUTH exists only in MQTT 5");
      if (v5 && (p.reasonCode != 0 || !p.properties.empty())) {
        w.u8(p.reasonCode);
        if (!p.properties.empty()) w.properties(p.properties);
      }
      break;
  }
  if (!w.error.isOk()) return w.error.withContext(std::string("encoding ") + packetTypeName(p.type));
  if (w.out.size() > kMaxVarint) return Status::invalidArgument("packet too large for MQTT");
  std::string out;
  out.reserve(w.out.size() + 5);
  out.push_back(static_cast<char>((static_cast<std::uint8_t>(p.type) << 4) | fixedFlags(p)));
  appendVarint(out, static_cast<std::uint32_t>(w.out.size()));
  out += w.out;
  return out;
}

Result<Packet> decodeUnvalidatedPublish(std::string_view packet, Version version) {
  Frame f = frame(packet);
  if (f.state != Frame::State::kOk || f.size != packet.size())
    return Status::invalidArgument("MQTT packet: not one whole packet");
  const auto b0 = static_cast<std::uint8_t>(packet[0]);
  if ((b0 >> 4) != static_cast<std::uint8_t>(PacketType::kPublish))
    return Status::invalidArgument("MQTT packet: not a PUBLISH");
  Packet p;
  p.type = PacketType::kPublish;
  p.dup = (b0 & 0x8) != 0;
  p.qos = (b0 >> 1) & 0x3;
  p.retain = (b0 & 1) != 0;
  if (p.qos == 3) return Status::invalidArgument("MQTT PUBLISH: QoS 3");
  std::size_t start = 1;
  while (static_cast<std::uint8_t>(packet[start]) & 0x80) ++start;
  ++start;
  Reader r{packet.substr(start), 0, {}};
  // The topic's bytes as they are (no UTF-8 or wildcard check): its length must fit.
  std::uint16_t len = 0;
  if (!r.u16(len) || r.left() < len) return Status::invalidArgument("MQTT PUBLISH: topic length past the end");
  p.topic.assign(r.in.substr(r.pos, len));
  r.pos += len;
  if (p.qos > 0) {
    if (!r.u16(p.packetId)) return Status::invalidArgument("MQTT PUBLISH: " + r.error);
    if (p.packetId == 0) return Status::invalidArgument("MQTT PUBLISH: packet id 0");
  }
  Reader props = r;
  if (version != Version::k5 || props.properties(p.properties)) {
    r = props;
    p.payload.assign(r.in.substr(r.pos));
  } else {
    p.properties = Properties();
  }
  return p;
}

Result<Packet> decode(std::string_view packet, Version version) {
  Frame f = frame(packet);
  if (f.state == Frame::State::kInvalid) return Status::invalidArgument("MQTT packet: " + f.error);
  if (f.state != Frame::State::kOk || f.size != packet.size())
    return Status::invalidArgument("MQTT packet: length does not match its remaining length");
  const auto b0 = static_cast<std::uint8_t>(packet[0]);
  const std::uint8_t type = b0 >> 4, flags = b0 & 0xF;
  if (type == 0) return Status::invalidArgument("MQTT packet: reserved packet type 0");
  Packet p;
  p.type = static_cast<PacketType>(type);
  const std::string what = std::string("MQTT ") + packetTypeName(p.type) + ": ";
  const std::uint8_t wantFlags =
      (p.type == PacketType::kPubrel || p.type == PacketType::kSubscribe || p.type == PacketType::kUnsubscribe) ? 0x2 : 0;
  if (p.type != PacketType::kPublish && flags != wantFlags)
    return Status::invalidArgument(what + "reserved flags " + std::to_string(flags));
  // The body starts after the fixed header (1 byte + the remaining length's bytes).
  std::size_t start = 1;
  while (static_cast<std::uint8_t>(packet[start]) & 0x80) ++start;
  ++start;
  Reader r{packet.substr(start), 0, {}};
  bool v5 = version == Version::k5;
  auto bad = [&](const std::string& why) { return Status::invalidArgument(what + why); };
  switch (p.type) {
    case PacketType::kConnect: {
      std::string name;
      std::uint8_t level = 0, cflags = 0;
      if (!r.bytes(name) || !r.u8(level) || !r.u8(cflags) || !r.u16(p.keepAliveS)) return bad(r.error);
      if (name != "MQTT") return bad("protocol name '" + name + "' (only MQTT 3.1.1 and 5 are spoken)");
      if (level != 4 && level != 5) return bad("protocol level " + std::to_string(level));
      p.version = static_cast<Version>(level);
      v5 = p.version == Version::k5;
      if (cflags & 0x01) return bad("reserved connect flag set");
      p.cleanStart = (cflags & 0x02) != 0;
      p.hasWill = (cflags & 0x04) != 0;
      p.willQos = (cflags >> 3) & 0x3;
      p.willRetain = (cflags & 0x20) != 0;
      if (p.willQos == 3) return bad("will QoS 3");
      if (!p.hasWill && (p.willQos != 0 || p.willRetain)) return bad("will QoS/retain without a will");
      if (v5 && !r.properties(p.properties)) return bad(r.error);
      if (!r.bytes(p.clientId)) return bad(r.error);
      if (p.hasWill) {
        if (v5 && !r.properties(p.willProperties)) return bad(r.error);
        if (!r.bytes(p.willTopic) || !r.bytes(p.willPayload)) return bad(r.error);
      }
      if (cflags & 0x80) {
        std::string u;
        if (!r.bytes(u)) return bad(r.error);
        p.username = std::move(u);
      }
      if (cflags & 0x40) {
        std::string pw;
        if (!r.bytes(pw)) return bad(r.error);
        p.password = std::move(pw);
      }
      break;
    }
    case PacketType::kConnack: {
      std::uint8_t ack = 0;
      if (!r.u8(ack) || !r.u8(p.reasonCode)) return bad(r.error);
      if (ack & 0xFE) return bad("reserved acknowledge flags");
      p.sessionPresent = (ack & 1) != 0;
      if (v5 && r.left() > 0 && !r.properties(p.properties)) return bad(r.error);
      break;
    }
    case PacketType::kPublish: {
      p.dup = (flags & 0x8) != 0;
      p.qos = (flags >> 1) & 0x3;
      p.retain = (flags & 1) != 0;
      if (p.qos == 3) return bad("QoS 3");
      if (!r.bytes(p.topic)) return bad(r.error);
      if (p.qos > 0) {
        if (!r.u16(p.packetId)) return bad(r.error);
        if (p.packetId == 0) return bad("packet id 0");
      }
      if (v5 && !r.properties(p.properties)) return bad(r.error);
      if (p.topic.empty() && !(v5 && p.properties.number(prop::kTopicAlias))) return bad("empty topic");
      if (!p.topic.empty()) {
        if (Status s = validateTopicName(p.topic); !s.isOk()) return bad(s.message());
      }
      p.payload.assign(r.in.substr(r.pos));
      r.pos = r.in.size();
      break;
    }
    case PacketType::kPuback: case PacketType::kPubrec: case PacketType::kPubrel:
    case PacketType::kPubcomp:
      if (!r.u16(p.packetId)) return bad(r.error);
      if (v5 && r.left() > 0) {
        if (!r.u8(p.reasonCode)) return bad(r.error);
        if (r.left() > 0 && !r.properties(p.properties)) return bad(r.error);
      }
      break;
    case PacketType::kSubscribe: case PacketType::kUnsubscribe: {
      if (!r.u16(p.packetId)) return bad(r.error);
      if (v5 && !r.properties(p.properties)) return bad(r.error);
      while (r.left() > 0) {
        Subscription s;
        if (!r.bytes(s.filter)) return bad(r.error);
        if (p.type == PacketType::kSubscribe) {
          std::uint8_t o = 0;
          if (!r.u8(o)) return bad(r.error);
          s.qos = o & 0x3;
          if (s.qos == 3) return bad("subscription QoS 3");
          if (v5) {
            s.noLocal = (o & 0x4) != 0;
            s.retainAsPublished = (o & 0x8) != 0;
            s.retainHandling = (o >> 4) & 0x3;
            if (s.retainHandling == 3 || (o & 0xC0)) return bad("reserved subscription options");
          } else if (o & 0xFC) {
            return bad("reserved subscription options");
          }
        }
        p.subscriptions.push_back(std::move(s));
      }
      if (p.subscriptions.empty()) return bad("no topic filter");
      break;
    }
    case PacketType::kSuback: case PacketType::kUnsuback:
      if (!r.u16(p.packetId)) return bad(r.error);
      if (v5 && !r.properties(p.properties)) return bad(r.error);
      if (!v5 && p.type == PacketType::kUnsuback) break;  // 3.1.1: the packet id only
      while (r.left() > 0) {
        std::uint8_t c;
        r.u8(c);
        p.reasonCodes.push_back(c);
      }
      break;
    case PacketType::kPingreq: case PacketType::kPingresp: break;
    case PacketType::kDisconnect: case PacketType::kAuth:
      if (p.type == PacketType::kAuth && !v5) return bad("AUTH exists only in MQTT 5");
      if (v5 && r.left() > 0) {
        if (!r.u8(p.reasonCode)) return bad(r.error);
        if (r.left() > 0 && !r.properties(p.properties)) return bad(r.error);
      }
      break;
  }
  if (r.left() != 0) return bad(std::to_string(r.left()) + " unexpected trailing bytes");
  return p;
}

namespace {

Status validateCommon(std::string_view s, const char* what) {
  if (s.empty()) return Status::invalidArgument(std::string(what) + " is empty");
  if (s.size() > 65535) return Status::invalidArgument(std::string(what) + " longer than 65,535 bytes");
  // Well-formed UTF-8 without U+0000 (§1.5.4).
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (c == 0) return Status::invalidArgument(std::string(what) + " contains NUL");
    if (n == 0 || i + n > s.size()) return Status::invalidArgument(std::string(what) + " is not valid UTF-8");
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
        return Status::invalidArgument(std::string(what) + " is not valid UTF-8");
    i += n;
  }
  return Status::ok();
}

}  // namespace

Status validateTopicName(std::string_view topic) {
  FERRY_RETURN_IF_ERROR(validateCommon(topic, "topic name"));
  if (topic.find_first_of("+#") != std::string_view::npos)
    return Status::invalidArgument("topic name '" + std::string(topic) + "' contains a wildcard");
  return Status::ok();
}

Status validateTopicFilter(std::string_view filter) {
  FERRY_RETURN_IF_ERROR(validateCommon(filter, "topic filter"));
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = filter.find('/', start);
    const std::string_view level = filter.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    const bool last = slash == std::string_view::npos;
    if (level.find('#') != std::string_view::npos && (level != "#" || !last))
      return Status::invalidArgument("topic filter '" + std::string(filter) + "': '#' must be the whole last level");
    if (level.find('+') != std::string_view::npos && level != "+")
      return Status::invalidArgument("topic filter '" + std::string(filter) + "': '+' must be a whole level");
    if (last) break;
    start = slash + 1;
  }
  return Status::ok();
}

Result<std::optional<std::pair<std::string, std::string>>> parseShared(std::string_view filter) {
  constexpr std::string_view kPrefix = "$share/";
  if (filter.substr(0, kPrefix.size()) != kPrefix) return std::optional<std::pair<std::string, std::string>>{};
  const std::string_view rest = filter.substr(kPrefix.size());
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0)
    return Status::invalidArgument("shared subscription '" + std::string(filter) + "' needs $share/<group>/<filter>");
  const std::string_view group = rest.substr(0, slash);
  if (group.find_first_of("+#") != std::string_view::npos)
    return Status::invalidArgument("shared subscription group '" + std::string(group) + "' contains a wildcard");
  const std::string_view inner = rest.substr(slash + 1);
  FERRY_RETURN_IF_ERROR(validateTopicFilter(inner));
  return std::optional<std::pair<std::string, std::string>>(std::pair{std::string(group), std::string(inner)});
}

bool topicMatches(std::string_view filter, std::string_view topic) { return core::mqttTopicMatches(filter, topic); }

}  // namespace ferry::mqtt
