/* Stage "grid" (Guay 2013, sections 2 and 4): from the splatted sums,
 *
 *   rho   = sigma sum_p m_p w          (sigma normalises w: 4 / (pi r^2) in 2D,
 *                                        315 / (64 pi r^3) in 3D)
 *   u^n   = sum_p m_p w u_p / sum_p m_p w
 *   P     = k (rho_t / rho0)^gamma                    eos = "guay"
 *         = k max((rho_t / rho0)^gamma - 1, 0)        eos = "tait"
 *   u^n+1 = u^n - dt grad P + dt g                    (central differences)
 *
 * with rho_t = rho + rho_obstacle: obstacles add the density of liquid at
 * rest that would fill them, rho0 F(phi / r) (F = the part of the kernel
 * beyond a plane at distance phi, see grid.c), and a shallow-water ground
 * adds rho0 b / h0. P is a kinematic pressure (m^2/s^2, pressure over
 * density), as in Guay's update u -= dt grad P. Boundary cells (outside the
 * domain walls) keep only their tangential velocity (Guay's "no-slip": the
 * normal component is zeroed); cells inside an obstacle lose the part of
 * their velocity relative to the obstacle that points into it. Every loop
 * is a gather over cells. */
#include "flip.h"

#include <math.h>
#include <string.h>

static inline float eos(float r, float k, float gamma, int tait, int g5)
{
    float q;
    r = r > 0.0f ? r : 0.0f; /* a ground below zero may subtract density */
    if (g5) {
        const float r2 = r * r;
        q = r2 * r2 * r;
    } else {
        q = powf(r, gamma);
    }
    if (tait) {
        q -= 1.0f;
        q = q > 0.0f ? q : 0.0f;
    }
    return k * q;
}

int flip_st_grid(const floe_stage_call *call)
{
    floe_ctx *ctx = call->ctx;
    flip_state *s = call->state;
    const floe_sim_info *si = flip_api->sim(ctx);
    int st;
    if (!s || !s->ready || !s->splat_done || s->splat_step != si->step)
        return flip_api->fail(ctx, FLOE_ERR_ARG, "no splat in this step (put 'flip.splat' before 'flip.grid')");
    const flip_geom *g = &s->g;
    const float gamma = (float)call->param[GP_GAMMA].f;
    const double c0 = call->param[GP_SPEED].f;
    const float k = call->param[GP_STIFFNESS].f > 0 ? (float)call->param[GP_STIFFNESS].f : (float)(c0 * c0 / gamma);
    const char *eos_name = call->param[GP_EOS].s ? call->param[GP_EOS].s : "guay";
    const int tait = !strcmp(eos_name, "tait");
    const int g5 = gamma == 5.0f;
    const double courant = call->param[GP_COURANT].f;
    const float friction = (float)call->param[GP_WALL_FRICTION].f;
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
            return flip_api->fail(ctx, FLOE_ERR_ARG, "no fluid set with a rest density > 0 (or set 'rest_density')");
    }
    s->rho0 = rho0;
    if ((st = flip_obstacle_grids(ctx, s, si->time, rho0, (float)call->param[GP_OBSTACLE].f)))
        return st;

    float *restrict rho = flip_grid_data(ctx, s->g_rho);
    float *restrict u = flip_grid_data(ctx, s->g_u);
    float *restrict u_old = flip_grid_data(ctx, s->g_u_old);
    float *restrict P = flip_grid_data(ctx, s->g_p);
    const float *restrict phi = flip_grid_data(ctx, s->g_phi);
    const float *restrict rho_obs = s->rho_obs;
    if (!rho || !u || !u_old || !P || !phi)
        return flip_api->fail(ctx, FLOE_ERR, "flip grids missing");

    const float rw = g->radius * g->h;
    const float sigma = g->dim == 2 ? (float)(4.0 / (M_PI * rw * rw)) : (float)(315.0 / (64.0 * M_PI * rw * rw * rw));
    const float inv_rho0 = 1.0f / rho0;
    const size_t cells = g->cells;
    const float *restrict aM = s->acc, *restrict aU = s->acc + cells, *restrict aV = s->acc + 2 * cells,
                          *restrict aW = s->acc + 3 * cells;
    float *restrict UO[3] = {s->uo, s->uo + cells, s->uo + 2 * cells};
    float *restrict UN[3] = {s->un, s->un + cells, s->un + 2 * cells};

    /* the active box; clear what the previous step's box left outside it */
    const flip_box B = s->box;
    const long nx = (long)g->n[0], ny = (long)g->n[1];
    const size_t sy = (size_t)nx, sz = (size_t)nx * (size_t)ny;
    const int dim = g->dim;
    if (s->box_prev_valid && memcmp(&s->box_prev, &B, sizeof B) != 0) {
        const flip_box O = s->box_prev;
        const long oy = O.hi[1] - O.lo[1] + 1, oz = O.hi[2] - O.lo[2] + 1;
#pragma omp parallel for schedule(static)
        for (long kk = 0; kk < (oy > 0 && oz > 0 ? oy * oz : 0); kk++) {
            const long k3 = O.lo[2] + kk / oy, j = O.lo[1] + kk % oy;
            for (long i = O.lo[0]; i <= O.hi[0]; i++) {
                if (flip_box_has(&B, i, j, k3))
                    continue;
                const size_t c = (size_t)i + (size_t)j * sy + (size_t)k3 * sz;
                rho[c] = P[c] = 0.0f;
                for (int a = 0; a < 3; a++)
                    u[3 * c + a] = u_old[3 * c + a] = 0.0f;
            }
        }
    }
    s->box_prev = B;
    s->box_prev_valid = 1;
    const long by = B.hi[1] - B.lo[1] + 1, bz = B.hi[2] - B.lo[2] + 1;
    const long brows = by > 0 && bz > 0 && B.hi[0] >= B.lo[0] ? by * bz : 0;

    long wall_lo[3], wall_hi[3]; /* cells i <= wall_lo or i >= wall_hi are outside the walls */
    for (int a = 0; a < 3; a++) {
        wall_lo[a] = a < dim ? (long)g->pad - 1 : 0;
        wall_hi[a] = (long)g->n[a] - 1;
        if (a < dim)
            while (wall_hi[a] > 1 && g->origin[a] + (float)(wall_hi[a] - 1) * g->h > g->hi[a])
                wall_hi[a]--;
    }

    /* pass 1: density, splatted velocity, pressure. Guay's boundary condition
     * applies to both velocity fields: the normal velocity is zero in the
     * boundary cells, before and after the update. (Zeroing it only after
     * would turn the mirrored splat velocity there into a FLIP increment that
     * pushes particles near a wall along their normal velocity: energy.) */
    float rmax = 0.0f;
#pragma omp parallel for schedule(static) reduction(max : rmax)
    for (long kk = 0; kk < brows; kk++) {
        const long k3 = B.lo[2] + kk / by, j = B.lo[1] + kk % by;
        for (long i = B.lo[0]; i <= B.hi[0]; i++) {
            const size_t c = (size_t)i + (size_t)j * sy + (size_t)k3 * sz;
            const float M = aM[c];
            const float r = sigma * M;
            const float inv = M > 0.0f ? 1.0f / M : 0.0f;
            rho[c] = r;
            float uo3[3] = {aU[c] * inv, aV[c] * inv, dim == 3 ? aW[c] * inv : 0.0f};
            const long ijk[3] = {i, j, k3};
            for (int a = 0; a < dim; a++)
                if (ijk[a] <= wall_lo[a] || ijk[a] >= wall_hi[a])
                    uo3[a] = 0.0f;
            for (int a = 0; a < 3; a++)
                u_old[3 * c + a] = UO[a][c] = uo3[a];
            const float rt = (r + rho_obs[c]) * inv_rho0;
            P[c] = eos(rt, k, gamma, tait, g5);
            if (M > 0.0f && rt > rmax)
                rmax = rt;
        }
    }

    /* obstacles placed at this step's time, for the velocity inside them */
    flip_posed ob[64];
    const int nob = flip_obstacles_pose(s, si->time, g->dim, ob, 64);

    /* pass 2: velocity update */
    const float gdt[3] = {dt * si->gravity[0], dt * si->gravity[1], g->dim == 3 ? dt * si->gravity[2] : 0.0f};
    const float cgrad = dt * 0.5f * g->inv_h;
    float cvisc = (float)(dt * call->param[GP_VISCOSITY].f) * g->inv_h * g->inv_h;
    if (cvisc > 1.0f / (2.0f * g->dim)) /* explicit diffusion limit: clamp (documented) */
        cvisc = 1.0f / (2.0f * g->dim);
    /* Cells with liquid lie within r of a particle, so never on the grid's
     * edge (the ghost layers are r + 1 deep): their neighbours exist. Per
     * row: the update of every cell (vectorised; cells without liquid get
     * 0), then the few cells that need more (viscosity, walls, obstacles). */
    const float fr1 = 1.0f - friction;
    const long i0 = B.lo[0] > 1 ? B.lo[0] : 1, i1 = B.hi[0] < nx - 2 ? B.hi[0] : nx - 2;
#pragma omp parallel for schedule(static)
    for (long kk = 0; kk < brows; kk++) {
        const long k3 = B.lo[2] + kk / by, j = B.lo[1] + kk % by;
        const size_t row = (size_t)j * sy + (size_t)k3 * sz;
        float *restrict n0 = UN[0] + row, *restrict n1 = UN[1] + row, *restrict n2 = UN[2] + row;
        const float *restrict o0 = UO[0] + row, *restrict o1 = UO[1] + row, *restrict o2 = UO[2] + row;
        const float *restrict Pr = P + row, *restrict Mr = aM + row;
        const int edge_row = j == 0 || j == ny - 1 || (dim == 3 && (k3 == 0 || k3 == (long)g->n[2] - 1));
        for (long i = B.lo[0]; i <= B.hi[0]; i++)
            if (edge_row || i < i0 || i > i1)
                n0[i] = n1[i] = n2[i] = 0.0f;
        if (!edge_row) {
            const float *restrict Pym = Pr - sy, *restrict Pyp = Pr + sy;
#pragma omp simd
            for (long i = i0; i <= i1; i++) {
                const float on = Mr[i] > 0.0f ? 1.0f : 0.0f;
                n0[i] = on * (o0[i] - cgrad * (Pr[i + 1] - Pr[i - 1]) + gdt[0]);
                n1[i] = on * (o1[i] - cgrad * (Pyp[i] - Pym[i]) + gdt[1]);
            }
            if (dim == 3) {
                const float *restrict Pzm = Pr - sz, *restrict Pzp = Pr + sz;
#pragma omp simd
                for (long i = i0; i <= i1; i++) {
                    const float on = Mr[i] > 0.0f ? 1.0f : 0.0f;
                    n2[i] = on * (o2[i] - cgrad * (Pzp[i] - Pzm[i]) + gdt[2]);
                }
            } else {
                for (long i = i0; i <= i1; i++)
                    n2[i] = 0.0f;
            }
        }
        if (cvisc > 0.0f && !edge_row) /* nu lap u, neighbours without liquid mirror the cell (no flux) */
            for (long i = i0; i <= i1; i++) {
                if (!(Mr[i] > 0.0f))
                    continue;
                const size_t c = row + (size_t)i;
                const size_t nb[6] = {c - 1, c + 1, c - sy, c + sy, c - sz, c + sz};
                float lap[3] = {0.0f, 0.0f, 0.0f};
                for (int q = 0; q < 2 * dim; q++) {
                    if (!(aM[nb[q]] > 0.0f))
                        continue;
                    for (int b = 0; b < 3; b++)
                        lap[b] += UO[b][nb[q]] - UO[b][c];
                }
                n0[i] += cvisc * lap[0];
                n1[i] += cvisc * lap[1];
                if (dim == 3)
                    n2[i] += cvisc * lap[2];
            }
        /* walls: zero the normal component, damp the tangential ones */
        const int wy = j <= wall_lo[1] || j >= wall_hi[1], wz = dim == 3 && (k3 <= wall_lo[2] || k3 >= wall_hi[2]);
        for (long i = B.lo[0]; i <= B.hi[0]; i++) {
            const int wx = i <= wall_lo[0] || i >= wall_hi[0];
            if (!(wx | wy | wz))
                continue;
            if (wx)
                n0[i] = 0.0f;
            else if (friction > 0.0f)
                n0[i] *= fr1;
            if (wy)
                n1[i] = 0.0f;
            else if (friction > 0.0f)
                n1[i] *= fr1;
            if (dim == 3) {
                if (wz)
                    n2[i] = 0.0f;
                else if (friction > 0.0f)
                    n2[i] *= fr1;
            }
        }
        /* inside an obstacle: no velocity into it, relative to its motion */
        if (nob > 0 && !edge_row)
            for (long i = i0; i <= i1; i++) {
                const size_t c = row + (size_t)i;
                if (!(phi[c] < 0.0f) || !(Mr[i] > 0.0f))
                    continue;
                const float xc[3] = {g->origin[0] + (float)i * g->h, g->origin[1] + (float)j * g->h,
                                     dim == 3 ? g->origin[2] + (float)k3 * g->h : 0.0f};
                int which = 0;
                (void)flip_sdf(ob, nob, dim, xc, &which);
                const size_t stride[3] = {1, sy, sz};
                float n[3] = {0.0f, 0.0f, 0.0f}, nn = 0.0f;
                for (int a = 0; a < dim; a++) {
                    n[a] = phi[c + stride[a]] - phi[c - stride[a]];
                    nn += n[a] * n[a];
                }
                if (nn > 0.0f) {
                    float vo[3], un[3] = {n0[i], n1[i], n2[i]};
                    flip_obstacle_velocity(&ob[which], xc, vo);
                    const float inv_n = 1.0f / sqrtf(nn);
                    float vn = 0.0f;
                    for (int a = 0; a < dim; a++) {
                        n[a] *= inv_n;
                        vn += (un[a] - vo[a]) * n[a];
                    }
                    if (vn < 0.0f) {
                        n0[i] -= vn * n[0];
                        n1[i] -= vn * n[1];
                        n2[i] -= vn * n[2];
                    }
                }
            }
        float *restrict ua = u + 3 * row;
        for (long i = B.lo[0]; i <= B.hi[0]; i++) {
            ua[3 * i] = n0[i];
            ua[3 * i + 1] = n1[i];
            ua[3 * i + 2] = n2[i];
        }
    }

    /* acoustic time step limit: c^2 = dP/d(rho/rho0) = k gamma (rho/rho0)^(gamma-1) */
    if (courant > 0.0) {
        const double r = rmax > 1.0f ? rmax : 1.0;
        const double c = sqrt((double)k * gamma * pow(r, gamma - 1.0));
        if (c > 0.0)
            flip_api->dt_limit(ctx, courant * g->h / c);
    }
    flip_api->stat(ctx, "flip.max_density_ratio", rmax);
    s->grid_step = si->step;
    s->grid_done = 1;
    return FLOE_OK;
}
