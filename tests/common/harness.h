/* harness.h — helpers shared by the CPU tests: build a module from .evt
 * text, run it against the reference, and read Chrome traces back. */
#ifndef EVT_TEST_HARNESS_H
#define EVT_TEST_HARNESS_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "evt/evt.h"

/* Builds (CPU backend, with the unfused variant); fails the test with the
 * diagnostics on error. */
evt_module *h_build(const char *text);
/* The same from a file (examples/...). */
evt_module *h_build_file(const char *path);
/* Same, but returns NULL and the diagnostics in *msg (malloc'd). */
evt_module *h_try_build(const char *text, const evt_compile_opts *o, char **msg);

/* Runs at the shape given by "n=4"-style strings and compares every output
 * with the reference (bitwise). Returns EVT_OK or the failing status; the
 * message (diagnostics or mismatch report) goes to *msg if given. */
evt_status h_run_check(evt_module *m, int nsets, const char *const *sets, const evt_run_opts *o,
                       uint64_t seed, char **msg);

/* The whole file as a malloc'd string (fails the test if unreadable). */
char *h_read_file(const char *path);
/* Runs a shell command; returns its exit code (-1 if it did not exit) and
 * its stdout and stderr together in out (cap bytes, NUL-terminated). */
int h_sh(const char *cmd, char *out, size_t cap);

/* A trace read back: one entry per executed task. */
typedef struct h_task { char name[96]; double ts, end; int tid; } h_task;
typedef struct h_trace { h_task *t; int n; } h_trace;
int h_trace_load(const char *path, h_trace *out);      /* 0 on success */
void h_trace_free(h_trace *t);
const h_task *h_trace_find(const h_trace *t, const char *name);
/* Latest end / earliest start over tasks whose name starts with prefix. */
double h_trace_max_end(const h_trace *t, const char *prefix);
double h_trace_min_start(const h_trace *t, const char *prefix);
int h_trace_count(const h_trace *t, const char *prefix);

#endif
