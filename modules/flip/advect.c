/* Stage "advect" (Guay 2013, section 5): particle velocity by the PIC/FLIP
 * blend of Zhu & Bridson (2005),
 *
 *   u_p <- r u^n+1(x_p) + (1 - r) (u_p - (u^n(x_p) - u^n+1(x_p))),
 *
 * and position by two RK2 half steps in the updated grid velocity,
 *
 *   x* = x_p + dt/2 u^n+1(x_p),   x_p <- x_p + dt u^n+1(x*),
 *
 * each clamped into the domain (a margin inside the walls) and pushed out of
 * the obstacles (placed at t + dt/2 and t + dt). A particle stopped by a wall
 * or an obstacle loses the velocity component that points into it. Mass and
 * density attributes are never touched. One gather loop over particles.
 *
 * Sampling u(x_p). sampling = "kernel" (default) reads the grid back with the
 * splat kernel itself, u(x) = sum_c w(|x_c - x|, r) u_c / sum_c w: the
 * grid-to-particle transfer is then the adjoint of the particle-to-grid
 * splat. sampling = "linear" is the (bi/tri)linear texture read of a GPU;
 * with it the transfers do not match, and a tank at rest gains energy
 * (measured in docs/flip.md: the largest speed in a settled 2D tank grows
 * from 0.01 to 0.4 m/s within 0.2 s, where "kernel" stays below 0.005 m/s).
 * The kernel read costs about as much as the splat. */
#include "flip.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static inline void fix_wall_velocity(unsigned hit, float v[3])
{
    for (int k = 0; k < 3; k++) {
        if ((hit & (1u << (2 * k))) && v[k] < 0.0f)
            v[k] = 0.0f;
        if ((hit & (1u << (2 * k + 1))) && v[k] > 0.0f)
            v[k] = 0.0f;
    }
}

/* Kernel-weighted average of the SoA velocity planes A (and B, may be NULL)
 * at x: u(x) = sum_c w(|x_c - x|, r) u_c / sum_c w, over rows of 8-cell
 * chunks (lanes outside the radius weigh 0). The lanes are summed in a
 * fixed order at the end, so the result does not depend on threads. */
static inline void gather(const flip_geom *g, const float x[3], const float *const A[3], const float *const B[3],
                          float a[3], float b[3])
{
    const float R = g->radius, R2 = R * R, invR2 = 1.0f / R2;
    const int dim = g->dim, chunks = g->chunks;
    const float fx = (x[0] - g->origin[0]) * g->inv_h, fy = (x[1] - g->origin[1]) * g->inv_h;
    const float fz = dim == 3 ? (x[2] - g->origin[2]) * g->inv_h : 0.0f;
    const long nx = (long)g->n[0], ny = (long)g->n[1], nz = (long)g->n[2];
    long i0 = (long)floorf(fx - R);
    const long last = nx - (long)chunks * FLIP_LANES;
    i0 = i0 > last ? last : i0;
    i0 = i0 < 0 ? 0 : i0;
    float bx[3 * FLIP_LANES];
    const float base = (float)i0 - fx;
    for (int ch = 0; ch < chunks; ch++)
#pragma omp simd
        for (int l = 0; l < FLIP_LANES; l++) {
            const float dx = base + (float)(FLIP_LANES * ch + l);
            bx[FLIP_LANES * ch + l] = dx * dx * invR2;
        }
    float sw[FLIP_LANES] = {0}, s0[FLIP_LANES] = {0}, s1[FLIP_LANES] = {0}, s2[FLIP_LANES] = {0};
    float t0[FLIP_LANES] = {0}, t1[FLIP_LANES] = {0}, t2[FLIP_LANES] = {0};
    long k0 = 0, k1 = 0;
    if (dim == 3) {
        k0 = (long)ceilf(fz - R);
        k1 = (long)floorf(fz + R);
        k0 = k0 < 0 ? 0 : k0;
        k1 = k1 > nz - 1 ? nz - 1 : k1;
    }
    for (long k = k0; k <= k1; k++) {
        const float dz = dim == 3 ? (float)k - fz : 0.0f;
        long j0 = (long)ceilf(fy - R), j1 = (long)floorf(fy + R);
        j0 = j0 < 0 ? 0 : j0;
        j1 = j1 > ny - 1 ? ny - 1 : j1;
        for (long j = j0; j <= j1; j++) {
            const float dy = (float)j - fy, dyz2 = dy * dy + dz * dz;
            if (dyz2 >= R2)
                continue;
            const size_t row = ((size_t)k * (size_t)ny + (size_t)j) * (size_t)nx;
            for (int ch = 0; ch < chunks; ch++) {
                const size_t c0 = row + (size_t)i0 + (size_t)(FLIP_LANES * ch);
                const float *restrict bc = bx + FLIP_LANES * ch, ar = 1.0f - dyz2 * invR2;
                const float *restrict a0 = A[0] + c0, *restrict a1 = A[1] + c0, *restrict a2 = A[2] + c0;
                if (B) {
                    const float *restrict b0 = B[0] + c0, *restrict b1 = B[1] + c0, *restrict b2 = B[2] + c0;
#pragma omp simd
                    for (int l = 0; l < FLIP_LANES; l++) {
                        float q = ar - bc[l];
                        q = 0.5f * (q + fabsf(q)); /* max(q, 0), branch-free */
                        const float w = q * q * q;
                        sw[l] += w;
                        s0[l] += w * a0[l];
                        s1[l] += w * a1[l];
                        s2[l] += w * a2[l];
                        t0[l] += w * b0[l];
                        t1[l] += w * b1[l];
                        t2[l] += w * b2[l];
                    }
                } else {
#pragma omp simd
                    for (int l = 0; l < FLIP_LANES; l++) {
                        float q = ar - bc[l];
                        q = 0.5f * (q + fabsf(q)); /* max(q, 0), branch-free */
                        const float w = q * q * q;
                        sw[l] += w;
                        s0[l] += w * a0[l];
                        s1[l] += w * a1[l];
                        s2[l] += w * a2[l];
                    }
                }
            }
        }
    }
    float W = 0.0f, r0 = 0.0f, r1 = 0.0f, r2 = 0.0f, q0 = 0.0f, q1 = 0.0f, q2 = 0.0f;
    for (int l = 0; l < FLIP_LANES; l++) {
        W += sw[l];
        r0 += s0[l];
        r1 += s1[l];
        r2 += s2[l];
        q0 += t0[l];
        q1 += t1[l];
        q2 += t2[l];
    }
    const float inv = W > 0.0f ? 1.0f / W : 0.0f;
    a[0] = r0 * inv, a[1] = r1 * inv, a[2] = r2 * inv;
    if (B)
        b[0] = q0 * inv, b[1] = q1 * inv, b[2] = q2 * inv;
}

/* sampling = "smooth": filter u^n+1 and u^n+1 - u^n once with the splat
 * kernel (normalised sum over the integer cell offsets inside the radius),
 * on the cells that particles can read (centres within one cell of the
 * domain), so that a (bi/tri)linear read at a particle is close to the
 * kernel read there. Rows in parallel, each row convolved offset by offset
 * over its cells with liquid; results AoS, 3 per cell. */
static int filter_grids(floe_ctx *ctx, flip_state *s)
{
    const flip_geom *g = &s->g;
    const size_t cells = g->cells;
    if (!s->sn) {
        s->sn = calloc(3 * cells, sizeof(float));
        s->sd = calloc(3 * cells, sizeof(float));
        if (!s->sn || !s->sd)
            return flip_api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (filtered grids)");
    }
    int T = 1;
#ifdef _OPENMP
    T = omp_get_max_threads();
#endif
    const long nx = (long)g->n[0], ny = (long)g->n[1], nz = (long)g->n[2];
    const size_t need = (size_t)T * 6 * (size_t)nx;
    if (need > s->row_tmp_cap) {
        float *nb = realloc(s->row_tmp, need * sizeof(float));
        if (!nb)
            return flip_api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (filter rows)");
        s->row_tmp = nb;
        s->row_tmp_cap = need;
    }
    /* kernel taps: rows (dy, dz) with their x offsets and weights */
    const float R = g->radius, R2 = R * R;
    const int Ri = (int)floorf(R);
    enum { MAXT = 17 * 17 * 17 };
    int tdy[MAXT], tdz[MAXT], tdx[MAXT];
    float tw[MAXT];
    int nt = 0;
    double wsum = 0.0;
    for (int dz = (g->dim == 3 ? -Ri : 0); dz <= (g->dim == 3 ? Ri : 0); dz++)
        for (int dy = -Ri; dy <= Ri; dy++)
            for (int dx = -Ri; dx <= Ri; dx++) {
                float q = 1.0f - (float)(dx * dx + dy * dy + dz * dz) / R2;
                if (q <= 0.0f || nt == MAXT)
                    continue;
                tdx[nt] = dx, tdy[nt] = dy, tdz[nt] = dz;
                tw[nt] = q * q * q;
                wsum += tw[nt];
                nt++;
            }
    const float inv = (float)(1.0 / wsum);
    for (int t = 0; t < nt; t++)
        tw[t] *= inv;
    /* the cells particles can read, within the active box */
    const long p0 = (long)g->pad - 1;
    const flip_box *B = &s->box;
    const long ilo = p0 > B->lo[0] ? p0 : B->lo[0], ihi = nx - 1 - p0 < B->hi[0] ? nx - 1 - p0 : B->hi[0];
    const long jlo = p0 > B->lo[1] ? p0 : B->lo[1], jhi = ny - 1 - p0 < B->hi[1] ? ny - 1 - p0 : B->hi[1];
    long klo = 0, khi = 0;
    if (g->dim == 3) {
        klo = p0 > B->lo[2] ? p0 : B->lo[2];
        khi = nz - 1 - p0 < B->hi[2] ? nz - 1 - p0 : B->hi[2];
    }
    const long nyr = jhi >= jlo ? jhi - jlo + 1 : 0, nzr = khi >= klo ? khi - klo + 1 : 0;
    const float *restrict M = s->acc;
    const float *restrict N0 = s->un, *restrict N1 = s->un + cells, *restrict N2 = s->un + 2 * cells;
    const float *restrict O0 = s->uo, *restrict O1 = s->uo + cells, *restrict O2 = s->uo + 2 * cells;
    float *restrict SN = s->sn, *restrict SD = s->sd;
    float *restrict scratch = s->row_tmp;
    const int three = g->dim == 3;
#pragma omp parallel for schedule(static)
    for (long kk = 0; kk < nyr * nzr; kk++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        const long k = klo + kk / nyr, j = jlo + kk % nyr;
        const size_t row = ((size_t)k * (size_t)ny + (size_t)j) * (size_t)nx;
        long a = ilo, b = ihi; /* cells with liquid in this row */
        while (a <= b && !(M[row + (size_t)a] > 0.0f))
            a++;
        while (b >= a && !(M[row + (size_t)b] > 0.0f))
            b--;
        for (long i = ilo; i <= ihi; i++) /* cells without liquid: nothing to read */
            if (i < a || i > b)
                for (int q = 0; q < 3; q++)
                    SN[3 * (row + (size_t)i) + q] = SD[3 * (row + (size_t)i) + q] = 0.0f;
        if (a > b)
            continue;
        const long len = b - a + 1;
        float *restrict t0 = scratch + (size_t)tid * 6 * (size_t)nx;
        float *restrict t1 = t0 + nx, *restrict t2 = t1 + nx, *restrict d0 = t2 + nx, *restrict d1 = d0 + nx,
                        *restrict d2 = d1 + nx;
        memset(t0, 0, 6 * (size_t)nx * sizeof(float));
        for (int t = 0; t < nt; t++) {
            const float w = tw[t];
            const size_t src = ((size_t)(k + tdz[t]) * (size_t)ny + (size_t)(j + tdy[t])) * (size_t)nx +
                               (size_t)(a + tdx[t]);
            const float *restrict n0 = N0 + src, *restrict n1 = N1 + src, *restrict o0 = O0 + src,
                                  *restrict o1 = O1 + src;
#pragma omp simd
            for (long i = 0; i < len; i++) {
                t0[i] += w * n0[i];
                t1[i] += w * n1[i];
                d0[i] += w * (n0[i] - o0[i]);
                d1[i] += w * (n1[i] - o1[i]);
            }
            if (three) {
                const float *restrict n2 = N2 + src, *restrict o2 = O2 + src;
#pragma omp simd
                for (long i = 0; i < len; i++) {
                    t2[i] += w * n2[i];
                    d2[i] += w * (n2[i] - o2[i]);
                }
            }
        }
        for (long i = 0; i < len; i++) {
            float *sn = SN + 3 * (row + (size_t)(a + i)), *sd = SD + 3 * (row + (size_t)(a + i));
            sn[0] = t0[i], sn[1] = t1[i], sn[2] = t2[i];
            sd[0] = d0[i], sd[1] = d1[i], sd[2] = d2[i];
        }
    }
    return FLOE_OK;
}

int flip_st_advect(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    flip_state *s = call->state;
    const floe_sim_info *si = flip_api->sim(ctx);
    int st;
    if (!s || !s->ready || !s->grid_done || s->grid_step != si->step)
        return flip_api->fail(ctx, FLOE_ERR_ARG, "no grid pass in this step (put 'flip.grid' before 'flip.advect')");
    const flip_geom *g = &s->g;
    /* PIC fraction of this step: r per pic_interval of simulated time */
    const double r_in = call->param[AD_PIC].f, interval = call->param[AD_PIC_INTERVAL].f;
    const float r = (float)(interval > 0.0 && r_in < 1.0 ? 1.0 - pow(1.0 - r_in, si->dt / interval) : r_in);
    const float margin = (float)call->param[AD_MARGIN].f * g->h;
    const char *smp = call->param[AD_SAMPLING].s ? call->param[AD_SAMPLING].s : "smooth";
    const int linear = !strcmp(smp, "linear"), smooth = !strcmp(smp, "smooth");
    const float dt = (float)si->dt;
    const int dim = g->dim;
    const float *restrict ug = flip_grid_data(ctx, s->g_u);
    const float *restrict uo = flip_grid_data(ctx, s->g_u_old);
    if (!ug || !uo)
        return flip_api->fail(ctx, FLOE_ERR, "flip grids missing");
    const size_t cells = g->cells;
    const float *const UN[3] = {s->un, s->un + cells, s->un + 2 * cells};
    const float *const UO[3] = {s->uo, s->uo + cells, s->uo + 2 * cells};
    if (smooth && (st = filter_grids(ctx, s)))
        return st;
    const float *restrict SN = s->sn, *restrict SD = s->sd;

    flip_posed ob_mid[64], ob_end[64];
    const int nob = flip_obstacles_pose(s, si->time + 0.5 * si->dt, dim, ob_mid, 64);
    (void)flip_obstacles_pose(s, si->time + si->dt, dim, ob_end, 64);

    flip_fluid f[FLIP_MAX_SETS];
    int nf;
    if ((st = flip_list_fluids(ctx, f, &nf)))
        return st;
    long pushed = 0;
    for (int fs = 0; fs < nf; fs++) {
        const uint32_t n = f[fs].info.n;
        if (n == 0)
            continue;
        float *restrict x = flip_api->attr(ctx, f[fs].set, "x", FLOE_VEC3);
        float *restrict v = flip_api->attr(ctx, f[fs].set, "v", FLOE_VEC3);
        if (!x || !v)
            return flip_api->fail(ctx, FLOE_ERR_ARG, "fluid set '%s' lacks x or v", f[fs].info.name);
#pragma omp parallel for schedule(static) reduction(+ : pushed)
        for (uint32_t i = 0; i < n; i++) {
            float xp[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
            float vp[3] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
            float un[3], uold[3] = {0.0f, 0.0f, 0.0f}, um[3];
            if (smooth) {
                flip_stencil sc = flip_stencil_at(g, xp);
                float du[3];
                flip_sample_vec(g, &sc, SN, un);
                flip_sample_vec(g, &sc, SD, du);
                for (int k = 0; k < 3; k++)
                    uold[k] = un[k] - du[k];
            } else if (linear) {
                flip_stencil sc = flip_stencil_at(g, xp);
                flip_sample_vec(g, &sc, ug, un);
                flip_sample_vec(g, &sc, uo, uold);
            } else {
                gather(g, xp, UN, UO, un, uold);
            }
            for (int k = 0; k < 3; k++)
                vp[k] = r * un[k] + (1.0f - r) * (vp[k] + un[k] - uold[k]);
            /* RK2: half step, then the full step with the midpoint velocity */
            float xm[3];
            for (int k = 0; k < 3; k++)
                xm[k] = xp[k] + 0.5f * dt * un[k];
            flip_clamp(g, xm, margin);
            if (nob > 0 && flip_project(ob_mid, nob, dim, margin, xm, NULL))
                flip_clamp(g, xm, margin);
            if (smooth) {
                flip_stencil sc = flip_stencil_at(g, xm);
                flip_sample_vec(g, &sc, SN, um);
            } else if (linear) {
                flip_stencil sc = flip_stencil_at(g, xm);
                flip_sample_vec(g, &sc, ug, um);
            } else {
                gather(g, xm, UN, NULL, um, NULL);
            }
            for (int k = 0; k < dim; k++)
                xp[k] += dt * um[k];
            fix_wall_velocity(flip_clamp(g, xp, margin), vp);
            if (nob > 0 && flip_project(ob_end, nob, dim, margin, xp, vp)) {
                /* the walls win where an obstacle reaches out of the domain */
                fix_wall_velocity(flip_clamp(g, xp, margin), vp);
                pushed++;
            }
            if (dim == 2)
                vp[2] = 0.0f;
            for (int k = 0; k < 3; k++) {
                x[3 * i + k] = xp[k];
                v[3 * i + k] = vp[k];
            }
        }
    }
    if (nob > 0)
        flip_api->stat(ctx, "flip.pushed_out", (double)pushed);
    return FLOE_OK;
}
