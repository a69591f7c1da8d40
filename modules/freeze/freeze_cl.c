/* The freezing module's OpenCL path: freeze.film, freeze.direction and
 * freeze.transition on the device (kernels/freeze/freeze.cl), one launch
 * per fluid -> boundary neighbour list of the core. The ice set grows on
 * the device too (grow_ice: the core's cl_set_resize / cl_set_compact, ABI
 * 1.10): the host reads the count of frozen particles each step (4 bytes)
 * and no set comes back. One fluid set and 3D scenes; other cases are
 * refused with a message (the cpu backend runs them). */
#include "freeze.h"

#include <floe/cl_module.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FILE_CL "freeze.cl"
#define ARG(v) FLOE_CL_ARG(v)

typedef int (*read_fn)(void *queue, void *mem, uint32_t blocking, size_t off, size_t size, void *ptr,
                       uint32_t nwait, const void *wait, void *event);

static int need(floe_ctx *ctx, const char *name, void *p)
{
    return p ? FLOE_OK : api->fail(ctx, FLOE_ERR, "freeze (OpenCL): no %s", name);
}

static void *kern(floe_ctx *ctx, const char *name) { return api->cl_kernel(ctx, "freeze", FILE_CL, name); }

static void *scratch(floe_ctx *ctx, const char *name, size_t bytes)
{
    return api->cl_scratch(ctx, name, bytes ? bytes : 16);
}

/* n words of 4 bytes to 0 */
static int zero(floe_ctx *ctx, void *buf, uint32_t n)
{
    if (!n)
        return FLOE_OK;
    void *k = kern(ctx, "zero_f");
    if (!k)
        return FLOE_ERR;
    floe_cl_arg a[] = {ARG(n), {sizeof(void *), &buf}};
    return api->cl_run(ctx, k, n, 2, a, (double)n * 4);
}

/* the module's device buffers (few: the core holds 32 named ones for all
 * modules): per fluid particle FW floats and 2 ints, per frost particle of
 * the set in hand 4 floats, and the count */
#define FW 20
static void *fw_buf(floe_ctx *ctx, uint32_t nf) { return scratch(ctx, "freeze.fw", (size_t)FW * nf * 4); }
static void *fi_buf(floe_ctx *ctx, uint32_t nf) { return scratch(ctx, "freeze.fi", (size_t)2 * nf * 4); }
static void *acc_buf(floe_ctx *ctx, uint32_t nb) { return scratch(ctx, "freeze.acc", (size_t)4 * nb * 4); }

static int read_back(floe_ctx *ctx, void *mem, size_t bytes, void *host)
{
    read_fn rd = (read_fn)api->cl_fn("clEnqueueReadBuffer");
    if (!rd || rd(api->cl_queue(ctx), mem, 1, 0, bytes, host, 0, NULL, NULL) != 0)
        return api->fail(ctx, FLOE_ERR, "freeze (OpenCL): cannot read %zu bytes back", bytes);
    return FLOE_OK;
}

/* the one fluid set, 3D */
static int check(floe_ctx *ctx, const fz_parts *p)
{
    if (api->sim(ctx)->dim != 3)
        return api->fail(ctx, FLOE_ERR_ARG, "freeze on OpenCL: 3D scenes only (run 2D ones with --backend cpu)");
    if (p->nfs > 1)
        return api->fail(ctx, FLOE_ERR_ARG,
                         "freeze on OpenCL: one fluid set (this scene has %d; run it with --backend cpu)", p->nfs);
    return FLOE_OK;
}

typedef struct list {
    void *cnt, *idx;
    uint32_t pitch;
} list;

static int nlist(floe_ctx *ctx, floe_set q, floe_set t, uint32_t n, list *l)
{
    floe_cl_nlist nl;
    int st = api->cl_neighbours(ctx, q, t, &nl);
    if (st)
        return api->fail(ctx, st,
                         "freeze on OpenCL uses the step's neighbour lists: put the freezing stages after "
                         "'neighbours' and before 'integrate' (which ends them)");
    if (nl.n < n)
        return api->fail(ctx, FLOE_ERR, "freeze (OpenCL): stale neighbour lists (%u < %u)", nl.n, n);
    l->cnt = nl.count;
    l->idx = nl.idx;
    l->pitch = nl.pitch;
    return FLOE_OK;
}

static void *attr(floe_ctx *ctx, floe_set set, const char *name, floe_type t, unsigned acc, int *st)
{
    void *m = api->cl_attr(ctx, set, name, t, acc);
    if (!m && *st == FLOE_OK)
        *st = api->fail(ctx, FLOE_ERR_ARG, "freeze (OpenCL): no attribute '%s' on the device", name);
    return m;
}

int fz_film_cl(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const floe_sim_info *si = api->sim(ctx);
    s->g_valid = s->cl_g_valid = 0;
    int st = fz_resolve(ctx, s, c->param[FILM_COLD].s, c->param[FILM_ICE].s);
    fz_parts *p = &s->p;
    if (!st)
        st = check(ctx, p);
    if (st)
        return st;
    s->film_step = si->step;
    s->film_ok = 1;
    const float gmax = p->nfs ? p->frho[0] * powf(si->spacing, 3.0f) : 0.0f;
    s->gamma_max = gmax;
    const uint32_t nf = p->nf;
    void *fi = fi_buf(ctx, nf);
    if ((st = need(ctx, "scratch", fi)) || (st = zero(ctx, fi, 2 * nf)))
        return st;
    if (!nf)
        return FLOE_OK;
    float kc[4], per[4];
    floe_cl_consts(si, kc, per);
    const float a_dt = (float)(c->param[FILM_ALPHA].f * si->dt);
    void *xf = attr(ctx, p->fset[0], "x", FLOE_VEC3, FLOE_READ, &st);
    void *mf = attr(ctx, p->fset[0], "m", FLOE_F32, FLOE_READ, &st);
    void *ks = kern(ctx, "film_scatter"), *ku = kern(ctx, "film_update");
    if (st || (st = need(ctx, "film kernels", ks && ku ? ks : NULL)))
        return st;
    for (int k = 0; k < p->nbs && !st; k++) {
        uint32_t nb = p->bn[k];
        if (!nb)
            continue;
        list l;
        if ((st = nlist(ctx, p->fset[0], p->bset[k], nf, &l)))
            break;
        void *xb = attr(ctx, p->bset[k], "x", FLOE_VEC3, FLOE_READ, &st);
        void *V = attr(ctx, p->bset[k], "V", FLOE_F32, FLOE_READ, &st);
        void *gam = attr(ctx, p->bset[k], "Gamma", FLOE_F32, FLOE_READ | FLOE_WRITE, &st);
        void *sum = acc_buf(ctx, nb);
        if (st || (st = need(ctx, "scratch", sum)) || (st = zero(ctx, sum, 4 * nb)))
            break;
        floe_cl_arg a[] = {ARG(nf),      {sizeof(void *), &xf}, {sizeof(void *), &mf}, {sizeof(void *), &l.cnt},
                           {sizeof(void *), &l.idx}, ARG(l.pitch), {sizeof(void *), &xb}, {sizeof(void *), &sum},
                           {sizeof(void *), &fi},    {sizeof kc, kc}};
        if ((st = api->cl_run(ctx, ks, nf, 10, a, 0)))
            break;
        floe_cl_arg b[] = {ARG(nb), {sizeof(void *), &sum}, {sizeof(void *), &V}, {sizeof(void *), &gam},
                           ARG(a_dt), ARG(gmax)};
        st = api->cl_run(ctx, ku, nb, 6, b, 0);
    }
    return st;
}

int fz_direction_cl(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const floe_sim_info *si = api->sim(ctx);
    if (!s->film_ok || s->film_step != si->step)
        return api->fail(ctx, FLOE_ERR_ARG, "%s needs freeze.film before it in the same step", c->name);
    fz_parts *p = &s->p;
    const uint32_t nf = p->nf;
    float kc[4], per[4];
    floe_cl_consts(si, kc, per);
    const float sigma1 = (float)(8.0 / M_PI), kr = (float)c->param[DIR_KR].f;
    const int32_t nmin = (int32_t)c->param[DIR_NMIN].i, aniso = c->param[DIR_ANISO].b;
    int st = FLOE_OK;
    /* gv of every boundary set: zero, then the cold ones and the ice */
    floe_set bs[FLOE_MAX_SETS];
    int nbs = api->set_list(ctx, FLOE_SET_BOUNDARY, bs, FLOE_MAX_SETS);
    for (int k = 0; k < nbs && k < FLOE_MAX_SETS && !st; k++) {
        floe_set_info in;
        api->set_info(ctx, bs[k], &in);
        if (!in.n)
            continue;
        void *gv = attr(ctx, bs[k], "gv", FLOE_VEC3, FLOE_WRITE, &st);
        if (!st)
            st = zero(ctx, gv, 3 * in.n);
    }
    if (st)
        return st;
    if (!nf) { /* all the water froze: nothing to freeze either */
        s->cl_g_step = si->step;
        s->cl_g_valid = 1;
        return FLOE_OK;
    }
    void *G = fw_buf(ctx, nf), *near = fi_buf(ctx, nf);
    void *xf = attr(ctx, p->fset[0], "x", FLOE_VEC3, FLOE_READ, &st);
    void *vf = attr(ctx, p->fset[0], "v", FLOE_VEC3, FLOE_READ, &st);
    void *kg = kern(ctx, "kernels_G"), *ks = kern(ctx, "gv_scatter"), *kf = kern(ctx, "gv_finish");
    if (st || (st = need(ctx, "direction kernels", kg && ks && kf ? kg : NULL)) ||
        (st = need(ctx, "direction buffers", G && near ? G : NULL)))
        return st;
    list ff;
    if ((st = nlist(ctx, p->fset[0], p->fset[0], nf, &ff)))
        return st;
    floe_cl_arg a[] = {ARG(nf), {sizeof(void *), &xf}, {sizeof(void *), &ff.cnt}, {sizeof(void *), &ff.idx},
                       ARG(ff.pitch), {sizeof(void *), &near}, {sizeof(void *), &G}, {sizeof kc, kc}, ARG(kr),
                       ARG(nmin), ARG(aniso)};
    if ((st = api->cl_run(ctx, kg, nf, 11, a, 0)))
        return st;
    for (int k = 0; k < p->nbs && !st; k++) {
        uint32_t nb = p->bn[k];
        if (!nb)
            continue;
        list l;
        if ((st = nlist(ctx, p->fset[0], p->bset[k], nf, &l)))
            break;
        void *xb = attr(ctx, p->bset[k], "x", FLOE_VEC3, FLOE_READ, &st);
        void *gv = attr(ctx, p->bset[k], "gv", FLOE_VEC3, FLOE_WRITE, &st);
        void *acc = acc_buf(ctx, nb);
        if (st || (st = need(ctx, "scratch", acc)) || (st = zero(ctx, acc, 4 * nb)))
            break;
        floe_cl_arg b[] = {ARG(nf),          {sizeof(void *), &xf},  {sizeof(void *), &vf}, {sizeof(void *), &G},
                           {sizeof(void *), &l.cnt}, {sizeof(void *), &l.idx}, ARG(l.pitch), {sizeof(void *), &xb},
                           {sizeof(void *), &acc},   {sizeof kc, kc},          ARG(sigma1)};
        if ((st = api->cl_run(ctx, ks, nf, 11, b, 0)))
            break;
        floe_cl_arg f[] = {ARG(nb), {sizeof(void *), &acc}, {sizeof(void *), &gv}};
        st = api->cl_run(ctx, kf, nb, 3, f, 0);
    }
    if (!st) {
        s->cl_g_step = si->step;
        s->cl_g_valid = 1;
    }
    return st;
}

/* The ice grows on the device: the frozen particles appended to the ice
 * set in fluid index order (a scan of the flags), then squeezed out of the
 * fluid set (the core's cl_set_resize and cl_set_compact, ABI 1.10): no
 * set comes to the host. */
static int grow_ice(floe_ctx *ctx, fz_state *s, void *fi, void *fw, uint32_t frozen)
{
    fz_parts *p = &s->p;
    const uint32_t nf = p->nf;
    void *rank = scratch(ctx, "freeze.rank", ((size_t)nf + 1) * 4), *keep = scratch(ctx, "freeze.keep", (size_t)nf * 4);
    void *kf = kern(ctx, "move_flags"), *ka = kern(ctx, "ice_append");
    int st;
    if ((st = need(ctx, "move kernels", kf && ka ? kf : NULL)) || (st = need(ctx, "move buffers", rank && keep ? rank : NULL)))
        return st;
    floe_cl_arg a[] = {ARG(nf), {sizeof(void *), &fi}, {sizeof(void *), &rank}, {sizeof(void *), &keep}};
    if ((st = api->cl_run(ctx, kf, nf, 4, a, 12.0 * nf)) || (st = api->cl_scan(ctx, rank, nf)))
        return st;
    floe_set_info ii;
    if (api->set_info(ctx, p->ice, &ii) != FLOE_OK)
        return api->fail(ctx, FLOE_ERR, "the ice set has gone");
    const uint32_t base = ii.n;
    if ((st = api->cl_set_resize(ctx, p->ice, base + frozen)))
        return st;
    void *xf = attr(ctx, p->fset[0], "x", FLOE_VEC3, FLOE_READ, &st);
    void *mf = attr(ctx, p->fset[0], "m", FLOE_F32, FLOE_READ, &st);
    void *idf = attr(ctx, p->fset[0], "id", FLOE_U32, FLOE_READ, &st);
    void *xi = attr(ctx, p->ice, "x", FLOE_VEC3, FLOE_WRITE, &st);
    void *mi = attr(ctx, p->ice, "m", FLOE_F32, FLOE_WRITE, &st);
    void *idi = attr(ctx, p->ice, "id", FLOE_U32, FLOE_WRITE, &st);
    void *Vi = attr(ctx, p->ice, "V", FLOE_F32, FLOE_WRITE, &st);
    void *di = attr(ctx, p->ice, "ice_dir", FLOE_VEC3, FLOE_WRITE, &st);
    void *ki = attr(ctx, p->ice, "ice_kind", FLOE_I32, FLOE_WRITE, &st);
    void *ti = attr(ctx, p->ice, "ice_time", FLOE_F32, FLOE_WRITE, &st);
    void *gi = api->cl_attr(ctx, p->ice, "Gamma", FLOE_F32, FLOE_WRITE); /* with freeze.film only */
    if (st)
        return st;
    const int32_t has_g = gi != NULL;
    if (!gi)
        gi = mi; /* no NULL buffer argument (some runtimes reject it): a dummy, unwritten */
    const float inv_rho0 = 1.0f / p->frho[0];
    const float now = (float)(api->sim(ctx)->time + api->sim(ctx)->dt);
    floe_cl_arg b[] = {ARG(nf),          {sizeof(void *), &fi},  {sizeof(void *), &rank}, {sizeof(void *), &fw},
                       {sizeof(void *), &xf},  {sizeof(void *), &mf},  {sizeof(void *), &idf}, ARG(inv_rho0),
                       ARG(now),         ARG(base),              {sizeof(void *), &xi},   {sizeof(void *), &mi},
                       {sizeof(void *), &idi}, {sizeof(void *), &Vi},  {sizeof(void *), &gi}, ARG(has_g),
                       {sizeof(void *), &di},  {sizeof(void *), &ki},  {sizeof(void *), &ti}};
    if ((st = api->cl_run(ctx, ka, nf, 19, b, 0)))
        return st;
    if ((st = api->cl_set_compact(ctx, p->fset[0], keep, nf - frozen)))
        return st;
    p->fn[0] = p->nf = nf - frozen;
    p->foff[1] = p->nf;
    return FLOE_OK;
}

int fz_transition_cl(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const floe_sim_info *si = api->sim(ctx);
    if (!s->film_ok || s->film_step != si->step)
        return api->fail(ctx, FLOE_ERR_ARG, "%s needs freeze.film before it in the same step", c->name);
    if (!s->cl_g_valid || s->cl_g_step != si->step)
        return api->fail(ctx, FLOE_ERR_ARG, "%s needs freeze.direction before it in the same step", c->name);
    fz_parts *p = &s->p;
    const uint32_t nf = p->nf;
    s->film_ok = s->cl_g_valid = 0;
    if (!nf)
        return FLOE_OK;
    float kc[4], per[4];
    floe_cl_consts(si, kc, per);
    const float sigma1 = (float)(8.0 / M_PI), gz = (float)c->param[TR_GLAZE].f, ic = (float)c->param[TR_ICICLE].f;
    const float vmin = fz_min_flow(c);
    const int32_t mode = fz_fr_mode(c->param[TR_FR].s);
    int st = FLOE_OK;
    void *fw = fw_buf(ctx, nf), *fi = fi_buf(ctx, nf), *cnt = scratch(ctx, "freeze.count", 4);
    void *ke = kern(ctx, "energy"), *kd = kern(ctx, "decide");
    void *xf = attr(ctx, p->fset[0], "x", FLOE_VEC3, FLOE_READ, &st);
    if (st || (st = need(ctx, "transition kernels", ke && kd ? ke : NULL)) ||
        (st = need(ctx, "transition buffers", fw && fi && cnt ? fw : NULL)) || (st = zero(ctx, cnt, 1)))
        return st;
    const uint32_t ice_k = (uint32_t)(p->nbs - 1); /* the ice set is the last frost set */
    for (int k = 0; k < p->nbs && !st; k++) {
        uint32_t nb = p->bn[k];
        if (!nb)
            continue;
        list l;
        if ((st = nlist(ctx, p->fset[0], p->bset[k], nf, &l)))
            break;
        void *xb = attr(ctx, p->bset[k], "x", FLOE_VEC3, FLOE_READ, &st);
        void *gam = attr(ctx, p->bset[k], "Gamma", FLOE_F32, FLOE_READ, &st);
        void *gv = attr(ctx, p->bset[k], "gv", FLOE_VEC3, FLOE_READ, &st);
        if (st)
            break;
        int32_t t = (uint32_t)k == ice_k && p->bset[k].id == p->ice.id;
        floe_cl_arg a[] = {ARG(nf),         {sizeof(void *), &xf},  {sizeof(void *), &fw},  {sizeof(void *), &fi},
                           {sizeof(void *), &l.cnt}, {sizeof(void *), &l.idx}, ARG(l.pitch), {sizeof(void *), &xb},
                           {sizeof(void *), &gam},   {sizeof(void *), &gv},    ARG(t),       ARG(mode),
                           ARG(vmin),                {sizeof kc, kc},          ARG(sigma1)};
        st = api->cl_run(ctx, ke, nf, 15, a, 0);
    }
    if (st)
        return st;
    floe_cl_arg d[] = {ARG(nf), {sizeof(void *), &xf}, {sizeof(void *), &fw}, ARG(gz), ARG(ic),
                       {sizeof(void *), &fi},  {sizeof(void *), &cnt}};
    if ((st = api->cl_run(ctx, kd, nf, 7, d, 0)))
        return st;
    uint32_t frozen = 0;
    if ((st = read_back(ctx, cnt, sizeof frozen, &frozen)))
        return st;
    if (frozen > nf)
        return api->fail(ctx, FLOE_ERR, "freeze (OpenCL): %u of %u fluid particles frozen", frozen, nf);
    if (frozen && (st = grow_ice(ctx, s, fi, fw, frozen)))
        return st;
    const long moved = frozen;
    if (!st) {
        floe_set_info ii;
        api->set_info(ctx, p->ice, &ii);
        api->stat(ctx, "frozen", (double)moved);
        api->stat(ctx, "ice", (double)ii.n);
    }
    return st;
}
