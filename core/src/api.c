/* The table of core services handed to every module (floe/module.h). */
#include "decomp.h"
#include "device.h"
#include <floe/mesh.h>
#include "io.h"
#include "out_path.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void api_log(floe_ctx *ctx, int level, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ctx_log(ctx, level, "%s", buf);
}

static int api_fail(floe_ctx *ctx, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
    va_end(ap);
    return status ? status : FLOE_ERR;
}

static const floe_sim_info *api_sim(floe_ctx *ctx) { return &ctx->info; }

static void api_dt_limit(floe_ctx *ctx, double dt)
{
    if (dt > 0 && dt < ctx->dt_limit)
        ctx->dt_limit = dt;
}

static void api_stat(floe_ctx *ctx, const char *name, double value) { ctx_stat(ctx, name, value); }

static int api_set_list(floe_ctx *ctx, floe_set_kind kind, floe_set *out, int max)
{
    int n = 0;
    for (int i = 0; i < ctx->npsets; i++)
        if (ctx->sets[i].kind & kind) {
            if (n < max)
                out[n] = ctx_set_handle(ctx, i);
            n++;
        }
    return n;
}

static int api_set_info(floe_ctx *ctx, floe_set set, floe_set_info *out)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "invalid particle set handle");
    out->name = p->name;
    out->kind = p->kind;
    out->n = p->n;
    out->rest_density = p->rest_density;
    out->is_static = p->is_static;
    return FLOE_OK;
}

static const floe_nlist *api_neighbours(floe_ctx *ctx, floe_set query, floe_set target)
{
    pset *q = ctx_set(ctx, query);
    pset *t = ctx_set(ctx, target);
    if (q && t && !ctx->nb_valid && ctx->dev && ctx->dev->ops->lists_to_host(ctx) != FLOE_OK)
        return NULL; /* a device: only its lists were current (or none) */
    if (!q || !t || q->kind != FLOE_SET_FLUID || !ctx->nb_valid)
        return NULL;
    const nb_list *l = &q->lists[t - ctx->sets];
    floe_nlist *v = &q->views[t - ctx->sets];
    v->n = l->n;
    v->stride = l->stride;
    v->count = l->count;
    v->idx = l->idx;
    v->wsum = ctx->ksums_valid && q->ksum_ok[t - ctx->sets] ? q->ksum[t - ctx->sets] : NULL;
    return v;
}

static void api_want_kernel_sums(floe_ctx *ctx)
{
    if (ctx)
        ctx->ksums_wanted = 1;
}

static int api_out_dir(floe_ctx *ctx, const char *folder)
{
    char err[1500];
    int first, records;
    int base = ctx->out ? out_root_fd(ctx->out, err, sizeof err) : AT_FDCWD;
    int fd = base == -1 ? -1 : out_walk(base, folder ? folder : "", 1, folder, err, sizeof err);
    if (fd >= 0 && out_take(ctx->out, fd, folder, &first, &records, err, sizeof err) != 0) {
        close(fd);
        fd = -1;
    }
    if (fd < 0)
        ctx_fail(ctx, errno == EPERM || errno == ELOOP || errno == EEXIST ? FLOE_ERR_ARG : FLOE_ERR_IO, "%s", err);
    return fd;
}

/* The one place a module writes a file (per-frame stages: meshes). */
static int api_out_write(floe_ctx *ctx, const char *name, const void *data, size_t len)
{
    if (!name || !name[0] || name[0] == '.' || strchr(name, '/'))
        return ctx_fail(ctx, FLOE_ERR_ARG, "out_write: '%s' is not a plain file name", name ? name : "(null)");
    if (ctx->frame_dir < 0)
        return FLOE_OK;
    char path[2048];
    io_atomic a;
    snprintf(path, sizeof path, "%s/%s", ctx->frame_dir_name ? ctx->frame_dir_name : ".", name);
    if (io_atomic_openat(&a, ctx->frame_dir, name) != 0)
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    if (len && fwrite(data, 1, len, a.f) != len) {
        io_atomic_abort(&a);
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    if (io_atomic_commit(&a) != 0)
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    if (out_manifest_add(ctx->frame_dir, name) != 0) /* a later run into the folder knows it as Floe's */
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot list %s in %s/%s: %s", name,
                        ctx->frame_dir_name ? ctx->frame_dir_name : ".", OUT_MANIFEST, strerror(errno));
    return FLOE_OK;
}

/* The const view (ABI 1.8): a read, whatever the running stage declared. */
static const void *api_attr_read(floe_ctx *ctx, floe_set set, const char *name, floe_type type)
{
    pset *p = ctx_set(ctx, set);
    attr *at = p ? pset_attr(p, name) : NULL;
    if (!at || at->type != type)
        return NULL;
    dev_host(ctx, p, at, 0); /* a device: copy back if stale; the device copy stays valid */
    return at->data;
}

/* ABI 1.9: a module's own sets and meshes */
static floe_set api_set_create(floe_ctx *ctx, const char *name, floe_set_kind kind, float rest_density)
{
    if (!name || !*name) {
        ctx_fail(ctx, FLOE_ERR_ARG, "a set needs a name");
        return (floe_set){0};
    }
    if (floe_set_find(ctx, name).id) {
        ctx_fail(ctx, FLOE_ERR_ARG, "set '%s' exists already", name);
        return (floe_set){0};
    }
    return floe_set_create(ctx, name, kind, rest_density);
}

/* lua_mesh.c */
struct floe_mesh *floe_lua_mesh_load(floe_ctx *ctx, void *L, int t, const char *fn);

static void api_mesh_destroy(struct floe_mesh *m) { floe_mesh_destroy(m); }

static long api_boundary_mesh(floe_ctx *ctx, floe_set set, const struct floe_mesh *m, const struct floe_mesh_use *use)
{
    return floe_boundary_mesh(ctx, set, m, use);
}

/* ABI 1.13: the decomposition's services (decomp.c; without MPI: the set's
 * size, nothing to refresh, the values as they are) */
static uint32_t api_owned(floe_ctx *ctx, floe_set set)
{
    pset *p = ctx_set(ctx, set);
    return p ? dd_owned(ctx, p) : 0;
}

static const uint32_t *api_rows(floe_ctx *ctx, floe_set set, uint32_t *count, int *part)
{
    pset *p = ctx_set(ctx, set);
    *part = ctx->rows_part;
    if (!p || !ctx->rows_part || !ctx->rows[p - ctx->sets])
        return *count = p ? p->n : 0, *part = 0, NULL;
    *count = ctx->nrows[p - ctx->sets];
    return ctx->rows[p - ctx->sets];
}

static int api_halo(floe_ctx *ctx, floe_set set, void *data, size_t elem_bytes)
{
    pset *p = ctx_set(ctx, set);
    if (!p || (!data && p->n > 0) || elem_bytes == 0)
        return ctx_fail(ctx, FLOE_ERR_ARG, "halo: invalid set handle, data or element size");
    return dd_halo(ctx, p, data, elem_bytes);
}

static const floe_api core_api = {
    .size = sizeof(floe_api),
    .abi_major = FLOE_ABI_MAJOR,
    .abi_minor = FLOE_ABI_MINOR,
    .log = api_log,
    .fail = api_fail,
    .sim = api_sim,
    .dt_limit = api_dt_limit,
    .stat = api_stat,
    .set_find = floe_set_find,
    .set_list = api_set_list,
    .set_info = api_set_info,
    .set_resize = ctx_set_resize,
    .set_compact = ctx_set_compact,
    .attr = floe_attr,
    .attr_add = floe_attr_add,
    .neighbours = api_neighbours,
    .want_kernel_sums = api_want_kernel_sums,
    .grid_add = floe_grid_add,
    .grid_find = floe_grid_find,
    .grid_info = floe_grid_get_info,
    .backend = api_backend,
    .cl_context = api_cl_context,
    .cl_queue = api_cl_queue,
    .cl_program = api_cl_program,
    .cl_kernel = api_cl_kernel,
    .cl_attr = api_cl_attr,
    .cl_neighbours = api_cl_neighbours,
    .cl_scratch = api_cl_scratch,
    .cl_run = api_cl_run,
    .cl_fn = api_cl_fn,
    .cl_pinned = api_cl_pinned,
    .out_dir = api_out_dir,
    .out_write = api_out_write,
    .attr_read = api_attr_read,
    .set_create = api_set_create,
    .set_moving = ctx_set_moving,
    .lua_mesh = floe_lua_mesh_load,
    .mesh_destroy = api_mesh_destroy,
    .boundary_mesh = api_boundary_mesh,
    .cl_set_resize = ctx_set_resize_cl,
    .cl_set_compact = ctx_set_compact_cl,
    .cl_scan = api_cl_scan,
    .cl_sort = api_cl_sort,
    .set_placer = ctx_set_placer,
    .owned = api_owned,
    .halo = api_halo,
    .reduce = dd_reduce,
    .cl_cells = api_cl_cells,
    .rows = api_rows,
};

const floe_api *floe_core_api(void) { return &core_api; }
