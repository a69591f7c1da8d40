/* Fluid inside a mesh: the sim's lattice over the mesh's bounding box
 * (cell-centred from its minimum, as floe_fill_box over the same box), a
 * point kept when it lies at least d/2 from every triangle and its
 * generalised winding number is at least 1/2. For a closed mesh the
 * winding number is 1 inside and 0 outside; near a small hole it passes
 * smoothly from one to the other, so a slightly open mesh (allow_open)
 * still fills as the closed one would. Points are tested in parallel and
 * added in lattice order (the same particles for any thread count). */
#include "geometry.h"
#include "mesh_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a point exactly d/2 from a face (a face on the lattice's cell walls) stays */
#define NEAR_FRACTION (0.5 * (1 - 1e-4))

static int fill_check(floe_ctx *ctx, const floe_mesh *m, const floe_mesh_use *use, long cnt[3])
{
    const double d = ctx->info.spacing;
    long limit = use->max_particles > 0 ? use->max_particles : FLOE_MESH_MAX_PARTICLES;
    char why[256];
    if (ctx->info.dim != 3)
        return ctx_fail(ctx, FLOE_ERR_ARG, "fluid_mesh: %s: meshes need a 3D sim", m->file);
    floe_mesh_describe(m, why, sizeof why);
    if (!floe_mesh_is_closed(m) && !use->allow_open)
        return ctx_fail(ctx, FLOE_ERR_ARG, "fluid_mesh: %s: the mesh is %s; filling needs a closed mesh (allow_open "
                        "fills by winding number anyway)", m->file, why);
    if (floe_mesh_is_closed(m) && !(m->volume > 0))
        return ctx_fail(ctx, FLOE_ERR_ARG, "fluid_mesh: %s: the closed mesh encloses no volume", m->file);
    double lattice = 1;
    for (int k = 0; k < 3; k++) {
        cnt[k] = (long)ceil(((double)m->max[k] - m->min[k]) / d - 1e-3);
        if (cnt[k] < 1)
            cnt[k] = 1;
        lattice *= (double)cnt[k];
    }
    double want = floe_mesh_is_closed(m) ? m->volume / (d * d * d) : lattice;
    if (want > (double)limit || lattice > 8.0 * (double)limit)
        return ctx_fail(ctx, FLOE_ERR_ARG, "fluid_mesh: %s: about %.3g fluid particles at spacing %g (%.3g lattice points "
                        "in the bounding box): more than the limit of %ld; use a larger spacing or a smaller scale",
                        m->file, want, d, lattice, limit);
    return FLOE_OK;
}

/* One row of lattice points along x. Off a closed mesh the winding number
 * only changes where the surface is crossed, so along the row it is
 * evaluated again only after a point near the surface or a segment that
 * meets a triangle; an open mesh gets it at every point. */
static void classify_row(const mesh_bvh *bvh, const floe_mesh *m, float d, long nx, long iy, long iz, int closed,
                         uint8_t *in)
{
    double prev[3];
    int have_prev = 0, prev_in = 0;
    for (long ix = 0; ix < nx; ix++) {
        float q[3] = {m->min[0] + (ix + 0.5f) * d, m->min[1] + (iy + 0.5f) * d, m->min[2] + (iz + 0.5f) * d};
        double p[3] = {q[0], q[1], q[2]};
        if (mesh_near(bvh, p, NEAR_FRACTION * d)) {
            in[ix] = 0;
            have_prev = 0;
            continue;
        }
        if (!(closed && have_prev && !mesh_segment_hits(bvh, prev, p)))
            prev_in = mesh_winding(bvh, p) >= 0.5;
        in[ix] = (uint8_t)prev_in;
        memcpy(prev, p, sizeof prev);
        have_prev = 1;
    }
}

long floe_fill_mesh(floe_ctx *ctx, floe_set set, const floe_mesh *m, const floe_mesh_use *use, const float v0[3])
{
    static const floe_mesh_use none;
    pset *p = NULL;
    long cnt[3];
    if (!use)
        use = &none;
    if (geom_check_set(ctx, set, FLOE_SET_FLUID, "fluid_mesh", &p))
        return -1;
    if (!m)
        return ctx_fail(ctx, FLOE_ERR_ARG, "fluid_mesh: no mesh"), -1;
    if (fill_check(ctx, m, use, cnt))
        return -1;
    const float d = ctx->info.spacing;
    const long total = cnt[0] * cnt[1] * cnt[2];
    mesh_bvh bvh;
    uint8_t *in = malloc((size_t)total);
    if (!in || mesh_bvh_build(&bvh, m)) {
        free(in);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "fluid_mesh: %s: out of memory", m->file), -1;
    }
    const int closed = floe_mesh_is_closed(m);
#pragma omp parallel for schedule(dynamic, 16)
    for (long row = 0; row < cnt[1] * cnt[2]; row++)
        classify_row(&bvh, m, d, cnt[0], row % cnt[1], row / cnt[1], closed, in + row * cnt[0]);
    mesh_bvh_free(&bvh);
    uint32_t n = 0;
    for (long i = 0; i < total; i++)
        n += in[i];
    float *pos = malloc(((size_t)n + 1) * 3 * sizeof *pos);
    if (!pos) {
        free(in);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "fluid_mesh: %s: out of memory", m->file), -1;
    }
    n = 0;
    for (long i = 0; i < total; i++) {
        if (!in[i])
            continue;
        long ix = i % cnt[0], iy = (i / cnt[0]) % cnt[1], iz = i / (cnt[0] * cnt[1]);
        float *q = pos + 3 * (size_t)n++;
        q[0] = m->min[0] + (ix + 0.5f) * d;
        q[1] = m->min[1] + (iy + 0.5f) * d;
        q[2] = m->min[2] + (iz + 0.5f) * d;
    }
    free(in);
    long r = geom_append(ctx, set, p, pos, n, v0);
    free(pos);
    return r;
}
