/* arena.c — bump allocator that owns every object of one evt_graph.
 * Blocks are chained; evt_arena_free releases them all at once. */
#include <stdlib.h>
#include <string.h>
#include "ir/arena.h"

struct block { struct block *next; size_t used, cap; _Alignas(16) unsigned char data[]; };
struct evt_arena { struct block *head; size_t total; };

evt_arena *evt_arena_new(void) { return calloc(1, sizeof(evt_arena)); }

void *evt_arena_alloc(evt_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct block *b = a->head;
    if (!b || b->used + n > b->cap) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof(struct block) + cap);
        if (!b) return NULL;
        b->next = a->head; b->used = 0; b->cap = cap;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    a->total += n;
    memset(p, 0, n);
    return p;
}

void evt_arena_free(evt_arena *a)
{
    if (!a) return;
    for (struct block *b = a->head, *nx; b; b = nx) { nx = b->next; free(b); }
    free(a);
}
