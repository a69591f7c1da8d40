/* The flip module on the device (Guay 2013 grid-splat PIC/FLIP): the same
 * equations and arithmetic as the C path in modules/flip/{splat,grid_pass,
 * advect}.c; host glue in modules/flip/flip_cl.c, docs/flip.md ("The OpenCL
 * path").
 *
 * A step is five launches: splat (per particle), grid_density and
 * grid_velocity (per cell), filter (per cell, sampling = smooth) and advect
 * (per particle); in 2D with many particles a cell, the splat is two:
 * splat_bin (per particle) and splat_gather (per cell and row of cells).
 *
 * Splatting is a scatter onto the grid. It adds 64-bit fixed-point integers
 * with atom_add (cl_khr_int64_base_atomics): integer addition is
 * associative, so the sums do not depend on the order the work items run
 * in, and the device path is deterministic (bit-identical from run to run).
 * One unit is 1/scale kg (scale = 2^32 / nominal particle mass, a power of
 * two, so each float contribution m w (or m w u) is scaled exactly and
 * rounded once to the nearest unit).
 *
 * Geometry arguments (flip_geom): gn = (n0, n1, n2, dim), go = (origin, h),
 * glo = (domain_min, 1/h), ghi = (domain_max, radius in cells),
 * gp = (pad, fold bits, chunks, 0), gm = (interior cells per axis, 0). */
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL FP_CONTRACT OFF

/* rows of a work group of grid_density whose liquid range is gathered in
 * local memory (further rows: global atomics) */
#define FLIP_ROWS_LOCAL 8

#include "flip/obstacles.h"

#define FLIP_LANES 8
#define FLIP_FTAB 512
#define FLIP_FAR 1e9f

/* ---- splat -------------------------------------------------------------- */

/* one term in fixed-point units (the splat's and the gather's rounding) */
inline long to_fixed(float v, float scale) { return convert_long_rte(v * scale); }

inline void add_fixed(__global long *p, float v, float scale)
{
    const long q = to_fixed(v, scale);
    if (q != 0)
        atom_add((volatile __global long *)p, q);
}

/* the cells c of [0, n) with ceil(f - r) <= c <= floor(f + r): a kernel's rows or planes */
inline void cell_range(float f, float r, int n, int *c0, int *c1)
{
    const int a = (int)ceil(f - r), b = (int)floor(f + r);
    *c0 = a < 0 ? 0 : a;
    *c1 = b > n - 1 ? n - 1 : b;
}

/* q = a - dx^2 / R^2 of a cell dx from the particle along x, a = 1 - (dy^2 + dz^2) / R^2; the weight m q^3 */
inline float splat_q(float a, float dx, float invR2) { return a - dx * dx * invR2; }
inline float splat_w(float m, float q) { return m * q * q * q; }

/* axis k of a particle at x: bit 1 (2) where the low (high) wall is not folded and x is within rw of it
 * (the particle splats a mirror image there) */
inline int wall_images(int k, float x, int fold, float lo, float hi, float rw)
{
    return (!(fold & (1 << (2 * k))) && x - lo < rw ? 1 : 0) | (!(fold & (2 << (2 * k))) && hi - x < rw ? 2 : 0);
}

/* first cell of a row window of `chunks` x 8 cells covering [f - R, f + R] (splat.c) */
inline int window_start(float f, float R, int n, int chunks)
{
    int i0 = (int)floor(f - R);
    const int last = n - chunks * FLIP_LANES;
    i0 = i0 > last ? last : i0;
    return i0 < 0 ? 0 : i0;
}

/* One kernel row: the cells i0 .. i0 + 8 chunks - 1 with q = a - dx^2/R^2 > 0 */
inline void splat_row(__global long *acc, uint cells, int row, int i0, int lanes, float base, float invR2, float a,
                      float m, float vx, float vy, float vz, int dim3, float scale)
{
    for (int l = 0; l < lanes; l++) {
        const float q = splat_q(a, base + (float)l, invR2);
        if (!(q > 0.0f))
            continue;
        const float w = splat_w(m, q);
        __global long *c = acc + row + i0 + l;
        add_fixed(c, w, scale);
        add_fixed(c + cells, w * vx, scale);
        add_fixed(c + 2 * cells, w * vy, scale);
        if (dim3)
            add_fixed(c + 3 * cells, w * vz, scale);
    }
}

inline void splat_one(__global long *acc, uint cells, int4 gn, float4 go, float4 glo, float4 ghi, int chunks,
                      float invR2, const float *xp, const float *vp, float m, float scale)
{
    const float R = ghi.w, R2 = R * R;
    const float fx = (xp[0] - go.x) * glo.w, fy = (xp[1] - go.y) * glo.w;
    const int nx = gn.x, ny = gn.y, nz = gn.z;
    const int i0 = window_start(fx, R, nx, chunks);
    const float base = (float)i0 - fx;
    const int lanes = chunks * FLIP_LANES;
    if (gn.w == 2) {
        int j0, j1;
        cell_range(fy, R, ny, &j0, &j1);
        for (int j = j0; j <= j1; j++) {
            const float dy = (float)j - fy;
            if (dy * dy >= R2)
                continue;
            splat_row(acc, cells, j * nx, i0, lanes, base, invR2, 1.0f - dy * dy * invR2, m, vp[0], vp[1], 0.0f, 0,
                      scale);
        }
        return;
    }
    const float fz = (xp[2] - go.z) * glo.w;
    int k0, k1;
    cell_range(fz, R, nz, &k0, &k1);
    for (int k = k0; k <= k1; k++) {
        const float dz = (float)k - fz, remz = R2 - dz * dz;
        if (remz <= 0.0f)
            continue;
        int j0, j1;
        cell_range(fy, sqrt(remz), ny, &j0, &j1);
        for (int j = j0; j <= j1; j++) {
            const float dy = (float)j - fy, dyz2 = dy * dy + dz * dz;
            if (dyz2 >= R2)
                continue;
            splat_row(acc, cells, (k * ny + j) * nx, i0, lanes, base, invR2, 1.0f - dyz2 * invR2, m, vp[0], vp[1],
                      vp[2], 1, scale);
        }
    }
}

/* Every particle adds m w and m w u to the cells within r; near a wall that
 * is not a cell face, its mirror images too (walls on cell faces are folded
 * by grid_density). acc: 4 planes of `cells` fixed-point sums. */
inline void splat_particle(__global long *acc, uint cells, int4 gn, float4 go, float4 glo, float4 ghi, int4 gp,
                           float invR2, float scale, const float *xi, const float *vi, float mi)
{
    const int dim = gn.w, fold = gp.y, chunks = gp.z;
    const float rw = ghi.w * go.w;
    const float lo[3] = {glo.x, glo.y, glo.z}, hi[3] = {ghi.x, ghi.y, ghi.z};
    int nc[3] = {1, 1, 1}, ch[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}, images = 0;
    for (int k = 0; k < dim; k++) {
        const int wi = wall_images(k, xi[k], fold, lo[k], hi[k], rw);
        if (wi & 1)
            ch[k][nc[k]++] = 1;
        if (wi & 2)
            ch[k][nc[k]++] = 2;
        images |= wi;
    }
    if (!images) {
        splat_one(acc, cells, gn, go, glo, ghi, chunks, invR2, xi, vi, mi, scale);
        return;
    }
    for (int c2 = 0; c2 < nc[2]; c2++)
        for (int c1 = 0; c1 < nc[1]; c1++)
            for (int c0 = 0; c0 < nc[0]; c0++) {
                const int sel[3] = {ch[0][c0], ch[1][c1], ch[2][c2]};
                float xp[3] = {xi[0], xi[1], xi[2]}, vp[3] = {vi[0], vi[1], vi[2]};
                for (int k = 0; k < dim; k++) {
                    if (sel[k] == 1) {
                        xp[k] = 2.0f * lo[k] - xi[k];
                        vp[k] = -vi[k];
                    } else if (sel[k] == 2) {
                        xp[k] = 2.0f * hi[k] - xi[k];
                        vp[k] = -vi[k];
                    }
                }
                splat_one(acc, cells, gn, go, glo, ghi, chunks, invR2, xp, vp, mi, scale);
            }
}

__kernel void splat(uint n, __global const float *x, __global const float *v, __global const float *m,
                    __global long *acc, uint cells, int4 gn, float4 go, float4 glo, float4 ghi, int4 gp, float invR2,
                    float scale)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float xi[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]}, vi[3] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
    splat_particle(acc, cells, gn, go, glo, ghi, gp, invR2, scale, xi, vi, m[i]);
}

/* ---- the splat as a gather (2D) ----------------------------------------------
 * The same sums as `splat` with far fewer global atomics: splat_bin files
 * each particle under the cell its position falls in (one atomic_inc a
 * particle, at most FLIP_BIN_CAP a cell), then splat_gather sums, per cell,
 * the terms of the particles filed within its reach, a row of cells at a
 * time, and adds them to the accumulator with one atomic a row and plane.
 * Every term is the splat's fixed-point integer (the same floats in the
 * same order, rounded the same way), and integer sums do not depend on
 * their order, so the accumulators are the splat's to the bit.
 * A particle that splats mirror images, lies outside the grid or finds its
 * cell full is splatted by splat_bin itself, with the atomics of `splat`. */
#define FLIP_BIN_CAP 16

/* slot t of cell c: (fx, fy, m, v_x) at rec[t cells + c] and (v_y, window
 * start as int bits) at recb[t cells + c], so that neighbouring cells'
 * slots are neighbours in memory (the gather's loads coalesce) */
__kernel void splat_bin(uint n, __global const float *x, __global const float *v, __global const float *m,
                        __global long *acc, uint cells, int4 gn, float4 go, float4 glo, float4 ghi, int4 gp,
                        float invR2, float scale, __global int *cnt, __global float4 *rec, __global float2 *recb)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const int fold = gp.y, nx = gn.x, ny = gn.y;
    const float xi[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]}, vi[3] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
    const float mi = m[i], rw = ghi.w * go.w;
    const int images = wall_images(0, xi[0], fold, glo.x, ghi.x, rw) | wall_images(1, xi[1], fold, glo.y, ghi.y, rw);
    const float fx = (xi[0] - go.x) * glo.w, fy = (xi[1] - go.y) * glo.w; /* as splat_one */
    int c = 0, slot = FLIP_BIN_CAP;
    if (!images && fx >= 0.0f && fx < (float)nx && fy >= 0.0f && fy < (float)ny) {
        c = (int)floor(fy) * nx + (int)floor(fx);
        slot = (int)atomic_inc(cnt + c);
    }
    if (slot < FLIP_BIN_CAP) {
        const size_t r = (size_t)slot * cells + (size_t)c;
        rec[r] = (float4)(fx, fy, mi, vi[0]);
        recb[r] = (float2)(vi[1], as_float(window_start(fx, ghi.w, nx, gp.z)));
        return;
    }
    splat_particle(acc, cells, gn, go, glo, ghi, gp, invR2, scale, xi, vi, mi);
}

/* Per cell (i, j) and row of cells by: the terms splat_row would add to
 * (i, j) from the particles filed in that row within reach, added with one
 * atomic a plane (work item r cells + c: row r of cell c's 2 ceil(R) rows,
 * so a cell's rows run side by side). Rows and reach: with S = ceil(R), a
 * term needs j - R <= fy <= j + R (splat_one's rows), so floor(fy) in
 * [j - S, j + S - 1]; and q > 0, so |i - fx| < R unless S^2 / R^2 rounds
 * below 1 (e (1) then widens the reach by a cell each side), so floor(fx)
 * in [i - S - e, i + S - 1 + e]. Row 0 clears cnt_next (the next step's
 * counts). */
__kernel void splat_gather(uint cells, int4 gn, float4 ghi, int4 gp, float invR2, float scale,
                           __global const int *cnt, __global int *cnt_next, __global const float4 *rec,
                           __global const float2 *recb, __global long *acc)
{
    const uint gid = get_global_id(0), c = gid % cells;
    const float R = ghi.w, R2 = R * R;
    const int S = (int)ceil(R), r = (int)(gid / cells);
    if (r >= 2 * S)
        return;
    if (r == 0)
        cnt_next[c] = 0;
    const int nx = gn.x, ny = gn.y, i = (int)(c % (uint)nx), j = (int)(c / (uint)nx), by = j - S + r;
    if (by < 0 || by >= ny)
        return;
    const int lanes = gp.z * FLIP_LANES, e = (float)(S * S) * invR2 >= 1.0f ? 0 : 1;
    const int bx0 = max(i - S - e, 0), bx1 = min(i + S - 1 + e, nx - 1);
    long s0 = 0, s1 = 0, s2 = 0;
    for (int bx = bx0; bx <= bx1; bx++) {
        const int b = by * nx + bx, k = min(cnt[b], FLIP_BIN_CAP);
        for (int t = 0; t < k; t++) {
            const float4 A = rec[(size_t)t * cells + (size_t)b];
            const float fy = A.y; /* splat_one's row range and test */
            int j0, j1;
            cell_range(fy, R, ny, &j0, &j1);
            const float dy = (float)j - fy;
            if (j < j0 || j > j1 || dy * dy >= R2)
                continue;
            const float2 B = recb[(size_t)t * cells + (size_t)b];
            const int i0 = as_int(B.y), l = i - i0;
            if (l < 0 || l >= lanes)
                continue;
            const float a = 1.0f - dy * dy * invR2; /* splat_row's lane l */
            const float q = splat_q(a, ((float)i0 - A.x) + (float)l, invR2);
            if (!(q > 0.0f))
                continue;
            const float w = splat_w(A.z, q);
            s0 += to_fixed(w, scale);
            s1 += to_fixed(w * A.w, scale);
            s2 += to_fixed(w * B.x, scale);
        }
    }
    if (s0 != 0)
        atom_add((volatile __global long *)(acc + c), s0);
    if (s1 != 0)
        atom_add((volatile __global long *)(acc + c + cells), s1);
    if (s2 != 0)
        atom_add((volatile __global long *)(acc + c + 2 * (size_t)cells), s2);
}

/* ---- grid pass ------------------------------------------------------------ */

/* Along one axis: the interior index a ghost cell mirrors onto (walls on
 * cell faces), and the ghost partner of an interior cell near such a wall
 * (-1: none). As fold_walls in splat.c: layer l of the ghosts pairs with
 * interior layer l. */
inline int fold_mirror(int idx, int k, int pad, int m, int fold, int *flipped)
{
    *flipped = 0;
    if ((fold & (1 << (2 * k))) && idx < pad) {
        *flipped = 1;
        return 2 * pad - 1 - idx;
    }
    if ((fold & (2 << (2 * k))) && idx >= pad + m) {
        *flipped = 1;
        return 2 * (pad + m) - 1 - idx;
    }
    return idx;
}

inline int fold_partner(int idx, int k, int pad, int m, int fold)
{
    if ((fold & (1 << (2 * k))) && idx >= pad && idx < 2 * pad)
        return 2 * pad - 1 - idx;
    if ((fold & (2 << (2 * k))) && idx >= m && idx < pad + m)
        return 2 * (pad + m) - 1 - idx;
    return -1;
}

inline float eos(float r, float k, float gamma, int tait, int g5)
{
    float q;
    r = r > 0.0f ? r : 0.0f;
    if (g5) {
        const float r2 = r * r;
        q = r2 * r2 * r;
    } else {
        q = pow(r, gamma);
    }
    if (tait) {
        q -= 1.0f;
        q = q > 0.0f ? q : 0.0f;
    }
    return k * q;
}

inline float ftab_at(__global const float *ftab, float sd)
{
    if (sd <= -1.0f)
        return 1.0f;
    if (sd >= 1.0f)
        return 0.0f;
    const float f = (sd + 1.0f) * 0.5f * FLIP_FTAB;
    int j = (int)f;
    if (j >= FLIP_FTAB)
        j = FLIP_FTAB - 1;
    const float t = f - (float)j;
    return (1.0f - t) * ftab[j] + t * ftab[j + 1];
}

/* Pass 1, per cell: the folded sums -> M, rho = sigma M, u^n (normal
 * velocity zero in boundary cells), phi (static grid and the moving
 * obstacles, over their boxes), rho_obstacle, P; the largest density ratio
 * of cells with liquid (atomic max on the bits of a positive float); and
 * clears this cell of the other accumulator (the next step's); and per
 * grid row the first and last cell with liquid that particles can read
 * (the filter's ranges). The work of one cell, returning whether it holds
 * liquid (M > 0): */
inline int grid_density_cell(uint c, uint cells, int4 gn, int4 gp, int4 gm, float4 go, __global const long *acc,
                             __global long *acc_next, __global float *Mg, __global float *rho, __global float *uold,
                             __global float *P, __global float *phi, __global const float *phis,
                             __global const float *rg, int has_static, int has_ground, __global const float *ob,
                             int nob, int ball0, __global const float *ftab, float4 eosp, int4 eosm, float4 obp,
                             int4 wlo, int4 whi, float inv_scale, __global int *ctrl, int slot, int next)
{
    if (c == 0) { /* the next grid pass's words (ctrl: 2 words a step, a ring) */
        ctrl[2 * next] = 0;
        ctrl[2 * next + 1] = 0;
    }
    const int dim = gn.w, nx = gn.x, ny = gn.y, pad = gp.x, fold = gp.y;
    const int ijk[3] = {(int)(c % (uint)nx), (int)((c / (uint)nx) % (uint)ny), (int)(c / ((uint)nx * (uint)ny))};
    const int mm[3] = {gm.x, gm.y, gm.z};
    const int stride[3] = {1, nx, nx * ny};
    /* the interior cell this one mirrors, the sign flips per axis, and the
     * offsets to the ghost partners of that interior cell */
    int base = 0, flip[3] = {0, 0, 0}, has[3] = {0, 0, 0}, off_a[3] = {0, 0, 0};
    for (int a = 0; a < 3; a++) {
        int idx = ijk[a];
        if (a < dim) {
            idx = fold_mirror(idx, a, pad, mm[a], fold, &flip[a]);
            const int pa = fold_partner(idx, a, pad, mm[a], fold);
            if (pa >= 0) {
                has[a] = 1;
                off_a[a] = (pa - idx) * stride[a];
            }
        }
        base += idx * stride[a];
    }
    long s[4] = {0, 0, 0, 0};
    const int planes = dim == 3 ? 4 : 3;
    for (int comb = 0; comb < 8; comb++) {
        int off = 0, ok = 1;
        int sg[3] = {1, 1, 1};
        for (int a = 0; a < 3; a++)
            if (comb & (1 << a)) {
                ok &= has[a];
                off += off_a[a];
                sg[a] = -1;
            }
        if (!ok)
            continue;
        const uint cc = (uint)(base + off);
        s[0] += acc[cc];
        for (int q = 1; q < planes; q++)
            s[q] += sg[q - 1] < 0 ? -acc[cc + (uint)q * cells] : acc[cc + (uint)q * cells];
    }
    for (int q = 1; q < 4; q++)
        if (q - 1 < 3 && flip[q - 1])
            s[q] = -s[q];
    for (int q = 0; q < 4; q++)
        acc_next[c + (uint)q * cells] = 0;

    const float M = convert_float(s[0]) * inv_scale;
    const float r = eosp.w * M; /* sigma M */
    const float inv = M > 0.0f ? 1.0f / M : 0.0f;
    Mg[c] = M;
    rho[c] = r;
    float uo3[3] = {convert_float(s[1]) * inv_scale * inv, convert_float(s[2]) * inv_scale * inv,
                    dim == 3 ? convert_float(s[3]) * inv_scale * inv : 0.0f};
    const int wl[3] = {wlo.x, wlo.y, wlo.z}, wh[3] = {whi.x, whi.y, whi.z};
    for (int a = 0; a < dim; a++)
        if (ijk[a] <= wl[a] || ijk[a] >= wh[a])
            uo3[a] = 0.0f;
    for (int a = 0; a < 3; a++)
        uold[3 * c + a] = uo3[a];

    /* obstacle distance and density */
    float ph = has_static ? phis[c] : FLIP_FAR;
    if (nob > 0) {
        const float xc[3] = {go.x + (float)ijk[0] * go.w, go.y + (float)ijk[1] * go.w,
                             dim == 3 ? go.z + (float)ijk[2] * go.w : 0.0f};
        __global const float *balls = ob + ball0;
        for (int o = 0; o < nob; o++) {
            __global const float *p = ob + FLIP_OB_STRIDE * o;
            if (p[OB_MOVING] == 0.0f)
                continue;
            int in = 1;
            for (int a = 0; a < 3; a++)
                in &= ijk[a] >= (int)p[OB_CLO + a] && ijk[a] <= (int)p[OB_CHI + a];
            if (!in)
                continue;
            const float d = ob_sdf(p, balls, dim, xc);
            if (d < ph)
                ph = d;
        }
    }
    phi[c] = ph;
    /* eosp = (k, gamma, 1/rho0, sigma), eosm = (tait, gamma == 5), obp = (rw, 1/rw, obstacle_density rho0) */
    float rho_obs = ph < obp.x ? obp.z * ftab_at(ftab, ph * obp.y) : 0.0f;
    if (has_ground)
        rho_obs += rg[c];
    const float rt = (r + rho_obs) * eosp.z;
    P[c] = eos(rt, eosp.x, eosp.y, eosm.x, eosm.y);
    if (M > 0.0f && rt > 0.0f)
        atomic_max(ctrl + 2 * slot, as_int(rt));
    return M > 0.0f;
}

__kernel void grid_density(uint cells, int4 gn, int4 gp, int4 gm, float4 go, __global const long *acc,
                           __global long *acc_next, __global float *Mg, __global float *rho, __global float *uold,
                           __global float *P, __global float *phi, __global const float *phis, __global const float *rg,
                           int has_static, int has_ground, __global const float *ob, int nob, int ball0,
                           __global const float *ftab, float4 eosp, int4 eosm, float4 obp, int4 wlo, int4 whi,
                           float inv_scale, __global int *ctrl, int slot, int next, __global int *rows, int par)
{
    const uint c = get_global_id(0);
    /* the filter's row ranges (rows: per parity and row, the first and the
     * last cell with liquid in the readable range): gathered per group in
     * local memory for the group's first FLIP_ROWS_LOCAL rows */
    __local int la[FLIP_ROWS_LOCAL], lb[FLIP_ROWS_LOCAL];
    const int lid = (int)get_local_id(0), nrows = gn.y * (gn.w == 3 ? gn.z : 1);
    const uint g0 = (uint)get_group_id(0) * (uint)get_local_size(0);
    const int row0 = (int)(g0 / (uint)gn.x);
    if (lid < FLIP_ROWS_LOCAL) {
        la[lid] = 0x7fffffff;
        lb[lid] = -1;
    }
    if ((int)c < nrows) { /* the next grid pass's ranges */
        rows[2 * ((1 - par) * nrows + (int)c)] = 0x7fffffff;
        rows[2 * ((1 - par) * nrows + (int)c) + 1] = -1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (c < cells && grid_density_cell(c, cells, gn, gp, gm, go, acc, acc_next, Mg, rho, uold, P, phi, phis, rg,
                                       has_static, has_ground, ob, nob, ball0, ftab, eosp, eosm, obp, wlo, whi,
                                       inv_scale, ctrl, slot, next)) {
        const int i = (int)(c % (uint)gn.x), r = (int)(c / (uint)gn.x);
        if (i >= gp.x - 1 && i <= gn.x - gp.x) {
            if (r - row0 < FLIP_ROWS_LOCAL) {
                atomic_min(&la[r - row0], i);
                atomic_max(&lb[r - row0], i);
            } else {
                atomic_min(rows + 2 * (par * nrows + r), i);
                atomic_max(rows + 2 * (par * nrows + r) + 1, i);
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < FLIP_ROWS_LOCAL && lb[lid] >= 0) {
        const int r = row0 + lid;
        atomic_min(rows + 2 * (par * nrows + r), la[lid]);
        atomic_max(rows + 2 * (par * nrows + r) + 1, lb[lid]);
    }
}

/* Pass 2, per cell: u^n+1 = u^n - dt grad P + dt g (+ dt nu lap u^n) on
 * cells with liquid, walls (normal component zero, friction), obstacles (no
 * velocity into them relative to their motion). vp = (cgrad, cvisc,
 * friction, 0), gdt = dt g. */
__kernel void grid_velocity(uint cells, int4 gn, float4 go, __global const float *Mg, __global const float *uold,
                            __global const float *P, __global const float *phi, __global float *u, float4 vp,
                            float4 gdt, int4 wlo, int4 whi, __global const float *ob, int nob, int ball0)
{
    const uint c = get_global_id(0);
    if (c >= cells)
        return;
    const int dim = gn.w, nx = gn.x, ny = gn.y, nz = gn.z;
    const int i = (int)(c % (uint)nx), j = (int)((c / (uint)nx) % (uint)ny), k3 = (int)(c / ((uint)nx * (uint)ny));
    const uint sy = (uint)nx, sz = (uint)nx * (uint)ny;
    const int edge_row = j == 0 || j == ny - 1 || (dim == 3 && (k3 == 0 || k3 == nz - 1));
    const int inner = !edge_row && i >= 1 && i <= nx - 2;
    float n0 = 0.0f, n1 = 0.0f, n2 = 0.0f;
    const float cgrad = vp.x, cvisc = vp.y, friction = vp.z;
    const int liquid = Mg[c] > 0.0f;
    if (inner) {
        const float on = liquid ? 1.0f : 0.0f;
        n0 = on * (uold[3 * c] - cgrad * (P[c + 1] - P[c - 1]) + gdt.x);
        n1 = on * (uold[3 * c + 1] - cgrad * (P[c + sy] - P[c - sy]) + gdt.y);
        if (dim == 3)
            n2 = on * (uold[3 * c + 2] - cgrad * (P[c + sz] - P[c - sz]) + gdt.z);
        if (cvisc > 0.0f && liquid) {
            const uint nb[6] = {c - 1, c + 1, c - sy, c + sy, c - sz, c + sz};
            float lap[3] = {0.0f, 0.0f, 0.0f};
            for (int q = 0; q < 2 * dim; q++) {
                if (!(Mg[nb[q]] > 0.0f))
                    continue;
                for (int b = 0; b < 3; b++)
                    lap[b] += uold[3 * nb[q] + b] - uold[3 * c + b];
            }
            n0 += cvisc * lap[0];
            n1 += cvisc * lap[1];
            if (dim == 3)
                n2 += cvisc * lap[2];
        }
    }
    const int wx = i <= wlo.x || i >= whi.x, wy = j <= wlo.y || j >= whi.y,
              wz = dim == 3 && (k3 <= wlo.z || k3 >= whi.z);
    if (wx | wy | wz) {
        const float fr1 = 1.0f - friction;
        if (wx)
            n0 = 0.0f;
        else if (friction > 0.0f)
            n0 *= fr1;
        if (wy)
            n1 = 0.0f;
        else if (friction > 0.0f)
            n1 *= fr1;
        if (dim == 3) {
            if (wz)
                n2 = 0.0f;
            else if (friction > 0.0f)
                n2 *= fr1;
        }
    }
    if (nob > 0 && inner && phi[c] < 0.0f && liquid) {
        const float xc[3] = {go.x + (float)i * go.w, go.y + (float)j * go.w, dim == 3 ? go.z + (float)k3 * go.w : 0.0f};
        __global const float *balls = ob + ball0;
        int which = 0;
        (void)ob_sdf_all(ob, nob, balls, dim, xc, &which);
        const uint st[3] = {1, sy, sz};
        float nrm[3] = {0.0f, 0.0f, 0.0f}, nn = 0.0f;
        for (int a = 0; a < dim; a++) {
            nrm[a] = phi[c + st[a]] - phi[c - st[a]];
            nn += nrm[a] * nrm[a];
        }
        if (nn > 0.0f) {
            float vo[3];
            const float un[3] = {n0, n1, n2};
            ob_velocity(ob + FLIP_OB_STRIDE * which, xc, vo);
            const float inv_n = 1.0f / sqrt(nn);
            float vn = 0.0f;
            for (int a = 0; a < dim; a++) {
                nrm[a] *= inv_n;
                vn += (un[a] - vo[a]) * nrm[a];
            }
            if (vn < 0.0f) {
                n0 -= vn * nrm[0];
                n1 -= vn * nrm[1];
                n2 -= vn * nrm[2];
            }
        }
    }
    u[3 * c] = n0;
    u[3 * c + 1] = n1;
    u[3 * c + 2] = n2;
}

/* ---- sampling = smooth: the kernel filter --------------------------------- */

/* One work item per cell: u^n+1 and u^n+1 - u^n filtered with the
 * normalised splat kernel (taps in the order of advect.c), over the cells
 * particles can read, between the first and the last cell with liquid of
 * the row (grid_density's ranges of parity par; zero elsewhere). rd = (p0,
 * Ri, 0, 0): the readable range starts p0 = pad - 1 cells from each edge;
 * R2 and the tap normalisation inv. */
__kernel void filter(int4 gn, int4 rd, float R2, float inv, __global const int *rows, int par,
                     __global const float *un, __global const float *uo, __global float *sn, __global float *sd)
{
    const int dim = gn.w, nx = gn.x, ny = gn.y, nz = gn.z;
    const int nrows = ny * (dim == 3 ? nz : 1);
    const uint c = get_global_id(0);
    if (c >= (uint)nx * (uint)nrows)
        return;
    const int i = (int)(c % (uint)nx), row = (int)(c / (uint)nx);
    const int j = row % ny, k = row / ny;
    const int p0 = rd.x, Ri = rd.y;
    const int ilo = p0, ihi = nx - 1 - p0;
    const int rowok = j >= p0 && j <= ny - 1 - p0 && (dim == 2 || (k >= p0 && k <= nz - 1 - p0));
    const int a = rows[2 * (par * nrows + row)], b = rows[2 * (par * nrows + row) + 1];
    const int dz0 = dim == 3 ? -Ri : 0, dz1 = dim == 3 ? Ri : 0;
    float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, d0 = 0.0f, d1 = 0.0f, d2 = 0.0f;
    if (rowok && i >= ilo && i <= ihi && i >= a && i <= b) {
        for (int dz = dz0; dz <= dz1; dz++)
            for (int dy = -Ri; dy <= Ri; dy++)
                for (int dx = -Ri; dx <= Ri; dx++) {
                    const float q = 1.0f - (float)(dx * dx + dy * dy + dz * dz) / R2;
                    if (q <= 0.0f)
                        continue;
                    const float w = q * q * q * inv;
                    const size_t src =
                        3 * (((size_t)(k + dz) * (size_t)ny + (size_t)(j + dy)) * (size_t)nx + (size_t)(i + dx));
                    const float n0 = un[src], n1 = un[src + 1], o0 = uo[src], o1 = uo[src + 1];
                    t0 += w * n0;
                    t1 += w * n1;
                    d0 += w * (n0 - o0);
                    d1 += w * (n1 - o1);
                    if (dim == 3) {
                        const float n2 = un[src + 2], o2 = uo[src + 2];
                        t2 += w * n2;
                        d2 += w * (n2 - o2);
                    }
                }
    }
    sn[3 * c] = t0, sn[3 * c + 1] = t1, sn[3 * c + 2] = t2;
    sd[3 * c] = d0, sd[3 * c + 1] = d1, sd[3 * c + 2] = d2;
}

/* ---- advect --------------------------------------------------------------- */

typedef struct stencil {
    size_t c0, sy, sz;
    float t[3];
} stencil;

inline stencil stencil_at(int4 gn, float4 go, float inv_h, const float *x)
{
    stencil st;
    size_t idx[3] = {0, 0, 0};
    const float o[3] = {go.x, go.y, go.z};
    const int n[3] = {gn.x, gn.y, gn.z};
    st.t[2] = 0.0f;
    for (int k = 0; k < gn.w; k++) {
        const float f = (x[k] - o[k]) * inv_h;
        const float fl = floor(f);
        int i = (int)fl;
        float t = f - fl;
        if (i < 0) {
            i = 0;
            t = 0.0f;
        } else if (i > n[k] - 2) {
            i = n[k] - 2;
            t = 1.0f;
        }
        idx[k] = (size_t)i;
        st.t[k] = t;
    }
    st.sy = (size_t)n[0];
    st.sz = (size_t)n[0] * (size_t)n[1];
    st.c0 = idx[0] + idx[1] * st.sy + idx[2] * st.sz;
    return st;
}

inline void sample_vec(int dim, const stencil *st, __global const float *grid, float *out)
{
    const float tx = st->t[0], ty = st->t[1], tz = st->t[2];
    __global const float *a = grid + 3 * st->c0, *b = a + 3 * st->sy;
    for (int k = 0; k < 3; k++)
        out[k] = (1.0f - ty) * ((1.0f - tx) * a[k] + tx * a[3 + k]) + ty * ((1.0f - tx) * b[k] + tx * b[3 + k]);
    if (dim == 3) {
        __global const float *c = a + 3 * st->sz, *d = c + 3 * st->sy;
        for (int k = 0; k < 3; k++) {
            const float hi = (1.0f - ty) * ((1.0f - tx) * c[k] + tx * c[3 + k]) + ty * ((1.0f - tx) * d[k] + tx * d[3 + k]);
            out[k] = (1.0f - tz) * out[k] + tz * hi;
        }
    }
}

/* sampling = kernel: u(x) = sum_c w u_c / sum_c w with the splat kernel, lanes
 * summed as in advect.c (gather) */
inline void gather(int4 gn, float4 go, float inv_h, float R, int chunks, const float *x, __global const float *A,
                   __global const float *B, int withB, float *ra, float *rb)
{
    const float R2 = R * R, invR2 = 1.0f / R2;
    const int dim = gn.w, nx = gn.x, ny = gn.y, nz = gn.z;
    const float fx = (x[0] - go.x) * inv_h, fy = (x[1] - go.y) * inv_h;
    const float fz = dim == 3 ? (x[2] - go.z) * inv_h : 0.0f;
    const int i0 = window_start(fx, R, nx, chunks);
    const float base = (float)i0 - fx;
    float sw[FLIP_LANES], s0[FLIP_LANES], s1[FLIP_LANES], s2[FLIP_LANES], t0[FLIP_LANES], t1[FLIP_LANES],
        t2[FLIP_LANES];
    for (int l = 0; l < FLIP_LANES; l++)
        sw[l] = s0[l] = s1[l] = s2[l] = t0[l] = t1[l] = t2[l] = 0.0f;
    int k0 = 0, k1 = 0;
    if (dim == 3) {
        k0 = (int)ceil(fz - R);
        k1 = (int)floor(fz + R);
        k0 = k0 < 0 ? 0 : k0;
        k1 = k1 > nz - 1 ? nz - 1 : k1;
    }
    for (int k = k0; k <= k1; k++) {
        const float dz = dim == 3 ? (float)k - fz : 0.0f;
        int j0 = (int)ceil(fy - R), j1 = (int)floor(fy + R);
        j0 = j0 < 0 ? 0 : j0;
        j1 = j1 > ny - 1 ? ny - 1 : j1;
        for (int j = j0; j <= j1; j++) {
            const float dy = (float)j - fy, dyz2 = dy * dy + dz * dz;
            if (dyz2 >= R2)
                continue;
            const size_t row = ((size_t)k * (size_t)ny + (size_t)j) * (size_t)nx;
            const float ar = 1.0f - dyz2 * invR2;
            for (int ch = 0; ch < chunks; ch++)
                for (int l = 0; l < FLIP_LANES; l++) {
                    const float dx = base + (float)(FLIP_LANES * ch + l);
                    float q = ar - dx * dx * invR2;
                    q = 0.5f * (q + fabs(q));
                    const float w = q * q * q;
                    const size_t c = 3 * (row + (size_t)i0 + (size_t)(FLIP_LANES * ch + l));
                    sw[l] += w;
                    s0[l] += w * A[c];
                    s1[l] += w * A[c + 1];
                    s2[l] += w * A[c + 2];
                    if (withB) {
                        t0[l] += w * B[c];
                        t1[l] += w * B[c + 1];
                        t2[l] += w * B[c + 2];
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
    const float iv = W > 0.0f ? 1.0f / W : 0.0f;
    ra[0] = r0 * iv, ra[1] = r1 * iv, ra[2] = r2 * iv;
    if (withB)
        rb[0] = q0 * iv, rb[1] = q1 * iv, rb[2] = q2 * iv;
}

inline uint clamp_pos(int dim, const float *lo, const float *hi, float *x, float margin)
{
    uint hit = 0;
    for (int k = 0; k < dim; k++) {
        const float l = lo[k] + margin, h = hi[k] - margin;
        if (x[k] < l) {
            x[k] = l;
            hit |= 1u << (2 * k);
        } else if (x[k] > h) {
            x[k] = h;
            hit |= 1u << (2 * k + 1);
        }
    }
    return hit;
}

inline void fix_wall_velocity(uint hit, float *v)
{
    for (int k = 0; k < 3; k++) {
        if ((hit & (1u << (2 * k))) && v[k] < 0.0f)
            v[k] = 0.0f;
        if ((hit & (1u << (2 * k + 1))) && v[k] > 0.0f)
            v[k] = 0.0f;
    }
}

/* PIC/FLIP blend and RK2 positions (advect.c). mode: 0 smooth (A = filtered
 * u^n+1, B = filtered u^n+1 - u^n), 1 linear (A = u^n+1, B = u^n), 2 kernel
 * (A, B as linear). ap = (r, margin, dt, R). ob: nob records at t + dt/2,
 * then nob at t + dt, then the balls. ctrl[2 slot + 1]: particles pushed out. */
__kernel void advect(uint n, __global float *x, __global float *v, int4 gn, float4 go, float4 glo, float4 ghi,
                     int chunks, int mode, float4 ap, __global const float *A, __global const float *B,
                     __global const float *ob, int nob, __global int *ctrl, int slot)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const int dim = gn.w;
    const float inv_h = glo.w, r = ap.x, margin = ap.y, dt = ap.z, R = ap.w;
    const float lo[3] = {glo.x, glo.y, glo.z}, hi[3] = {ghi.x, ghi.y, ghi.z};
    __global const float *ob_mid = ob, *ob_end = ob + FLIP_OB_STRIDE * nob, *balls = ob + 2 * FLIP_OB_STRIDE * nob;
    float xp[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
    float vp[3] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
    float un[3], uold[3] = {0.0f, 0.0f, 0.0f}, um[3];
    if (mode == 0) {
        const stencil sc = stencil_at(gn, go, inv_h, xp);
        float du[3];
        sample_vec(dim, &sc, A, un);
        sample_vec(dim, &sc, B, du);
        for (int k = 0; k < 3; k++)
            uold[k] = un[k] - du[k];
    } else if (mode == 1) {
        const stencil sc = stencil_at(gn, go, inv_h, xp);
        sample_vec(dim, &sc, A, un);
        sample_vec(dim, &sc, B, uold);
    } else {
        gather(gn, go, inv_h, R, chunks, xp, A, B, 1, un, uold);
    }
    for (int k = 0; k < 3; k++)
        vp[k] = r * un[k] + (1.0f - r) * (vp[k] + un[k] - uold[k]);
    float xm[3];
    for (int k = 0; k < 3; k++)
        xm[k] = xp[k] + 0.5f * dt * un[k];
    clamp_pos(dim, lo, hi, xm, margin);
    if (nob > 0 && ob_project(ob_mid, nob, balls, dim, margin, xm, vp, 0))
        clamp_pos(dim, lo, hi, xm, margin);
    if (mode == 2) {
        gather(gn, go, inv_h, R, chunks, xm, A, B, 0, um, um);
    } else {
        const stencil sc = stencil_at(gn, go, inv_h, xm);
        sample_vec(dim, &sc, A, um);
    }
    for (int k = 0; k < dim; k++)
        xp[k] += dt * um[k];
    fix_wall_velocity(clamp_pos(dim, lo, hi, xp, margin), vp);
    if (nob > 0 && ob_project(ob_end, nob, balls, dim, margin, xp, vp, 1)) {
        fix_wall_velocity(clamp_pos(dim, lo, hi, xp, margin), vp);
        atomic_inc(ctrl + 2 * slot + 1);
    }
    if (dim == 2)
        vp[2] = 0.0f;
    for (int k = 0; k < 3; k++) {
        x[3 * i + k] = xp[k];
        v[3 * i + k] = vp[k];
    }
}
