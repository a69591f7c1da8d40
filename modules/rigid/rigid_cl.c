/* The OpenCL path of the coupling (kernels/rigid/rigid.cl): the pair forces
 * and their sums per body on the device, the bodies' state on the host.
 * Per pass: the centres up (nb x 3 floats), the sums down (nb x 6 floats
 * and a counter) in one read that is not waited for: rigid.step runs ODE's
 * collision detection first and waits for the sums only before ODE's step
 * (rigid_cl_settle), so the host's part overlaps the device's; per step
 * the poses up (nb x 20 floats, not waited for): small copies, the
 * particles stay on the device. A fluid particle whose row touches a third
 * body, or a work group touching more than KMAX bodies, adds that part
 * with atomics on the device (rare; counted as rigid.rows_spilled). */
#include "rigid.h"

#include <floe/cl_module.h>

#include <stdlib.h>
#include <string.h>

#define FILE_CL "rigid.cl"
#define ARG(v) FLOE_CL_ARG(v)
#define WGS 128 /* api->cl_run's work-group size: the kernels' reqd_work_group_size */
#define KMAX 8  /* (body, sums) entries per work group, as in rigid.cl */

typedef int32_t (*fn_wait_t)(uint32_t, const void *);
typedef int32_t (*fn_release_t)(void *);

/* a copy up or down, waited for or not; event: NULL or where the copy's
 * event goes */
static int copy(floe_ctx *ctx, void *mem, void *host, size_t bytes, int up, int wait, void **event)
{
    const floe_cl_write_fn wr = floe_cl_write_fn_of(api);
    const floe_cl_read_fn rd = floe_cl_read_fn_of(api);
    if (!wr || !rd)
        return api->fail(ctx, FLOE_ERR, "OpenCL: no clEnqueueWriteBuffer/ReadBuffer");
    const uint32_t blocking = wait ? 1u : 0u;
    int e = up ? wr(api->cl_queue(ctx), mem, blocking, 0, bytes, host, 0, NULL, event)
               : rd(api->cl_queue(ctx), mem, blocking, 0, bytes, host, 0, NULL, event);
    return e ? api->fail(ctx, FLOE_ERR, "OpenCL: copy of %zu bytes failed (%d)", bytes, e) : FLOE_OK;
}

/* wait for an event and release it */
static int wait_event(floe_ctx *ctx, void **ev)
{
    if (!*ev)
        return FLOE_OK;
    void *pw = api->cl_fn("clWaitForEvents"), *pr = api->cl_fn("clReleaseEvent");
    fn_wait_t w;
    fn_release_t r;
    memcpy(&w, &pw, sizeof w);
    memcpy(&r, &pr, sizeof r);
    if (!w || !r)
        return api->fail(ctx, FLOE_ERR, "OpenCL: no clWaitForEvents/clReleaseEvent");
    const int e = w(1, ev);
    r(*ev);
    *ev = NULL;
    return e ? api->fail(ctx, FLOE_ERR, "OpenCL: waiting for the rigid bodies' sums failed (%d)", e) : FLOE_OK;
}

int rigid_cl_settle(rigid_state *s)
{
    int st = FLOE_OK;
    for (int k = 0; k < s->cl_npend; k++) {
        int e = wait_event(s->ctx, &s->cl_pend[k].ev);
        st = st ? st : e;
        if (e)
            continue;
        const float *out = s->cl_pend[k].out;
        const int viscous = s->cl_pend[k].viscous;
        for (int b = 0; b < s->nb; b++) {
            rigid_body *r = &s->b[b];
            double *dF = viscous ? r->Fv : r->F, *dT = viscous ? r->Tv : r->T;
            for (int d = 0; d < 3; d++) {
                dF[d] += out[6 * b + d];
                dT[d] += out[6 * b + 3 + d];
            }
        }
        uint32_t o;
        memcpy(&o, out + 6 * (size_t)s->nb, sizeof o);
        s->cl_spilled += o; /* the statistic from the main thread (spilled_stat) */
    }
    s->cl_npend = 0;
    return st;
}

static void spilled_stat(rigid_state *s)
{
    if (s->cl_spilled)
        api->stat(s->ctx, "rigid.rows_spilled", (double)s->cl_spilled);
    s->cl_spilled = 0;
}

void rigid_cl_fini(rigid_state *s)
{
    rigid_thread_stop(s);
    for (int k = 0; k < s->cl_npend; k++)
        wait_event(s->ctx, &s->cl_pend[k].ev);
    s->cl_npend = 0;
    wait_event(s->ctx, &s->cl_pose_ev);
}

/* kind 0/1: pressure (wcsph/iisph), 2: viscosity; the sums (into F, T or
 * Fv, Tv) are read without waiting and folded in by rigid_cl_settle */
static int run_cl(rigid_state *s, int kind, const rigid_couple *c, double alpha, double c0)
{
    floe_ctx *ctx = s->ctx;
    const floe_sim_info *si = api->sim(ctx);
    /* an earlier pass's read: its host memory and the centres are reused */
    int st = rigid_cl_settle(s);
    if (st)
        return st;
    void *kcouple = api->cl_kernel(ctx, "rigid", FILE_CL, "couple");
    void *kbodies = api->cl_kernel(ctx, "rigid", FILE_CL, "reduce_bodies");
    if (!kcouple || !kbodies)
        return FLOE_ERR;
    float kc[4], per[4];
    floe_cl_consts(si, kc, per);
    floe_cl_set f[FLOE_CL_MAX_SETS];
    int nf;
    if ((st = floe_cl_sets(api, ctx, FLOE_SET_FLUID, f, &nf)))
        return st;
    floe_cl_set bs = {.set = s->set};
    api->set_info(ctx, s->set, &bs.info);
    const uint32_t nb = (uint32_t)s->nb;
    /* the centres go up without waiting: the buffer stays as it is until
     * this pass's read is settled, which comes after the copy */
    float *cen = s->cl_cen;
    if (s->cl_cen_cap < nb) {
        free(s->cl_cen);
        s->cl_cen_cap = 0;
        if (!(cen = s->cl_cen = malloc((size_t)nb * 3 * sizeof *cen)))
            return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
        s->cl_cen_cap = nb;
    }
    for (uint32_t k = 0; k < nb; k++)
        for (int d = 0; d < 3; d++)
            cen[3 * k + d] = (float)s->b[k].x[d];
    void *dcen = api->cl_scratch(ctx, "rigid.cen", (size_t)nb * 3 * sizeof(float));
    void *dover = api->cl_scratch(ctx, "rigid.over", sizeof(uint32_t));
    void *dspill = api->cl_scratch(ctx, "rigid.spill", (size_t)nb * 6 * sizeof(float));
    st = dcen && dover && dspill ? copy(ctx, dcen, cen, (size_t)nb * 3 * sizeof(float), 1, 0, NULL)
                                 : api->fail(ctx, FLOE_ERR_NOMEM, "OpenCL: no scratch buffers");
    if (!st && !s->cl_over_ready) { /* reduce_bodies clears both after each use */
        const floe_cl_fill_fn fill = floe_cl_fill_fn_of(api);
        static const uint32_t zero = 0;
        int e = fill ? fill(api->cl_queue(ctx), dover, &zero, sizeof zero, 0, sizeof zero, 0, NULL, NULL) |
                           fill(api->cl_queue(ctx), dspill, &zero, sizeof zero, 0, (size_t)nb * 6 * sizeof(float), 0,
                                NULL, NULL)
                     : -1;
        if (e)
            st = api->fail(ctx, FLOE_ERR, "OpenCL: clearing the rigid bodies' counters failed (%d)", e);
        else
            s->cl_over_ready = 1;
    }
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
    /* one fluid set (the usual case) reads straight into the pinned sums;
     * more sets add theirs on the host, waited for (rare) */
    int nfluid = 0;
    for (int q = 0; q < nf; q++)
        nfluid += floe_owned(api, ctx, f[q].set, f[q].info.n) > 0;
    const size_t out_bytes = ((size_t)nb * 6 + 1) * sizeof(float);
    const int slot = s->cl_npend;
    float *out = api->cl_pinned(ctx, slot ? "rigid.out_host1" : "rigid.out_host0", out_bytes);
    if (!out) /* no pinned memory: the state's own buffer */
        out = s->cl_out_mem[slot] = s->cl_out_mem[slot] ? s->cl_out_mem[slot] : malloc(out_bytes);
    if (!out)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    float *acc = NULL; /* several fluid sets: their sums added here */
    if (nfluid > 1 && !(acc = calloc((size_t)nb * 6 + 1, sizeof *acc)))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    void *dout = api->cl_scratch(ctx, "rigid.out", out_bytes);
    if (!dout && !st)
        st = api->fail(ctx, FLOE_ERR_NOMEM, "OpenCL: no scratch buffers");
    int done = 0;
    for (int q = 0; q < nf && !st; q++) {
        /* MPI: the owned particles (a ghost's pairs are its owner's) */
        const uint32_t n = floe_owned(api, ctx, f[q].set, f[q].info.n);
        if (n == 0)
            continue;
        floe_cl_nlist nl;
        if ((st = api->cl_neighbours(ctx, f[q].set, s->set, &nl)))
            break;
        void *x = floe_cl_attr(api, ctx, &f[q], "x", FLOE_VEC3, FLOE_READ, &st);
        void *m = floe_cl_attr(api, ctx, &f[q], "m", FLOE_F32, FLOE_READ, &st);
        void *rho = floe_cl_attr(api, ctx, &f[q], "rho", FLOE_F32, FLOE_READ, &st);
        void *p = kind != 2 ? floe_cl_attr(api, ctx, &f[q], "p", FLOE_F32, FLOE_READ, &st) : rho;
        const int hydf = kind == 0 && hyd; /* wcsph extrapolate: the fluid's a too */
        void *v = kind == 2 || visc ? floe_cl_attr(api, ctx, &f[q], "v", FLOE_VEC3, FLOE_READ, &st) : rho;
        void *a = kind == 2 || visc || hydf ? floe_cl_attr(api, ctx, &f[q], "a", FLOE_VEC3, FLOE_READ | FLOE_WRITE, &st)
                                            : rho;
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
                            ARG(dover), ARG(dspill)};
        if ((st = api->cl_run(ctx, kcouple, n, (int)(sizeof a1 / sizeof *a1), a1,
                              8.0 * n + 40.0 * nl.total + 4.0 * KMAX * ngroups)))
            break;
        floe_cl_arg a2[] = {ARG(nb), ARG(ngroups), ARG(gid), ARG(gs), ARG(dout), ARG(dover), ARG(dspill)};
        if ((st = api->cl_run(ctx, kbodies, (size_t)nb * WGS, (int)(sizeof a2 / sizeof *a2), a2,
                              4.0 * KMAX * ngroups * nb)))
            break;
        if (++done < nfluid) { /* not the last set: its sums now, on the host */
            if ((st = copy(ctx, dout, out, out_bytes, 0, 1, NULL)))
                break;
            for (size_t k = 0; k < (size_t)nb * 6; k++)
                acc[k] += out[k];
            uint32_t o, t;
            memcpy(&o, out + 6 * (size_t)nb, sizeof o);
            memcpy(&t, acc + 6 * (size_t)nb, sizeof t);
            t += o;
            memcpy(acc + 6 * (size_t)nb, &t, sizeof t);
            continue;
        }
        s->cl_pend[slot].ev = NULL;
        if ((st = copy(ctx, dout, out, out_bytes, 0, 0, &s->cl_pend[slot].ev)))
            break;
        s->cl_pend[slot].out = out;
        s->cl_pend[slot].viscous = kind == 2;
        s->cl_npend = slot + 1;
        if (acc) { /* the earlier sets' sums go with the last one's */
            if ((st = wait_event(ctx, &s->cl_pend[slot].ev)))
                break;
            for (size_t k = 0; k < (size_t)nb * 6; k++)
                out[k] += acc[k];
            uint32_t o, t;
            memcpy(&o, out + 6 * (size_t)nb, sizeof o);
            memcpy(&t, acc + 6 * (size_t)nb, sizeof t);
            o += t;
            memcpy(out + 6 * (size_t)nb, &o, sizeof o);
        }
    }
    free(acc);
    return st;
}

int rigid_cl_pressure(rigid_state *s, const rigid_couple *c)
{
    int st = rigid_cl_settle(s); /* rigid.viscosity's sums first: rigid_couple_begin moves them into F */
    if (st)
        return st;
    rigid_couple_begin(s);
    return run_cl(s, c->solver == RIGID_IISPH ? 1 : 0, c, 0.0, 0.0);
}

int rigid_cl_viscosity(rigid_state *s, double alpha, double c0) { return run_cl(s, 2, NULL, alpha, c0); }

static int finish_cb(void *state) { return rigid_cl_finish(state); }

int rigid_cl_current(rigid_state *s)
{
    int st = rigid_cl_finish(s);
    if (!st)
        st = rigid_cl_settle(s);
    spilled_stat(s);
    return st;
}

/* rigid.step's second half but the placing: the sums waited for, ODE's
 * step (on the module's thread, or in line) */
static int second_half(rigid_state *s)
{
    const double t0 = rigid_now_ms();
    int st = rigid_cl_settle(s);
    if (st)
        return st;
    const double t1 = rigid_now_ms();
    rigid_engine_solve(s);
    s->cl_wait_ms = t1 - t0;
    s->cl_ode_ms = rigid_now_ms() - t1;
    return FLOE_OK;
}

int rigid_cl_step(rigid_state *s, double t, double dt)
{
    int st = rigid_cl_finish(s); /* a step not finished since (no neighbours stage between) */
    if (st)
        return st;
    if (!s->cl_placer) {
        if ((st = api->set_placer(s->ctx, s->set, finish_cb, s)))
            return st;
        s->cl_placer = 1;
    }
    const double t0 = rigid_now_ms();
    if ((st = rigid_engine_collide(s, t, dt)))
        return st;
    api->stat(s->ctx, "rigid.contacts_ms", rigid_now_ms() - t0);
    s->cl_step_pending = 1;
    /* ODE's step starts now on the module's thread: the main thread goes
     * on launching the next step's work until the placer joins it */
    s->cl_threaded = rigid_thread_submit(s, second_half) == 0;
    return FLOE_OK;
}

int rigid_cl_finish(rigid_state *s)
{
    if (!s->cl_step_pending) /* the sums of a pass in flight stay so (stages between) */
        return FLOE_OK;
    s->cl_step_pending = 0;
    const double t0 = rigid_now_ms();
    int st = s->cl_threaded ? rigid_thread_join(s) : second_half(s);
    s->cl_threaded = 0;
    spilled_stat(s);
    if (st)
        return st;
    /* rigid.join_ms: how long the main thread waited for ODE's thread */
    if (s->thread)
        api->stat(s->ctx, "rigid.join_ms", rigid_now_ms() - t0);
    api->stat(s->ctx, "rigid.wait_ms", s->cl_wait_ms);
    api->stat(s->ctx, "rigid.ode_step_ms", s->cl_ode_ms);
    return rigid_cl_place(s);
}

int rigid_cl_place(rigid_state *s)
{
    floe_ctx *ctx = s->ctx;
    void *k = api->cl_kernel(ctx, "rigid", FILE_CL, "place");
    if (!k)
        return FLOE_ERR;
    const uint32_t nb = (uint32_t)s->nb;
    /* the last upload is done before its host memory is written again */
    int st = wait_event(ctx, &s->cl_pose_ev);
    if (st)
        return st;
    const size_t bytes = (size_t)nb * 20 * sizeof(float);
    float *pose = api->cl_pinned(ctx, "rigid.pose_host", bytes);
    if (!pose)
        pose = s->cl_pose_mem = s->cl_pose_mem ? s->cl_pose_mem : malloc(bytes);
    if (!pose)
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory");
    memset(pose, 0, bytes);
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
    void *dpose = api->cl_scratch(ctx, "rigid.pose", bytes);
    st = dpose ? copy(ctx, dpose, pose, bytes, 1, 0, &s->cl_pose_ev)
               : api->fail(ctx, FLOE_ERR_NOMEM, "OpenCL: no scratch buffer");
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
