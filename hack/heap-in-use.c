/*
 * The bytes a process has allocated and not freed, as glibc's malloc counts them, written to a
 * file twice a second: what `hack/bench-memory.sh` reads beside the RSS when it is asked to
 * (docs/memory.md, "Live bytes"). The RSS is what the allocator holds; this is what the program
 * holds, so the two tell a program's own growth from the allocator's share of it.
 *
 * A measuring tool, never part of versa: preloaded into a build with the system allocator
 * (the `versa` crate's `system-allocator` feature; jemalloc, as versa builds it, does
 * not go through malloc).
 *
 *   gcc -O2 -shared -fPIC -o /tmp/heap-in-use.so hack/heap-in-use.c
 *   VERSA_HEAP_LOG=/tmp/heap.log LD_PRELOAD=/tmp/heap-in-use.so versa serve ...
 *
 * Each line: seconds since the epoch, bytes in use (`mallinfo2().uordblks`, every arena, plus
 * `hblkhd`, the blocks malloc mapped on their own). The counts are read on a thread of the
 * library's own, not in a signal handler, since mallinfo2 takes the arenas' locks.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *write_counts(void *path) {
  FILE *out = fopen((const char *)path, "w");
  if (!out) return NULL;
  for (;;) {
    struct mallinfo2 m = mallinfo2();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    fprintf(out, "%ld.%03ld %zu\n", (long)now.tv_sec, now.tv_nsec / 1000000, m.uordblks + m.hblkhd);
    fflush(out);
    usleep(500000);
  }
  return NULL;
}

__attribute__((constructor)) static void start(void) {
  const char *path = getenv("VERSA_HEAP_LOG");
  pthread_t thread;
  if (path && *path && pthread_create(&thread, NULL, write_counts, (void *)path) == 0) {
    pthread_detach(thread);
  }
}
