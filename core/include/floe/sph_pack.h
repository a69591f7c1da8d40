/* Floe: packed particle records for the AVX2 row sums of the particle
 * modules (header only; <floe/sph.h> is the rest of the kit).
 *
 * The generic rows gather each neighbour's x, y, z, m, P, rho and v from
 * separate arrays; a compiler without fast hardware gathers (GCC's tuning
 * for AMD Zen) emulates every one with a scalar load and an insert. Packed
 * once per stage call into 16-byte records, A = (x, y, z, m) and B = (P,
 * rho, vx, vy), eight neighbours cost eight 16-byte loads per record and a
 * 4 x 8 transpose (<floe/simd.h> floe_load4x8). Fluid sets only: packing
 * the large, mostly idle boundary sets on every call cost more than it
 * saved. Periodic domains keep the generic rows (minimum image).
 *
 * FLOE_SPH_AVX2 is defined where the records are used (an AVX2 build
 * without FLOE_SPH_GENERIC); elsewhere floe_pack_fluids packs nothing and
 * says so (*packed = 0), and the generic rows run. */
#ifndef FLOE_SPH_PACK_H
#define FLOE_SPH_PACK_H

#include <floe/sph.h>

#include <stdlib.h>

#if defined(__AVX2__) && !defined(FLOE_SPH_GENERIC)
#define FLOE_SPH_AVX2 1
#include <floe/simd.h>
#endif

/* A module's records, in its state: zero-initialised, freed by floe_records_free. */
typedef struct floe_records {
    /* 4 floats each, every fluid set end to end (floe_fluid.off); 64-byte aligned */
    float *A, *B;
    size_t cap;
    /* per fluid set (index as in floe_fluid_sets), after a pack with
     * FLOE_PACK_VZ: the mass all its particles share, whose records then hold
     * A = (x, y, z, vz); 0 when the masses differ (A = (x, y, z, m)) */
    float umass[FLOE_MAX_SETS];
} floe_records;

static inline void floe_records_free(floe_records *r)
{
    free(r->A);
    free(r->B);
    r->A = r->B = NULL;
    r->cap = 0;
}

/* what floe_pack_fluids puts into the records */
enum { FLOE_PACK_P = 1, FLOE_PACK_RHO = 2, FLOE_PACK_V = 4, FLOE_PACK_VZ = 8 };

#ifdef FLOE_SPH_AVX2
/* Room for the records of `total` fluid particles. Returns 0, or -1 when
 * out of memory. */
static inline int floe_records_ensure(floe_records *r, size_t total)
{
    if (total <= r->cap)
        return 0;
    const size_t cap = total + total / 4 + 64;
    float *A = aligned_alloc(64, (4 * cap * sizeof(float) + 63) / 64 * 64);
    float *B = aligned_alloc(64, (4 * cap * sizeof(float) + 63) / 64 * 64);
    if (!A || !B) {
        free(A);
        free(B);
        return -1;
    }
    free(r->A);
    free(r->B);
    r->A = A, r->B = B, r->cap = cap;
    return 0;
}

/* The mass shared by all n particles of m, or 0 when they differ. */
static inline float floe_uniform_mass(const float *restrict m, uint32_t n)
{
    if (n == 0)
        return 0.0f;
    float lo = m[0], hi = m[0];
#pragma omp parallel for simd schedule(static) reduction(min : lo) reduction(max : hi)
    for (uint32_t i = 0; i < n; i++) {
        lo = m[i] < lo ? m[i] : lo;
        hi = m[i] > hi ? m[i] : hi;
    }
    return lo == hi && lo > 0.0f ? lo : 0.0f;
}

/* Pack A = (x, y, z, m), or (x, y, z, vz) when vz_in_a, and, with P or rho
 * non-NULL, B = (P, rho, vx, vy) (NULL ones: zeros) of the n particles of
 * one set at record offset off. */
static inline void floe_pack_set(floe_records *r, size_t off, uint32_t n, const float *restrict x,
                                 const float *restrict m, const float *restrict P, const float *restrict rho,
                                 const float *restrict v, int vz_in_a)
{
    float *restrict A = r->A + 4 * off, *restrict B = r->B + 4 * off;
#pragma omp parallel for schedule(static)
    for (uint32_t i = 0; i < n; i++) {
        A[4 * i] = x[3 * i];
        A[4 * i + 1] = x[3 * i + 1];
        A[4 * i + 2] = x[3 * i + 2];
        A[4 * i + 3] = vz_in_a ? v[3 * i + 2] : m[i];
        if (P || rho) {
            B[4 * i] = P ? P[i] : 0.0f;
            B[4 * i + 1] = rho ? rho[i] : 0.0f;
            B[4 * i + 2] = v ? v[3 * i] : 0.0f;
            B[4 * i + 3] = v ? v[3 * i + 1] : 0.0f;
        }
    }
}
#endif

/* Pack every fluid set: A = (x, y, z, m) always (with FLOE_PACK_VZ and
 * FLOE_PACK_V, (x, y, z, vz) for a set whose particles all have one mass,
 * r->umass), B = (P, rho, vx, vy) with the parts in `what` (FLOE_PACK_*; P
 * from P_all, a scratch over all fluid sets; absent parts zero) when any is
 * asked. *packed = 1 when the rows may use them (FLOE_SPH_AVX2, records
 * given, no periodic axis). */
static inline int floe_pack_fluids(const floe_api *api, floe_ctx *ctx, floe_records *r, const floe_kconst *kc,
                                   const floe_fluid *f, int nf, unsigned what, const float *P_all, int *packed)
{
    *packed = 0;
#ifdef FLOE_SPH_AVX2
    if (!r || kc->periodic || nf == 0)
        return FLOE_OK;
    if (floe_records_ensure(r, f[nf - 1].off + f[nf - 1].info.n))
        return api->fail(ctx, FLOE_ERR_NOMEM, "out of memory (packed records)");
    for (int s = 0; s < nf; s++) {
        const float *x = api->attr_read(ctx, f[s].set, "x", FLOE_VEC3), *m = api->attr_read(ctx, f[s].set, "m", FLOE_F32);
        const float *rho = what & FLOE_PACK_RHO ? api->attr_read(ctx, f[s].set, "rho", FLOE_F32) : NULL;
        const float *v = what & FLOE_PACK_V ? api->attr_read(ctx, f[s].set, "v", FLOE_VEC3) : NULL;
        if (!x || !m || (what & FLOE_PACK_RHO && !rho) || (what & FLOE_PACK_V && !v))
            return api->fail(ctx, FLOE_ERR_ARG, "set '%s' lacks x, m%s%s", f[s].info.name,
                             what & FLOE_PACK_RHO ? ", rho" : "", what & FLOE_PACK_V ? " or v" : "");
        /* FLOE_PACK_VZ (with FLOE_PACK_V): a set of one mass keeps vz in A instead */
        r->umass[s] = what & FLOE_PACK_VZ && v ? floe_uniform_mass(m, f[s].info.n) : 0.0f;
        floe_pack_set(r, f[s].off, f[s].info.n, x, m, what & FLOE_PACK_P ? P_all + f[s].off : NULL, rho, v,
                      r->umass[s] > 0.0f);
    }
    *packed = 1;
#else
    (void)api, (void)ctx, (void)r, (void)kc, (void)f, (void)nf, (void)what, (void)P_all;
#endif
    return FLOE_OK;
}

#endif
