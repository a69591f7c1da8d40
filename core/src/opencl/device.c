/* OpenCL backend: platforms and devices (`floe devices`) and the choice of
 * one: PLATFORM:DEVICE as listed, else the first GPU, else the first device. */
#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cl_dev_str(const cl_fns *f, cl_device_id d, cl_device_info what, char *buf, size_t len)
{
    buf[0] = 0;
    if (f->clGetDeviceInfo(d, what, len, buf, NULL) != CL_SUCCESS)
        snprintf(buf, len, "?");
}

void cl_plat_str(const cl_fns *f, cl_platform_id p, cl_platform_info what, char *buf, size_t len)
{
    buf[0] = 0;
    if (f->clGetPlatformInfo(p, what, len, buf, NULL) != CL_SUCCESS)
        snprintf(buf, len, "?");
}

int floe_opencl_devices(void (*fn)(const char *line, void *u), void *u)
{
    const char *why;
    const cl_fns *f = cl_load(&why);
    char line[1024];
    if (!f) {
        snprintf(line, sizeof line, "OpenCL: %s (the cpu backend still runs)", why);
        fn(line, u);
        return -1;
    }
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (f->clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) {
        fn("OpenCL: the runtime found no platform (no ICD installed?)", u);
        return 0;
    }
    int total = 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        char name[256], vendor[256], ver[256];
        cl_plat_str(f, plats[p], CL_PLATFORM_NAME, name, sizeof name);
        cl_plat_str(f, plats[p], CL_PLATFORM_VENDOR, vendor, sizeof vendor);
        cl_plat_str(f, plats[p], CL_PLATFORM_VERSION, ver, sizeof ver);
        snprintf(line, sizeof line, "platform %u: %s (%s, %s)", p, name, vendor, ver);
        fn(line, u);
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (f->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS)
            nd = 0;
        for (cl_uint d = 0; d < nd && d < 16; d++) {
            char dn[256], dver[256], drv[256];
            cl_device_type type = 0;
            cl_uint cu = 0;
            cl_ulong mem = 0;
            cl_dev_str(f, devs[d], CL_DEVICE_NAME, dn, sizeof dn);
            cl_dev_str(f, devs[d], CL_DEVICE_VERSION, dver, sizeof dver);
            cl_dev_str(f, devs[d], CL_DRIVER_VERSION, drv, sizeof drv);
            f->clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            f->clGetDeviceInfo(devs[d], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
            f->clGetDeviceInfo(devs[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
            snprintf(line, sizeof line, "  device %u:%u: %s [%s, %u compute units, %.1f GiB, %s, driver %s]", p, d, dn,
                     type & CL_DEVICE_TYPE_GPU ? "gpu" : type & CL_DEVICE_TYPE_CPU ? "cpu" : "other", cu,
                     (double)mem / (1024.0 * 1024.0 * 1024.0), dver, drv);
            fn(line, u);
            total++;
        }
    }
    return total;
}

int cl_pick_device(cl_backend *b, const char *device, char *err, size_t errlen)
{
    const cl_fns *f = b->f;
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (f->clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) {
        snprintf(err, errlen, "no OpenCL platform found (no ICD installed?)");
        return -1;
    }
    int want_p = -1, want_d = -1, local = -1;
    if (device && !strncmp(device, "local:", 6)) /* MPI: the local rank's, modulo the GPUs (else the devices) */
        local = atoi(device + 6);
    else if (device && device[0]) {
        if (sscanf(device, "%d:%d", &want_p, &want_d) != 2 || want_p < 0 || want_d < 0) {
            snprintf(err, errlen, "device '%s': expected PLATFORM:DEVICE as `floe devices` lists them", device);
            return -1;
        }
    }
    cl_device_id first = NULL, gpu = NULL, all[64], gpus[64];
    cl_platform_id first_p = NULL, gpu_p = NULL, all_p[64], gpus_p[64];
    int nall = 0, ngpu = 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (f->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && d < 16; d++) {
            if (want_p >= 0) {
                if ((int)p == want_p && (int)d == want_d) {
                    b->plat = plats[p];
                    b->dev = devs[d];
                    return 0;
                }
                continue;
            }
            cl_device_type type = 0;
            f->clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            if (!first) {
                first = devs[d];
                first_p = plats[p];
            }
            if (nall < 64)
                all[nall] = devs[d], all_p[nall++] = plats[p];
            if ((type & CL_DEVICE_TYPE_GPU) && ngpu < 64)
                gpus[ngpu] = devs[d], gpus_p[ngpu++] = plats[p];
            if (!gpu && (type & CL_DEVICE_TYPE_GPU)) {
                gpu = devs[d];
                gpu_p = plats[p];
            }
        }
    }
    if (want_p >= 0) {
        snprintf(err, errlen, "no OpenCL device %d:%d (see `floe devices`)", want_p, want_d);
        return -1;
    }
    if (!first) {
        snprintf(err, errlen, "no OpenCL device found");
        return -1;
    }
    if (local >= 0) {
        const int k = ngpu ? local % ngpu : local % nall;
        b->plat = ngpu ? gpus_p[k] : all_p[k];
        b->dev = ngpu ? gpus[k] : all[k];
        return 0;
    }
    b->plat = gpu ? gpu_p : first_p;
    b->dev = gpu ? gpu : first;
    return 0;
}
