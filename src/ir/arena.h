/* arena.h — the graph arena (internal). */
#ifndef EVT_ARENA_H
#define EVT_ARENA_H
#include <stddef.h>
typedef struct evt_arena evt_arena;
evt_arena *evt_arena_new(void);
void *evt_arena_alloc(evt_arena *a, size_t n); /* zeroed, 16-aligned; NULL on OOM */
void evt_arena_free(evt_arena *a);
#endif
