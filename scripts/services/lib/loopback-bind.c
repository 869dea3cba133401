/* LD_PRELOAD shim for test servers that cannot be told where to listen (RocketMQ 4.9.x has no bind
 * address setting and opens every port on all interfaces). A bind() to the IPv4 wildcard becomes a
 * bind to 127.0.0.1, and a bind to the IPv6 wildcard becomes ::ffff:127.0.0.1, so the server is
 * reachable from this machine only. Every other bind() is passed through unchanged.
 * Built by scripts/services/rocketmq with the system C compiler; never part of ferry itself. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
  static bind_fn real;
  if (!real) real = (bind_fn)dlsym(RTLD_NEXT, "bind");
  if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in in;
    memcpy(&in, addr, sizeof in);
    if (in.sin_addr.s_addr == htonl(INADDR_ANY)) {
      in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return real(fd, (const struct sockaddr *)&in, sizeof in);
    }
  } else if (addr && addr->sa_family == AF_INET6 &&
             len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 in6;
    memcpy(&in6, addr, sizeof in6);
    if (memcmp(&in6.sin6_addr, &in6addr_any, sizeof in6.sin6_addr) == 0) {
      static const unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
      memcpy(&in6.sin6_addr, mapped, sizeof mapped);
      return real(fd, (const struct sockaddr *)&in6, sizeof in6);
    }
  }
  return real(fd, addr, len);
}
