"""One RocketMQ remoting request over TCP (JSON header), for tests that ask a broker or name
server directly. Standard library only."""
import json
import socket
import struct


def remoting(addr, code, ext=None, body=b"", timeout=3):
    """Sends request `code` with header fields `ext` and `body` to "host:port"; returns the reply's
    header as a dict."""
    host, port = addr.rsplit(":", 1)
    hdr = json.dumps({"code": code, "extFields": ext or {}, "flag": 0, "language": "JAVA",
                      "opaque": 1, "serializeTypeCurrentRPC": "JSON", "version": 479}).encode()
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">ii", 4 + len(hdr) + len(body), len(hdr)) + hdr + body)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise OSError("closed by peer")
            buf += chunk
    hlen = struct.unpack(">i", buf[4:8])[0] & 0xFFFFFF
    return json.loads(buf[8:8 + hlen])
