/* freeze.carry on the device (kernels/freeze/freeze.cl, carry_*): the
 * bodies' poses from their particles' sums (the count and sums of r0 and x,
 * then the centred second moments: two small reads, 7 and 18 floats a
 * body, and the poses solved on the host as in carry.c), then new ice
 * attached and attached ice placed by the device. No particle set comes to
 * the host. The sums are atomic float additions (their order, and the last
 * bits of a pose, vary from run to run). */
#include "freeze.h"

#include <floe/cl_module.h>

#include <stdlib.h>
#include <string.h>

#define ARG(v) FLOE_CL_ARG(v)
#define MEM(m) {sizeof(void *), &(m)}

typedef int (*read_fn)(void *queue, void *mem, uint32_t blocking, size_t off, size_t size, void *ptr,
                       uint32_t nwait, const void *wait, void *event);
typedef int (*write_fn)(void *queue, void *mem, uint32_t blocking, size_t off, size_t size, const void *ptr,
                        uint32_t nwait, const void *wait, void *event);
typedef int (*copy_fn)(void *queue, void *src, void *dst, size_t so, size_t doff, size_t size, uint32_t nwait,
                       const void *wait, void *event);

static void *kern(floe_ctx *ctx, const char *name) { return api->cl_kernel(ctx, "freeze", "freeze.cl", name); }

static int rw(floe_ctx *ctx, int write, void *mem, size_t off, size_t bytes, void *host)
{
    int rc = write ? ((write_fn)api->cl_fn("clEnqueueWriteBuffer"))(api->cl_queue(ctx), mem, 1, off, bytes, host, 0,
                                                                     NULL, NULL)
                   : ((read_fn)api->cl_fn("clEnqueueReadBuffer"))(api->cl_queue(ctx), mem, 1, off, bytes, host, 0,
                                                                   NULL, NULL);
    return rc ? api->fail(ctx, FLOE_ERR, "freeze.carry (OpenCL): a transfer of %zu bytes failed (%d)", bytes, rc)
              : FLOE_OK;
}

static int zero(floe_ctx *ctx, void *buf, uint32_t n)
{
    void *k = kern(ctx, "zero_f");
    floe_cl_arg a[] = {ARG(n), MEM(buf)};
    return k ? api->cl_run(ctx, k, n, 2, a, 4.0 * n) : FLOE_ERR;
}

/* the bodies' count: the largest index + 1 (read on the host, where the
 * rigid module wrote it; cached while the set keeps its size) */
static int bodies(floe_ctx *ctx, fz_state *s, floe_set bs, const char *name, uint32_t n, uint32_t *nb)
{
    if (s->carry_cl_n == n && s->carry_cl_n) {
        *nb = s->carry_cl_nb;
        return FLOE_OK;
    }
    int st = FLOE_OK;
    const uint32_t *bid = (const uint32_t *)floe_need_read(api, ctx, bs, name, "body", FLOE_U32, &st);
    if (st)
        return st;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        m = bid[i] + 1 > m ? bid[i] + 1 : m;
    s->carry_cl_n = n, s->carry_cl_nb = m;
    *nb = m;
    return FLOE_OK;
}

static void *dev(floe_ctx *ctx, floe_set set, const char *name, floe_type t, unsigned acc, int *st)
{
    void *m = api->cl_attr(ctx, set, name, t, acc);
    if (!m && *st == FLOE_OK)
        *st = api->fail(ctx, FLOE_ERR_ARG, "freeze.carry (OpenCL): no attribute '%s' on the device", name);
    return m;
}

int fz_carry_cl(const floe_stage_call *c)
{
    floe_ctx *ctx = c->ctx;
    fz_state *s = c->state;
    const char *bname = c->param[CA_BODIES].s;
    floe_set ice, bs;
    floe_set_info ii, bi;
    int st = fz_carry_sets(c, &ice, &ii, &bs, &bi);
    uint32_t nb = 0;
    if (st || (st = bodies(ctx, s, bs, bname, bi.n, &nb)) || !nb)
        return st;
    /* w: sums 7 nb | means 6 nb | moments 18 nb | poses: last 12 nb, this 12 nb */
    const uint32_t mo = 7 * nb, so = 13 * nb, po = 31 * nb, pn = 43 * nb, nw = 55 * nb;
    void *w = api->cl_scratch(ctx, "freeze.carry", (size_t)nw * 4);
    void *xb = dev(ctx, bs, "x", FLOE_VEC3, FLOE_READ, &st), *r0 = dev(ctx, bs, "r0", FLOE_VEC3, FLOE_READ, &st);
    void *bid = dev(ctx, bs, "body", FLOE_U32, FLOE_READ, &st);
    void *ks = kern(ctx, "carry_sums"), *km = kern(ctx, "carry_moments"), *ka = kern(ctx, "carry_attach"),
         *kp = kern(ctx, "carry_place");
    if (st)
        return st;
    if (!w || !ks || !km || !ka || !kp)
        return api->fail(ctx, FLOE_ERR, "freeze.carry (OpenCL): no kernels or buffer");
    float *h = malloc((size_t)nw * sizeof *h);
    double(*sum)[7] = calloc(nb, sizeof *sum), (*S)[3][3] = calloc(nb, sizeof *S), (*M)[3][3] = calloc(nb, sizeof *M);
    fz_pose *P = calloc(nb, sizeof *P);
    if (!h || !sum || !S || !M || !P)
        st = api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    const uint32_t n = bi.n;
    floe_cl_arg a[] = {ARG(n), MEM(xb), MEM(r0), MEM(bid), MEM(w)};
    if (!st && !(st = zero(ctx, w, so + 18 * nb)) && !(st = api->cl_run(ctx, ks, n, 5, a, 28.0 * n)))
        st = rw(ctx, 0, w, 0, (size_t)mo * 4, h);
    for (uint32_t k = 0; k < nb && !st; k++) {
        for (int q = 0; q < 7; q++)
            sum[k][q] = h[7 * k + q];
        for (int q = 0; q < 6; q++)
            h[mo + 6 * k + q] = sum[k][0] > 0 ? (float)(sum[k][1 + q] / sum[k][0]) : 0.0f;
    }
    floe_cl_arg b[] = {ARG(n), MEM(xb), MEM(r0), MEM(bid), MEM(w), ARG(mo), ARG(so)};
    if (!st && !(st = rw(ctx, 1, w, (size_t)mo * 4, (size_t)6 * nb * 4, h + mo)) &&
        !(st = api->cl_run(ctx, km, n, 7, b, 100.0 * n)))
        st = rw(ctx, 0, w, (size_t)so * 4, (size_t)18 * nb * 4, h + so);
    for (uint32_t k = 0; k < nb && !st; k++) {
        /* the sums of r0 and x again, as the means the moments were taken about */
        double sm[7] = {sum[k][0]};
        for (int q = 0; q < 6; q++)
            sm[1 + q] = sum[k][0] * h[mo + 6 * k + q];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++)
                S[k][r][q] = h[so + 18 * k + 3 * r + q], M[k][r][q] = h[so + 18 * k + 9 + 3 * r + q];
        st = fz_pose_solve(ctx, bname, k, sm, S[k], M[k], &P[k]);
    }
    const fz_pose *P0 = s->carry_nb == nb && s->carry_pose ? (const fz_pose *)s->carry_pose : P;
    for (uint32_t k = 0; k < nb && !st; k++)
        for (int t = 0; t < 2; t++) {
            const fz_pose *q = t ? &P[k] : &P0[k];
            float *o = h + (t ? pn : po) + 12 * k;
            for (int a2 = 0; a2 < 3; a2++) {
                o[a2] = (float)q->c[a2];
                for (int b2 = 0; b2 < 3; b2++)
                    o[3 + 3 * a2 + b2] = (float)q->R[a2][b2];
            }
        }
    if (!st)
        st = rw(ctx, 1, w, (size_t)po * 4, (size_t)24 * nb * 4, h + po);
    const uint32_t ni = ii.n;
    if (!st && ni) {
        void *xi = dev(ctx, ice, "x", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        void *kb = dev(ctx, ice, "ice_body", FLOE_I32, FLOE_READ | FLOE_WRITE, &st);
        void *ri = dev(ctx, ice, "ice_r0", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st);
        void *vi = api->cl_attr(ctx, ice, "v", FLOE_VEC3, FLOE_WRITE);
        void *old = api->cl_scratch(ctx, "freeze.kb", (size_t)ni * 4);
        const int32_t has_v = vi != NULL;
        if (!vi)
            vi = xi; /* no NULL buffer argument: a dummy, unwritten */
        copy_fn cp = (copy_fn)api->cl_fn("clEnqueueCopyBuffer");
        if (!st && (!old || !cp || cp(api->cl_queue(ctx), kb, old, 0, 0, (size_t)ni * 4, 0, NULL, NULL)))
            st = api->fail(ctx, FLOE_ERR, "freeze.carry (OpenCL): cannot copy the attachments");
        const float H = api->sim(ctx)->support, dt = (float)api->sim(ctx)->dt;
        floe_cl_arg d[] = {ARG(ni), MEM(xi), MEM(old), MEM(kb), MEM(ri), ARG(n), MEM(r0), MEM(bid), MEM(w), ARG(po),
                           ARG(H)};
        floe_cl_arg e[] = {ARG(ni), MEM(xi), MEM(vi), ARG(has_v), MEM(kb), MEM(ri), MEM(w), ARG(pn), ARG(nb), ARG(dt)};
        if (!st && !(st = api->cl_run(ctx, ka, ni, 11, d, 0)))
            st = api->cl_run(ctx, kp, ni, 10, e, 40.0 * ni);
    }
    if (!st) {
        free(s->carry_pose);
        s->carry_pose = P;
        s->carry_nb = nb;
        P = NULL;
    }
    free(P), free(h), free(sum), free(S), free(M);
    return st;
}
