/* The OpenCL path of the coupling (kernels/rigid/rigid.cl): the pair forces
 * and their sums per body on the device, the bodies' state on the host.
 * Per stage: the centres up (nb x 3 floats, not waited for), the sums
 * down (nb x 6 floats and a counter, one read); per step the poses up
 * (nb x 20 floats): small copies, the particles stay on the device. A fluid particle whose row touches a third
 * body (rare: three bodies within 2 d of it) sends that step's sums to the
 * C path (couple.c), which computes them from host copies. */
#include "rigid.h"

#include <floe/cl_module.h>

#include <stdlib.h>
#include <string.h>

#define FILE_CL "rigid.cl"
#define ARG(v) FLOE_CL_ARG(v)
#define WGS 128 /* api->cl_run's work-group size: the kernels' reqd_work_group_size */
#define KMAX 8  /* (body, sums) entries per work group, as in rigid.cl */

typedef int (*fn_write_t)(void *, void *, unsigned, size_t, size_t, const void *, unsigned, const void *, void *);
typedef int (*fn_read_t)(void *, void *, unsigned, size_t, size_t, void *, unsigned, const void *, void *);

static int copy(floe_ctx *ctx, void *mem, void *host, size_t bytes, int up, int wait)
{
    static fn_write_t wr;
    static fn_read_t rd;
    if (!wr) { /* process-wide by nature: the runtime the core loaded */
        wr = (fn_write_t)api->cl_fn("clEnqueueWriteBuffer");
        rd = (fn_read_t)api->cl_fn("clEnqueueReadBuffer");
    }
    if (!wr || !rd)
        return api->fail(ctx, FLOE_ERR, "OpenCL: no clEnqueueWriteBuffer/ReadBuffer");
    int e = up ? wr(api->cl_queue(ctx), mem, wait ? 1u : 0u, 0, bytes, host, 0, NULL, NULL)
               : rd(api->cl_queue(ctx), mem, wait ? 1u : 0u, 0, bytes, host, 0, NULL, NULL);
    return e ? api->fail(ctx, FLOE_ERR, "OpenCL: copy of %zu bytes failed (%d)", bytes, e) : FLOE_OK;
}

/* kind 0/1: pressure (wcsph/iisph), 2: viscosity; sums into F, T (nb x 3
 * each); *over: rows that touched a third body */
static int run_cl(rigid_state *s, int kind, const rigid_couple *c, double alpha, double c0, double *F, double *T,
                  uint32_t *over_total)
{
    floe_ctx *ctx = s->ctx;
    const floe_sim_info *si = api->sim(ctx);
    void *kcouple = api->cl_kernel(ctx, "rigid", FILE_CL, "couple");
    void *kbodies = api->cl_kernel(ctx, "rigid", FILE_CL, "reduce_bodies");
    if (!kcouple || !kbodies)
        return FLOE_ERR;
    float kc[4], per[4];
    floe_cl_consts(si, kc, per);
    floe_cl_set f[FLOE_CL_MAX_SETS];
    int nf, st;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)))
        return st;
    floe_cl_set bs = {.set = s->set};
    api->set_info(ctx, s->set, &bs.info);
    const uint32_t nb = (uint32_t)s->nb;
    /* the centres go up without waiting: the buffer stays as it is until
     * this call's read below, which comes after the copy */
    float *cen = s->cl_cen;
    if (s->cl_cen_cap < nb) {
        free(s->cl_cen);
        s->cl_cen_cap = 0;
        if (!(cen = s->cl_cen = malloc((size_t)nb * 3 * sizeof *cen)))
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        s->cl_cen_cap = nb;
    }
    /* the sums (6 floats a body) and the rows that met a third body (the
     * last word) in one read */
    const size_t out_bytes = ((size_t)nb * 6 + 1) * sizeof(float);
    float *out = api->cl_pinned(ctx, "rigid.out_host", out_bytes);
    float *out_mem = out ? NULL : malloc(out_bytes);
    if (!out)
        out = out_mem;
    if (!out)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < nb; k++)
        for (int d = 0; d < 3; d++)
            cen[3 * k + d] = (float)s->b[k].x[d];
    void *dcen = api->cl_scratch(ctx, "rigid.cen", (size_t)nb * 3 * sizeof(float));
    void *dout = api->cl_scratch(ctx, "rigid.out", out_bytes);
    void *dover = api->cl_scratch(ctx, "rigid.over", sizeof(uint32_t));
    st = dcen && dout && dover ? copy(ctx, dcen, cen, (size_t)nb * 3 * sizeof(float), 1, 0)
                               : api->fail(ctx, FLOE_ERR_NOMEM, "OpenCL: no scratch buffers");
    static const uint32_t zero = 0;
    if (!st && !s->cl_over_ready) /* reduce_bodies clears it after each use */
        if (!(st = copy(ctx, dover, (void *)&zero, sizeof zero, 1, 0)))
            s->cl_over_ready = 1;
    void *xb = NULL, *Vb = NULL, *vb = NULL, *bid = NULL;
    if (!st) {
        xb = floe_cl_attr(api, ctx, &bs, "x", FLOE_VEC3, FLOE_READ, &st);
        Vb = floe_cl_attr(api, ctx, &bs, "V", FLOE_F32, FLOE_READ, &st);
        vb = floe_cl_attr(api, ctx, &bs, "v", FLOE_VEC3, FLOE_READ, &st);
        bid = api->cl_attr(ctx, s->set, "body", FLOE_U32, FLOE_READ);
        if (!bid && !st)
            st = api->fail(ctx, FLOE_ERR, "set '%s' has no body index on the device", RIGID_SET);
    }
    const float g4[4] = {si->gravity[0], si->gravity[1], si->gravity[2], 0.0f};
    const float H = si->support;
    float cvisc = (float)(2.0 * alpha * H * c0);
    const float eps = 0.01f * H * H;
    const float beta = c ? c->beta : 2.0f;
    const int32_t hyd = c ? c->hyd : 0, k32 = kind;
    const int32_t visc = kind != 2 && c && c->alpha > 0.0; /* rigid.force{alpha}: the viscosity in this pass */
    if (visc)
        cvisc = (float)(2.0 * c->alpha * H * c->c0);
    uint32_t over = 0;
    for (int q = 0; q < nf && !st; q++) {
        const uint32_t n = f[q].info.n;
        if (n == 0)
            continue;
        floe_cl_nlist nl;
        if ((st = api->cl_neighbours(ctx, f[q].set, s->set, &nl)))
            break;
        void *x = floe_cl_attr(api, ctx, &f[q], "x", FLOE_VEC3, FLOE_READ, &st);
        void *m = floe_cl_attr(api, ctx, &f[q], "m", FLOE_F32, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[q], "rho", FLOE_F32, FLOE_READ, &st);
        void *p = kind != 2 ? floe_cl_attr(api, ctx, &f[q], "p", FLOE_F32, FLOE_READ, &st) : rho;
        void *v = kind == 2 || visc ? floe_cl_attr(api, ctx, &f[q], "v", FLOE_VEC3, FLOE_READ, &st) : rho;
        void *a = kind == 2 || visc ? floe_cl_attr(api, ctx, &f[q], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st) : rho;
        const uint32_t ngroups = (n + WGS - 1) / WGS;
        void *gid = api->cl_scratch(ctx, "rigid.gid", (size_t)ngroups * KMAX * sizeof(int32_t));
        void *gs = api->cl_scratch(ctx, "rigid.gs", (size_t)ngroups * KMAX * 6 * sizeof(float));
        if (st || !gid || !gs) {
            st = st ? st : api->fail(ctx, FLOE_ERR_NOMEM, "OpenCL: no scratch buffers");
            break;
        }
        const float rho0 = f[q].info.rest_density;
        floe_cl_arg a1[] = {ARG(n), ARG(k32), ARG(visc), ARG(x), ARG(m), ARG(rho), ARG(p), ARG(v), ARG(a), ARG(kc), ARG(per),
                            ARG(rho0), ARG(beta), ARG(hyd), ARG(cvisc), ARG(eps), ARG(g4), ARG(xb), ARG(Vb), ARG(vb),
                            ARG(bid), ARG(nl.count), ARG(nl.idx), ARG(nl.pitch), ARG(dcen), ARG(gid), ARG(gs),
                            ARG(dover)};
        if ((st = api->cl_run(ctx, kcouple, n, (int)(sizeof a1 / sizeof *a1), a1,
                              8.0 * n + 40.0 * nl.total + 4.0 * KMAX * ngroups)))
            break;
        floe_cl_arg a2[] = {ARG(nb), ARG(ngroups), ARG(gid), ARG(gs), ARG(dout), ARG(dover)};
        if ((st = api->cl_run(ctx, kbodies, (size_t)nb * WGS, (int)(sizeof a2 / sizeof *a2), a2,
                              4.0 * KMAX * ngroups * nb)))
            break;
        if ((st = copy(ctx, dout, out, out_bytes, 0, 1)))
            break;
        for (uint32_t k = 0; k < nb; k++)
            for (int d = 0; d < 3; d++) {
                F[3 * k + d] += out[6 * k + d];
                T[3 * k + d] += out[6 * k + 3 + d];
            }
        uint32_t o;
        memcpy(&o, out + 6 * (size_t)nb, sizeof o);
        over += o;
    }
    *over_total = over;
    free(out_mem);
    return st;
}

static int cl_sums(rigid_state *s, int kind, const rigid_couple *c, double alpha, double c0)
{
    double *F = calloc((size_t)s->nb * 6, sizeof *F);
    if (!F)
        return api->fail(s->ctx, FLOE_ERR_NOMEM, "out of memory");
    double *T = F + 3 * (size_t)s->nb;
    uint32_t over = 0;
    int st = run_cl(s, kind, c, alpha, c0, F, T, &over);
    if (!st && over) { /* a row met three bodies: this step's sums on the host (the fluid's a is done) */
        memset(F, 0, (size_t)s->nb * 6 * sizeof *F);
        st = rigid_sums_host(s, kind, c, alpha, c0, F, T);
        api->stat(s->ctx, "rigid.rows_on_host", (double)over);
    }
    for (int k = 0; k < s->nb && !st; k++) {
        rigid_body *b = &s->b[k];
        double *dF = kind == 2 ? b->Fv : b->F, *dT = kind == 2 ? b->Tv : b->T;
        for (int d = 0; d < 3; d++) {
            dF[d] += F[3 * k + d];
            dT[d] += T[3 * k + d];
        }
    }
    free(F);
    return st;
}

int rigid_cl_pressure(rigid_state *s, const rigid_couple *c)
{
    rigid_couple_begin(s);
    return cl_sums(s, c->solver == RIGID_IISPH ? 1 : 0, c, 0.0, 0.0);
}

int rigid_cl_viscosity(rigid_state *s, double alpha, double c0) { return cl_sums(s, 2, NULL, alpha, c0); }

int rigid_cl_place(rigid_state *s)
{
    floe_ctx *ctx = s->ctx;
    void *k = api->cl_kernel(ctx, "rigid", FILE_CL, "place");
    if (!k)
        return FLOE_ERR;
    const uint32_t nb = (uint32_t)s->nb;
    float *pose = calloc((size_t)nb * 20, sizeof *pose);
    if (!pose)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    for (uint32_t b = 0; b < nb; b++) {
        const rigid_body *r = &s->b[b];
        double R[3][3];
        rigid_quat_rot(r->q, R);
        float *P = pose + 20 * b;
        for (int d = 0; d < 3; d++) {
            P[d] = (float)r->x[d];
            P[12 + d] = (float)r->v[d];
            P[15 + d] = (float)r->w[d];
            for (int e = 0; e < 3; e++)
                P[3 + 3 * d + e] = (float)R[d][e];
        }
    }
    void *dpose = api->cl_scratch(ctx, "rigid.pose", (size_t)nb * 20 * sizeof(float));
    int st = dpose ? copy(ctx, dpose, pose, (size_t)nb * 20 * sizeof(float), 1, 1)
                   : api->fail(ctx, FLOE_ERR_NOMEM, "OpenCL: no scratch buffer");
    free(pose);
    floe_cl_set bs = {.set = s->set};
    api->set_info(ctx, s->set, &bs.info);
    if (st || bs.info.n == 0)
        return st;
    void *r0 = floe_cl_attr(api, ctx, &bs, "r0", FLOE_VEC3, FLOE_READ, &st);
    void *bid = api->cl_attr(ctx, s->set, "body", FLOE_U32, FLOE_READ);
    void *x = floe_cl_attr(api, ctx, &bs, "x", FLOE_VEC3, FLOE_WRITE, &st);
    void *v = floe_cl_attr(api, ctx, &bs, "v", FLOE_VEC3, FLOE_WRITE, &st);
    if (st || !bid)
        return st ? st : api->fail(ctx, FLOE_ERR, "set '%s' has no body index on the device", RIGID_SET);
    const uint32_t n = bs.info.n;
    floe_cl_arg a[] = {ARG(n), ARG(r0), ARG(bid), ARG(dpose), ARG(x), ARG(v)};
    return api->cl_run(ctx, k, n, (int)(sizeof a / sizeof *a), a, 40.0 * n);
}
