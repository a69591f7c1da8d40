/* The OpenCL path of the flip stages (run_cl), kernels in kernels/flip/flip.cl
 * and kernels/flip/obstacles.h. Same equations, parameters and arithmetic
 * as the C path (splat.c, grid_pass.c, advect.c, obstacles.c); docs/flip.md,
 * "The OpenCL path", has the design and the tolerances.
 *
 * Where the data lives. The core's named grids have no device mirror, so
 * the grids of the device path are module scratch buffers (api->cl_scratch):
 * two fixed-point accumulators (ping-pong: the grid pass clears the one the
 * next splat adds into, so no clear launch), M, rho, u^n, u^n+1, P, phi,
 * the filtered velocities, the static obstacle distance and ground density
 * (uploaded when a parameter changes), the F(s) table, the obstacles posed
 * this step (a small upload per stage and step when there are obstacles)
 * and a control word block (largest density ratio, pushed-out count).
 *
 * The rule for the host grids: flip.rho, flip.u, flip.u_old, flip.p and
 * flip.phi are copied back (non-blocking reads, complete before any C stage
 * runs and at the end of the step) on the steps chosen by flip.grid's
 * host_fps, with raycast.render's schedule (the first step, then the first
 * step at or after each 1/fps), so a renderer at the same fps always reads
 * the current grids; host_fps = -1 copies every step, 0 never. flip.ground
 * is computed on the host (static) and always current.
 *
 * Host waits: none per step, unless flip.grid's courant > 0: the time step
 * limit needs the largest density of this step, read back (4 bytes) and
 * waited for in flip.advect (after its launches are queued, so the device
 * is not starved). Otherwise the statistics flip.max_density_ratio and
 * flip.pushed_out go through a ring of FLIP_CL_RING steps on the device,
 * read FLIP_CL_HALF steps at a time without waiting and reported when the
 * ring comes back to them (16 to 32 steps late; those of a run's last
 * steps are not reported).
 *
 * Needs no OpenCL header: objects are void * through floe_api, and the few
 * entry points used directly come from api->cl_fn. */
#include "flip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define api flip_api
#define FILE_CL "flip.cl"
#define ARG(v) FLOE_CL_ARG(v)
#define OB_STRIDE 48 /* FLIP_OB_STRIDE in kernels/flip/obstacles.h */
/* Fixed-point splat: 2^40 units per (largest particle mass, rounded up to a
 * power of two). Resolution 2^-40 = 9e-13 of a particle's mass; a cell sum
 * overflows beyond 2^23 = 8.4e6 particle masses x m/s (momentum planes). */
#define FLIP_CL_FIXED_BITS 40

/* ---- the OpenCL entry points used directly (signatures of OpenCL 1.2) ---- */

typedef int32_t (*fill_fn)(void *q, void *buf, const void *pat, size_t psize, size_t off, size_t size, uint32_t nw,
                           const void *wl, void **ev);
typedef int32_t (*read_fn)(void *q, void *buf, uint32_t blocking, size_t off, size_t size, void *ptr, uint32_t nw,
                           const void *wl, void **ev);
typedef int32_t (*write_fn)(void *q, void *buf, uint32_t blocking, size_t off, size_t size, const void *ptr,
                            uint32_t nw, const void *wl, void **ev);
typedef int32_t (*wait_fn)(uint32_t n, void *const *evs);
typedef int32_t (*release_fn)(void *ev);

static struct {
    fill_fn fill;
    read_fn read;
    write_fn write;
    wait_fn wait;
    release_fn release;
    int ok;
} F;

static void sym(const char *name, void *fnp, size_t size)
{
    void *p = api->cl_fn(name);
    memcpy(fnp, &p, size); /* object pointer -> function pointer without a cast */
}

static int load_fns(floe_ctx *ctx)
{
    if (F.ok)
        return FLOE_OK;
    sym("clEnqueueFillBuffer", &F.fill, sizeof F.fill);
    sym("clEnqueueReadBuffer", &F.read, sizeof F.read);
    sym("clEnqueueWriteBuffer", &F.write, sizeof F.write);
    sym("clWaitForEvents", &F.wait, sizeof F.wait);
    sym("clReleaseEvent", &F.release, sizeof F.release);
    if (!F.fill || !F.read || !F.write || !F.wait || !F.release)
        return api->fail(ctx, FLOE_ERR, "flip: OpenCL runtime lacks buffer or event entry points");
    F.ok = 1;
    return FLOE_OK;
}

/* where the small per-step reads land: pinned memory when the core has
 * it (a read into ordinary memory may wait for the copy) */
static int *ctrl_host(floe_ctx *ctx, flip_state *s)
{
    if (!s->cl.ctrl) {
        int *p = api->cl_pinned ? api->cl_pinned(ctx, "flip.ctrl", sizeof s->cl.ctrl_plain) : NULL;
        if (p)
            memset(p, 0, sizeof s->cl.ctrl_plain);
        s->cl.ctrl = p ? p : s->cl.ctrl_plain;
    }
    return s->cl.ctrl;
}

static int cl_check(floe_ctx *ctx, int32_t e, const char *what)
{
    return e == 0 ? FLOE_OK : api->fail(ctx, FLOE_ERR, "flip: OpenCL %s failed (error %d)", what, (int)e);
}

static void wait_release(void **ev)
{
    if (*ev) {
        F.wait(1, ev);
        F.release(*ev);
        *ev = NULL;
    }
}

void flip_cl_release(flip_state *s)
{
    if (F.ok) {
        wait_release(&s->cl.ev_rmax);
        wait_release(&s->cl.ev_half[0]);
        wait_release(&s->cl.ev_half[1]);
        wait_release(&s->cl.ev_stage[0]);
        wait_release(&s->cl.ev_stage[1]);
    }
    free(s->cl.stage[0]);
    free(s->cl.stage[1]);
}

/* ---- buffers and arguments --------------------------------------------------- */

typedef struct bufs {
    void *acc[2], *M, *rho, *uo, *un, *p, *phi, *phis, *rg, *sn, *sd, *ftab, *ctrl, *obg, *oba, *rows;
} bufs;

/* grid rows (y, z): the filter's liquid range per row */
static size_t grid_rows(const flip_geom *g) { return (size_t)g->n[1] * (g->dim == 3 ? g->n[2] : 1); }

static int get_bufs(floe_ctx *ctx, const flip_state *s, bufs *b)
{
    const size_t c = s->g.cells;
    b->acc[0] = api->cl_scratch(ctx, "flip.acc0", 4 * c * 8);
    b->acc[1] = api->cl_scratch(ctx, "flip.acc1", 4 * c * 8);
    b->M = api->cl_scratch(ctx, "flip.M", c * 4);
    b->rho = api->cl_scratch(ctx, "flip.rho", c * 4);
    b->uo = api->cl_scratch(ctx, "flip.u_old", 3 * c * 4);
    b->un = api->cl_scratch(ctx, "flip.u", 3 * c * 4);
    b->p = api->cl_scratch(ctx, "flip.p", c * 4);
    b->phi = api->cl_scratch(ctx, "flip.phi", c * 4);
    b->phis = api->cl_scratch(ctx, "flip.phi_static", c * 4);
    b->rg = api->cl_scratch(ctx, "flip.rho_ground", c * 4);
    b->sn = api->cl_scratch(ctx, "flip.smooth_u", 3 * c * 4);
    b->sd = api->cl_scratch(ctx, "flip.smooth_du", 3 * c * 4);
    b->ftab = api->cl_scratch(ctx, "flip.ftab", (FLIP_FTAB + 1) * 4);
    b->ctrl = api->cl_scratch(ctx, "flip.ctrl", 2 * FLIP_CL_RING * 4);
    b->obg = api->cl_scratch(ctx, "flip.obstacles_grid", 64);
    b->oba = api->cl_scratch(ctx, "flip.obstacles_advect", 64);
    b->rows = api->cl_scratch(ctx, "flip.rows", 2 * 2 * grid_rows(&s->g) * 4);
    void *all[] = {b->acc[0], b->acc[1], b->M, b->rho, b->uo, b->un, b->p, b->phi, b->phis,
                   b->rg, b->sn, b->sd, b->ftab, b->ctrl, b->obg, b->oba, b->rows};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!all[i])
            return api->fail(ctx, FLOE_ERR_NOMEM, "flip: no device memory for the grids (%zu cells)", c);
    return FLOE_OK;
}

/* flip_geom as kernel arguments (see the head of flip.cl) */
typedef struct geo_args {
    int32_t gn[4], gp[4], gm[4];
    float go[4], glo[4], ghi[4];
} geo_args;

static void geo(const flip_geom *g, geo_args *a)
{
    for (int k = 0; k < 3; k++) {
        a->gn[k] = (int32_t)g->n[k];
        a->gm[k] = (int32_t)g->m[k];
        a->go[k] = g->origin[k];
        a->glo[k] = g->lo[k];
        a->ghi[k] = g->hi[k];
    }
    a->gn[3] = g->dim;
    a->gm[3] = 0;
    a->go[3] = g->h;
    a->glo[3] = g->inv_h;
    a->ghi[3] = g->radius;
    a->gp[0] = (int32_t)g->pad;
    a->gp[1] = (int32_t)g->fold;
    a->gp[2] = g->chunks;
    a->gp[3] = 0;
}

static int fill_zero(floe_ctx *ctx, void *buf, size_t bytes)
{
    const uint32_t zero = 0;
    return cl_check(ctx, F.fill(api->cl_queue(ctx), buf, &zero, 4, 0, bytes, 0, NULL, NULL), "fill");
}

/* Once per context, after the grids exist: the fixed-point scale, zeroed
 * accumulators and control words, the F(s) table. */
static int setup(floe_ctx *ctx, flip_state *s)
{
    if (s->cl.ready)
        return FLOE_OK;
    int st;
    if ((st = load_fns(ctx)))
        return st;
    bufs b;
    if ((st = get_bufs(ctx, s, &b)))
        return st;
    /* the largest particle mass m_ref (read once on the host; rho0 d^dim
     * without particles); scale = 2^40 / (m_ref rounded up to a power of 2) */
    const floe_sim_info *si = api->sim(ctx);
    flip_fluid f[FLIP_MAX_SETS];
    int nf;
    if ((st = flip_list_fluids(ctx, f, &nf)))
        return st;
    double m_ref = 0.0, rho0 = 0.0;
    for (int i = 0; i < nf; i++) {
        if (!(rho0 > 0.0))
            rho0 = f[i].info.rest_density;
        const float *m = f[i].info.n ? api->attr(ctx, f[i].set, "m", FLOE_F32) : NULL;
        for (uint32_t p = 0; m && p < f[i].info.n; p++)
            m_ref = m[p] > m_ref ? m[p] : m_ref;
    }
    if (!(m_ref > 0.0) || !isfinite(m_ref))
        m_ref = (rho0 > 0.0 ? rho0 : 1000.0) * pow((double)si->spacing, si->dim);
    if (!(m_ref > 0.0) || !isfinite(m_ref))
        m_ref = 1.0;
    int e;
    (void)frexp(m_ref, &e); /* m_ref <= 2^e */
    int ex = FLIP_CL_FIXED_BITS - e;
    ex = ex > 120 ? 120 : (ex < -120 ? -120 : ex);
    s->cl.scale = ldexpf(1.0f, ex);
    s->cl.inv_scale = ldexpf(1.0f, -ex);
    const size_t cells = s->g.cells;
    if ((st = fill_zero(ctx, b.acc[0], 4 * cells * 8)) || (st = fill_zero(ctx, b.acc[1], 4 * cells * 8)) ||
        (st = fill_zero(ctx, b.ctrl, 2 * FLIP_CL_RING * 4)))
        return st;
    /* the filter's row ranges, both parities empty (first > last) */
    const int32_t empty[2] = {0x7fffffff, -1};
    if ((st = cl_check(ctx, F.fill(api->cl_queue(ctx), b.rows, empty, sizeof empty, 0, 2 * 2 * grid_rows(&s->g) * 4,
                                   0, NULL, NULL),
                       "fill")))
        return st;
    if ((st = cl_check(ctx, F.write(api->cl_queue(ctx), b.ftab, 1, 0, (FLIP_FTAB + 1) * 4, s->ftab, 0, NULL, NULL),
                       "write (F table)")))
        return st;
    s->cl.clean[0] = s->cl.clean[1] = 1;
    s->cl.cur = 0;
    s->cl.ready = 1;
    api->log(ctx, FLOE_LOG_DEBUG, "flip: OpenCL path, fixed-point splat at 2^%d units per kg", ex);
    return FLOE_OK;
}

/* ---- obstacles ------------------------------------------------------------- */

/* One posed obstacle as a record of OB_STRIDE floats (kernels/flip/obstacles.h). */
static void pack(const flip_geom *g, const flip_posed *p, int ball0, float *r)
{
    const flip_obstacle *o = p->o;
    memset(r, 0, OB_STRIDE * sizeof *r);
    r[0] = (float)o->shape;
    r[1] = p->rotated ? 1.0f : 0.0f;
    r[2] = (float)o->nballs;
    r[3] = (float)ball0;
    for (int k = 0; k < 3; k++) {
        r[4 + k] = p->c[k];
        r[17 + k] = p->v[k];
        r[20 + k] = p->w[k];
        r[23 + k] = p->bmin[k];
        r[26 + k] = p->bmax[k];
        r[29 + k] = o->half[k];
        r[32 + k] = o->axis[k];
        r[35 + k] = o->normal[k];
    }
    r[7] = o->radius;
    for (int k = 0; k < 9; k++)
        r[8 + k] = p->R[k];
    r[38] = o->blend;
    const int moving = flip_obstacle_moves(o);
    r[39] = moving ? 1.0f : 0.0f;
    /* cell range of the moving rasterisation, as phi_min in obstacles.c */
    const float rw = g->radius * g->h;
    long lo[3] = {0, 0, 0}, hi[3] = {(long)g->n[0] - 1, (long)g->n[1] - 1, (long)g->n[2] - 1};
    for (int k = 0; k < g->dim; k++) {
        if (!isfinite(p->bmin[k]))
            continue;
        long a = (long)floorf((p->bmin[k] - rw - g->origin[k]) * g->inv_h) - 1;
        long b = (long)ceilf((p->bmax[k] + rw - g->origin[k]) * g->inv_h) + 1;
        lo[k] = a > lo[k] ? a : lo[k];
        hi[k] = b < hi[k] ? b : hi[k];
    }
    if (lo[0] > hi[0] || lo[1] > hi[1] || lo[2] > hi[2])
        r[39] = 0.0f; /* nothing to rasterise: the C path skips it too */
    for (int k = 0; k < 3; k++) {
        r[40 + k] = (float)lo[k];
        r[43 + k] = (float)hi[k];
    }
}

/* Upload blocks of posed obstacles (npose poses of nob each) and the balls
 * they use into buf, through a staging copy that stays alive until the
 * (non-blocking) write is done. Returns the float offset of the balls. */
static int upload_obstacles(floe_ctx *ctx, flip_state *s, int which, const char *name, void **buf,
                            flip_posed *const *poses, int npose, int nob, int *ball_off)
{
    const flip_geom *g = &s->g;
    int nballs = 0;
    for (int i = 0; i < nob; i++)
        nballs += poses[0][i].o->nballs;
    const size_t nfl = (size_t)npose * nob * OB_STRIDE + 4 * (size_t)nballs;
    wait_release(&s->cl.ev_stage[which]); /* the previous upload from this staging copy */
    if (nfl > s->cl.stage_cap[which]) {
        float *ns = realloc(s->cl.stage[which], nfl * sizeof *ns);
        if (!ns)
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        s->cl.stage[which] = ns;
        s->cl.stage_cap[which] = nfl;
    }
    float *st = s->cl.stage[which];
    float *balls = st + (size_t)npose * nob * OB_STRIDE;
    int b0 = 0;
    for (int i = 0; i < nob; i++) {
        const flip_posed *p = &poses[0][i];
        for (int q = 0; q < npose; q++)
            pack(g, &poses[q][i], b0, st + ((size_t)q * nob + i) * OB_STRIDE);
        if (p->o->nballs)
            memcpy(balls + 4 * b0, p->balls, 4 * (size_t)p->o->nballs * sizeof(float));
        b0 += p->o->nballs;
    }
    *buf = api->cl_scratch(ctx, name, nfl * sizeof(float));
    if (!*buf)
        return api->fail(ctx, FLOE_ERR_NOMEM, "flip: no device memory for obstacles");
    *ball_off = npose * nob * OB_STRIDE;
    return cl_check(ctx,
                    F.write(api->cl_queue(ctx), *buf, 0, 0, nfl * sizeof(float), st, 0, NULL, &s->cl.ev_stage[which]),
                    "write (obstacles)");
}

/* ---- statistics read back --------------------------------------------------------- */

static void resolve_rmax(floe_ctx *ctx, flip_state *s, int in_step)
{
    if (!s->cl.rmax_pending)
        return;
    wait_release(&s->cl.ev_rmax);
    s->cl.rmax_pending = 0;
    float rmax;
    memcpy(&rmax, &s->cl.ctrl[2 * FLIP_CL_RING], sizeof rmax);
    if (in_step && s->cl.courant > 0.0) {
        const double r = rmax > 1.0f ? rmax : 1.0;
        const double c = sqrt((double)s->cl.stat_k * s->cl.stat_gamma * pow(r, s->cl.stat_gamma - 1.0));
        if (c > 0.0)
            api->dt_limit(ctx, s->cl.courant * s->g.h / c);
    }
    api->stat(ctx, "flip.max_density_ratio", rmax);
}

/* Ring half h, read FLIP_CL_HALF steps ago (complete by now: the wait
 * returns at once): its steps' statistics */
static void resolve_half(floe_ctx *ctx, flip_state *s, int h)
{
    if (!s->cl.half_pending[h])
        return;
    wait_release(&s->cl.ev_half[h]);
    s->cl.half_pending[h] = 0;
    const int *w = s->cl.ctrl + 2 * FLIP_CL_HALF * h;
    for (int k = 0; k < FLIP_CL_HALF; k++) {
        const int sl = h * FLIP_CL_HALF + k;
        if (!s->cl.slot_rmax_done[sl]) {
            float rmax;
            memcpy(&rmax, &w[2 * k], sizeof rmax);
            api->stat(ctx, "flip.max_density_ratio", rmax);
        }
        if (s->cl.slot_obs[sl])
            api->stat(ctx, "flip.pushed_out", (double)(uint32_t)w[2 * k + 1]);
    }
}

/* At the first step of a ring half: report that half's previous round,
 * queue the read of the other half (its steps are all queued before) */
static int ring_turn(floe_ctx *ctx, flip_state *s, void *ctrl_buf, int slot)
{
    if (slot % FLIP_CL_HALF != 0)
        return FLOE_OK;
    const int h = slot / FLIP_CL_HALF, o = 1 - h;
    resolve_half(ctx, s, h);
    if (s->cl.npass <= FLIP_CL_HALF) /* the other half has no steps yet */
        return FLOE_OK;
    resolve_half(ctx, s, o); /* (its earlier read, if any, is older still) */
    const size_t off = (size_t)2 * FLIP_CL_HALF * o * 4, bytes = (size_t)2 * FLIP_CL_HALF * 4;
    int st = cl_check(ctx, F.read(api->cl_queue(ctx), ctrl_buf, 0, off, bytes, (char *)ctrl_host(ctx, s) + off, 0,
                                  NULL, &s->cl.ev_half[o]),
                      "read (statistics)");
    if (!st)
        s->cl.half_pending[o] = 1;
    return st;
}

/* ---- splat ------------------------------------------------------------------ */

/* FLIP_BIN_CAP in kernels/flip/flip.cl: particles filed per cell */
#define FLIP_CL_BIN_CAP 16

/* splat = gather (2D): the two count buffers (the splat files into one and
 * its gather clears the other for the next step), zeroed at first use, and
 * the filed particles (a float4 and a float2 a slot, in planes of slots) */
static int get_bins(floe_ctx *ctx, flip_state *s, void *cnt[2], void *rec[2])
{
    const size_t c = s->g.cells;
    cnt[0] = api->cl_scratch(ctx, "flip.bin_count0", c * 4);
    cnt[1] = api->cl_scratch(ctx, "flip.bin_count1", c * 4);
    rec[0] = api->cl_scratch(ctx, "flip.bin_particles", c * FLIP_CL_BIN_CAP * 16);
    rec[1] = api->cl_scratch(ctx, "flip.bin_particles_b", c * FLIP_CL_BIN_CAP * 8);
    if (!cnt[0] || !cnt[1] || !rec[0] || !rec[1])
        return api->fail(ctx, FLOE_ERR_NOMEM, "flip: no device memory for the splat's bins (%zu cells)", c);
    if (!s->cl.bins_ready) {
        int st;
        if ((st = fill_zero(ctx, cnt[0], c * 4)) || (st = fill_zero(ctx, cnt[1], c * 4)))
            return st;
        s->cl.bins_ready = 1;
        s->cl.bin_cur = 0;
    }
    return FLOE_OK;
}

int flip_cl_splat(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    flip_state *s = call->state;
    const floe_sim_info *si = api->sim(ctx);
    int st;
    if (!s)
        return api->fail(ctx, FLOE_ERR, "module state missing");
    if ((st = flip_grids_ensure(ctx, s, (float)call->param[SP_CELL].f, (float)call->param[SP_RADIUS].f)) ||
        (st = setup(ctx, s)))
        return st;
    const flip_geom *g = &s->g;
    flip_fluid f[FLIP_MAX_SETS];
    int nf;
    if ((st = flip_list_fluids(ctx, f, &nf)))
        return st;
    /* the gather costs about a fixed amount a cell, the atomics an amount a
     * particle: auto gathers from 1.5 particles a cell on (docs/flip.md) */
    const char *mode = call->param[SP_DEVICE].s ? call->param[SP_DEVICE].s : "auto";
    size_t np = 0;
    for (int i = 0; i < nf; i++)
        np += f[i].info.n;
    const int gather =
        g->dim == 2 && (strcmp(mode, "gather") == 0 || (strcmp(mode, "auto") == 0 && 2 * np >= 3 * g->cells));
    void *k = api->cl_kernel(ctx, "flip", FILE_CL, gather ? "splat_bin" : "splat");
    if (!k)
        return FLOE_ERR;
    bufs b;
    if ((st = get_bufs(ctx, s, &b)))
        return st;
    void *cnt[2] = {NULL, NULL}, *rec[2] = {NULL, NULL};
    if (gather && (st = get_bins(ctx, s, cnt, rec)))
        return st;
    const int a = s->cl.cur;
    const uint32_t cells = (uint32_t)g->cells;
    if (!s->cl.clean[a] && (st = fill_zero(ctx, b.acc[a], 4 * (size_t)cells * 8)))
        return st;
    geo_args ga;
    geo(g, &ga);
    const float R2 = g->radius * g->radius, invR2 = 1.0f / R2, scale = s->cl.scale;
    for (int i = 0; i < nf; i++) {
        uint32_t n = f[i].info.n;
        if (n == 0)
            continue;
        void *x = api->cl_attr(ctx, f[i].set, "x", FLOE_VEC3, FLOE_READ);
        void *v = api->cl_attr(ctx, f[i].set, "v", FLOE_VEC3, FLOE_READ);
        void *m = api->cl_attr(ctx, f[i].set, "m", FLOE_F32, FLOE_READ);
        if (!x || !v || !m)
            return api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s' lacks x, v or m", f[i].info.name);
        const double cpp = g->dim == 3 ? 4.19 * R2 * g->radius : 3.14 * R2; /* cells per particle */
        floe_cl_arg args[] = {ARG(n),      ARG(x),      ARG(v),      ARG(m),      ARG(b.acc[a]),
                              ARG(cells),  ARG(ga.gn),  ARG(ga.go),  ARG(ga.glo), ARG(ga.ghi),
                              ARG(ga.gp),  ARG(invR2),  ARG(scale),  ARG(cnt[s->cl.bin_cur]), ARG(rec[0]),
                              ARG(rec[1])};
        const int na = gather ? 16 : 13;
        const double bytes = 28.0 * n + (gather ? 36.0 * n : 8.0 * g->dim * cpp * n); /* + bins, or the atomics */
        if ((st = api->cl_run(ctx, k, n, na, args, bytes)))
            return st;
    }
    if (gather) { /* each cell's sums from the particles filed near it */
        void *kg = api->cl_kernel(ctx, "flip", FILE_CL, "splat_gather");
        if (!kg)
            return FLOE_ERR;
        const int cur = s->cl.bin_cur;
        floe_cl_arg args[] = {ARG(cells), ARG(ga.gn),   ARG(ga.ghi),     ARG(ga.gp),  ARG(invR2),
                              ARG(scale), ARG(cnt[cur]), ARG(cnt[1 - cur]), ARG(rec[0]), ARG(rec[1]),
                              ARG(b.acc[a])};
        const size_t rows = 2 * (size_t)ceilf(g->radius); /* splat_gather's rows of cells per cell */
        if ((st = api->cl_run(ctx, kg, rows * cells, (int)(sizeof args / sizeof *args), args, 32.0 * cells)))
            return st;
        s->cl.bin_cur = 1 - cur;
    }
    s->cl.clean[a] = 0;
    s->cl.acc_used = a;
    s->cl.cur = 1 - a;
    s->splat_step = si->step;
    s->splat_done = 1;
    return FLOE_OK;
}

/* ---- grid pass ------------------------------------------------------------------ */

static int host_copy_due(flip_state *s, const floe_sim_info *si, double fps)
{
    if (fps == 0.0)
        return 0;
    if (fps < 0.0)
        return 1;
    if (!s->cl.host_started) {
        s->cl.host_next_t = si->time;
        s->cl.host_started = 1;
    }
    if (si->time + 1e-9 < s->cl.host_next_t)
        return 0;
    s->cl.host_next_t += 1.0 / fps;
    if (s->cl.host_next_t <= si->time)
        s->cl.host_next_t = si->time + 1.0 / fps;
    return 1;
}

/* non-blocking reads of the device grids into the host grids */
static int host_copy(floe_ctx *ctx, flip_state *s, const bufs *b)
{
    const size_t c = s->g.cells;
    struct {
        floe_grid g;
        void *buf;
        size_t bytes;
    } list[] = {{s->g_rho, b->rho, c * 4}, {s->g_u, b->un, 3 * c * 4}, {s->g_u_old, b->uo, 3 * c * 4},
                {s->g_p, b->p, c * 4},     {s->g_phi, b->phi, c * 4}};
    for (size_t i = 0; i < sizeof list / sizeof *list; i++) {
        float *dst = flip_grid_data(ctx, list[i].g);
        if (!dst)
            return api->fail(ctx, FLOE_ERR, "flip grids missing");
        int st = cl_check(ctx, F.read(api->cl_queue(ctx), list[i].buf, 0, 0, list[i].bytes, dst, 0, NULL, NULL),
                          "read (grids to the host)");
        if (st)
            return st;
    }
    return FLOE_OK;
}

int flip_cl_grid(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    flip_state *s = call->state;
    const floe_sim_info *si = api->sim(ctx);
    int st;
    if (!s || !s->ready || !s->splat_done || s->splat_step != si->step || !s->cl.ready)
        return api->fail(ctx, FLOE_ERR_ARG, "no splat in this step (put 'flip.splat' before 'flip.grid')");
    resolve_rmax(ctx, s, 0); /* courant > 0 without flip.advect: the last step's read */
    const flip_geom *g = &s->g;
    const float gamma = (float)call->param[GP_GAMMA].f;
    const double c0 = call->param[GP_SPEED].f;
    const float kst = call->param[GP_STIFFNESS].f > 0 ? (float)call->param[GP_STIFFNESS].f : (float)(c0 * c0 / gamma);
    const char *eos_name = call->param[GP_EOS].s ? call->param[GP_EOS].s : "guay";
    const float friction = (float)call->param[GP_WALL_FRICTION].f;
    const float oscale = (float)call->param[GP_OBSTACLE].f;
    const float dt = (float)si->dt;

    float rho0 = (float)call->param[GP_REST_DENSITY].f;
    if (!(rho0 > 0.0f)) {
        flip_fluid f[FLIP_MAX_SETS];
        int nf;
        if ((st = flip_list_fluids(ctx, f, &nf)))
            return st;
        for (int i = 0; i < nf && !(rho0 > 0.0f); i++)
            rho0 = f[i].info.rest_density;
        if (!(rho0 > 0.0f))
            return api->fail(ctx, FLOE_ERR_ARG, "no fluid set with a rest density > 0 (or set 'rest_density')");
    }
    s->rho0 = rho0;
    void *k1 = api->cl_kernel(ctx, "flip", FILE_CL, "grid_density");
    void *k2 = api->cl_kernel(ctx, "flip", FILE_CL, "grid_velocity");
    if (!k1 || !k2)
        return FLOE_ERR;
    bufs b;
    if ((st = get_bufs(ctx, s, &b)))
        return st;

    /* obstacles: the static grids when a parameter changed, the poses at t */
    int changed, moving;
    if ((st = flip_obstacle_static(ctx, s, si->time, rho0, oscale, &changed, &moving)))
        return st;
    const int obs_on = flip_obstacles_active(s, si->step), ground_on = flip_ground_active(s, si->step);
    void *q = api->cl_queue(ctx);
    const size_t cells = g->cells;
    if (changed) {
        int nstatic = 0;
        for (int i = 0; obs_on && i < s->nobs; i++)
            nstatic += !flip_obstacle_moves(&s->obs[i]);
        s->cl.has_static = nstatic > 0;
        s->cl.has_ground = ground_on;
        if (s->cl.has_static &&
            (st = cl_check(ctx, F.write(q, b.phis, 1, 0, cells * 4, s->phi_static, 0, NULL, NULL), "write (phi)")))
            return st;
        if (s->cl.has_ground &&
            (st = cl_check(ctx, F.write(q, b.rg, 1, 0, cells * 4, s->rho_ground, 0, NULL, NULL), "write (ground)")))
            return st;
    }
    flip_posed ob[64];
    const int nob = obs_on ? flip_obstacles_pose(s, si->time, g->dim, ob, 64) : 0;
    int32_t ball0 = 0;
    void *obuf = b.obg;
    if (nob > 0) {
        flip_posed *poses[1] = {ob};
        if ((st = upload_obstacles(ctx, s, 0, "flip.obstacles_grid", &obuf, poses, 1, nob, &ball0)))
            return st;
    }

    geo_args ga;
    geo(g, &ga);
    const float rw = g->radius * g->h;
    const float sigma = g->dim == 2 ? (float)(4.0 / (M_PI * rw * rw)) : (float)(315.0 / (64.0 * M_PI * rw * rw * rw));
    float eosp[4] = {kst, gamma, 1.0f / rho0, sigma};
    int32_t eosm[4] = {!strcmp(eos_name, "tait"), gamma == 5.0f, 0, 0};
    float obp[4] = {rw, 1.0f / rw, oscale * rho0, 0.0f};
    int32_t wlo[4], whi[4];
    for (int a = 0; a < 3; a++) {
        wlo[a] = a < g->dim ? (int32_t)g->pad - 1 : 0;
        long wh = (long)g->n[a] - 1;
        if (a < g->dim)
            while (wh > 1 && g->origin[a] + (float)(wh - 1) * g->h > g->hi[a])
                wh--;
        whi[a] = (int32_t)wh;
    }
    wlo[3] = whi[3] = 0;
    const int a = s->cl.acc_used;
    const int32_t slot = (int32_t)(s->cl.npass++ % FLIP_CL_RING), next = (slot + 1) % FLIP_CL_RING, par = slot & 1;
    s->cl.slot = slot;
    if ((st = ring_turn(ctx, s, b.ctrl, slot)))
        return st;
    s->cl.slot_obs[slot] = 0;
    s->cl.courant = call->param[GP_COURANT].f;
    s->cl.slot_rmax_done[slot] = s->cl.courant > 0.0;
    const uint32_t ncell = (uint32_t)cells;
    int32_t has_static = s->cl.has_static && obs_on, has_ground = s->cl.has_ground && ground_on, nob32 = nob;
    float inv_scale = s->cl.inv_scale;
    floe_cl_arg a1[] = {ARG(ncell), ARG(ga.gn), ARG(ga.gp), ARG(ga.gm), ARG(ga.go), ARG(b.acc[a]), ARG(b.acc[1 - a]),
                        ARG(b.M), ARG(b.rho), ARG(b.uo), ARG(b.p), ARG(b.phi), ARG(b.phis), ARG(b.rg),
                        ARG(has_static), ARG(has_ground), ARG(obuf), ARG(nob32), ARG(ball0), ARG(b.ftab), ARG(eosp),
                        ARG(eosm), ARG(obp), ARG(wlo), ARG(whi), ARG(inv_scale), ARG(b.ctrl), ARG(slot),
                        ARG(next), ARG(b.rows), ARG(par)};
    const double planes = g->dim == 3 ? 4.0 : 3.0;
    if ((st = api->cl_run(ctx, k1, cells, (int)(sizeof a1 / sizeof *a1), a1,
                          cells * (planes * 8.0 * (g->fold ? 1.5 : 1.0) + planes * 8.0 + 32.0))))
        return st;
    s->cl.clean[1 - a] = 1;

    const float cgrad = dt * 0.5f * g->inv_h;
    float cvisc = (float)(dt * call->param[GP_VISCOSITY].f) * g->inv_h * g->inv_h;
    if (cvisc > 1.0f / (2.0f * g->dim))
        cvisc = 1.0f / (2.0f * g->dim);
    float vp[4] = {cgrad, cvisc, friction, 0.0f};
    float gdt[4] = {dt * si->gravity[0], dt * si->gravity[1], g->dim == 3 ? dt * si->gravity[2] : 0.0f, 0.0f};
    floe_cl_arg a2[] = {ARG(ncell), ARG(ga.gn), ARG(ga.go), ARG(b.M), ARG(b.uo), ARG(b.p), ARG(b.phi), ARG(b.un),
                        ARG(vp), ARG(gdt), ARG(wlo), ARG(whi), ARG(obuf), ARG(nob32), ARG(ball0)};
    if ((st = api->cl_run(ctx, k2, cells, (int)(sizeof a2 / sizeof *a2), a2, cells * 40.0)))
        return st;

    /* the time step limit: this step's largest density ratio, read back
     * now and waited for in flip.advect (else the ring has it) */
    if (s->cl.courant > 0.0) {
        s->cl.rmax_slot = slot;
        if ((st = cl_check(ctx, F.read(q, b.ctrl, 0, (size_t)2 * slot * 4, 4, &ctrl_host(ctx, s)[2 * FLIP_CL_RING],
                                       0, NULL, &s->cl.ev_rmax),
                           "read (density ratio)")))
            return st;
        s->cl.rmax_pending = 1;
    }
    s->cl.stat_k = kst;
    s->cl.stat_gamma = gamma;

    if (host_copy_due(s, si, call->param[GP_HOST_FPS].f) && (st = host_copy(ctx, s, &b)))
        return st;
    s->grid_step = si->step;
    s->grid_done = 1;
    return FLOE_OK;
}

/* ---- advect ------------------------------------------------------------------------ */

int flip_cl_advect(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    flip_state *s = call->state;
    const floe_sim_info *si = api->sim(ctx);
    int st;
    if (!s || !s->ready || !s->grid_done || s->grid_step != si->step || !s->cl.ready)
        return api->fail(ctx, FLOE_ERR_ARG, "no grid pass in this step (put 'flip.grid' before 'flip.advect')");
    const flip_geom *g = &s->g;
    const double r_in = call->param[AD_PIC].f, interval = call->param[AD_PIC_INTERVAL].f;
    const float r = (float)(interval > 0.0 && r_in < 1.0 ? 1.0 - pow(1.0 - r_in, si->dt / interval) : r_in);
    const float margin = (float)call->param[AD_MARGIN].f * g->h;
    const char *smp = call->param[AD_SAMPLING].s ? call->param[AD_SAMPLING].s : "smooth";
    const int32_t mode = !strcmp(smp, "smooth") ? 0 : !strcmp(smp, "linear") ? 1 : 2;
    bufs b;
    if ((st = get_bufs(ctx, s, &b)))
        return st;
    geo_args ga;
    geo(g, &ga);
    if (mode == 0) {
        void *kf = api->cl_kernel(ctx, "flip", FILE_CL, "filter");
        if (!kf)
            return FLOE_ERR;
        /* the tap normalisation, as filter_grids in advect.c */
        const float R = g->radius, R2 = R * R;
        const int Ri = (int)floorf(R);
        double wsum = 0.0;
        for (int dz = (g->dim == 3 ? -Ri : 0); dz <= (g->dim == 3 ? Ri : 0); dz++)
            for (int dy = -Ri; dy <= Ri; dy++)
                for (int dx = -Ri; dx <= Ri; dx++) {
                    float qq = 1.0f - (float)(dx * dx + dy * dy + dz * dz) / R2;
                    if (qq <= 0.0f)
                        continue;
                    wsum += qq * qq * qq;
                }
        const float inv = (float)(1.0 / wsum);
        int32_t rd[4] = {(int32_t)g->pad - 1, Ri, 0, 0};
        const int32_t par = s->cl.slot & 1; /* the grid pass's row ranges */
        floe_cl_arg af[] = {ARG(ga.gn), ARG(rd), ARG(R2), ARG(inv), ARG(b.rows), ARG(par), ARG(b.un), ARG(b.uo),
                            ARG(b.sn), ARG(b.sd)};
        if ((st = api->cl_run(ctx, kf, g->cells, (int)(sizeof af / sizeof *af), af, g->cells * (24.0 + 24.0))))
            return st;
    }
    void *k = api->cl_kernel(ctx, "flip", FILE_CL, "advect");
    if (!k)
        return FLOE_ERR;
    flip_posed ob_mid[64], ob_end[64];
    const int nob = flip_obstacles_pose(s, si->time + 0.5 * si->dt, g->dim, ob_mid, 64);
    (void)flip_obstacles_pose(s, si->time + si->dt, g->dim, ob_end, 64);
    void *obuf = b.oba;
    int ball_off = 0;
    if (nob > 0) {
        flip_posed *poses[2] = {ob_mid, ob_end};
        if ((st = upload_obstacles(ctx, s, 1, "flip.obstacles_advect", &obuf, poses, 2, nob, &ball_off)))
            return st;
    }
    void *A = mode == 0 ? b.sn : b.un, *B = mode == 0 ? b.sd : b.uo;
    float ap[4] = {r, margin, (float)si->dt, g->radius};
    int32_t chunks = g->chunks, nob32 = nob, slot = s->cl.slot;
    flip_fluid f[FLIP_MAX_SETS];
    int nf;
    if ((st = flip_list_fluids(ctx, f, &nf)))
        return st;
    for (int fs = 0; fs < nf; fs++) {
        uint32_t n = f[fs].info.n;
        if (n == 0)
            continue;
        void *x = api->cl_attr(ctx, f[fs].set, "x", FLOE_VEC3, FLOE_READ | FLOE_WRITE);
        void *v = api->cl_attr(ctx, f[fs].set, "v", FLOE_VEC3, FLOE_READ | FLOE_WRITE);
        if (!x || !v)
            return api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s' lacks x or v", f[fs].info.name);
        floe_cl_arg aa[] = {ARG(n), ARG(x), ARG(v), ARG(ga.gn), ARG(ga.go), ARG(ga.glo), ARG(ga.ghi), ARG(chunks),
                            ARG(mode), ARG(ap), ARG(A), ARG(B), ARG(obuf), ARG(nob32), ARG(b.ctrl), ARG(slot)};
        if ((st = api->cl_run(ctx, k, n, (int)(sizeof aa / sizeof *aa), aa, n * (48.0 + 2.0 * 4 * 24.0))))
            return st;
    }
    s->cl.slot_obs[slot] = nob > 0; /* the ring has the count */
    if (s->cl.courant > 0.0)
        resolve_rmax(ctx, s, 1); /* the time step limit needs this step's density */
    return FLOE_OK;
}
