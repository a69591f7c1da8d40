/* Floe module "dfsph": what its files share. dfsph.c decodes the
 * parameters of dfsph.solve once into dfsph_cfg and runs the C solve (its
 * set-up in setup.c) or hands them to the OpenCL path (dfsph_cl.c), which
 * parses nothing. */
#ifndef FLOE_DFSPH_H
#define FLOE_DFSPH_H

#include <floe/sph.h>
#include <floe/sph_pack.h>

FLOE_MODULE_API_EXTERN; /* one `api` for dfsph.c and dfsph_cl.c (<floe/sph.h>) */

/* dfsph.solve, decoded (solve_params in dfsph.c has the meaning of each) */
typedef struct dfsph_cfg {
    double tol, tol_v;                  /* density, divergence tolerance */
    int64_t min_it, max_it, max_it_v;   /* constant density min/max, divergence max */
    int64_t min_it_v;                   /* divergence min: 1, or 0 (skipped when within tol_v at the start) */
    float warm, omega, cheb_rho, beta;  /* warm start, relaxation, Chebyshev radius (0 = off), wall factor */
    int64_t cheb_delay;
    int divergence;                     /* run the divergence-free solver */
    double force_courant, dt_max, corr_speed;
    int corr;                           /* gradient_correction */
    double visc;                        /* viscosity nu (m^2/s) in the set-up pass, 0 = none */
} dfsph_cfg;

/* the solve's per-step scratch, grown as needed (dfsph.c), and the
 * set-up's view of one fluid set (setup.c) */
typedef struct dfsph_state {
    size_t cap_n, cap_pairs;
    uint32_t *off;      /* N + 1: row starts in the pair arrays */
    uint32_t *nj;       /* pairs: global index of the fluid neighbour */
    float *gx, *gy, *gz; /* pairs: m_j grad W_ij */
    float *Gb;          /* 3N: sum_b psi_b grad W_ib */
    float *ub;          /* N: sum_b psi_b v_b . grad W_ib of the moving boundary sets (rigid bodies) */
    float *D;           /* N: the diagonal, 0 where a particle has (almost) no neighbours */
    float *u;           /* 4N: the velocity being corrected, 16-byte records (x, y, z, 0) */
    float *P;           /* N: the iterate P = p / rho^2 */
    float *Pold;        /* N: the iterate before it (Chebyshev acceleration) */
    float *S;           /* N: the solve's source */
    float *ap;          /* 4N: pressure accelerations of the iterate, 16-byte records (x, y, z, 0) */
    float *rho;         /* N: rho (all fluid sets, global index) */
    float *rho0;        /* N: rest density of the particle's set */
    float *lag;         /* N: compression present now that is left to later steps */
    float *gam;         /* N: gradient_correction's gamma_i (1 without it) */
    float *av;          /* 3N: the viscous acceleration of `viscosity` (the set-up's pass) */
    uint8_t *few;       /* N: too few neighbours for the divergence solver */
    uint8_t *own;       /* N: 1 for a particle this rank owns, 0 for a ghost (MPI, docs/mpi.md) */
    double *part;       /* chunk partial sums */
    floe_records rec;   /* A = (x, y, z, m) of every fluid set (floe_pack_fluids): the set-up's AVX2 rows */
    struct dfsph_cl *cl; /* the OpenCL path's state (dfsph_cl.c), NULL until used */
} dfsph_state;

typedef struct dfsph_setup {
    const floe_kconst *kc;
    const floe_target *t;
    int nt;
    size_t off;             /* global offset of the set */
    const float *x, *m;
    float rho0;
    float beta;             /* boundary factor: 1 Akinci, 2 mirrored pressure */
    int few_limit;          /* fewer neighbours than this: no divergence solve */
    int corr;               /* gradient_correction: pair gradients times (gamma_i + gamma_j) / 2 */
    int div_source;         /* also the divergence solve's source S_i = Drho_i/Dt of u */
    float cv, eps;          /* viscosity: 2 (dim + 2) nu, and 0.01 H^2 (0: none) */
    dfsph_state *s;
} dfsph_setup;

/* the set-up of the set u describes, its n particles (setup.c): rows,
 * boundary sums, diagonals, and with u->div_source the divergence solve's
 * source; every thread */
void dfsph_setup_rows(const dfsph_setup *u, uint32_t n);

/* the height of a set's fluid column: its extent along gravity (its
 * largest extent without gravity), at least d; n positions x */
double dfsph_fluid_column(const floe_sim_info *si, const float *x, uint32_t n);

/* The compression a particle's constant density solve leaves to later
 * steps, as a fraction of rho0 (the C path; the kernel dfsph_setup_f in
 * kernels/dfsph/dfsph.cl repeats it). Of its compression e = rho / rho0 - 1:
 * whatever exceeds elim (the per-step bound), and the part still in its
 * start budget *b. At a run's first step (first != 0) the budget is the
 * compression the particle starts with and *rate = rate0, the fraction it
 * loses a second (max_correction_speed / the column's height, so a column
 * rises at most at max_correction_speed; 0: no budget); later it shrinks by
 * *rate dt a step and never exceeds e. */
static inline float dfsph_lag_step(float *b, float *rate, float e, float elim, float rate0, float dt, int first)
{
    const float ep = floe_pos(e);
    if (first)
        *rate = rate0;
    const float nb = *rate > 0.0f ? (first ? ep : fminf(floe_pos(*b - *rate * dt), ep)) : 0.0f;
    *b = nb;
    return fmaxf(nb, floe_pos(e - elim));
}

/* the end of a step on either path: the time step proposals and the
 * statistics (dfsph.c) */
void dfsph_step_end(floe_ctx *ctx, const dfsph_cfg *c, int64_t it, double err, int64_t it_v, double err_v);

/* the OpenCL path (dfsph_cl.c); *cl is its device state, created on demand.
 * DFSPH_CL_USE_C: the scene needs the C solve (several non-empty fluid sets,
 * or `viscosity`, which only the C set-up computes) */
#define DFSPH_CL_USE_C 1
struct dfsph_cl;
int dfsph_cl_solve(floe_ctx *ctx, const dfsph_cfg *c, struct dfsph_cl **cl);
void dfsph_cl_free(struct dfsph_cl *cl);

#endif
