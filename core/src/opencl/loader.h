/* OpenCL loaded at run time (internal): dlopen("libOpenCL.so.1") and a table
 * of function pointers, so libfloe has no link dependency on OpenCL and runs
 * on the C path on a machine without any OpenCL runtime. */
#ifndef FLOE_CL_LOADER_H
#define FLOE_CL_LOADER_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#define FLOE_CL_FUNCS(X)                                                                            \
    X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext) \
    X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) X(clCreateBuffer)            \
    X(clReleaseMemObject) X(clEnqueueReadBuffer) X(clEnqueueWriteBuffer) X(clEnqueueCopyBuffer)       \
    X(clEnqueueFillBuffer) X(clCreateProgramWithSource) X(clBuildProgram) X(clGetProgramBuildInfo)    \
    X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg)                       \
    X(clEnqueueNDRangeKernel) X(clFinish) X(clFlush) X(clWaitForEvents) X(clGetEventProfilingInfo)   \
    X(clReleaseEvent) X(clRetainEvent) X(clEnqueueMarkerWithWaitList) X(clGetKernelWorkGroupInfo)      \
    X(clEnqueueMapBuffer) X(clEnqueueUnmapMemObject)

typedef struct cl_fns {
#define FLOE_CL_PTR(f) __typeof__(&f) f;
    FLOE_CL_FUNCS(FLOE_CL_PTR)
#undef FLOE_CL_PTR
} cl_fns;

/* The loaded table, or NULL with the reason in why (FLOE_OPENCL_LIB names
 * another library, for tests of the no-runtime path). Loaded once. */
const cl_fns *cl_load(const char **why);

/* dlsym in the loaded runtime (NULL when none). */
void *cl_loader_sym(const char *name);

#endif
