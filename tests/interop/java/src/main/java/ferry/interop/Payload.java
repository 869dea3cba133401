// The deterministic interop messages, shared by every side of tests/interop (the same formula is
// in rmq_interop_tool.cc and test_rocketmq_interop.py; change all three together):
//   length  = 8 + (seq * 131 + seed) mod 97                         (8..104 bytes)
//   byte i  = 0 when i % 5 == 0, else (seq * 31 + i * 17 + seed * 7) mod 256
// so every body has zero bytes and most byte values (0x01 / 0x02, the property separators,
// included) appear across a run. Tag "T<seq % 3>", key "k<seq>".
// Also JSON string escaping for the CLI output. Pure functions.
package ferry.interop;

final class Payload {
  private Payload() {}

  static byte[] body(long seed, long seq) {
    int len = (int) (8 + Math.floorMod(seq * 131 + seed, 97L));
    byte[] b = new byte[len];
    for (int i = 0; i < len; i++) {
      b[i] = i % 5 == 0 ? 0 : (byte) Math.floorMod(seq * 31 + i * 17L + seed * 7, 256L);
    }
    return b;
  }

  static String tag(long seq) {
    return "T" + (seq % 3);
  }

  static String key(long seq) {
    return "k" + seq;
  }

  static String hex(byte[] b) {
    char[] digits = "0123456789abcdef".toCharArray();
    StringBuilder s = new StringBuilder(b.length * 2);
    for (byte x : b) {
      s.append(digits[(x >> 4) & 0xF]).append(digits[x & 0xF]);
    }
    return s.toString();
  }
}

final class Json {
  private Json() {}

  static String str(String v) {
    if (v == null) {
      return "null";
    }
    StringBuilder b = new StringBuilder(v.length() + 2).append('"');
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    return b.append('"').toString();
  }
}
