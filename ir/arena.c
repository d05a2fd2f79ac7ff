/* Bump allocator for IR objects that die together with their graph. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/graph.h"

typedef struct arena_block {
  struct arena_block* next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
} arena_block_t;

struct xc_arena {
  arena_block_t* head;
};

xc_arena_t* xc_arena_create(void) { return calloc(1, sizeof(xc_arena_t)); }

void xc_arena_destroy(xc_arena_t* a) {
  if (!a) return;
  arena_block_t* b = a->head;
  while (b) {
    arena_block_t* next = b->next;
    free(b);
    b = next;
  }
  free(a);
}

void* xc_arena_alloc(xc_arena_t* a, size_t n) {
  if (n > ((size_t)1 << 40)) return NULL;
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  arena_block_t* b = a->head;
  if (!b || b->size - b->used < n) {
    size_t size = n > 65536 ? n : 65536;
    b = malloc(sizeof(arena_block_t) + size);
    if (!b) return NULL;
    b->used = 0;
    b->size = size;
    b->next = a->head;
    a->head = b;
  }
  void* p = b->data + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

char* xc_arena_strndup(xc_arena_t* a, const char* s, size_t n) {
  char* p = xc_arena_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char* xc_arena_strdup(xc_arena_t* a, const char* s) {
  return s ? xc_arena_strndup(a, s, strlen(s)) : NULL;
}

char* xc_arena_printf(xc_arena_t* a, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char* p = xc_arena_alloc(a, (size_t)n + 1);
  if (!p) return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}
