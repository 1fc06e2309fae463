/* kcache.h — on-disk cache of compiled kernels (internal; see kcache.c). */
#ifndef EVT_KCACHE_H
#define EVT_KCACHE_H
#include <stddef.h>
#include <stdint.h>
/* 1 and a malloc'd copy when (kind, source, command) was compiled before.
   The command is compared word by word: blanks between words (outside
   quotes) and around the command do not change the entry. */
int evt_kcache_get(const char *kind, const char *source, const char *command, void **code, size_t *len);
void evt_kcache_put(const char *kind, const char *source, const char *command, const void *code, size_t len);
/* Hash of the device and tile headers under srcdir (hex, into out). */
void evt_kcache_stamp(const char *srcdir, char *out, size_t n);
#endif
