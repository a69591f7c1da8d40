/* Floe module "dfsph": the set-up of a step (dfsph.c has the method). For
 * each fluid particle i: m_j grad W_ij of every fluid pair into its CSR row
 * (dfsph_state's nj, gx, gy, gz), sum_b psi_b grad W_ib of its walls (Gb),
 * the diagonal D_i = |G_i|^2 + sum_j m_i m_j |grad W_ij|^2, and in the same
 * walk of the row the viscous acceleration (`viscosity`) and the
 * divergence solve's source Drho_i/Dt of u. With AVX2 eight pairs at a
 * time, the neighbours' x, y, z and m from records packed once a call
 * (floe_pack_fluids); the plain loop takes periodic axes and other CPUs. */
#include "dfsph.h"

#include <floe/simd.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef FLOE_SPH_AVX2
/* eight pairs of the set-up, row block id[0..8): j, x_ij, r^2, dW/dr / r
 * (dw0; dw with the gradient correction), m_j, and m_j grad W_ij */
typedef struct pairs8 {
    __m256i j;
    __m256 dx, dy, dz, r2, dw0, dw, m, px, py, pz;
} pairs8;

FLOE_ROW_FN pairs8 setup_pairs8(const float *restrict xm, const uint32_t *id, const float *restrict gt, __m256 xi8,
                                __m256 yi8, __m256 zi8, __m256 g8, __m256 ih8, __m256 rm8, __m256 gi8, const int corr)
{
    pairs8 q;
    __m256 X, Y, Z;
    q.j = _mm256_loadu_si256((const __m256i *)id);
    floe_load4x8(xm, id, &X, &Y, &Z, &q.m);
    q.dx = _mm256_sub_ps(xi8, X), q.dy = _mm256_sub_ps(yi8, Y), q.dz = _mm256_sub_ps(zi8, Z);
    q.r2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(q.dx, q.dx), _mm256_mul_ps(q.dy, q.dy)), _mm256_mul_ps(q.dz, q.dz));
    q.dw0 = floe_dw_r_hat8(g8, ih8, rm8, q.r2);
    q.dw = corr ? _mm256_mul_ps(q.dw0, _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_add_ps(gi8, _mm256_i32gather_ps(gt, q.j, 4))))
                : q.dw0;
    const __m256 g = _mm256_mul_ps(q.m, q.dw);
    q.px = _mm256_mul_ps(g, q.dx), q.py = _mm256_mul_ps(g, q.dy), q.pz = _mm256_mul_ps(g, q.dz);
    return q;
}

/* the viscous weights of eight pairs, the plain loop's c lane by lane:
 * m_j dW/dr / r (v_ij . x_ij) / (rho_j (r^2 + eps)) */
FLOE_ROW_FN __m256 setup_visc8(const pairs8 *q, __m256 ux, __m256 uy, __m256 uz, __m256 ui8, __m256 vi8, __m256 wi8,
                               const float *restrict rt, __m256 eps8)
{
    const __m256 dot = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(ui8, ux), q->dx),
                                                   _mm256_mul_ps(_mm256_sub_ps(vi8, uy), q->dy)),
                                     _mm256_mul_ps(_mm256_sub_ps(wi8, uz), q->dz));
    return _mm256_div_ps(_mm256_mul_ps(_mm256_mul_ps(q->m, q->dw0), dot),
                         _mm256_mul_ps(_mm256_i32gather_ps(rt, q->j, 4), _mm256_add_ps(q->r2, eps8)));
}
#endif

/* one fluid target's row of particle i: m_j grad W_ij of every pair into the
 * CSR row (nj, gx, gy, gz), and acc += (sum_j m_j grad W_ij, sum_j m_i m_j
 * |grad W_ij|^2, with `visc` sum_j m_j / rho_j (v_ij . x_ij) / (r^2 + eps)
 * grad W_ij of the plain gradients, with `div` sum_j (u_i - u_j) . m_j
 * grad W_ij, the row's part of Drho_i/Dt of u); with `corr` the pair
 * gradients times (gamma_i + gamma_j) / 2. With AVX2 eight pairs at a time
 * (not on periodic axes): the neighbours' x, y, z and m from the packed
 * records xm (floe_pack_fluids), their u from u's records, eight 16-byte loads each
 * (floe_load4x8), rho_j gathered for the viscosity; the row's tail as one masked
 * block (the core's rows are padded with valid indices) whose terms are
 * added one by one, so every sum is the plain loop's float for float. The
 * plain loop takes periodic axes and other CPUs;
 * corr, visc, div and per are constants where it is inlined, so each
 * combination is its own branch-free loop. */
FLOE_ROW_FN void setup_row(const floe_kconst *kc, const uint32_t *restrict id, uint32_t cnt, const float *restrict xt,
                           const float *restrict w, const float *restrict xm, float xi, float yi, float zi, float mi,
                           uint32_t base, uint32_t *restrict nj, float *restrict gx, float *restrict gy,
                           float *restrict gz, const float *restrict gt, float gam_i, const float *restrict ur,
                           const float *restrict rt, float ui, float vi, float wi, float eps, float acc[8],
                           const int per, const int corr, const int visc, const int div)
{
    float sx = 0, sy = 0, sz = 0, ss = 0, vx = 0, vy = 0, vz = 0, dv = 0;
    uint32_t k = 0;
#ifdef FLOE_SPH_AVX2
    if (!per) {
        const __m256 xi8 = _mm256_set1_ps(xi), yi8 = _mm256_set1_ps(yi), zi8 = _mm256_set1_ps(zi);
        const __m256 g8 = _mm256_set1_ps(kc->g), ih8 = _mm256_set1_ps(kc->inv_H), rm8 = _mm256_set1_ps(kc->r_min2);
        const __m256 mi8 = _mm256_set1_ps(mi), gi8 = _mm256_set1_ps(gam_i), eps8 = _mm256_set1_ps(eps);
        const __m256 ui8 = _mm256_set1_ps(ui), vi8 = _mm256_set1_ps(vi), wi8 = _mm256_set1_ps(wi);
        const __m256i base8 = _mm256_set1_epi32((int)base);
        __m256 ax = _mm256_setzero_ps(), ay = ax, az = ax, as = ax, bx = ax, by = ax, bz = ax, ad = ax;
        for (; k + 8 <= cnt; k += 8) {
            const pairs8 q = setup_pairs8(xm, id + k, gt, xi8, yi8, zi8, g8, ih8, rm8, gi8, corr);
            const __m256 r2 = q.r2, dw = q.dw, wj = q.m, px = q.px, py = q.py, pz = q.pz;
            _mm256_storeu_si256((__m256i *)(nj + k), _mm256_add_epi32(q.j, base8));
            _mm256_storeu_ps(gx + k, px);
            _mm256_storeu_ps(gy + k, py);
            _mm256_storeu_ps(gz + k, pz);
            ax = _mm256_add_ps(ax, px), ay = _mm256_add_ps(ay, py), az = _mm256_add_ps(az, pz);
            as = _mm256_add_ps(as, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(mi8, wj), _mm256_mul_ps(dw, dw)), r2));
            if (visc || div) {
                __m256 ux, uy, uz, uw;
                floe_load4x8(ur, id + k, &ux, &uy, &uz, &uw);
                if (div) { /* as row_rel_dot sums it */
                    ad = _mm256_add_ps(ad, _mm256_mul_ps(_mm256_sub_ps(ui8, ux), px));
                    ad = _mm256_add_ps(ad, _mm256_mul_ps(_mm256_sub_ps(vi8, uy), py));
                    ad = _mm256_add_ps(ad, _mm256_mul_ps(_mm256_sub_ps(wi8, uz), pz));
                }
                if (visc) {
                    const __m256 c = setup_visc8(&q, ux, uy, uz, ui8, vi8, wi8, rt, eps8);
                    bx = _mm256_add_ps(bx, _mm256_mul_ps(c, q.dx));
                    by = _mm256_add_ps(by, _mm256_mul_ps(c, q.dy));
                    bz = _mm256_add_ps(bz, _mm256_mul_ps(c, q.dz));
                }
            }
        }
        sx = floe_hsum8(ax), sy = floe_hsum8(ay), sz = floe_hsum8(az), ss = floe_hsum8(as);
        vx = floe_hsum8(bx), vy = floe_hsum8(by), vz = floe_hsum8(bz), dv = floe_hsum8(ad);
        if (k < cnt) { /* the tail as one masked block (the core's rows are padded with valid
                        * indices); its terms, each the plain loop's float, added one by one
                        * in the plain loop's order */
            const __m256 mask = floe_row_mask8(cnt, k);
            const pairs8 q = setup_pairs8(xm, id + k, gt, xi8, yi8, zi8, g8, ih8, rm8, gi8, corr);
            const __m256 dx = q.dx, dy = q.dy, dz = q.dz, r2 = q.r2, dw = q.dw, wj = q.m;
            const __m256 px = q.px, py = q.py, pz = q.pz;
            const __m256i im = _mm256_castps_si256(mask);
            _mm256_maskstore_epi32((int *)(nj + k), im, _mm256_add_epi32(q.j, base8));
            _mm256_maskstore_ps(gx + k, im, px);
            _mm256_maskstore_ps(gy + k, im, py);
            _mm256_maskstore_ps(gz + k, im, pz);
            float tx[8], ty[8], tz[8], ts[8], td[8], cx[8], cy[8], cz[8];
            _mm256_storeu_ps(tx, px), _mm256_storeu_ps(ty, py), _mm256_storeu_ps(tz, pz);
            _mm256_storeu_ps(ts, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(mi8, wj), dw), dw), r2));
            if (visc || div) {
                __m256 ux, uy, uz, uw;
                floe_load4x8(ur, id + k, &ux, &uy, &uz, &uw);
                if (div)
                    _mm256_storeu_ps(td, _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(ui8, ux), px),
                                                                     _mm256_mul_ps(_mm256_sub_ps(vi8, uy), py)),
                                                       _mm256_mul_ps(_mm256_sub_ps(wi8, uz), pz)));
                if (visc) {
                    const __m256 c = setup_visc8(&q, ux, uy, uz, ui8, vi8, wi8, rt, eps8);
                    _mm256_storeu_ps(cx, _mm256_mul_ps(c, dx));
                    _mm256_storeu_ps(cy, _mm256_mul_ps(c, dy));
                    _mm256_storeu_ps(cz, _mm256_mul_ps(c, dz));
                }
            }
            for (uint32_t l = 0; l < cnt - k; l++) {
                sx += tx[l], sy += ty[l], sz += tz[l];
                ss += ts[l];
                if (div)
                    dv += td[l];
                if (visc)
                    vx += cx[l], vy += cy[l], vz += cz[l];
            }
            k = cnt;
        }
    }
#else
    (void)xm;
#endif
    for (; k < cnt; k++) {
        FLOE_X_IJ(per);
        const float dw0 = floe_kdw(kc, r2), dw = corr ? dw0 * (0.5f * (gam_i + gt[j])) : dw0, g = w[j] * dw;
        nj[k] = base + j;
        gx[k] = g * dx;
        gy[k] = g * dy;
        gz[k] = g * dz;
        sx += g * dx, sy += g * dy, sz += g * dz;
        ss += mi * w[j] * dw * dw * r2;
        if (div) /* as row_rel_dot's tail */
            dv += (ui - ur[4 * j]) * gx[k] + (vi - ur[4 * j + 1]) * gy[k] + (wi - ur[4 * j + 2]) * gz[k];
        if (visc) {
            const float c = w[j] * dw0 * ((ui - ur[4 * j]) * dx + (vi - ur[4 * j + 1]) * dy + (wi - ur[4 * j + 2]) * dz) /
                            (rt[j] * (r2 + eps));
            vx += c * dx, vy += c * dy, vz += c * dz;
        }
    }
    acc[0] += sx, acc[1] += sy, acc[2] += sz, acc[3] += ss;
    acc[4] += vx, acc[5] += vy, acc[6] += vz, acc[7] += dv;
}

/* particle i: its fluid pairs (into its CSR row), sum_b psi_b grad W_ib, D_i */
FLOE_ROW_FN void setup_one(const dfsph_setup *u, uint32_t i, const int per)
{
    const floe_kconst *kc = u->kc;
    dfsph_state *s = u->s;
    const size_t gi = u->off + i, gi_ = gi;
    const float xi = u->x[3 * i], yi = u->x[3 * i + 1], zi = u->x[3 * i + 2], mi = u->m[i];
    float G[3] = {0, 0, 0}, Gb[3] = {0, 0, 0}, V[3] = {0, 0, 0}, s2 = 0.0f, dv = 0.0f, ub = 0.0f;
    size_t o = s->off[gi];
    uint32_t count = 0;
    const float gam_i = s->gam[gi_], eps = u->eps;
    const float ui = s->u[4 * gi], vi = s->u[4 * gi + 1], wi = s->u[4 * gi + 2];
    for (int b = 0; b < u->nt; b++) {
        const floe_target *tg = &u->t[b];
        const uint32_t *restrict id = tg->idx + (size_t)i * tg->stride;
        const uint32_t cnt = tg->cnt[i];
        const float *restrict xt = tg->x, *restrict w = tg->mass;
        count += cnt;
        if (tg->boundary) {
            floe_row_grad(kc, id, cnt, xt, w, xi, yi, zi, Gb, per);
            if (tg->v) /* a moving set: sum_b V_b v_b . grad W_ib */
                ub += floe_row_vgrad(kc, id, cnt, xt, w, tg->v, xi, yi, zi, per);
            continue;
        }
        const float *restrict gt = s->gam + tg->off, *restrict rt = s->rho + tg->off;
        const float *restrict ur = s->u + 4 * tg->off;
        const uint32_t base = (uint32_t)tg->off;
        uint32_t *restrict nj = s->nj + o;
        float *restrict gx = s->gx + o, *restrict gy = s->gy + o, *restrict gz = s->gz + o;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        const float *restrict xm = s->rec.A ? s->rec.A + 4 * tg->off : NULL; /* packed unless periodic */
#define SETUP_ROW(corr, visc, div)                                                                                \
    setup_row(kc, id, cnt, xt, w, xm, xi, yi, zi, mi, base, nj, gx, gy, gz, gt, gam_i, ur, rt, ui, vi, wi, eps, acc, \
              per, corr, visc, div)
#define SETUP_ROW_V(corr, div) (u->cv > 0.0f ? SETUP_ROW(corr, 1, div) : SETUP_ROW(corr, 0, div))
        if (u->corr)
            u->div_source ? SETUP_ROW_V(1, 1) : SETUP_ROW_V(1, 0);
        else
            u->div_source ? SETUP_ROW_V(0, 1) : SETUP_ROW_V(0, 0);
#undef SETUP_ROW_V
#undef SETUP_ROW
        G[0] += acc[0], G[1] += acc[1], G[2] += acc[2];
        s2 += acc[3];
        V[0] += acc[4], V[1] += acc[5], V[2] += acc[6];
        dv += acc[7];
        o += cnt;
    }
    /* psi_b = rho0_i V_b; the kernel's sigma is in floe_kdw's g; gamma_i
     * (1 without gradient_correction) on the boundary's gradients */
    s->ub[gi] = ub * u->beta * u->rho0 * s->gam[gi];
    for (int k = 0; k < 3; k++) {
        Gb[k] *= u->beta * u->rho0 * s->gam[gi];
        G[k] += Gb[k];
        s->Gb[3 * gi + k] = Gb[k];
        s->av[3 * gi + k] = u->cv * V[k];
    }
    const float D = G[0] * G[0] + G[1] * G[1] + G[2] * G[2] + s2;
    /* isolated particle: D ~ 0, no pressure (D ~ rho0^2 / d^2 inside the fluid) */
    s->D[gi] = D > 1e-6f * u->rho0 * u->rho0 * kc->inv_H * kc->inv_H ? D : 0.0f;
    s->few[gi] = count < (uint32_t)u->few_limit;
    /* the divergence solve's source, Drho_i/Dt of u (u = v of every
     * particle is in place before the set-up), summed as div_one sums it */
    if (u->div_source)
        s->S[gi] = s->few[gi] ? 0.0f
                              : ui * s->Gb[3 * gi] + vi * s->Gb[3 * gi + 1] + wi * s->Gb[3 * gi + 2] - s->ub[gi] + dv;
}

void dfsph_setup_rows(const dfsph_setup *u, uint32_t n)
{
#define SETUP(i, P) setup_one(u, i, P)
    FLOE_PAR_FOR(u->kc->periodic, n, SETUP);
#undef SETUP
}
