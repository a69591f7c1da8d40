/* OpenCL backend: kernel programs. Sources found under the kernel folders
 * (FLOE_KERNEL_PATH first, then the source tree's and the installed
 * kernels/), built once per (module, file), kernels looked up by name. */
#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kernel_dirs(int i)
{
    static char env[4096];
    static const char *fixed[] = {FLOE_SOURCE_KERNEL_DIR, FLOE_INSTALL_KERNEL_DIR};
    const char *e = getenv("FLOE_KERNEL_PATH");
    int ne = 0;
    if (e && e[0]) { /* ':'-separated, searched first */
        const char *s = e;
        for (;;) {
            const char *c = strchr(s, ':');
            size_t l = c ? (size_t)(c - s) : strlen(s);
            if (l && ne++ == i) {
                snprintf(env, sizeof env, "%.*s", (int)l, s);
                return env;
            }
            if (!c)
                break;
            s = c + 1;
        }
    }
    i -= ne;
    return i >= 0 && i < 2 ? fixed[i] : NULL;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

cl_prog *cl_program_get(floe_ctx *ctx, const char *module, const char *file)
{
    for (int p = 0; p < CL->nprogs; p++)
        if (!strcmp(CL->progs[p].module, module) && !strcmp(CL->progs[p].file, file))
            return CL->progs[p].prog ? &CL->progs[p] : NULL;
    if (CL->nprogs == MAX_PROGS) {
        ctx_fail(ctx, FLOE_ERR, "OpenCL: more than %d kernel programs", MAX_PROGS);
        return NULL;
    }
    char path[4200], dir[4096], looked[8192] = "";
    char *src = NULL;
    size_t len = 0, used = 0;
    for (int i = 0; kernel_dirs(i) && !src; i++) {
        snprintf(dir, sizeof dir, "%s", kernel_dirs(i));
        snprintf(path, sizeof path, "%s/%s/%s", dir, module, file);
        src = read_file(path, &len);
        int w = snprintf(looked + used, sizeof looked - used, "%s%s", used ? ", " : "", path);
        if (w > 0 && (size_t)w < sizeof looked - used)
            used += (size_t)w;
    }
    if (!src) {
        ctx_fail(ctx, FLOE_ERR_ARG, "OpenCL: module '%s': kernel source %s/%s not found (looked in %s; "
                 "FLOE_KERNEL_PATH adds folders)", module, module, file, looked);
        return NULL;
    }
    /* #line makes the compiler's messages name the file */
    size_t hl = strlen(path) + 32;
    char *full = malloc(hl + len + 1);
    if (!full) {
        free(src);
        ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    int h = snprintf(full, hl, "#line 1 \"%s\"\n", path);
    memcpy(full + h, src, len + 1);
    free(src);
    const char *srcs[1] = {full};
    cl_int e;
    cl_program prog = F->clCreateProgramWithSource(CL->context, 1, srcs, NULL, &e);
    free(full);
    if (!prog) {
        cl_err(ctx, e, "clCreateProgramWithSource");
        return NULL;
    }
    char opts[4096 + sizeof FLOE_SOURCE_INCLUDE_DIR + sizeof FLOE_INSTALL_INCLUDE_DIR + 64];
    /* the kernels' folder, then the public headers' (a text shared by C and
     * OpenCL C, <floe/sym3_eigen.h>: the source tree's, then the installed) */
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -I %s -I %s -I %s", dir, FLOE_SOURCE_INCLUDE_DIR,
             FLOE_INSTALL_INCLUDE_DIR);
    e = F->clBuildProgram(prog, 1, &CL->dev, opts, NULL, NULL);
    if (e != CL_SUCCESS) {
        size_t ll = 0;
        F->clGetProgramBuildInfo(prog, CL->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &ll);
        char *log = malloc(ll + 1);
        if (log) {
            log[0] = 0;
            F->clGetProgramBuildInfo(prog, CL->dev, CL_PROGRAM_BUILD_LOG, ll, log, NULL);
            log[ll] = 0;
        }
        ctx_fail(ctx, FLOE_ERR, "OpenCL: module '%s': building %s failed (error %d):\n%s", module, path, (int)e,
                 log ? log : "(no build log)");
        free(log);
        F->clReleaseProgram(prog);
        return NULL;
    }
    cl_prog *cp = &CL->progs[CL->nprogs++];
    memset(cp, 0, sizeof *cp);
    snprintf(cp->module, sizeof cp->module, "%s", module);
    snprintf(cp->file, sizeof cp->file, "%s", file);
    cp->prog = prog;
    return cp;
}

cl_kernel cl_kernel_get(floe_ctx *ctx, const char *module, const char *file, const char *name)
{
    cl_prog *cp = cl_program_get(ctx, module, file);
    if (!cp)
        return NULL;
    for (int k = 0; k < cp->nk; k++)
        if (!strcmp(cp->kname[k], name))
            return cp->kern[k];
    if (cp->nk == MAX_KERNELS) {
        ctx_fail(ctx, FLOE_ERR, "OpenCL: more than %d kernels in %s/%s", MAX_KERNELS, module, file);
        return NULL;
    }
    cl_int e;
    cl_kernel k = F->clCreateKernel(cp->prog, name, &e);
    if (!k) {
        ctx_fail(ctx, FLOE_ERR, "OpenCL: module '%s': no kernel '%s' in %s (error %d)", module, name, file, (int)e);
        return NULL;
    }
    snprintf(cp->kname[cp->nk], NAME_LEN, "%s", name);
    cp->kern[cp->nk++] = k;
    return k;
}

const char *cl_kernel_name(floe_ctx *ctx, cl_kernel k)
{
    for (int p = 0; p < CL->nprogs; p++)
        for (int i = 0; i < CL->progs[p].nk; i++)
            if (CL->progs[p].kern[i] == k)
                return CL->progs[p].kname[i];
    return "?";
}

cl_kernel cl_core_kernel(floe_ctx *ctx, const char *file, const char *name)
{
    return cl_kernel_get(ctx, "core", file, name);
}
