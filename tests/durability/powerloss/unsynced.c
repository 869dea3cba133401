// ferry_powerloss: an LD_PRELOAD layer that records, beside a running process, what a power loss
// would leave on the disk under a strict POSIX model. See tests/durability/README.md.
//
// What it keeps, for paths below $FERRY_POWERLOSS_ROOT, in the shadow folder
// $FERRY_POWERLOSS_SHADOW (laid out by powerloss.py init(); the format is described there):
//   data/<key>  the durable bytes and size of one file inode generation;
//   dir/<key>   the durable listing of one directory inode generation (name -> key, type);
//   pend/<key>  the byte ranges written since that file's last sync (for crash(..., "random"));
//   gen/<dev>_<ino>  the current generation of an inode number (bumped when a new inode appears,
//               because the file system reuses inode numbers after unlink).
// A file's data and size reach data/ only in fsync/fdatasync of that file (or sync/syncfs, or a
// write to an O_SYNC/O_DSYNC descriptor); a directory's names reach dir/ only in fsync of that
// directory. Names are never tracked call by call: the layer reads the directory's real listing
// at the moment it is fsynced, so rename/unlink/link/mkdir/rmdir need no interception for names.
// mkdir/open(O_CREAT|O_TMPFILE) are intercepted because they create inodes (new generation).
//
// Threads: every shadow update happens under one mutex (g_mu), inside the intercepted call and
// before it returns, so a SIGKILL leaves the shadow holding exactly what had become durable.
// Tracked writes hold g_mu across the real call (the start offset of write()/O_APPEND writes is
// read under it). fd_tracked[] is read without the lock to keep untracked fds (sockets, pipes,
// files elsewhere) on a fast path.
//
// Failure: any error while updating the shadow aborts the process with a message on stderr; a
// model that silently stopped recording would let a durability test pass for the wrong reason.
// One process at a time may run with the layer on a given root (state is per process).
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#ifndef FALLOC_FL_COLLAPSE_RANGE
#define FALLOC_FL_COLLAPSE_RANGE 0x08
#endif
#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10
#endif
#ifndef FALLOC_FL_INSERT_RANGE
#define FALLOC_FL_INSERT_RANGE 0x20
#endif
#ifndef RWF_DSYNC
#define RWF_DSYNC 0x02
#endif
#ifndef RWF_SYNC
#define RWF_SYNC 0x04
#endif
#ifndef RWF_APPEND
#define RWF_APPEND 0x10
#endif

#define FD_MAX 65536
#define OFF_INF ((off_t)INT64_MAX)

// ---------------------------------------------------------------------------------------------
// Real functions (dlsym(RTLD_NEXT)). Used for every call the layer makes itself, so the layer
// never re-enters its own wrappers (which would deadlock on g_mu).

int __open_2(const char* path, int flags);
int __open64_2(const char* path, int flags);
int __openat_2(int dirfd, const char* path, int flags);
int __openat64_2(int dirfd, const char* path, int flags);

static int (*real_openat)(int, const char*, int, ...);
static int (*real_close)(int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_fcntl64)(int, int, ...);
static ssize_t (*real_write)(int, const void*, size_t);
static ssize_t (*real_pwrite)(int, const void*, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void*, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec*, int);
static ssize_t (*real_pwritev)(int, const struct iovec*, int, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec*, int, off_t);
static ssize_t (*real_pwritev2)(int, const struct iovec*, int, off_t, int);
static ssize_t (*real_pwritev64v2)(int, const struct iovec*, int, off_t, int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_truncate)(const char*, off_t);
static int (*real_truncate64)(const char*, off_t);
static int (*real_fallocate)(int, int, off_t, off_t);
static int (*real_fallocate64)(int, int, off_t, off_t);
static int (*real_posix_fallocate)(int, off_t, off_t);
static int (*real_posix_fallocate64)(int, off_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static void (*real_sync)(void);
static int (*real_syncfs)(int);
static int (*real_mkdir)(const char*, mode_t);
static int (*real_mkdirat)(int, const char*, mode_t);
static FILE* (*real_fopen)(const char*, const char*);
static FILE* (*real_fopen64)(const char*, const char*);
static FILE* (*real_freopen)(const char*, const char*, FILE*);
static FILE* (*real_freopen64)(const char*, const char*, FILE*);
static FILE* (*real_fdopen)(int, const char*);

// ---------------------------------------------------------------------------------------------
// State.

typedef struct {
  off_t start, end;  // [start, end)
} Range;

// One inode (dev, ino) as the model sees it. Never freed: an unlinked inode's entry is reset
// when its number comes back as a new inode (new generation).
typedef struct Inode {
  dev_t dev;
  ino_t ino;
  uint64_t gen;
  int loaded;       // gen read from the shadow
  int established;  // regular file: dirty state tracks every change since the last sync
  int live;         // no durable record: crash() keeps what the file holds then (stdio, untracked)
  int is_dir;
  int changed;      // something to copy at the next sync
  off_t min_size;   // smallest size the file had since its last sync
  Range* ranges;    // dirty byte ranges since the last sync, sorted, disjoint, not touching
  size_t nranges, cap;
  int pend_fd;      // append-only pend/<key>, open while there are unsynced writes
  struct Inode* next;
} Inode;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_active;  // set once by init_once(); read-only afterwards
static char g_root[PATH_MAX];
static size_t g_root_len;
static char g_shadow[PATH_MAX];

#define NBUCKETS 4096
static Inode* g_inodes[NBUCKETS];           // guarded by g_mu
static Inode* fd_inode[FD_MAX];             // guarded by g_mu
static _Atomic unsigned char fd_tracked[FD_MAX];  // written under g_mu, read without
static char g_copybuf[1 << 20];             // guarded by g_mu

static void die(const char* fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char* fmt, ...) {
  char msg[1024];
  int n = snprintf(msg, sizeof msg, "ferry_powerloss[%d]: ", (int)getpid());
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof msg - 2) n = (int)sizeof msg - 2;
  msg[n++] = '\n';
  if (real_write) real_write(2, msg, (size_t)n);
  abort();
}

static void* need(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (!p) {
    fprintf(stderr, "ferry_powerloss: libc has no %s\n", name);
    abort();
  }
  return p;
}

static void* maybe(const char* name) { return dlsym(RTLD_NEXT, name); }

static void lock(void) { pthread_mutex_lock(&g_mu); }
static void unlock(void) { pthread_mutex_unlock(&g_mu); }
static void atfork_child(void) { pthread_mutex_init(&g_mu, NULL); }

// out (PATH_MAX bytes) = "<shadow>/" + the formatted rest.
static void spath(char* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void spath(char* out, const char* fmt, ...) {
  size_t n = strlen(g_shadow);
  memcpy(out, g_shadow, n);
  out[n++] = '/';
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(out + n, PATH_MAX - n, fmt, ap);
  va_end(ap);
  if (m < 0 || (size_t)m >= PATH_MAX - n) die("shadow path too long");
}

static void shadow_path(char* out, const char* sub, const Inode* in) {
  spath(out, "%s/%llx_%llu_%llu", sub, (unsigned long long)in->dev, (unsigned long long)in->ino,
        (unsigned long long)in->gen);
}

// Writes a small shadow file atomically (temporary name + rename): a SIGKILL in the middle leaves
// the old version.
static void write_atomic(const char* path, const char* data, size_t n) {
  char tmp[PATH_MAX];
  spath(tmp, "tmp/%d.%lu", (int)getpid(), (unsigned long)pthread_self());
  int fd = real_openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) die("create %s: %s", tmp, strerror(errno));
  size_t done = 0;
  while (done < n) {
    ssize_t w = real_write(fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("write %s: %s", tmp, strerror(errno));
    done += (size_t)w;
  }
  real_close(fd);
  if (rename(tmp, path) != 0) die("rename %s: %s", path, strerror(errno));
}

static int below_root(const char* p);

static void init_once(void) {
  real_openat = need("openat");
  real_close = need("close");
  real_dup = need("dup");
  real_dup2 = need("dup2");
  real_dup3 = need("dup3");
  real_fcntl = need("fcntl");
  real_fcntl64 = maybe("fcntl64");
  real_write = need("write");
  real_pwrite = need("pwrite");
  real_pwrite64 = need("pwrite64");
  real_writev = need("writev");
  real_pwritev = need("pwritev");
  real_pwritev64 = need("pwritev64");
  real_pwritev2 = maybe("pwritev2");
  real_pwritev64v2 = maybe("pwritev64v2");
  real_ftruncate = need("ftruncate");
  real_ftruncate64 = need("ftruncate64");
  real_truncate = need("truncate");
  real_truncate64 = need("truncate64");
  real_fallocate = need("fallocate");
  real_fallocate64 = need("fallocate64");
  real_posix_fallocate = need("posix_fallocate");
  real_posix_fallocate64 = need("posix_fallocate64");
  real_fsync = need("fsync");
  real_fdatasync = need("fdatasync");
  real_sync = need("sync");
  real_syncfs = need("syncfs");
  real_mkdir = need("mkdir");
  real_mkdirat = need("mkdirat");
  real_fopen = need("fopen");
  real_fopen64 = need("fopen64");
  real_freopen = need("freopen");
  real_freopen64 = need("freopen64");
  real_fdopen = need("fdopen");

  const char* root = getenv("FERRY_POWERLOSS_ROOT");
  const char* shadow = getenv("FERRY_POWERLOSS_SHADOW");
  if (!root || !*root) return;  // not configured: a plain pass-through
  if (!shadow || !*shadow) die("FERRY_POWERLOSS_ROOT is set but FERRY_POWERLOSS_SHADOW is not");
  if (!realpath(root, g_root)) die("FERRY_POWERLOSS_ROOT %s: %s", root, strerror(errno));
  if (!realpath(shadow, g_shadow)) die("FERRY_POWERLOSS_SHADOW %s: %s", shadow, strerror(errno));
  g_root_len = strlen(g_root);
  if (below_root(g_shadow)) die("FERRY_POWERLOSS_SHADOW %s lies below the root %s", g_shadow, g_root);
  // The shadow must have been laid out by powerloss.py init() for this very root.
  char meta[PATH_MAX + 16], want[PATH_MAX + 16], got[PATH_MAX + 16];
  snprintf(meta, sizeof meta, "%s/meta", g_shadow);
  int fd = real_openat(AT_FDCWD, meta, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("%s: %s (run powerloss.init(root, shadow) before starting the process)", meta, strerror(errno));
  ssize_t n = read(fd, got, sizeof got - 1);
  real_close(fd);
  got[n > 0 ? n : 0] = '\0';
  snprintf(want, sizeof want, "root=%s\n", g_root);
  if (strncmp(got, want, strlen(want)) != 0)
    die("%s was initialised for another root (want %s)", meta, g_root);
  // Announce the attachment, so a test can tell the layer really ran in its process.
  char att[PATH_MAX + 16], line[32];
  snprintf(att, sizeof att, "%s/attached", g_shadow);
  fd = real_openat(AT_FDCWD, att, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) die("%s: %s", att, strerror(errno));
  int len = snprintf(line, sizeof line, "%d\n", (int)getpid());
  if (real_write(fd, line, (size_t)len) != len) die("%s: %s", att, strerror(errno));
  real_close(fd);
  pthread_atfork(lock, unlock, atfork_child);
  g_active = 1;
}

static inline void ensure_init(void) { pthread_once(&g_once, init_once); }

__attribute__((constructor)) static void powerloss_ctor(void) { ensure_init(); }

// Exported so a program can check that the layer is loaded and configured.
int ferry_powerloss_active(void) {
  ensure_init();
  return g_active;
}

// ---------------------------------------------------------------------------------------------
// Inodes and generations.

static Inode* inode_find(dev_t dev, ino_t ino) {
  size_t h = ((size_t)ino * 2654435761u ^ (size_t)dev) % NBUCKETS;
  for (Inode* in = g_inodes[h]; in; in = in->next)
    if (in->dev == dev && in->ino == ino) return in;
  return NULL;
}

static uint64_t read_gen(dev_t dev, ino_t ino) {
  char p[PATH_MAX], buf[32];
  spath(p, "gen/%llx_%llu", (unsigned long long)dev, (unsigned long long)ino);
  int fd = real_openat(AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  real_close(fd);
  buf[n > 0 ? n : 0] = '\0';
  return strtoull(buf, NULL, 10);
}

// The model's entry for (dev, ino), created on first use (caller holds g_mu).
static Inode* inode_get(dev_t dev, ino_t ino) {
  Inode* in = inode_find(dev, ino);
  if (in) return in;
  in = calloc(1, sizeof *in);
  if (!in) die("out of memory");
  in->dev = dev;
  in->ino = ino;
  in->gen = read_gen(dev, ino);
  in->loaded = 1;
  in->pend_fd = -1;
  in->min_size = OFF_INF;
  size_t h = ((size_t)ino * 2654435761u ^ (size_t)dev) % NBUCKETS;
  in->next = g_inodes[h];
  g_inodes[h] = in;
  return in;
}

static void drop_pending(Inode* in) {
  char p[PATH_MAX];
  if (in->pend_fd >= 0) real_close(in->pend_fd);
  in->pend_fd = -1;
  shadow_path(p, "pend", in);
  if (unlink(p) != 0 && errno != ENOENT) die("unlink %s: %s", p, strerror(errno));
}

static void clear_dirty(Inode* in) {
  in->nranges = 0;
  in->changed = 0;
}

// A new inode got this number: start a new generation with empty durable content (regular file)
// or an empty durable listing (directory). Older generations stay in the shadow because an older
// durable listing may still name them.
static void new_generation(Inode* in, int is_dir, int live) {
  if (in->pend_fd >= 0) real_close(in->pend_fd);
  in->pend_fd = -1;
  in->gen += 1;
  char p[PATH_MAX], num[32];
  spath(p, "gen/%llx_%llu", (unsigned long long)in->dev, (unsigned long long)in->ino);
  int n = snprintf(num, sizeof num, "%llu\n", (unsigned long long)in->gen);
  write_atomic(p, num, (size_t)n);
  in->is_dir = is_dir;
  in->live = live;
  in->established = 1;
  in->min_size = 0;
  clear_dirty(in);
  if (live) return;
  shadow_path(p, is_dir ? "dir" : "data", in);
  write_atomic(p, "", 0);
}

// First tracked use of an existing regular file in this process: decides whether the model knows
// its durable content (data/<key> exists) and marks the whole file dirty when it may have changed
// since that content was recorded (a later sync then copies it all, which is what fsync means).
static void establish(Inode* in, const struct stat* st) {
  if (in->established) return;
  in->established = 1;
  char p[PATH_MAX];
  shadow_path(p, "data", in);
  struct stat sh;
  if (stat(p, &sh) != 0) {
    in->live = 1;
    return;
  }
  in->live = 0;
  in->min_size = st->st_size;
  const int newer = st->st_mtim.tv_sec > sh.st_mtim.tv_sec ||
                    (st->st_mtim.tv_sec == sh.st_mtim.tv_sec && st->st_mtim.tv_nsec >= sh.st_mtim.tv_nsec);
  if (sh.st_size != st->st_size || newer) {
    in->min_size = 0;
    if (in->cap == 0) {
      in->ranges = malloc(8 * sizeof(Range));
      if (!in->ranges) die("out of memory");
      in->cap = 8;
    }
    in->ranges[0] = (Range){0, st->st_size};
    in->nranges = st->st_size > 0 ? 1 : 0;
    in->changed = 1;
  }
}

static void pend_log(Inode* in, off_t start, off_t end) {
  if (in->pend_fd < 0) {
    char p[PATH_MAX];
    shadow_path(p, "pend", in);
    in->pend_fd = real_openat(AT_FDCWD, p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (in->pend_fd < 0) die("open %s: %s", p, strerror(errno));
  }
  uint64_t rec[2] = {(uint64_t)start, (uint64_t)end};
  if (real_write(in->pend_fd, rec, sizeof rec) != (ssize_t)sizeof rec) die("append to pending log: %s", strerror(errno));
}

static void add_dirty(Inode* in, off_t s, off_t e) {
  if (e <= s) return;
  pend_log(in, s, e);
  in->changed = 1;
  size_t n = in->nranges, i = n;
  // Appends are the common case: look from the end.
  while (i > 0 && in->ranges[i - 1].end >= s) --i;
  size_t j = i;
  off_t ns = s, ne = e;
  while (j < n && in->ranges[j].start <= e) {
    if (in->ranges[j].start < ns) ns = in->ranges[j].start;
    if (in->ranges[j].end > ne) ne = in->ranges[j].end;
    ++j;
  }
  if (j == i) {  // insert
    if (n == in->cap) {
      size_t cap = in->cap ? in->cap * 2 : 8;
      Range* r = realloc(in->ranges, cap * sizeof(Range));
      if (!r) die("out of memory");
      in->ranges = r;
      in->cap = cap;
    }
    memmove(in->ranges + i + 1, in->ranges + i, (n - i) * sizeof(Range));
    in->ranges[i] = (Range){ns, ne};
    in->nranges = n + 1;
  } else {  // ranges i..j-1 merge into one
    in->ranges[i] = (Range){ns, ne};
    memmove(in->ranges + i + 1, in->ranges + j, (n - j) * sizeof(Range));
    in->nranges = n - (j - i - 1);
  }
}

// The size went from `old` to `len` (truncate, fallocate).
static void note_size(Inode* in, off_t old, off_t len) {
  if (len < old) {
    if (len < in->min_size) in->min_size = len;
    pend_log(in, len, old);
    in->changed = 1;
  } else if (len > old) {
    pend_log(in, old, len);  // zeros; the shadow grows to the size at sync
    in->changed = 1;
  }
}

// Copies what fsync makes durable: the dirty ranges and the size (caller holds g_mu; fd is any
// descriptor on the inode).
static void flush_inode(Inode* in, int fd) {
  if (in->live || in->is_dir) return;
  struct stat st;
  if (fstat(fd, &st) != 0) die("fstat: %s", strerror(errno));
  int rfd = fd, opened = 0;
  int fl = real_fcntl(fd, F_GETFL);
  if (fl < 0 || (fl & O_ACCMODE) == O_WRONLY) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    rfd = real_openat(AT_FDCWD, proc, O_RDONLY | O_CLOEXEC);
    if (rfd < 0) die("reopen %s for reading: %s", proc, strerror(errno));
    opened = 1;
  }
  char p[PATH_MAX];
  shadow_path(p, "data", in);
  int sfd = real_openat(AT_FDCWD, p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (sfd < 0) die("open %s: %s", p, strerror(errno));
  struct stat sh;
  if (fstat(sfd, &sh) != 0) die("fstat %s: %s", p, strerror(errno));
  const off_t live = st.st_size;
  off_t cur = sh.st_size;
  if (in->min_size < cur) {
    if (real_ftruncate(sfd, in->min_size) != 0) die("truncate %s: %s", p, strerror(errno));
    cur = in->min_size;
  }
  if (cur != live && real_ftruncate(sfd, live) != 0) die("truncate %s: %s", p, strerror(errno));
  for (size_t i = 0; i < in->nranges; ++i) {
    off_t s = in->ranges[i].start, e = in->ranges[i].end < live ? in->ranges[i].end : live;
    while (s < e) {
      size_t want = (size_t)(e - s) < sizeof g_copybuf ? (size_t)(e - s) : sizeof g_copybuf;
      ssize_t r = pread(rfd, g_copybuf, want, s);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) die("read back for the shadow: %s", strerror(errno));
      if (r == 0) break;  // shrank meanwhile (another thread); the next sync settles it
      ssize_t done = 0;
      while (done < r) {
        ssize_t w = real_pwrite(sfd, g_copybuf + done, (size_t)(r - done), s + done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("write %s: %s", p, strerror(errno));
        done += w;
      }
      s += r;
    }
  }
  real_close(sfd);
  if (opened) real_close(rfd);
  clear_dirty(in);
  in->min_size = live;
  drop_pending(in);
}

// ---------------------------------------------------------------------------------------------
// Paths.

static int below_root(const char* p) {
  return strncmp(p, g_root, g_root_len) == 0 && (p[g_root_len] == '/' || p[g_root_len] == '\0');
}

static int fd_below_root(int fd) {
  char proc[64], p[PATH_MAX];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(proc, p, sizeof p - 1);
  if (n <= 0) return 0;
  p[n] = '\0';
  return below_root(p);
}

// Records the directory's current entries as its durable listing (caller holds g_mu).
// Record: type, dev (hex), ino, gen, name, symlink target, each ended by NUL.
static void record_listing(int dfd, Inode* din) {
  int d2 = real_openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d2 < 0) die("reopen folder: %s", strerror(errno));
  DIR* d = fdopendir(d2);
  if (!d) die("fdopendir: %s", strerror(errno));
  size_t cap = 4096, len = 0;
  char* buf = malloc(cap);
  if (!buf) die("out of memory");
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    char type;
    char target[PATH_MAX] = "";
    uint64_t gen = 0;
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
      type = S_ISREG(st.st_mode) ? 'f' : 'd';
      gen = inode_get(st.st_dev, st.st_ino)->gen;
    } else if (S_ISLNK(st.st_mode)) {
      type = 'l';
      ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
      target[n > 0 ? n : 0] = '\0';
    } else {
      continue;  // fifos, sockets, devices: not modelled
    }
    size_t need_len = strlen(e->d_name) + strlen(target) + 96;
    if (len + need_len > cap) {
      while (len + need_len > cap) cap *= 2;
      char* nb = realloc(buf, cap);
      if (!nb) die("out of memory");
      buf = nb;
    }
    len += (size_t)sprintf(buf + len, "%c%c%llx%c%llu%c%llu%c%s%c%s%c", type, 0, (unsigned long long)st.st_dev, 0,
                           (unsigned long long)st.st_ino, 0, (unsigned long long)gen, 0, e->d_name, 0, target, 0);
  }
  closedir(d);
  char p[PATH_MAX];
  shadow_path(p, "dir", din);
  write_atomic(p, buf, len);
  free(buf);
  din->is_dir = 1;
  din->live = 0;
  din->established = 1;
}

// Makes everything below root durable (sync/syncfs): every directory listing, and every file the
// model knows to have unsynced changes (caller holds g_mu).
static void sync_tree(int dfd) {
  struct stat st;
  if (fstat(dfd, &st) != 0) return;
  record_listing(dfd, inode_get(st.st_dev, st.st_ino));
  int d2 = real_openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d2 < 0) return;
  DIR* d = fdopendir(d2);
  if (!d) return;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat cs;
    if (fstatat(dirfd(d), e->d_name, &cs, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(cs.st_mode)) {
      int c = real_openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (c >= 0) {
        sync_tree(c);
        real_close(c);
      }
    } else if (S_ISREG(cs.st_mode)) {
      Inode* in = inode_find(cs.st_dev, cs.st_ino);
      if (in && in->established && !in->live && in->changed) {
        int f = real_openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (f >= 0) {
          flush_inode(in, f);
          real_close(f);
        }
      }
    }
  }
  closedir(d);
}

static void sync_everything(void) {
  lock();
  int fd = real_openat(AT_FDCWD, g_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    sync_tree(fd);
    real_close(fd);
  }
  unlock();
}

// ---------------------------------------------------------------------------------------------
// Descriptors.

static void untrack(int fd) {
  if (fd >= 0 && fd < FD_MAX) {
    fd_inode[fd] = NULL;
    atomic_store(&fd_tracked[fd], 0);
  }
}

static void set_tracked(int fd, Inode* in) {
  if (fd >= FD_MAX) die("descriptor %d beyond the layer's table (%d)", fd, FD_MAX);
  fd_inode[fd] = in;
  atomic_store(&fd_tracked[fd], 1);
}

static int is_tracked(int fd) { return g_active && fd >= 0 && fd < FD_MAX && atomic_load(&fd_tracked[fd]); }

// A descriptor just opened (caller holds g_mu). `created`: the open made a new inode.
static void track_open(int fd, const struct stat* st, int created, int truncated) {
  if (fd < 0 || fd >= FD_MAX) {
    if (fd >= FD_MAX && fd_below_root(fd)) die("descriptor %d beyond the layer's table (%d)", fd, FD_MAX);
    return;
  }
  untrack(fd);  // a stale entry (closed through a path the layer does not see, e.g. fclose)
  if (!fd_below_root(fd)) return;
  Inode* in = inode_get(st->st_dev, st->st_ino);
  if (S_ISDIR(st->st_mode)) {
    in->is_dir = 1;
  } else if (created) {
    new_generation(in, 0, 0);
  } else {
    establish(in, st);
    if (truncated && !in->live) {
      // O_TRUNC: the model makes the truncation durable at once (ext4's zero-length files after a
      // crash), the data written afterwards only at the next sync.
      char p[PATH_MAX];
      shadow_path(p, "data", in);
      if (real_truncate(p, 0) != 0) die("truncate %s: %s", p, strerror(errno));
      clear_dirty(in);
      drop_pending(in);
      in->min_size = 0;
    }
  }
  set_tracked(fd, in);
}

static int do_openat(int dirfd, const char* path, int flags, mode_t mode) {
  ensure_init();
  if (!g_active || (flags & O_PATH)) return real_openat(dirfd, path, flags, mode);
  const int tmpfile = (flags & O_TMPFILE) == O_TMPFILE;
  const int creat = (flags & O_CREAT) != 0;
  const int trunc = (flags & O_TRUNC) != 0 && (flags & O_ACCMODE) != O_RDONLY;
  int locked = 0;
  struct stat pre;
  int existed = 1;
  if (creat || tmpfile || trunc) {
    lock();
    locked = 1;
    if (creat) existed = fstatat(dirfd, path, &pre, 0) == 0;
  }
  int fd = real_openat(dirfd, path, flags, mode);
  int err = errno;
  if (fd >= 0) {
    struct stat st;
    if (fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
      if (!locked) {
        lock();
        locked = 1;
      }
      const int created = tmpfile || (creat && (!existed || pre.st_ino != st.st_ino || pre.st_dev != st.st_dev));
      track_open(fd, &st, created, trunc && !created);
    }
  }
  if (locked) unlock();
  errno = err;
  return fd;
}

static mode_t va_mode(int flags, va_list ap) {
  return ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = va_mode(flags, ap);
  va_end(ap);
  return do_openat(AT_FDCWD, path, flags, m);
}
int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = va_mode(flags, ap);
  va_end(ap);
  return do_openat(AT_FDCWD, path, flags | O_LARGEFILE, m);
}
int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = va_mode(flags, ap);
  va_end(ap);
  return do_openat(dirfd, path, flags, m);
}
int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = va_mode(flags, ap);
  va_end(ap);
  return do_openat(dirfd, path, flags | O_LARGEFILE, m);
}
int __open_2(const char* path, int flags) { return do_openat(AT_FDCWD, path, flags, 0); }
int __open64_2(const char* path, int flags) {
  return do_openat(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}
int __openat_2(int dirfd, const char* path, int flags) { return do_openat(dirfd, path, flags, 0); }
int __openat64_2(int dirfd, const char* path, int flags) {
  return do_openat(dirfd, path, flags | O_LARGEFILE, 0);
}
int creat(const char* path, mode_t mode) {
  return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
int creat64(const char* path, mode_t mode) {
  return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE, mode);
}

int close(int fd) {
  ensure_init();
  if (is_tracked(fd)) {
    lock();
    untrack(fd);
    unlock();
  }
  return real_close(fd);
}

static void after_dup(int oldfd, int newfd) {
  if (!g_active || newfd < 0) return;
  if (!is_tracked(oldfd) && !is_tracked(newfd)) return;
  lock();
  Inode* in = (oldfd >= 0 && oldfd < FD_MAX) ? fd_inode[oldfd] : NULL;
  if (in && atomic_load(&fd_tracked[oldfd]))
    set_tracked(newfd, in);
  else
    untrack(newfd);
  unlock();
}

int dup(int fd) {
  ensure_init();
  int r = real_dup(fd);
  int e = errno;
  after_dup(fd, r);
  errno = e;
  return r;
}
int dup2(int fd, int fd2) {
  ensure_init();
  int r = real_dup2(fd, fd2);
  int e = errno;
  if (r >= 0 && r != fd) after_dup(fd, r);
  errno = e;
  return r;
}
int dup3(int fd, int fd2, int flags) {
  ensure_init();
  int r = real_dup3(fd, fd2, flags);
  int e = errno;
  after_dup(fd, r);
  errno = e;
  return r;
}

static int do_fcntl(int (*real)(int, int, ...), int fd, int cmd, va_list ap) {
  // Every fcntl argument is an int or a pointer; passing it on as a pointer-sized value works for
  // both on the ABIs ferry builds for (x86-64, aarch64).
  void* arg = va_arg(ap, void*);
  int r = real(fd, cmd, arg);
  if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0) {
    int e = errno;
    after_dup(fd, r);
    errno = e;
  }
  return r;
}
int fcntl(int fd, int cmd, ...) {
  ensure_init();
  va_list ap;
  va_start(ap, cmd);
  int r = do_fcntl(real_fcntl, fd, cmd, ap);
  va_end(ap);
  return r;
}
int fcntl64(int fd, int cmd, ...) {
  ensure_init();
  va_list ap;
  va_start(ap, cmd);
  int r = do_fcntl(real_fcntl64 ? real_fcntl64 : real_fcntl, fd, cmd, ap);
  va_end(ap);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Writes. write_begin() returns the inode with g_mu held, or NULL (untracked: no lock).

static Inode* write_begin(int fd, off_t explicit_off, int rwf, off_t* start, int* sync_after) {
  if (!is_tracked(fd)) return NULL;
  lock();
  Inode* in = fd_inode[fd];
  struct stat st;
  if (!in || in->is_dir || in->live || fstat(fd, &st) != 0) {
    unlock();
    return NULL;
  }
  if (st.st_ino != in->ino || st.st_dev != in->dev) {  // closed behind our back and reused
    untrack(fd);
    unlock();
    return NULL;
  }
  const int fl = real_fcntl(fd, F_GETFL);
  if ((fl >= 0 && (fl & O_APPEND)) || (rwf & RWF_APPEND))
    *start = st.st_size;  // Linux appends even for pwrite on an O_APPEND descriptor
  else if (explicit_off >= 0)
    *start = explicit_off;
  else
    *start = lseek(fd, 0, SEEK_CUR);
  *sync_after = (fl >= 0 && (fl & O_DSYNC)) || (rwf & (RWF_DSYNC | RWF_SYNC));
  return in;
}

static void write_end(int fd, Inode* in, off_t start, ssize_t r, int sync_after) {
  int e = errno;
  if (r > 0) {
    add_dirty(in, start, start + r);
    if (sync_after) flush_inode(in, fd);
  }
  unlock();
  errno = e;
}

ssize_t write(int fd, const void* buf, size_t n) {
  ensure_init();
  off_t s;
  int sy;
  Inode* in = write_begin(fd, -1, 0, &s, &sy);
  ssize_t r = real_write(fd, buf, n);
  if (in) write_end(fd, in, s, r, sy);
  return r;
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  ensure_init();
  off_t s;
  int sy;
  Inode* in = write_begin(fd, off, 0, &s, &sy);
  ssize_t r = real_pwrite(fd, buf, n, off);
  if (in) write_end(fd, in, s, r, sy);
  return r;
}
ssize_t pwrite64(int fd, const void* buf, size_t n, off_t off) {
  ensure_init();
  off_t s;
  int sy;
  Inode* in = write_begin(fd, off, 0, &s, &sy);
  ssize_t r = real_pwrite64(fd, buf, n, off);
  if (in) write_end(fd, in, s, r, sy);
  return r;
}
ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  ensure_init();
  off_t s;
  int sy;
  Inode* in = write_begin(fd, -1, 0, &s, &sy);
  ssize_t r = real_writev(fd, iov, cnt);
  if (in) write_end(fd, in, s, r, sy);
  return r;
}
ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) {
  ensure_init();
  off_t s;
  int sy;
  Inode* in = write_begin(fd, off, 0, &s, &sy);
  ssize_t r = real_pwritev(fd, iov, cnt, off);
  if (in) write_end(fd, in, s, r, sy);
  return r;
}
ssize_t pwritev64(int fd, const struct iovec* iov, int cnt, off_t off) {
  ensure_init();
  off_t s;
  int sy;
  Inode* in = write_begin(fd, off, 0, &s, &sy);
  ssize_t r = real_pwritev64(fd, iov, cnt, off);
  if (in) write_end(fd, in, s, r, sy);
  return r;
}
ssize_t pwritev2(int fd, const struct iovec* iov, int cnt, off_t off, int flags) {
  ensure_init();
  if (!real_pwritev2) {
    errno = ENOSYS;
    return -1;
  }
  off_t s;
  int sy;
  Inode* in = write_begin(fd, off, flags, &s, &sy);  // off == -1: the current position
  ssize_t r = real_pwritev2(fd, iov, cnt, off, flags);
  if (in) write_end(fd, in, s, r, sy);
  return r;
}
ssize_t pwritev64v2(int fd, const struct iovec* iov, int cnt, off_t off, int flags) {
  ensure_init();
  if (!real_pwritev64v2) {
    errno = ENOSYS;
    return -1;
  }
  off_t s;
  int sy;
  Inode* in = write_begin(fd, off, flags, &s, &sy);
  ssize_t r = real_pwritev64v2(fd, iov, cnt, off, flags);
  if (in) write_end(fd, in, s, r, sy);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Size changes. Each public wrapper calls ensure_init() before it reads a real_* pointer to pass
// on: another library's constructor may call it before the layer's own constructor ran.

static int do_ftruncate(int (*real)(int, off_t), int fd, off_t len) {
  ensure_init();
  if (!is_tracked(fd)) return real(fd, len);
  lock();
  Inode* in = fd_inode[fd];
  struct stat st;
  int have = in && !in->is_dir && !in->live && fstat(fd, &st) == 0 && st.st_ino == in->ino;
  int r = real(fd, len);
  int e = errno;
  if (r == 0 && have) note_size(in, st.st_size, len);
  unlock();
  errno = e;
  return r;
}
int ftruncate(int fd, off_t len) { ensure_init(); return do_ftruncate(real_ftruncate, fd, len); }
int ftruncate64(int fd, off_t len) {
  ensure_init();
  return do_ftruncate(real_ftruncate64, fd, len);
}

static int do_truncate(int (*real)(const char*, off_t), const char* path, off_t len) {
  ensure_init();
  if (!g_active) return real(path, len);
  char rp[PATH_MAX];
  struct stat st;
  if (!realpath(path, rp) || !below_root(rp) || stat(rp, &st) != 0 || !S_ISREG(st.st_mode)) return real(path, len);
  lock();
  Inode* in = inode_get(st.st_dev, st.st_ino);
  establish(in, &st);
  int r = real(path, len);
  int e = errno;
  if (r == 0 && !in->live) note_size(in, st.st_size, len);
  unlock();
  errno = e;
  return r;
}
int truncate(const char* path, off_t len) {
  ensure_init();
  return do_truncate(real_truncate, path, len);
}
int truncate64(const char* path, off_t len) {
  ensure_init();
  return do_truncate(real_truncate64, path, len);
}

static void note_fallocate(Inode* in, off_t old, int mode, off_t off, off_t len) {
  const off_t end = off + len;
  if (mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)) {
    // Everything from `off` moves: dirty to the end, and the old tail is not durable any more.
    if (off < in->min_size) in->min_size = off;
    add_dirty(in, off, old > end ? old + len : end + (old > off ? old - off : 0));
    return;
  }
  if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) add_dirty(in, off, end);
  if (!(mode & FALLOC_FL_KEEP_SIZE) && end > old) note_size(in, old, end);
}

static int do_fallocate(int (*real)(int, int, off_t, off_t), int fd, int mode, off_t off, off_t len) {
  ensure_init();
  if (!is_tracked(fd)) return real(fd, mode, off, len);
  lock();
  Inode* in = fd_inode[fd];
  struct stat st;
  int have = in && !in->is_dir && !in->live && fstat(fd, &st) == 0 && st.st_ino == in->ino;
  int r = real(fd, mode, off, len);
  int e = errno;
  if (r == 0 && have) note_fallocate(in, st.st_size, mode, off, len);
  unlock();
  errno = e;
  return r;
}
int fallocate(int fd, int mode, off_t off, off_t len) {
  ensure_init();
  return do_fallocate(real_fallocate, fd, mode, off, len);
}
int fallocate64(int fd, int mode, off_t off, off_t len) {
  ensure_init();
  return do_fallocate(real_fallocate64, fd, mode, off, len);
}

static int do_posix_fallocate(int (*real)(int, off_t, off_t), int fd, off_t off, off_t len) {
  ensure_init();
  if (!is_tracked(fd)) return real(fd, off, len);
  lock();
  Inode* in = fd_inode[fd];
  struct stat st;
  int have = in && !in->is_dir && !in->live && fstat(fd, &st) == 0 && st.st_ino == in->ino;
  int r = real(fd, off, len);  // returns the error number, errno untouched
  if (r == 0 && have) note_fallocate(in, st.st_size, 0, off, len);
  unlock();
  return r;
}
int posix_fallocate(int fd, off_t off, off_t len) {
  ensure_init();
  return do_posix_fallocate(real_posix_fallocate, fd, off, len);
}
int posix_fallocate64(int fd, off_t off, off_t len) {
  ensure_init();
  return do_posix_fallocate(real_posix_fallocate64, fd, off, len);
}

// ---------------------------------------------------------------------------------------------
// Syncs.

static void after_fsync(int fd) {
  lock();
  struct stat st;
  if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
    unlock();
    return;
  }
  Inode* in = NULL;
  int tracked = 0;
  if (fd >= 0 && fd < FD_MAX && atomic_load(&fd_tracked[fd]) && fd_inode[fd] && fd_inode[fd]->ino == st.st_ino &&
      fd_inode[fd]->dev == st.st_dev) {
    in = fd_inode[fd];
    tracked = 1;
  } else if (fd_below_root(fd)) {
    in = inode_get(st.st_dev, st.st_ino);
  }
  if (!in) {
    unlock();
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    record_listing(fd, in);
  } else {
    establish(in, &st);
    if (!tracked && !in->live) {
      // A descriptor the layer did not see opened: its writes are unknown, so the whole file is
      // what this fsync makes durable.
      in->nranges = 0;
      add_dirty(in, 0, st.st_size);
      in->min_size = 0;
    }
    flush_inode(in, fd);
  }
  unlock();
}

int fsync(int fd) {
  ensure_init();
  int r = real_fsync(fd);
  if (r == 0 && g_active) {
    int e = errno;
    after_fsync(fd);
    errno = e;
  }
  return r;
}
int fdatasync(int fd) {
  ensure_init();
  int r = real_fdatasync(fd);
  if (r == 0 && g_active) {
    int e = errno;
    after_fsync(fd);
    errno = e;
  }
  return r;
}
void sync(void) {
  ensure_init();
  real_sync();
  if (g_active) sync_everything();
}
int syncfs(int fd) {
  ensure_init();
  int r = real_syncfs(fd);
  if (r == 0 && g_active) {
    int e = errno;
    sync_everything();
    errno = e;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Directories.

static void after_mkdir(int dfd, const char* path) {
  int fd = real_openat(dfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fd_below_root(fd) && fstat(fd, &st) == 0) new_generation(inode_get(st.st_dev, st.st_ino), 1, 0);
  real_close(fd);
}

int mkdir(const char* path, mode_t mode) {
  ensure_init();
  if (!g_active) return real_mkdir(path, mode);
  lock();
  int r = real_mkdir(path, mode);
  int e = errno;
  if (r == 0) after_mkdir(AT_FDCWD, path);
  unlock();
  errno = e;
  return r;
}
int mkdirat(int dirfd, const char* path, mode_t mode) {
  ensure_init();
  if (!g_active) return real_mkdirat(dirfd, path, mode);
  lock();
  int r = real_mkdirat(dirfd, path, mode);
  int e = errno;
  if (r == 0) after_mkdir(dirfd, path);
  unlock();
  errno = e;
  return r;
}

// ---------------------------------------------------------------------------------------------
// stdio: its writes go through libc-internal calls the layer cannot see. A file opened for
// writing through stdio is therefore "live": crash() keeps whatever it holds (its names still
// follow the directory rules).

static int writes_mode(const char* mode) { return mode && strpbrk(mode, "wa+") != NULL; }

static void mark_stdio(FILE* f, const struct stat* pre) {
  int fd = fileno(f);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !fd_below_root(fd)) return;
  Inode* in = inode_get(st.st_dev, st.st_ino);
  if (!pre || pre->st_ino != st.st_ino || pre->st_dev != st.st_dev) {
    new_generation(in, 0, 1);
    return;
  }
  char p[PATH_MAX];
  shadow_path(p, "data", in);
  if (unlink(p) != 0 && errno != ENOENT) die("unlink %s: %s", p, strerror(errno));
  drop_pending(in);
  clear_dirty(in);
  in->established = 1;
  in->live = 1;
}

static FILE* do_fopen(FILE* (*real)(const char*, const char*), const char* path, const char* mode) {
  ensure_init();
  if (!g_active || !writes_mode(mode)) return real(path, mode);
  lock();
  struct stat pre;
  int existed = stat(path, &pre) == 0;
  FILE* f = real(path, mode);
  int e = errno;
  if (f) mark_stdio(f, existed ? &pre : NULL);
  unlock();
  errno = e;
  return f;
}
FILE* fopen(const char* path, const char* mode) {
  ensure_init();
  return do_fopen(real_fopen, path, mode);
}
FILE* fopen64(const char* path, const char* mode) {
  ensure_init();
  return do_fopen(real_fopen64, path, mode);
}

static FILE* do_freopen(FILE* (*real)(const char*, const char*, FILE*), const char* path, const char* mode, FILE* s) {
  ensure_init();
  if (!g_active || !path || !writes_mode(mode)) return real(path, mode, s);
  lock();
  struct stat pre;
  int existed = stat(path, &pre) == 0;
  FILE* f = real(path, mode, s);
  int e = errno;
  if (f) mark_stdio(f, existed ? &pre : NULL);
  unlock();
  errno = e;
  return f;
}
FILE* freopen(const char* path, const char* mode, FILE* s) {
  ensure_init();
  return do_freopen(real_freopen, path, mode, s);
}
FILE* freopen64(const char* path, const char* mode, FILE* s) {
  ensure_init();
  return do_freopen(real_freopen64, path, mode, s);
}

FILE* fdopen(int fd, const char* mode) {
  ensure_init();
  if (!g_active || !writes_mode(mode)) return real_fdopen(fd, mode);
  lock();
  struct stat pre;
  int have = fstat(fd, &pre) == 0;
  FILE* f = real_fdopen(fd, mode);
  int e = errno;
  if (f && have) mark_stdio(f, &pre);
  unlock();
  errno = e;
  return f;
}
