/* OpenCL at run time: see loader.h. */
#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *lib;

static cl_fns fns;
static int state; /* 0 not tried, 1 loaded, -1 failed */
static char reason[512];

const cl_fns *cl_load(const char **why)
{
    if (state == 0) {
        const char *env = getenv("FLOE_OPENCL_LIB");
        const char *names[] = {env && env[0] ? env : "libOpenCL.so.1", env && env[0] ? NULL : "libOpenCL.so", NULL};
        for (int i = 0; names[i] && !lib; i++) {
            lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
            if (!lib && i == 0)
                snprintf(reason, sizeof reason, "no OpenCL runtime: %s", dlerror());
        }
        state = lib ? 1 : -1;
#define FLOE_CL_SYM(f)                                                                         \
    if (state == 1 && !(*(void **)&fns.f = dlsym(lib, #f))) {                                  \
        snprintf(reason, sizeof reason, "the OpenCL runtime lacks %s (OpenCL 1.2 needed)", #f); \
        state = -1;                                                                            \
    }
        FLOE_CL_FUNCS(FLOE_CL_SYM)
#undef FLOE_CL_SYM
    }
    if (why)
        *why = state == 1 ? NULL : reason;
    return state == 1 ? &fns : NULL;
}

void *cl_loader_sym(const char *name) { return lib && name ? dlsym(lib, name) : NULL; }
