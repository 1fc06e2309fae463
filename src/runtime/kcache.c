/* kcache.c — a cache of compiled kernels on disk, keyed by a hash of the
 * generated source and the compiler command, so that building the same
 * program again (another batch size, another invocation, another machine
 * that carries the cache directory) costs no compilation.
 *
 * Directory: $EVT_CACHE_DIR, else $XDG_CACHE_HOME/evtc, else ~/.cache/evtc.
 * EVT_CACHE_DIR=off disables it. Entries are written to a temporary name and
 * renamed, so a concurrent reader never sees half a file. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/kcache.h"

static int cache_dir(char *buf, size_t n)
{
    const char *d = getenv("EVT_CACHE_DIR");
    if (d && !strcmp(d, "off")) return 0;
    if (d && *d) snprintf(buf, n, "%s", d);
    else if ((d = getenv("XDG_CACHE_HOME")) && *d) snprintf(buf, n, "%s/evtc", d);
    else if ((d = getenv("HOME")) && *d) snprintf(buf, n, "%s/.cache/evtc", d);
    else return 0;
    /* create it (and one missing parent) */
    if (mkdir(buf, 0777) && access(buf, W_OK)) {
        char parent[512];
        snprintf(parent, sizeof parent, "%s", buf);
        char *slash = strrchr(parent, '/');
        if (slash) { *slash = 0; mkdir(parent, 0777); }
        if (mkdir(buf, 0777) && access(buf, W_OK)) return 0;
    }
    return 1;
}

/* FNV-1a, 64 bits, over the key parts: one byte, then a whole part */
static uint64_t fnv_byte(uint64_t h, char c) { return (h ^ (unsigned char)c) * 0x100000001b3ull; }
static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) h = fnv_byte(h, *s);
    return h ^ 0xff;
}

/* The same over a command as a shell splits it into words: a run of
   blanks outside quotes counts as one space, leading and trailing blanks as
   none, so "-Xptxas -v " and "-Xptxas  -v" name one entry (a scripted
   precompile whose $EVT_NVCCFLAGS ended in a space missed the cache and
   compiled again on the GPU machine: bench/RESULTS.md, session 54). Blanks
   inside quotes, or escaped by a backslash, count as they are. */
static uint64_t fnv_words(uint64_t h, const char *s)
{
    char quote = 0;
    int words = 0, gap = 0;
    for (; *s; s++) {
        if (!quote && (*s == ' ' || *s == '\t' || *s == '\n')) {
            gap = 1;
            continue;
        }
        if (gap && words) h = fnv_byte(h, ' ');
        gap = 0;
        words = 1;
        if (*s == '\\' && quote != '\'' && s[1]) h = fnv_byte(h, *s++); /* the escaped character is part of the word */
        else if (quote ? *s == quote : (*s == '\'' || *s == '"')) quote = quote ? 0 : *s;
        h = fnv_byte(h, *s);
    }
    return h ^ 0xff;
}

static int entry_path(const char *kind, const char *a, const char *b, char *path, size_t n)
{
    char dir[512];
    if (!cache_dir(dir, sizeof dir)) return 0;
    uint64_t h = fnv_words(fnv(fnv(0xcbf29ce484222325ull, kind), a), b);
    snprintf(path, n, "%s/%016llx.%s", dir, (unsigned long long)h, kind);
    return 1;
}

int evt_kcache_get(const char *kind, const char *source, const char *command, void **code, size_t *len)
{
    char path[600];
    if (!entry_path(kind, source, command, path, sizeof path)) return 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = n > 0 ? malloc(n) : NULL;
    size_t got = p ? fread(p, 1, n, f) : 0;
    fclose(f);
    if (!p || (long)got != n) { free(p); return 0; }
    *code = p;
    *len = got;
    return 1;
}

void evt_kcache_put(const char *kind, const char *source, const char *command, const void *code, size_t len)
{
    char path[600], tmp[640];
    if (!entry_path(kind, source, command, path, sizeof path)) return;
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    int ok = fwrite(code, 1, len, f) == len;
    ok &= fclose(f) == 0;
    if (ok) rename(tmp, path);
    else unlink(tmp);
}

/* A stamp of the headers generated code includes (device protocol, tiles):
 * part of the key, so editing a tile recompiles. */
void evt_kcache_stamp(const char *srcdir, char *out, size_t n)
{
    static const char *pats[] = {"device/*.h", "tiles/*.cuh", "tiles/*.h"};
    uint64_t h = 0xcbf29ce484222325ull;
    for (int p = 0; p < 3; p++) {
        char pat[600];
        snprintf(pat, sizeof pat, "%s/%s", srcdir, pats[p]);
        glob_t gl;
        if (glob(pat, 0, NULL, &gl)) continue;
        for (size_t i = 0; i < gl.gl_pathc; i++) {
            FILE *f = fopen(gl.gl_pathv[i], "rb");
            if (!f) continue;
            int c;
            while ((c = fgetc(f)) != EOF) { h ^= (unsigned char)c; h *= 0x100000001b3ull; }
            fclose(f);
        }
        globfree(&gl);
    }
    snprintf(out, n, "%016llx", (unsigned long long)h);
}
