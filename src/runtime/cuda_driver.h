/* cuda_driver.h — the CUDA driver API as the GPU backend uses it (internal):
 * the few types and constants it needs (stable ABI, no CUDA headers), the
 * entry points resolved from libcuda.so.1 at run time, and the process-wide
 * state (device, context, streams). Only cuda_driver.c and cuda.c use it.
 */
#ifndef EVT_CUDA_DRIVER_H
#define EVT_CUDA_DRIVER_H
#include <pthread.h>
#include <stdint.h>
#include "evt/ir.h"

/* ---- the few driver API types and constants we need (stable ABI) ---- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef unsigned long long CUdeviceptr;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH 95
#define CU_STREAM_NON_BLOCKING 1
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR 81
#define CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK 111
#define CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1
#define CU_EVENT_DEFAULT 0
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1

typedef struct cu_api {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*FuncGetAttribute)(int *, int, CUfunction);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*LaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, CUstream, void **);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
    CUresult (*StreamBeginCapture)(CUstream, int);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamQuery)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    /* optional (NULL when the driver lacks it): TMA tensor maps (tmaps.c) */
    CUresult (*TensorMapEncodeTiled)(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                                     const unsigned long long *strides, const unsigned *box, const unsigned *elem_strides,
                                     int interleave, int swizzle, int l2_promotion, int oob_fill);
} cu_api;

/* process-wide driver state */
typedef struct evt_cuda_state {
    pthread_once_t once;
    int ok;
    char why[256];
    void *lib;
    cu_api cu;
    CUdevice dev;
    CUcontext ctx;
    int sms, cc_major, cc_minor, coop;
    int smem_optin, smem_per_sm, smem_reserved; /* shared memory: per block (opt-in), per SM, reserved per block */
    char name[128];
    CUstream stream;       /* launches (blocking w.r.t. the legacy stream) */
    CUstream side;         /* non-blocking: raises the abort flag of a stuck launch */
} evt_cuda_state;
extern evt_cuda_state evt_cuda_g; /* the process-wide driver state (cuda_driver.c) */


/* Loads the driver once; then makes its context current on this thread.
 * EVT_ERR_NO_DEVICE (with the reason) when there is no usable GPU. */
evt_status evt_cuda_driver(evt_diag *d);
/* Name and description of a driver error code. */
const char *evt_cu_name(CUresult r);
const char *evt_cu_string(CUresult r);

/* Returns from the calling function with EVT_ERR_RUNTIME naming the call. */
#define CK(call)                                                                                        \
    do {                                                                                                \
        CUresult r_ = (call);                                                                           \
        if (r_ != CUDA_SUCCESS)                                                                         \
            return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s (%s) in %s", evt_cu_name(r_), \
                                  evt_cu_string(r_), #call);                                            \
    } while (0)

#endif
