/* cuda_build.h — the GPU backend's nvcc step (cuda_build.c), shared with
 * the launch side (cuda.c). */
#ifndef EVT_RUNTIME_CUDA_BUILD_H
#define EVT_RUNTIME_CUDA_BUILD_H
#include "runtime/module.h"

/* Threads of a block: the widest op's, rounded up to a warp (at least one). */
int evt_cuda_block_threads(const evt_plan *p);
/* The variant's source into v->code (a cubin), from the kernel cache or nvcc. */
evt_status evt_cuda_build(evt_module *m, evt_variant *v, evt_diag *d);
#endif
