// Allocation trace for the step-overhead programs (docs/performance.md, the O1 page faults): an
// LD_PRELOAD library that writes every malloc/calloc/realloc/posix_memalign/memalign/
// aligned_alloc ("A <ptr> <size>"),
// free ("F <ptr> <usable size>") and each move of the heap's top ("G" grown, "T" trimmed, with
// the bytes) to the file MT_OUT; for each free of more than 1 MB also "B <brk> <size>", the
// heap's end before that free.
//   gcc -O2 -shared -fPIC bench/step_overhead/malloc_trace.c -o /tmp/malloc_trace.so -ldl
//   MT_OUT=/tmp/after.log LD_PRELOAD=/tmp/malloc_trace.so OMP_NUM_THREADS=1
//     <build>/step_overhead-torch-2.11.0/step_overhead/step_overhead_after
//     --input=512 --hidden=1024 --layers=2 --steps=12 --warmup=0 --mode=O1
// Page faults per step: /usr/bin/time -f "%R minflt" on --steps=40 and --steps=340, differenced.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>
#include <unistd.h>
#include <string.h>
#include <fcntl.h>
#include <fcntl.h>
static int (*real_pm)(void**, size_t, size_t);
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t,size_t);
static void *(*real_realloc)(void*,size_t);
static void (*real_free)(void*);
static __thread int in;
static int fd = -1;
static void logit(char c, void *p, size_t n) {
  if (in)
    return;
  in = 1;
  if (fd < 0) { const char *f = getenv("MT_OUT"); fd = f ? open(f, 01|0100|01000, 0644) : 2; }
  char b[96]; int k = snprintf(b, sizeof b, "%c %lx %zu\n", c, (unsigned long)p, n); write(fd, b, k); in = 0;
}

static char boot[65536]; static size_t bootn;
void *malloc(size_t n) { if (!real_malloc) { real_malloc = dlsym(RTLD_NEXT, "malloc"); } void *b0 = sbrk(0); void *p = real_malloc(n); logit('A', p, n); void *b1 = sbrk(0); if (b1 != b0) logit('G', b1, (char*)b1-(char*)b0); return p; }
void *calloc(size_t a, size_t b) { if (!real_calloc) { if (bootn + a*b < sizeof boot) { void *p = boot + bootn; bootn += (a*b+15)&~15; return p; } } if (!real_calloc) real_calloc = dlsym(RTLD_NEXT, "calloc"); void *p = real_calloc(a, b); logit('A', p, a*b); return p; }
void *realloc(void *q, size_t n) { if (!real_realloc) real_realloc = dlsym(RTLD_NEXT, "realloc"); if (q) logit('F', q, 0); void *p = real_realloc(q, n); logit('A', p, n); return p; }
int posix_memalign(void **p, size_t a, size_t n) { if (!real_pm) real_pm = dlsym(RTLD_NEXT, "posix_memalign"); void *b0 = sbrk(0); int r = real_pm(p, a, n); logit('A', *p, n); void *b1 = sbrk(0); if (b1 != b0) logit('G', b1, (char*)b1-(char*)b0); return r; }
static void *(*real_memalign)(size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
void *memalign(size_t a, size_t n) { if (!real_memalign) real_memalign = dlsym(RTLD_NEXT, "memalign"); void *b0 = sbrk(0); void *p = real_memalign(a, n); logit('A', p, n); void *b1 = sbrk(0); if (b1 != b0) logit('G', b1, (char*)b1-(char*)b0); return p; }
void *aligned_alloc(size_t a, size_t n) { if (!real_aligned_alloc) real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc"); void *b0 = sbrk(0); void *p = real_aligned_alloc(a, n); logit('A', p, n); void *b1 = sbrk(0); if (b1 != b0) logit('G', b1, (char*)b1-(char*)b0); return p; }
void free(void *p) { if (!p) return; if ((char*)p >= boot && (char*)p < boot + sizeof boot) return; if (!real_free) real_free = dlsym(RTLD_NEXT, "free"); void *b0 = sbrk(0); size_t us = malloc_usable_size(p); logit('F', p, us); real_free(p); void *b1 = sbrk(0); if (us > 1000000) logit('B', b0, us); if (b1 != b0) logit('T', b1, (char*)b0-(char*)b1); }
