/* cuda_driver.c — opens the CUDA driver at run time (dlopen of
 * libcuda.so.1, or $EVT_LIBCUDA), resolves the entry points the backend uses,
 * picks the device ($EVT_CUDA_DEVICE, default 0), retains its primary
 * context and creates the two streams. Without a driver or a Hopper GPU
 * every call reports EVT_ERR_NO_DEVICE with the reason; nothing crashes.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/cuda_driver.h"

evt_cuda_state evt_cuda_g = {.once = PTHREAD_ONCE_INIT};

const char *evt_cu_name(CUresult r)
{
    const char *s = NULL;
    if (evt_cuda_g.cu.GetErrorName && evt_cuda_g.cu.GetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
    return "CUDA_ERROR_?";
}
const char *evt_cu_string(CUresult r)
{
    const char *s = NULL;
    if (evt_cuda_g.cu.GetErrorString && evt_cuda_g.cu.GetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
    return "";
}

static void driver_init(void)
{
    const char *libname = getenv("EVT_LIBCUDA");
    evt_cuda_g.lib = dlopen(libname && *libname ? libname : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!evt_cuda_g.lib) { snprintf(evt_cuda_g.why, sizeof evt_cuda_g.why, "no CUDA driver / GPU found (libcuda.so.1 not loadable)"); return; }
#define SYM(field, name)                                                                     \
    do {                                                                                     \
        *(void **)&evt_cuda_g.cu.field = dlsym(evt_cuda_g.lib, name);                                          \
        if (!evt_cuda_g.cu.field) { snprintf(evt_cuda_g.why, sizeof evt_cuda_g.why, "no CUDA driver / GPU found (driver lacks %s)", name); return; } \
    } while (0)
    SYM(Init, "cuInit");
    SYM(DeviceGetCount, "cuDeviceGetCount");
    SYM(DeviceGet, "cuDeviceGet");
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
    SYM(DeviceGetName, "cuDeviceGetName");
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(CtxSetCurrent, "cuCtxSetCurrent");
    SYM(ModuleLoadData, "cuModuleLoadData");
    SYM(ModuleUnload, "cuModuleUnload");
    SYM(ModuleGetFunction, "cuModuleGetFunction");
    SYM(ModuleGetGlobal, "cuModuleGetGlobal_v2");
    SYM(FuncSetAttribute, "cuFuncSetAttribute");
    SYM(FuncGetAttribute, "cuFuncGetAttribute");
    SYM(MemAlloc, "cuMemAlloc_v2");
    SYM(MemFree, "cuMemFree_v2");
    SYM(MemcpyHtoD, "cuMemcpyHtoD_v2");
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2");
    SYM(MemcpyDtoD, "cuMemcpyDtoD_v2");
    SYM(MemsetD8, "cuMemsetD8_v2");
    SYM(MemsetD32Async, "cuMemsetD32Async");
    SYM(LaunchCooperativeKernel, "cuLaunchCooperativeKernel");
    SYM(LaunchKernel, "cuLaunchKernel");
    SYM(StreamBeginCapture, "cuStreamBeginCapture_v2");
    SYM(StreamEndCapture, "cuStreamEndCapture");
    SYM(GraphInstantiate, "cuGraphInstantiateWithFlags");
    SYM(GraphLaunch, "cuGraphLaunch");
    SYM(GraphExecDestroy, "cuGraphExecDestroy");
    SYM(GraphDestroy, "cuGraphDestroy");
    SYM(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    SYM(StreamCreate, "cuStreamCreate");
    SYM(StreamQuery, "cuStreamQuery");
    SYM(EventCreate, "cuEventCreate");
    SYM(EventRecord, "cuEventRecord");
    SYM(EventElapsedTime, "cuEventElapsedTime");
    SYM(EventDestroy, "cuEventDestroy_v2");
    SYM(GetErrorName, "cuGetErrorName");
    SYM(GetErrorString, "cuGetErrorString");
    *(void **)&evt_cuda_g.cu.TensorMapEncodeTiled = dlsym(evt_cuda_g.lib, "cuTensorMapEncodeTiled"); /* optional */
#undef SYM
    CUresult r;
    int n = 0;
    if ((r = evt_cuda_g.cu.Init(0)) != CUDA_SUCCESS || (r = evt_cuda_g.cu.DeviceGetCount(&n)) != CUDA_SUCCESS || n == 0) {
        snprintf(evt_cuda_g.why, sizeof evt_cuda_g.why, "no CUDA driver / GPU found (cuInit/cuDeviceGetCount: %s, %d devices)",
                 r ? evt_cu_name(r) : "ok", n);
        return;
    }
    const char *want = getenv("EVT_CUDA_DEVICE");
    int ord = want && *want ? atoi(want) : 0;
#define TRY(call)                                                                                   \
    do {                                                                                            \
        if ((r = (call)) != CUDA_SUCCESS) {                                                         \
            snprintf(evt_cuda_g.why, sizeof evt_cuda_g.why, "CUDA initialisation failed: %s: %s", #call, evt_cu_name(r)); \
            return;                                                                                 \
        }                                                                                           \
    } while (0)
    TRY(evt_cuda_g.cu.DeviceGet(&evt_cuda_g.dev, ord));
    TRY(evt_cuda_g.cu.DeviceGetAttribute(&evt_cuda_g.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, evt_cuda_g.dev));
    TRY(evt_cuda_g.cu.DeviceGetAttribute(&evt_cuda_g.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, evt_cuda_g.dev));
    TRY(evt_cuda_g.cu.DeviceGetAttribute(&evt_cuda_g.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, evt_cuda_g.dev));
    TRY(evt_cuda_g.cu.DeviceGetAttribute(&evt_cuda_g.coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, evt_cuda_g.dev));
    TRY(evt_cuda_g.cu.DeviceGetAttribute(&evt_cuda_g.smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, evt_cuda_g.dev));
    TRY(evt_cuda_g.cu.DeviceGetAttribute(&evt_cuda_g.smem_per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, evt_cuda_g.dev));
    TRY(evt_cuda_g.cu.DeviceGetAttribute(&evt_cuda_g.smem_reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, evt_cuda_g.dev));
    TRY(evt_cuda_g.cu.DeviceGetName(evt_cuda_g.name, sizeof evt_cuda_g.name - 1, evt_cuda_g.dev));
    TRY(evt_cuda_g.cu.DevicePrimaryCtxRetain(&evt_cuda_g.ctx, evt_cuda_g.dev));
    TRY(evt_cuda_g.cu.CtxSetCurrent(evt_cuda_g.ctx));
    TRY(evt_cuda_g.cu.StreamCreate(&evt_cuda_g.stream, 0));
    TRY(evt_cuda_g.cu.StreamCreate(&evt_cuda_g.side, CU_STREAM_NON_BLOCKING));
#undef TRY
    if (evt_cuda_g.cc_major != 9) {
        snprintf(evt_cuda_g.why, sizeof evt_cuda_g.why, "GPU %s has compute capability %d.%d; kernels are built for sm_90a (Hopper)",
                 evt_cuda_g.name, evt_cuda_g.cc_major, evt_cuda_g.cc_minor);
        return;
    }
    if (!evt_cuda_g.coop) { snprintf(evt_cuda_g.why, sizeof evt_cuda_g.why, "GPU %s does not support cooperative launches", evt_cuda_g.name); return; }
    evt_cuda_g.ok = 1;
}

/* Makes the driver usable on this thread; EVT_ERR_NO_DEVICE otherwise. */
evt_status evt_cuda_driver(evt_diag *d)
{
    pthread_once(&evt_cuda_g.once, driver_init);
    if (!evt_cuda_g.ok) return evt_diag_error(d, EVT_ERR_NO_DEVICE, (evt_loc){0, 0}, "%s", evt_cuda_g.why);
    CUresult r = evt_cuda_g.cu.CtxSetCurrent(evt_cuda_g.ctx);
    if (r) return evt_diag_error(d, EVT_ERR_NO_DEVICE, (evt_loc){0, 0}, "cuCtxSetCurrent: %s", evt_cu_name(r));
    return EVT_OK;
}


int evt_cuda_available(void)
{
    pthread_once(&evt_cuda_g.once, driver_init);
    return evt_cuda_g.ok;
}

evt_status evt_cuda_device_info(char *name, size_t n, int *sms, evt_diag *d)
{
    evt_status st = evt_cuda_driver(d);
    if (st) return st;
    if (name && n) snprintf(name, n, "%s (sm_%d%d, %d SMs)", evt_cuda_g.name, evt_cuda_g.cc_major, evt_cuda_g.cc_minor, evt_cuda_g.sms);
    if (sms) *sms = evt_cuda_g.sms;
    return EVT_OK;
}
