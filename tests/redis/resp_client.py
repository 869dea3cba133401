"""A small synchronous Redis client for the tests (RESP2 over TCP or TLS), so the far end is read
without ferry's own client and without a Python package beyond the standard library."""
import socket
import ssl


class RedisError(Exception):
    pass


class Redis:
    def __init__(self, host="127.0.0.1", port=16379, password=None, tls_ca=None, timeout=10):
        self.addr = (host, port)
        self.password = password
        self.tls_ca = tls_ca
        self.timeout = timeout
        self.sock = None
        self.buf = b""
        self.connect()

    def connect(self):
        s = socket.create_connection(self.addr, timeout=self.timeout)
        if self.tls_ca:
            ctx = ssl.create_default_context(cafile=self.tls_ca)
            s = ctx.wrap_socket(s, server_hostname=self.addr[0])
        self.sock = s
        self.buf = b""
        if self.password:
            self.call("AUTH", self.password)

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None

    @staticmethod
    def encode(args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("Redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("Redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RedisError(f"bad reply line {line!r}")

    def call(self, *args):
        self.sock.sendall(self.encode(args))
        r = self.read()
        if isinstance(r, RedisError):
            raise r
        return r

    def pipeline(self, commands):
        self.sock.sendall(b"".join(self.encode(c) for c in commands))
        return [self.read() for _ in commands]


def text(v):
    return v.decode() if isinstance(v, bytes) else v
