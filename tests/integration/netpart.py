"""A network partition the test controls: a worker process runs in its own network namespace whose
only way out is a forwarding proxy in this (the test's) process; `sever()` stops the forwarding
without closing anything (packets held, as when a link drops them), `heal()` lets it flow again.

Servers listen on 127.0.0.1 only, so the namespace cannot reach them by routing; instead each
forwarded port has a listening socket created inside the namespace (on its own 127.0.0.1) and the
connection to the real server is made in the host namespace. `expose()` forwards the other way (the
worker's REST port, reachable from the test on the same port number; never severed).

Needs root (ip netns, setns). Standard library only."""
import ctypes
import os
import socket
import subprocess
import threading

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
_setns_lock = threading.Lock()


def _setns(fd):
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


class Partition:
    def __init__(self, name):
        self.name = name
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        subprocess.run(["ip", "netns", "add", name], check=True)
        subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)
        self._ns_fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
        self._host_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
        self._open = threading.Event()  # set: traffic flows
        self._open.set()
        self._closing = False
        self._sockets = []
        self.held_connections = 0

    def prefix(self):
        """The command prefix that runs a program inside the namespace."""
        return ["ip", "netns", "exec", self.name]

    def _socket_in(self, fd):
        with _setns_lock:  # setns applies to the calling thread only
            _setns(fd)
            try:
                return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            finally:
                _setns(self._host_fd)

    def forward(self, port, severable=True):
        """Namespace 127.0.0.1:port -> host 127.0.0.1:port (the worker reaching a broker)."""
        self._listen(self._ns_fd, self._host_fd, port, severable)

    def expose(self, port):
        """Host 127.0.0.1:port -> namespace 127.0.0.1:port (the test reaching the worker)."""
        self._listen(self._host_fd, self._ns_fd, port, severable=False)

    def _listen(self, listen_fd, connect_fd, port, severable):
        ls = self._socket_in(listen_fd)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", port))
        ls.listen(128)
        self._sockets.append(ls)

        def accept_loop():
            while not self._closing:
                try:
                    client, _ = ls.accept()
                except OSError:
                    return
                self._sockets.append(client)
                threading.Thread(target=self._connect, args=(client, connect_fd, port, severable),
                                 daemon=True).start()
        threading.Thread(target=accept_loop, daemon=True).start()

    def _connect(self, client, connect_fd, port, severable):
        if severable:
            self._open.wait()  # a connection attempt during the partition hangs, like a SYN dropped
        upstream = self._socket_in(connect_fd)
        self._sockets.append(upstream)
        try:
            upstream.connect(("127.0.0.1", port))
        except OSError:
            client.close()
            return
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(a, b, severable), daemon=True).start()

    def _pump(self, src, dst, severable):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if severable and not self._open.is_set():
                    self.held_connections += 1
                    self._open.wait()  # held, not dropped: TCP would retransmit after a heal
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def sever(self):
        self._open.clear()

    def heal(self):
        self._open.set()

    def close(self):
        self._closing = True
        self._open.set()
        for s in self._sockets:
            try:
                s.close()
            except OSError:
                pass
        os.close(self._ns_fd)
        os.close(self._host_fd)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
