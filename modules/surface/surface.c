/* The surface module: water surfaces as meshes, once per output frame.
 *
 *   surface.mc           colour field of isotropic kernels on a sparse grid,
 *                        iso value, marching cubes (the patent's step 6)
 *   surface.anisotropic  the same with Yu & Turk 2013 kernels (Kim 2020
 *                        eqs. 41-42): smoothed centres, weighted covariance,
 *                        its eigen-decomposition, clamped stretch, G
 *
 * Both are per-frame stages (floe_stage_desc.per_frame): the core runs them
 * after each output frame's steps, and they write <name>.NNNN.obj / .ply
 * into the run's output folder through api->out_write. docs/surface.md. */
#include "surface.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

FLOE_MODULE_API_DEFINE;

enum { P_SETS, P_CELL, P_ISO, P_SUPPORT, P_FORMAT, P_NAME, P_MESHER, P_SMOOTH, P_RADIUS, P_STRETCH, P_NMIN };

#define COMMON_PARAMS                                                                                              \
    [P_SETS] = {FLOE_SIZED(floe_param_desc), .name = "sets", .type = FLOE_PARAM_STRING, .def_str = "", .unit = "", \
                .doc = "fluid sets to surface together, comma-separated; empty = every fluid set"},              \
    [P_CELL] = {FLOE_SIZED(floe_param_desc), .name = "cell", .type = FLOE_PARAM_FLOAT, .def = 0.5, .min = 0.05,    \
                .max = 4, .unit = "", .doc = "grid cell edge as a fraction of the particle spacing"},             \
    [P_ISO] = {FLOE_SIZED(floe_param_desc), .name = "iso", .type = FLOE_PARAM_FLOAT, .def = 0.5, .min = 0.01,      \
               .max = 10, .unit = "", .doc = "iso value of the colour field sum_j V_j W_j (1 inside the fluid)"},  \
    [P_SUPPORT] = {FLOE_SIZED(floe_param_desc), .name = "support", .type = FLOE_PARAM_FLOAT, .def = 0, .min = 0,   \
                   .max = 10, .unit = "", .doc = "kernel support radius in spacings; 0 = the simulation's"},       \
    [P_FORMAT] = {FLOE_SIZED(floe_param_desc), .name = "format", .type = FLOE_PARAM_STRING, .def_str = "both",     \
                  .choices = "obj|ply|both|none", .unit = "",                                                     \
                  .doc = "mesh files written each frame (none: the mesh is made, not written: benchmarks)"}, \
    [P_NAME] = {FLOE_SIZED(floe_param_desc), .name = "name", .type = FLOE_PARAM_STRING, .def_str = "surface",      \
                .unit = "", .doc = "file base name: NAME.NNNN.obj / .ply in the output folder"},             \
    [P_MESHER] = {FLOE_SIZED(floe_param_desc), .name = "mesher", .type = FLOE_PARAM_STRING, .def_str = "cubes",   \
                  .choices = "cubes|tetrahedra", .unit = "",                                                       \
                  .doc = "marching cubes, or marching tetrahedra (about three times the triangles)"}

static const floe_param_desc mc_params[] = {COMMON_PARAMS, {0}};

static const floe_param_desc aniso_params[] = {
    COMMON_PARAMS,
    [P_SMOOTH] = {FLOE_SIZED(floe_param_desc), .name = "smoothing", .type = FLOE_PARAM_FLOAT, .def = 0.9, .min = 0,
                  .max = 1, .unit = "",
                  .doc = "Laplacian smoothing of the kernel centres: c_i = (1 - s) x_i + s x^w_i (Yu & Turk lambda), then Taubin's inflation step"},
    [P_RADIUS] = {FLOE_SIZED(floe_param_desc), .name = "radius", .type = FLOE_PARAM_FLOAT, .def = 2, .min = 0.5,
                  .max = 8, .unit = "", .doc = "neighbourhood radius of the covariance in kernel supports"},
    [P_STRETCH] = {FLOE_SIZED(floe_param_desc), .name = "max_stretch", .type = FLOE_PARAM_FLOAT, .def = 4,
                   .min = 1, .max = 16, .unit = "", .doc = "largest ratio of a kernel's principal axes (k_r)"},
    [P_NMIN] = {FLOE_SIZED(floe_param_desc), .name = "min_neighbours", .type = FLOE_PARAM_INT, .def = 25, .min = 0,
                .max = 10000, .unit = "", .doc = "fewer neighbours: isotropic kernel (N_eps)"},
    {0},
};

static const floe_attr_desc attrs[] = {
    FLOE_ATTR_FLUID("x", FLOE_VEC3, FLOE_READ),
    FLOE_ATTR_FLUID("m", FLOE_F32, FLOE_READ),
    {0},
};

/* ---- the particles of the chosen sets ------------------------------------- */

typedef struct parts {
    float *x, *V;            /* 3 per particle, 1 per particle */
    uint32_t n;
} parts;

/* every set when the list is empty, else those it names */
static int set_chosen(const char *list, const char *name)
{
    return !list[0] || floe_name_listed(list, name);
}

/* the sets the list names (every fluid set when it is empty; sets named may
 * also be boundary sets: the freezing module's ice) and their total */
static int chosen_sets(floe_ctx *ctx, const char *list, chosen *ch)
{
    floe_set sets[FLOE_MAX_SETS];
    int ns = api->set_list(ctx, list[0] ? FLOE_SET_ANY : FLOE_SET_FLUID, sets, FLOE_MAX_SETS), named = 0;
    uint64_t total = 0;
    ch->n = 0;
    ch->total = 0;
    for (int s = 0; s < ns && s < FLOE_MAX_SETS; s++) {
        floe_set_info in;
        if (api->set_info(ctx, sets[s], &in) || !set_chosen(list, in.name))
            continue;
        named++;
        total += in.n;
        if (in.n) {
            ch->set[ch->n] = sets[s];
            ch->info[ch->n++] = in;
        }
    }
    if (list[0] && !named)
        return api->fail(ctx, FLOE_ERR_ARG, "no particle set named in sets = \"%s\"", list);
    if (total > UINT32_MAX / 4)
        return api->fail(ctx, FLOE_ERR_ARG, "%llu particles: too many", (unsigned long long)total);
    ch->total = (uint32_t)total;
    return FLOE_OK;
}

static int gather(floe_ctx *ctx, const chosen *ch, parts *p, mem_meter *m)
{
    const floe_sim_info *si = api->sim(ctx);
    p->n = 0;
    p->x = meter_alloc(m, (size_t)ch->total * 3 * sizeof *p->x, 0);
    p->V = meter_alloc(m, (size_t)ch->total * sizeof *p->V, 0);
    if (!p->x || !p->V)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for %u particles", ch->total);
    const double rest_volume = (double)si->spacing * si->spacing * si->spacing;
    for (int s = 0; s < ch->n; s++) {
        const floe_set_info in = ch->info[s];
        const float *x = api->attr(ctx, ch->set[s], "x", FLOE_VEC3), *mass = api->attr(ctx, ch->set[s], "m", FLOE_F32);
        const size_t at = p->n;
        uint32_t bad = in.n; /* the first particle with a non-finite position */
#pragma omp parallel for reduction(min : bad) if (in.n >= 65536)
        for (uint32_t i = 0; i < in.n; i++) {
            if (!isfinite(x[3 * i]) || !isfinite(x[3 * i + 1]) || !isfinite(x[3 * i + 2]))
                bad = i < bad ? i : bad;
            memcpy(&p->x[3 * (at + i)], &x[3 * (size_t)i], 3 * sizeof *x);
            /* rest volume m / rho0: the colour field is 1 inside the fluid */
            p->V[at + i] = mass && in.rest_density > 0 ? mass[i] / in.rest_density : (float)rest_volume;
        }
        if (bad < in.n)
            return api->fail(ctx, FLOE_ERR_ARG, "particle %u of set '%s' has a non-finite position (%g, %g, %g)",
                             bad, in.name, x[3 * (size_t)bad], x[3 * (size_t)bad + 1], x[3 * (size_t)bad + 2]);
        p->n += in.n;
    }
    return FLOE_OK;
}

/* ---- one frame --------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct frame_out {
    uint32_t stretched;
    int32_t blocks;
    double t_kern, t_splat, t_mesh; /* seconds: kernels' shapes, field, mesher */
} frame_out;

/* the kernels' records, the grid and its values on the device, the mesh
 * by marching cubes there too (marching tetrahedra: the values come back
 * and the host meshes them); nothing but a few counts comes back before
 * the mesh */
static int build_mesh_cl(floe_ctx *ctx, const floe_value *pv, int aniso, const chosen *ch, mem_meter *m, mesh *out,
                         frame_out *fo, float H, double cell, mesher_kind mk)
{
    double t = now_s(), lo[3], hi[3], span[3];
    const uint32_t *stretched = NULL, n = ch->total;
    void *bx, *bv;
    int rc = gather_cl(ctx, ch, &bx, &bv, span);
    if (!rc && aniso && n) {
        aniso_opts o = {H, (float)pv[P_SMOOTH].f, (float)(pv[P_RADIUS].f * H), (float)pv[P_STRETCH].f,
                        (int)pv[P_NMIN].i};
        rc = kerns_anisotropic_cl(ctx, span, bx, bv, n, &o, &stretched);
    } else if (!rc && n) {
        rc = kerns_isotropic_cl(ctx, bx, bv, n, H);
    }
    if (!rc)
        rc = grid_box_cl(ctx, n, cell, lo, hi);
    if (!rc && stretched)
        fo->stretched = *stretched; /* the box's read waited for it */
    fo->t_kern = now_s() - t;
    if (rc)
        return rc;
    t = now_s();
    sgrid g;
    rc = sgrid_init(&g, m, lo, hi, cell);
    if (rc == FLOE_ERR_ARG)
        rc = api->fail(ctx, rc, "the particles span more than 2^20 cells of %g m along an axis", cell);
    if (!rc)
        rc = field_splat_cl(ctx, &g, n, mk != MESHER_CUBES);
    fo->t_splat = now_s() - t;
    t = now_s();
    if (!rc && mk == MESHER_CUBES)
        rc = mesh_extract_cl(ctx, &g, (float)pv[P_ISO].f, out);
    else if (!rc && (rc = mesh_extract(&g, (float)pv[P_ISO].f, mk, out)))
        rc = api->fail(ctx, rc, rc == FLOE_ERR_NOMEM ? "out of memory for the mesh"
                                                     : "the marching-cubes table's loops do not close (a bug)");
    fo->t_mesh = now_s() - t;
    fo->blocks = g.nblocks;
    sgrid_free(&g);
    return rc;
}

static int build_mesh(floe_ctx *ctx, const floe_value *pv, int aniso, int device, const chosen *ch, const parts *p,
                      mem_meter *m, mesh *out, frame_out *fo)
{
    const floe_sim_info *si = api->sim(ctx);
    const float H = pv[P_SUPPORT].f > 0 ? (float)(pv[P_SUPPORT].f * si->spacing) : si->support;
    const double cell = pv[P_CELL].f * si->spacing;
    const mesher_kind mk = strcmp(pv[P_MESHER].s, "tetrahedra") == 0 ? MESHER_TETRAHEDRA : MESHER_CUBES;
    if (device)
        return build_mesh_cl(ctx, pv, aniso, ch, m, out, fo, H, cell, mk);
    size_t kb = (size_t)p->n * sizeof(kern);
    kern *k = meter_alloc(m, kb, 0);
    if (!k)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for %u kernels", p->n);
    for (uint32_t i = 0; i < p->n; i++)
        k[i].V = p->V[i];
    double t = now_s();
    if (aniso) {
        aniso_opts o = {H, (float)pv[P_SMOOTH].f, (float)(pv[P_RADIUS].f * H), (float)pv[P_STRETCH].f,
                        (int)pv[P_NMIN].i};
        if (kerns_anisotropic(k, p->x, p->n, &o, m, &fo->stretched)) {
            meter_free(m, k, kb);
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for the neighbourhoods");
        }
    } else {
        kerns_isotropic(k, p->x, p->n, H);
    }
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < p->n; i++)
        for (int d = 0; d < 3; d++) {
            lo[d] = fmin(lo[d], k[i].c[d] - k[i].ext[d] - 2 * cell);
            hi[d] = fmax(hi[d], k[i].c[d] + k[i].ext[d] + 2 * cell);
        }
    if (!p->n)
        lo[0] = lo[1] = lo[2] = hi[0] = hi[1] = hi[2] = 0;
    fo->t_kern = now_s() - t;
    t = now_s();
    sgrid g;
    int rc = sgrid_init(&g, m, lo, hi, cell);
    if (rc == FLOE_ERR_ARG)
        rc = api->fail(ctx, rc, "the particles span more than 2^20 cells of %g m along an axis", cell);
    if (!rc && (rc = field_splat(&g, k, p->n)))
        rc = api->fail(ctx, rc, "out of memory for the grid (%d blocks)", g.nblocks);
    meter_free(m, k, kb);
    fo->t_splat = now_s() - t;
    t = now_s();
    if (!rc && (rc = mesh_extract(&g, (float)pv[P_ISO].f, mk, out)))
        rc = api->fail(ctx, rc, rc == FLOE_ERR_NOMEM ? "out of memory for the mesh"
                                                     : "the marching-cubes table's loops do not close (a bug)");
    fo->t_mesh = now_s() - t;
    fo->blocks = g.nblocks;
    sgrid_free(&g);
    return rc;
}

/* *t_encode: the seconds spent making the files' bytes (the rest of the
 * files' time is the core's atomic write) */
static int write_files(floe_ctx *ctx, const floe_value *pv, const mesh *me, mem_meter *m, double *t_encode)
{
    *t_encode = 0;
    const char *fmt = pv[P_FORMAT].s;
    for (int f = 0; f < 2; f++) {
        const char *ext = f ? "ply" : "obj";
        if (strcmp(fmt, "both") != 0 && strcmp(fmt, ext) != 0)
            continue;
        char name[256], *buf = NULL;
        size_t len = 0;
        snprintf(name, sizeof name, "%s.%04d.%s", pv[P_NAME].s, api->sim(ctx)->frame, ext);
        const double t = now_s();
        if (f ? mesh_ply(me, &buf, &len) : mesh_obj(me, &buf, &len))
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory for %s", name);
        *t_encode += now_s() - t;
        m->now += len; /* the file's bytes count towards the peak */
        m->peak = m->now > m->peak ? m->now : m->peak;
        int rc = api->out_write(ctx, name, buf, len);
        meter_free(m, buf, len);
        if (rc)
            return rc;
    }
    return FLOE_OK;
}


static int surface_run(const floe_stage_call *c, int aniso, int device)
{
    floe_ctx *ctx = c->ctx;
    const floe_sim_info *si = api->sim(ctx);
    if (si->dim != 3)
        return api->fail(ctx, FLOE_ERR_ARG, "surfaces are meshes of 3D simulations (this one is %dD)", si->dim);
    if (si->periodic)
        return api->fail(ctx, FLOE_ERR_ARG, "periodic domains are not surfaced (the mesh would not close)");
    double t0 = now_s();
    mem_meter m = {0, 0};
    parts p = {0};
    mesh me = {.mem = &m};
    frame_out fo = {0};
    chosen ch;
    /* on the device the sets' own device copies are read there */
    int rc = chosen_sets(ctx, c->param[P_SETS].s, &ch);
    if (!rc && !device)
        rc = gather(ctx, &ch, &p, &m);
    p.n = ch.total;
    if (!rc)
        rc = build_mesh(ctx, c->param, aniso, device, &ch, &p, &m, &me, &fo);
    meter_free(&m, p.x, (size_t)p.n * 3 * sizeof *p.x);
    meter_free(&m, p.V, (size_t)p.n * sizeof *p.V);
    const double t_files = now_s();
    double t_encode = 0;
    if (!rc)
        rc = write_files(ctx, c->param, &me, &m, &t_encode);
    if (!rc) {
        double mb = (double)m.peak / (1024.0 * 1024.0);
        if (!p.n)
            api->log(ctx, FLOE_LOG_INFO, "%s: frame %d: no particles, empty mesh", c->name, si->frame);
        else
            api->log(ctx, FLOE_LOG_INFO,
                     "%s: frame %d: %u particles (%u stretched), %d blocks, %u vertices, %u triangles, "
                     "peak %.1f MB, %.0f ms (kernels %.0f, field %.0f, mesh %.0f, files %.0f: encoding %.0f)",
                     c->name, si->frame, p.n, fo.stretched, fo.blocks, me.nv, me.nt, mb, 1e3 * (now_s() - t0),
                     1e3 * fo.t_kern, 1e3 * fo.t_splat, 1e3 * fo.t_mesh, 1e3 * (now_s() - t_files),
                     1e3 * t_encode);
        api->stat(ctx, "surface_peak_mb", mb);
        api->stat(ctx, "surface_triangles", me.nt);
    }
    mesh_free(&me);
    return rc;
}

static int run_mc(const floe_stage_call *c) { return surface_run(c, 0, 0); }
static int run_aniso(const floe_stage_call *c) { return surface_run(c, 1, 0); }
/* OpenCL backend: the anisotropic kernels' shapes and the splat on the device (surface_cl.c) */
static int run_mc_cl(const floe_stage_call *c) { return surface_run(c, 0, 1); }
static int run_aniso_cl(const floe_stage_call *c) { return surface_run(c, 1, 1); }

static const floe_stage_desc stages[] = {
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "mc", .run = run_mc, .run_cl = run_mc_cl, .params = mc_params, .attrs = attrs, .per_frame = 1,
     .doc = "mesh of the colour field of isotropic kernels (iso value, marching cubes), once per frame"},
    {FLOE_SIZED(floe_stage_desc), .serial = 1, .name = "anisotropic", .run = run_aniso, .run_cl = run_aniso_cl, .params = aniso_params, .attrs = attrs,
     .per_frame = 1,
     .doc = "mesh of the colour field of Yu & Turk anisotropic kernels (smoothed centres, covariance), once per frame"},
    {0},
};

FLOE_MODULE_DESC(surface, .version = "1.0.0",
                 .summary = "water surfaces as meshes (OBJ, PLY) each output frame: isotropic and anisotropic kernels",
                 .stages = stages)
