// The host's side of the worker <-> JVM host channel (jvm/README.md, "The channel"): frames of
// [u32 length][u32 request id][u8 type][payload], big-endian; strings as [i32 length or -1 for
// null][UTF-8]; maps as [i32 count][key][value]...; lists as [i32 count][item]...
package io.ferry.jvmhost;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Wire {
  // A frame larger than this is refused (the worker never sends one; a corrupt length must not
  // make the host allocate gigabytes).
  static final int MAX_FRAME = 64 << 20;
  static final int MAX_ITEMS = 1 << 20;

  private Wire() {}

  // One frame as read: its request id, type and payload.
  static final class Frame {
    final int id;
    final int type;
    final DataInputStream body;

    Frame(int id, int type, DataInputStream body) {
      this.id = id;
      this.type = type;
      this.body = body;
    }
  }

  // The next frame, or null at the end of the stream (the worker closed the channel).
  static Frame read(DataInputStream in) throws IOException {
    int length;
    try {
      length = in.readInt();
    } catch (EOFException e) {
      return null;
    }
    if (length < 5 || length > MAX_FRAME) throw new IOException("bad frame length " + length);
    byte[] bytes = new byte[length];
    in.readFully(bytes);
    DataInputStream body = new DataInputStream(new java.io.ByteArrayInputStream(bytes));
    int id = body.readInt();
    int type = body.readUnsignedByte();
    return new Frame(id, type, body);
  }

  // Builds a frame's payload; send() writes it whole under the output's lock.
  static final class Out {
    final ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    final DataOutputStream data = new DataOutputStream(bytes);

    // A piece of a payload, appended to a frame with append().
    Out() {}

    Out(int id, int type) {
      put(d -> {
        d.writeInt(0);  // the length, filled in by send()
        d.writeInt(id);
        d.writeByte(type);
      });
    }

    private interface Write {
      void to(DataOutputStream out) throws IOException;
    }

    // Writes into the byte array, which does not fail.
    private Out put(Write w) {
      try {
        w.to(data);
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
      return this;
    }

    Out str(String s) {
      return put(d -> writeString(d, s));
    }

    Out i32(int v) {
      return put(d -> d.writeInt(v));
    }

    Out i64(long v) {
      return put(d -> d.writeLong(v));
    }

    Out u8(int v) {
      return put(d -> d.writeByte(v));
    }

    Out bool(boolean v) {
      return u8(v ? 1 : 0);
    }

    // Bytes as a string is written: [i32 length or -1 for null][bytes].
    Out bytes(byte[] b) {
      return put(d -> {
        if (b == null) {
          d.writeInt(-1);
        } else {
          d.writeInt(b.length);
          d.write(b);
        }
      });
    }

    Out append(Out piece) {
      return put(d -> piece.bytes.writeTo(d));
    }

    Out strings(List<String> items) {
      i32(items.size());
      for (String s : items) str(s);
      return this;
    }

    // A null map is written as count -1.
    Out map(Map<String, String> m) {
      if (m == null) return i32(-1);
      i32(m.size());
      for (Map.Entry<String, String> e : m.entrySet()) {
        str(e.getKey());
        str(e.getValue());
      }
      return this;
    }

    void send(OutputStream out) throws IOException {
      byte[] b = bytes.toByteArray();
      int length = b.length - 4;
      b[0] = (byte) (length >>> 24);
      b[1] = (byte) (length >>> 16);
      b[2] = (byte) (length >>> 8);
      b[3] = (byte) length;
      synchronized (out) {
        out.write(b);
        out.flush();
      }
    }
  }

  static void writeString(DataOutputStream out, String s) throws IOException {
    if (s == null) {
      out.writeInt(-1);
      return;
    }
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    out.writeInt(b.length);
    out.write(b);
  }

  static String readString(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n == -1) return null;
    if (n < 0 || n > in.available()) throw new IOException("bad string length " + n);
    byte[] b = new byte[n];
    in.readFully(b);
    return new String(b, StandardCharsets.UTF_8);
  }

  static byte[] readBytes(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n == -1) return null;
    if (n < 0 || n > in.available()) throw new IOException("bad bytes length " + n);
    byte[] b = new byte[n];
    in.readFully(b);
    return b;
  }

  // A map written by map(): null for count -1.
  static Map<String, String> readOptionalMap(DataInputStream in) throws IOException {
    in.mark(4);
    if (in.readInt() == -1) return null;
    in.reset();
    return readMap(in);
  }

  static int readCount(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > MAX_ITEMS || n > in.available()) throw new IOException("bad count " + n);
    return n;
  }

  static Map<String, String> readMap(DataInputStream in) throws IOException {
    int n = readCount(in);
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) m.put(readString(in), readString(in));
    return m;
  }

  static List<String> readStrings(DataInputStream in) throws IOException {
    int n = readCount(in);
    List<String> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) out.add(readString(in));
    return out;
  }

  // For InputStreams that are not DataInputStreams already.
  static DataInputStream data(InputStream in) {
    return in instanceof DataInputStream ? (DataInputStream) in : new DataInputStream(in);
  }
}
