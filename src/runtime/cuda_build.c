/* cuda_build.c — the GPU backend's build step: the generated CUDA of a
 * variant into a cubin with nvcc (sm_90a), through the compiled-kernel cache
 * (kcache.c: a hit costs no nvcc run). Needs only nvcc ($NVCC or nvcc on
 * PATH), no driver or GPU; cuda.c loads and launches what it makes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "runtime/cuda_build.h"
#include "runtime/kcache.h"

static int64_t g_compiles; /* nvcc invocations in this process */

int64_t evt_cuda_compile_count(void) { return __atomic_load_n(&g_compiles, __ATOMIC_RELAXED); }

int evt_cuda_block_threads(const evt_plan *p)
{
    int t = 32;
    for (int i = 0; i < p->nops; i++)
        if (p->ops[i]->threads > t) t = p->ops[i]->threads;
    return (t + 31) / 32 * 32;
}

static void rm_tmp(const char *dir)
{
    const char *files[] = {"kernel.cu", "kernel.cubin", "nvcc.log"};
    char p[320];
    for (int i = 0; i < 3; i++) { snprintf(p, sizeof p, "%s/%s", dir, files[i]); unlink(p); }
    rmdir(dir);
}

evt_status evt_cuda_build(evt_module *m, evt_variant *v, evt_diag *d)
{
    (void)m;
    const char *base = getenv("TMPDIR");
    char dir[256], src[300], bin[300], log[300], cmd[3072];
    snprintf(dir, sizeof dir, "%s/evtc-cu-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot create a temporary directory");
    snprintf(src, sizeof src, "%s/kernel.cu", dir);
    snprintf(bin, sizeof bin, "%s/kernel.cubin", dir);
    snprintf(log, sizeof log, "%s/nvcc.log", dir);
    const char *nvcc = getenv("NVCC");
    const char *extra = getenv("EVT_NVCCFLAGS");
    char key[600], stamp[32];
    evt_kcache_stamp(evt_src_dir(), stamp, sizeof stamp);
    snprintf(key, sizeof key, "nvcc -cubin sm_90a -std=c++17 -O3 -lineinfo -DEVT_BLOCK_THREADS=%d %s abi %d headers %s",
             evt_cuda_block_threads(v->p), extra ? extra : "", EVT_ABI_VERSION, stamp);
    if (evt_kcache_get("cubin", v->source, key, &v->code, &v->code_len)) { rm_tmp(dir); return EVT_OK; }
    evt_status st = evt_write_file(src, v->source, strlen(v->source), d);
    if (st) { rm_tmp(dir); return st; }
    snprintf(cmd, sizeof cmd,
             "'%s' -cubin -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -lineinfo -DEVT_BLOCK_THREADS=%d "
             "-I'%s' %s '%s' -o '%s' > '%s' 2>&1",
             nvcc && *nvcc ? nvcc : "nvcc", evt_cuda_block_threads(v->p), evt_src_dir(), extra ? extra : "", src, bin, log);
    __atomic_add_fetch(&g_compiles, 1, __ATOMIC_RELAXED);
    int rc = system(cmd);
    if (rc != 0) {
        char msg[2000] = "";
        FILE *f = fopen(log, "r");
        if (f) { size_t n = fread(msg, 1, sizeof msg - 1, f); msg[n] = 0; fclose(f); }
        if (WIFEXITED(rc) && WEXITSTATUS(rc) == 127)
            st = evt_diag_error(d, EVT_ERR_COMPILE, (evt_loc){0, 0}, "nvcc not found (set $NVCC or put nvcc on PATH): %s", msg);
        else
            st = evt_diag_error(d, EVT_ERR_COMPILE, (evt_loc){0, 0}, "nvcc failed on generated code (kept in %s):\n%s", src, msg);
        return st; /* keep the directory for inspection */
    }
    const char *keep = getenv("EVT_NVCC_LOG"); /* e.g. with EVT_NVCCFLAGS="-Xptxas -v": registers and spills */
    if (keep && *keep) {
        FILE *in = fopen(log, "r"), *out = fopen(keep, "a");
        if (!in || !out) st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot append nvcc's output to %s", keep);
        char buf[4096];
        size_t n;
        while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
        if (in) fclose(in);
        if (out && fclose(out) && !st) st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "error writing %s", keep);
        if (st) { rm_tmp(dir); return st; }
    }
    FILE *f = fopen(bin, "rb");
    if (!f) { rm_tmp(dir); return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot read %s", bin); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    v->code = malloc(n > 0 ? n : 1);
    v->code_len = v->code ? fread(v->code, 1, n > 0 ? n : 0, f) : 0;
    fclose(f);
    rm_tmp(dir);
    if (!v->code || (long)v->code_len != n) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot read the cubin");
    evt_kcache_put("cubin", v->source, key, v->code, v->code_len);
    return EVT_OK;
}
