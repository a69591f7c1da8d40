/* The OpenCL backend as the core opens it (backend.c): the only header of
 * core/src/opencl/ a file outside it includes. No OpenCL type shows here. */
#ifndef FLOE_OPENCL_H
#define FLOE_OPENCL_H

#include <stddef.h>

struct floe_backend;

/* The backend on `device` ("PLATFORM:DEVICE" as `floe devices` lists them;
 * NULL or "": the first GPU, else the first device), or NULL with the
 * reason in msg (no runtime, no device, no context). */
struct floe_backend *floe_opencl_open(const char *device, char *msg, size_t msglen);
/* `floe devices`: one line per platform and device; the number of devices,
 * -1 without a runtime. */
int floe_opencl_devices(void (*fn)(const char *line, void *u), void *u);
/* a function of the loaded runtime by name (api->cl_fn), NULL without one */
void *floe_opencl_sym(const char *name);

#endif
