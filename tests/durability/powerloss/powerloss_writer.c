// powerloss_writer: runs a script of file-system calls given on the command line, for the
// power-loss self-test (selftest.py). Each operation is one argument group; descriptors are named
// by a handle (a word of the script). Any failing call exits with status 2 and says which.
//
//   open H PATH FLAGS      FLAGS: comma list of rdonly,wronly,rdwr,creat,trunc,append,excl,dsync
//   rawopen H PATH FLAGS   the same through syscall(SYS_openat): a descriptor the layer never sees
//   write H TEXT | pwrite H OFF TEXT | writev H T1 T2 | pwritev H OFF T1 T2
//   fill H OFF LEN CHAR    pwrite LEN bytes of CHAR at OFF
//   ftruncate H LEN | truncate PATH LEN | fallocate H OFF LEN
//   fsync H | fdatasync H | fsyncdir PATH | sync | close H | dup H NEWH
//   rename A B | unlink P | mkdir P | rmdir P | link A B
//   stdio_append PATH TEXT fopen(PATH, "a"), fputs, fclose (no fsync)
//   threads N DIR RECORDS SYNC_EVERY
//                          N threads, thread i appends "t<i>-<k>\n" for k < RECORDS to DIR/t<i>.log
//                          (created, and DIR fsynced, before they start), fdatasync after every
//                          SYNC_EVERY records; prints "synced <i> <count>" for each
//   ino PATH               prints "ino PATH <inode number>"
//   layer                  prints "layer 1" when the power-loss layer is loaded and configured
//   print TEXT | kill      kill: SIGKILL to itself (the simulated power loss)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_HANDLES 64

static struct {
  char name[32];
  int fd;
} handles[MAX_HANDLES];

static void fail(const char* what, const char* arg) {
  fprintf(stderr, "powerloss_writer: %s %s: %s\n", what, arg ? arg : "", strerror(errno));
  exit(2);
}

static int handle(const char* name) {
  for (int i = 0; i < MAX_HANDLES; ++i)
    if (handles[i].fd > 0 && strcmp(handles[i].name, name) == 0) return handles[i].fd;
  errno = EBADF;
  fail("no handle", name);
  return -1;
}

static void set_handle(const char* name, int fd) {
  for (int i = 0; i < MAX_HANDLES; ++i)
    if (handles[i].fd <= 0) {
      snprintf(handles[i].name, sizeof handles[i].name, "%s", name);
      handles[i].fd = fd;
      return;
    }
  errno = EMFILE;
  fail("too many handles", name);
}

static void drop_handle(const char* name) {
  for (int i = 0; i < MAX_HANDLES; ++i)
    if (handles[i].fd > 0 && strcmp(handles[i].name, name) == 0) handles[i].fd = 0;
}

static int parse_flags(const char* s) {
  int f = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char* tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    if (!strcmp(tok, "rdonly")) f |= O_RDONLY;
    else if (!strcmp(tok, "wronly")) f |= O_WRONLY;
    else if (!strcmp(tok, "rdwr")) f |= O_RDWR;
    else if (!strcmp(tok, "creat")) f |= O_CREAT;
    else if (!strcmp(tok, "trunc")) f |= O_TRUNC;
    else if (!strcmp(tok, "append")) f |= O_APPEND;
    else if (!strcmp(tok, "excl")) f |= O_EXCL;
    else if (!strcmp(tok, "dsync")) f |= O_DSYNC;
    else {
      fprintf(stderr, "powerloss_writer: unknown flag %s\n", tok);
      exit(2);
    }
  }
  return f | O_CLOEXEC;
}

static void write_all(int fd, const char* p, size_t n, const char* what) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write", what);
    p += w;
    n -= (size_t)w;
  }
}

typedef struct {
  int index, fd, records, sync_every, synced;
} ThreadJob;

static void* thread_main(void* arg) {
  ThreadJob* j = arg;
  char line[64];
  for (int k = 0; k < j->records; ++k) {
    int n = snprintf(line, sizeof line, "t%d-%d\n", j->index, k);
    write_all(j->fd, line, (size_t)n, "thread log");
    if ((k + 1) % j->sync_every == 0) {
      if (fdatasync(j->fd) != 0) fail("fdatasync", "thread log");
      j->synced = k + 1;
    }
  }
  return NULL;
}

static void run_threads(int n, const char* dir, int records, int sync_every) {
  ThreadJob jobs[64];
  pthread_t th[64];
  if (n > 64) n = 64;
  for (int i = 0; i < n; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/t%d.log", dir, i);
    jobs[i] = (ThreadJob){i, open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644), records, sync_every, 0};
    if (jobs[i].fd < 0) fail("open", path);
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || fsync(dfd) != 0) fail("fsync folder", dir);
  close(dfd);
  for (int i = 0; i < n; ++i) pthread_create(&th[i], NULL, thread_main, &jobs[i]);
  for (int i = 0; i < n; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < n; ++i) printf("synced %d %d\n", i, jobs[i].synced);
  fflush(stdout);
}

int main(int argc, char** argv) {
  int i = 1;
#define ARG(k) (i + (k) < argc ? argv[i + (k)] : (fprintf(stderr, "powerloss_writer: %s needs more arguments\n", op), exit(2), ""))
  while (i < argc) {
    const char* op = argv[i];
    if (!strcmp(op, "open")) {
      int fd = open(ARG(2), parse_flags(ARG(3)), 0644);
      if (fd < 0) fail("open", ARG(2));
      set_handle(ARG(1), fd);
      i += 4;
    } else if (!strcmp(op, "rawopen")) {
      int fd = (int)syscall(SYS_openat, AT_FDCWD, ARG(2), parse_flags(ARG(3)), 0644);
      if (fd < 0) fail("rawopen", ARG(2));
      set_handle(ARG(1), fd);
      i += 4;
    } else if (!strcmp(op, "write")) {
      write_all(handle(ARG(1)), ARG(2), strlen(ARG(2)), ARG(1));
      i += 3;
    } else if (!strcmp(op, "pwrite")) {
      const char* t = ARG(3);
      if (pwrite(handle(ARG(1)), t, strlen(t), atoll(ARG(2))) != (ssize_t)strlen(t)) fail("pwrite", ARG(1));
      i += 4;
    } else if (!strcmp(op, "writev") || !strcmp(op, "pwritev")) {
      const int positional = op[0] == 'p';
      const char* a = ARG(2 + positional);
      const char* b = ARG(3 + positional);
      struct iovec iov[2] = {{(void*)a, strlen(a)}, {(void*)b, strlen(b)}};
      ssize_t want = (ssize_t)(strlen(a) + strlen(b));
      ssize_t r = positional ? pwritev(handle(ARG(1)), iov, 2, atoll(ARG(2))) : writev(handle(ARG(1)), iov, 2);
      if (r != want) fail(op, ARG(1));
      i += 4 + positional;
    } else if (!strcmp(op, "fill")) {
      size_t len = (size_t)atoll(ARG(3));
      char* buf = malloc(len ? len : 1);
      memset(buf, ARG(4)[0], len);
      if (pwrite(handle(ARG(1)), buf, len, atoll(ARG(2))) != (ssize_t)len) fail("fill", ARG(1));
      free(buf);
      i += 5;
    } else if (!strcmp(op, "ftruncate")) {
      if (ftruncate(handle(ARG(1)), atoll(ARG(2))) != 0) fail("ftruncate", ARG(1));
      i += 3;
    } else if (!strcmp(op, "truncate")) {
      if (truncate(ARG(1), atoll(ARG(2))) != 0) fail("truncate", ARG(1));
      i += 3;
    } else if (!strcmp(op, "fallocate")) {
      if (fallocate(handle(ARG(1)), 0, atoll(ARG(2)), atoll(ARG(3))) != 0) fail("fallocate", ARG(1));
      i += 4;
    } else if (!strcmp(op, "fsync")) {
      if (fsync(handle(ARG(1))) != 0) fail("fsync", ARG(1));
      i += 2;
    } else if (!strcmp(op, "fdatasync")) {
      if (fdatasync(handle(ARG(1))) != 0) fail("fdatasync", ARG(1));
      i += 2;
    } else if (!strcmp(op, "fsyncdir")) {
      int fd = open(ARG(1), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0 || fsync(fd) != 0) fail("fsync folder", ARG(1));
      close(fd);
      i += 2;
    } else if (!strcmp(op, "sync")) {
      sync();
      i += 1;
    } else if (!strcmp(op, "close")) {
      if (close(handle(ARG(1))) != 0) fail("close", ARG(1));
      drop_handle(ARG(1));
      i += 2;
    } else if (!strcmp(op, "dup")) {
      int fd = dup(handle(ARG(1)));
      if (fd < 0) fail("dup", ARG(1));
      set_handle(ARG(2), fd);
      i += 3;
    } else if (!strcmp(op, "rename")) {
      if (rename(ARG(1), ARG(2)) != 0) fail("rename", ARG(1));
      i += 3;
    } else if (!strcmp(op, "unlink")) {
      if (unlink(ARG(1)) != 0) fail("unlink", ARG(1));
      i += 2;
    } else if (!strcmp(op, "mkdir")) {
      if (mkdir(ARG(1), 0755) != 0) fail("mkdir", ARG(1));
      i += 2;
    } else if (!strcmp(op, "rmdir")) {
      if (rmdir(ARG(1)) != 0) fail("rmdir", ARG(1));
      i += 2;
    } else if (!strcmp(op, "link")) {
      if (link(ARG(1), ARG(2)) != 0) fail("link", ARG(1));
      i += 3;
    } else if (!strcmp(op, "stdio_append")) {
      FILE* f = fopen(ARG(1), "a");
      if (!f || fputs(ARG(2), f) < 0 || fclose(f) != 0) fail("stdio append", ARG(1));
      i += 3;
    } else if (!strcmp(op, "threads")) {
      run_threads(atoi(ARG(1)), ARG(2), atoi(ARG(3)), atoi(ARG(4)));
      i += 5;
    } else if (!strcmp(op, "ino")) {
      struct stat st;
      if (stat(ARG(1), &st) != 0) fail("stat", ARG(1));
      printf("ino %s %llu\n", ARG(1), (unsigned long long)st.st_ino);
      fflush(stdout);
      i += 2;
    } else if (!strcmp(op, "layer")) {
      int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "ferry_powerloss_active");
      printf("layer %d\n", active ? active() : 0);
      fflush(stdout);
      i += 1;
    } else if (!strcmp(op, "print")) {
      printf("%s\n", ARG(1));
      fflush(stdout);
      i += 2;
    } else if (!strcmp(op, "kill")) {
      kill(getpid(), SIGKILL);
      pause();
    } else {
      fprintf(stderr, "powerloss_writer: unknown operation %s\n", op);
      return 2;
    }
  }
  return 0;
}
