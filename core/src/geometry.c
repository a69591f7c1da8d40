/* Scene geometry: fluid blocks on a lattice, boundary walls sampled as
 * boundary particles, and their Akinci et al. 2012 volumes. */
#include "device.h"
#include "geometry.h"
#include "decomp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int geom_check_set(floe_ctx *ctx, floe_set set, floe_set_kind kind, const char *what, pset **out)
{
    pset *p = ctx_set(ctx, set);
    if (!p)
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s: invalid particle set handle", what);
    if (p->kind != kind)
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s: set '%s' is not a %s set", what, p->name,
                        kind == FLOE_SET_FLUID ? "fluid" : "boundary");
    *out = p;
    return FLOE_OK;
}

static int check_box(floe_ctx *ctx, const float min[3], const float max[3], const char *what)
{
    for (int k = 0; k < ctx->info.dim; k++)
        if (!isfinite(min[k]) || !isfinite(max[k]) || !(max[k] > min[k]))
            return ctx_fail(ctx, FLOE_ERR_ARG, "%s: max must be greater than min on every axis", what);
    return FLOE_OK;
}

long geom_append(floe_ctx *ctx, floe_set set, pset *p, const float *pos, uint32_t n, const float v0[3])
{
    const int fluid = p->kind == FLOE_SET_FLUID;
    uint32_t base = p->n, m = n, *ids = NULL;
    float *mine = NULL;
    if (fluid && dd_splits_new(ctx)) { /* MPI: each particle on one rank (dd_keep_new) */
        mine = malloc((size_t)n * 3 * sizeof *mine + 1);
        ids = malloc((size_t)n * sizeof *ids + 1);
        if (!mine || !ids) {
            free(mine), free(ids);
            return ctx_fail(ctx, FLOE_ERR_NOMEM, "out of memory for %u particles", n), -1;
        }
        m = 0;
        for (uint32_t j = 0; j < n; j++)
            if (dd_keep_new(ctx, p->next_id + j, pos + 3 * (size_t)j)) {
                memcpy(mine + 3 * (size_t)m, pos + 3 * (size_t)j, 3 * sizeof *mine);
                ids[m++] = p->next_id + j;
            }
        pos = mine;
    }
    if (ctx_set_resize(ctx, set, base + m)) {
        free(mine), free(ids);
        return -1;
    }
    float *x = pset_attr(p, "x")->data;
    memcpy(x + 3 * (size_t)base, pos, (size_t)m * 3 * sizeof(float));
    if (fluid) {
        float *v = pset_attr(p, "v")->data, *ms = pset_attr(p, "m")->data, *rho = pset_attr(p, "rho")->data;
        uint32_t *id = pset_attr(p, "id")->data;
        float mass = p->rest_density * powf(ctx->info.spacing, (float)ctx->info.dim);
        for (uint32_t i = base; i < base + m; i++) {
            for (int k = 0; k < 3; k++)
                v[3 * i + k] = v0 ? v0[k] : 0.0f;
            ms[i] = mass;
            rho[i] = p->rest_density;
            id[i] = ids ? ids[i - base] : p->next_id + (i - base);
        }
        p->next_id += n; /* the ids of every rank's particles */
    } else {
        ctx->boundary_dirty = 1;
    }
    free(mine), free(ids);
    return (long)n;
}

/* Lattice points with spacing d, cell-centred inside [min,max], that pass
 * an optional sphere test. */
static long fill_lattice(floe_ctx *ctx, floe_set set, pset *p, const float min[3], const float max[3],
                         const float *centre, float radius, const float v0[3])
{
    const float d = ctx->info.spacing;
    int dim = ctx->info.dim;
    long cnt[3] = {1, 1, 1};
    for (int k = 0; k < dim; k++)
        cnt[k] = (long)floorf((max[k] - min[k]) / d + 1e-3f);
    long total = cnt[0] * cnt[1] * cnt[2];
    if (total <= 0)
        return 0;
    if (total > 200000000L)
        return ctx_fail(ctx, FLOE_ERR_ARG, "fill: more than 2e8 particles requested");
    float *pos = malloc((size_t)total * 3 * sizeof(float));
    if (!pos)
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "fill: out of memory");
    uint32_t n = 0;
    for (long iz = 0; iz < cnt[2]; iz++)
        for (long iy = 0; iy < cnt[1]; iy++)
            for (long ix = 0; ix < cnt[0]; ix++) {
                float q[3] = {min[0] + (ix + 0.5f) * d, min[1] + (iy + 0.5f) * d,
                              dim == 3 ? min[2] + (iz + 0.5f) * d : 0.0f};
                if (centre) {
                    float r2 = 0;
                    for (int k = 0; k < dim; k++)
                        r2 += (q[k] - centre[k]) * (q[k] - centre[k]);
                    if (r2 > radius * radius)
                        continue;
                }
                memcpy(pos + 3 * (size_t)n++, q, sizeof q);
            }
    long r = geom_append(ctx, set, p, pos, n, v0);
    free(pos);
    return r;
}

/* Fluid must start inside the domain (on its non-periodic axes), with a
 * finite velocity: else the first step reports a blow-up at step 0. */
static int check_fluid(floe_ctx *ctx, const float min[3], const float max[3], const float v0[3], const char *what)
{
    static const char axis[] = "xyz";
    for (int k = 0; k < 3 && v0; k++)
        if (!isfinite(v0[k]))
            return ctx_fail(ctx, FLOE_ERR_ARG, "%s: velocity must be finite", what);
    for (int k = 0; k < ctx->info.dim; k++)
        if (!isfinite(min[k]) || !isfinite(max[k]))
            return ctx_fail(ctx, FLOE_ERR_ARG, "%s: the extent must be finite", what);
    for (int k = 0; k < ctx->info.dim; k++)
        if (!(ctx->info.periodic & (1u << k)) && (min[k] < ctx->info.domain_min[k] || max[k] > ctx->info.domain_max[k]))
            return ctx_fail(ctx, FLOE_ERR_ARG, "%s: [%g, %g] on %c is %s the domain [%g, %g]", what, (double)min[k],
                            (double)max[k], axis[k],
                            max[k] <= ctx->info.domain_min[k] || min[k] >= ctx->info.domain_max[k] ? "outside"
                                                                                                    : "partly outside",
                            (double)ctx->info.domain_min[k], (double)ctx->info.domain_max[k]);
    return FLOE_OK;
}

long floe_fill_box(floe_ctx *ctx, floe_set set, const float min[3], const float max[3], const float v0[3])
{
    pset *p = NULL;
    if (geom_check_set(ctx, set, FLOE_SET_FLUID, "fluid_box", &p) || check_box(ctx, min, max, "fluid_box") ||
        check_fluid(ctx, min, max, v0, "fluid_box"))
        return -1;
    return fill_lattice(ctx, set, p, min, max, NULL, 0, v0);
}

long floe_fill_sphere(floe_ctx *ctx, floe_set set, const float centre[3], float radius, const float v0[3])
{
    pset *p = NULL;
    if (geom_check_set(ctx, set, FLOE_SET_FLUID, "fluid_sphere", &p))
        return -1;
    if (!(radius > 0) || !isfinite(radius))
        return ctx_fail(ctx, FLOE_ERR_ARG, "fluid_sphere: radius must be positive"), -1;
    float min[3], max[3];
    for (int k = 0; k < 3; k++) {
        min[k] = centre[k] - radius;
        max[k] = centre[k] + radius;
    }
    if (check_fluid(ctx, min, max, v0, "fluid_sphere"))
        return -1;
    return fill_lattice(ctx, set, p, min, max, centre, radius, v0);
}

long floe_boundary_solid_box(floe_ctx *ctx, floe_set set, const float min[3], const float max[3])
{
    pset *p = NULL;
    if (geom_check_set(ctx, set, FLOE_SET_BOUNDARY, "boundary_solid_box", &p) ||
        check_box(ctx, min, max, "boundary_solid_box"))
        return -1;
    return fill_lattice(ctx, set, p, min, max, NULL, 0, NULL);
}

/* Coordinates along one axis: `layers` outside below min, the wall face
 * evenly at about spacing d, `layers` outside above max. Returns count. */
static int axis_coords(float min, float max, float d, int layers, float *out, int cap, int *inner_lo, int *inner_hi)
{
    int nint = (int)lroundf((max - min) / d);
    if (nint < 1)
        nint = 1;
    if (nint + 2 * layers > cap)
        return -1;
    float s = (max - min) / (float)nint;
    int n = 0;
    for (int l = layers - 1; l >= 0; l--)
        out[n++] = min - (l + 0.5f) * d;
    *inner_lo = n;
    for (int i = 0; i < nint; i++)
        out[n++] = min + (i + 0.5f) * s;
    *inner_hi = n;
    for (int l = 0; l < layers; l++)
        out[n++] = max + (l + 0.5f) * d;
    return n;
}

long floe_boundary_box(floe_ctx *ctx, floe_set set, const float min[3], const float max[3], int layers, int open)
{
    pset *p = NULL;
    if (geom_check_set(ctx, set, FLOE_SET_BOUNDARY, "boundary_box", &p) || check_box(ctx, min, max, "boundary_box"))
        return -1;
    if (layers < 1 || layers > 8)
        return ctx_fail(ctx, FLOE_ERR_ARG, "boundary_box: layers must be in 1..8"), -1;
    const float d = ctx->info.spacing;
    int dim = ctx->info.dim;
    enum { CAP = 1 << 16 };
    float *c[3];
    int n[3] = {1, 1, 1}, lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    float zero = 0;
    long rc = 0;
    for (int k = 0; k < 3; k++)
        c[k] = k < dim ? malloc(CAP * sizeof(float)) : &zero;
    for (int k = 0; k < dim && rc == 0; k++) {
        if (!c[k])
            rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "boundary_box: out of memory");
        else if ((n[k] = axis_coords(min[k], max[k], d, layers, c[k], CAP, &lo[k], &hi[k])) < 0)
            rc = ctx_fail(ctx, FLOE_ERR_ARG, "boundary_box: box too large for the spacing");
    }
    float *pos = NULL;
    long total = (long)n[0] * n[1] * n[2];
    if (rc == 0 && !(pos = malloc((size_t)total * 3 * sizeof(float))))
        rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "boundary_box: out of memory");
    uint32_t m = 0;
    for (int iz = 0; iz < n[2] && rc == 0; iz++)
        for (int iy = 0; iy < n[1]; iy++)
            for (int ix = 0; ix < n[0]; ix++) {
                int id[3] = {ix, iy, iz}, outside = 0;
                for (int k = 0; k < dim; k++)
                    outside |= id[k] < lo[k] || id[k] >= hi[k];
                if (!outside || ((open & FLOE_OPEN_TOP) && iy >= hi[1]))
                    continue;
                float *q = pos + 3 * (size_t)m++;
                q[0] = c[0][ix];
                q[1] = c[1][iy];
                q[2] = dim == 3 ? c[2][iz] : 0.0f;
            }
    if (rc == 0)
        rc = geom_append(ctx, set, p, pos, m, NULL);
    free(pos);
    for (int k = 0; k < dim; k++)
        free(c[k]);
    return rc;
}

enum { VOLUME_ROWS = 1 << 16 };

static int boundary_volumes(floe_ctx *ctx)
{
    int rc = ctx_neighbours_update(ctx, 0);
    if (rc)
        return rc;
    floe_kernel kern = floe_kernel_make(ctx->info.dim, ctx->info.support);
    const float w0 = floe_kernel_w(&kern, 0);
    nb_list list = {0};
    for (int b = 0; b < ctx->npsets && !rc; b++) {
        pset *pb = &ctx->sets[b];
        /* an every_frame or a moving set's volumes are its module's (api->set_moving) */
        if (pb->kind != FLOE_SET_BOUNDARY || pb->n == 0 || pb->every_frame || !pb->is_static)
            continue;
        const float *xb = pset_attr(pb, "x")->data;
        double *sum = malloc((size_t)pb->n * sizeof(double));
        if (!sum) {
            rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "boundary volumes: out of memory");
            break;
        }
        for (uint32_t i = 0; i < pb->n; i++)
            sum[i] = w0;
        for (int t = 0; t < ctx->npsets && !rc; t++) {
            pset *pt = &ctx->sets[t];
            if (pt->kind != FLOE_SET_BOUNDARY || pt->every_frame || !pt->is_static)
                continue;
            const float *xt = pset_attr(pt, "x")->data;
            /* the rows a block at a time (a wall of millions of particles
             * would need its whole list, 256 bytes a particle, at once);
             * each row lists the same neighbours in the same order as a
             * search of the set against itself, which leaves out j = i */
            for (uint32_t i0 = 0; i0 < pb->n && !rc; i0 += VOLUME_ROWS) {
                const uint32_t nr = pb->n - i0 < VOLUME_ROWS ? pb->n - i0 : VOLUME_ROWS;
                if (nb_build(&list, &ctx->nbgrid, xb + 3 * (size_t)i0, nr, &pt->sorted, xt, ctx->info.support, 0)) {
                    rc = ctx_fail(ctx, FLOE_ERR_NOMEM, "boundary volumes: out of memory");
                    break;
                }
                for (uint32_t r = 0; r < nr; r++) {
                    const uint32_t i = i0 + r;
                    for (uint32_t k = 0; k < list.count[r]; k++) {
                        uint32_t j = list.idx[(size_t)r * list.stride + k];
                        if (b == t && j == i)
                            continue;
                        float dd[3] = {xb[3 * i] - xt[3 * j], xb[3 * i + 1] - xt[3 * j + 1],
                                       xb[3 * i + 2] - xt[3 * j + 2]};
                        floe_periodic_delta(&ctx->info, dd);
                        sum[i] += floe_kernel_w(&kern, sqrtf(dd[0] * dd[0] + dd[1] * dd[1] + dd[2] * dd[2]));
                    }
                }
            }
        }
        float *V = pset_attr(pb, "V")->data;
        for (uint32_t i = 0; i < pb->n && !rc; i++)
            V[i] = (float)(1.0 / sum[i]);
        free(sum);
    }
    nb_list_free(&list);
    if (!rc)
        ctx->boundary_dirty = 0;
    return rc;
}

int floe_boundary_volumes(floe_ctx *ctx)
{
    int prev = ctx_threads_enter(ctx);
    int rc = boundary_volumes(ctx);
    ctx_threads_leave(prev);
    return rc;
}

/* Boundary volumes are computed on the host: the device copies of V go stale. */
int ctx_boundary_volumes(floe_ctx *ctx)
{
    int rc = floe_boundary_volumes(ctx);
    for (int s = 0; s < ctx->npsets && !rc; s++)
        if (ctx->sets[s].kind == FLOE_SET_BOUNDARY)
            dev_host(ctx, &ctx->sets[s], pset_attr(&ctx->sets[s], "V"), 1);
    return rc;
}
