/* Cell walks (FLOE_CL_NEIGHBOURS=cells, docs/opencl.md): a kernel over the
 * sorted slots of a fluid set that visits, for each particle, the
 * particles of the 27 (9 in 2D) cells around it straight from the cell
 * sort (<floe/module.h> floe_cl_cells: spos = position and index per
 * sorted slot, cs = the first slot of each cell), instead of reading a
 * neighbour list. The candidates are visited in the order the device lists
 * hold them (rows of three cells along x in z, y order, ascending slot in
 * each), with the lists' test (d2 < rc2 on the sorted positions, self
 * excluded), so a sum over the walk is the sum over the list, term by term.
 *
 * The query (FLOE_CELL_QUERY) is work item q = sorted slot q of the query
 * set; i its particle index, xi its position (the sorted one where fresh,
 * else x's: a stage moved the set after the sort, and the lists, built on
 * the sorted positions, would hold the same neighbours). Kernels using it
 * have work groups of FLOE_WGS items and must not return early: `act`
 * says whether the item has a query.
 *
 * FLOE_CELL_WALK(cand, sp, cs, fresh, xt, self, BODY...) runs BODY for
 * each neighbour j in target set (sp, cs; x = xt where not fresh) with
 * j, d = x_i - x_j (minimum image) and r2 = |d|^2 in scope. Where staged
 * and the work group's queries lie in one row of cells (the usual case:
 * slots are sorted by cell key, x fastest), each of the 9 (3 in 2D) rows
 * of neighbour cells is one contiguous slot range for the whole group,
 * read once into local memory (cand, FLOE_CAND float4s) in chunks; else
 * each query reads its candidates from global memory. */
#ifndef FLOE_CL_CELLS_H
#define FLOE_CL_CELLS_H

#include "core/sph.h"

#define FLOE_CAND 256

/* the cell of coordinate x on an axis of n cells from origin o (1/cell inv),
 * clamped, as nb_axis in neighbours.cl */
inline int floe_cell_axis(float x, float o, float inv, int n)
{
    float f = (x - o) * inv;
    if (!(f >= 0.0f))
        return 0;
    if (f >= (float)n)
        return n - 1;
    int i = (int)f;
    return i < n ? i : n - 1;
}

/* The arguments of a cell walk: the query set's sorted positions and
 * freshness, the grid (go = origin, 1/cell; gn = cells per axis, dim ==
 * 3), the search radius squared, the staged switch */
#define FLOE_CELL_ARGS \
    __global const float4 *spq, int freshq, float4 go, int4 gn, float rc2, int staged

/* one target set: its sorted positions, cell starts, freshness */
#define FLOE_CELL_TARGET(P) __global const float4 *P##sp, __global const uint *P##cs, int P##fresh

#define FLOE_CELL_QUERY(n, x)                                                                          \
    const uint lid_ = get_local_id(0), q_ = get_global_id(0);                                          \
    const uint g0_ = get_group_id(0) * FLOE_WGS;                                                      \
    const uint gl_ = (g0_ + FLOE_WGS < (n) ? g0_ + FLOE_WGS : (n)) - 1;                               \
    const int act = q_ < (n);                                                                          \
    const float4 pq_ = spq[act ? q_ : g0_];                                                            \
    const uint i = as_uint(pq_.w);                                                                     \
    const float3 xi = freshq ? pq_.xyz : floe_load3(x, i);                                             \
    const float pqz_ = gn.w ? pq_.z : 0.0f;                                                            \
    const int cx_ = floe_cell_axis(pq_.x, go.x, go.w, gn.x), cy_ = floe_cell_axis(pq_.y, go.y, go.w, gn.y); \
    const int cz_ = gn.w ? floe_cell_axis(pqz_, go.z, go.w, gn.z) : 0;                                 \
    const int xlo_ = cx_ > 0 ? cx_ - 1 : 0, xhi_ = cx_ < gn.x - 1 ? cx_ + 1 : gn.x - 1;                \
    const int ylo_ = cy_ > 0 ? cy_ - 1 : 0, yhi_ = cy_ < gn.y - 1 ? cy_ + 1 : gn.y - 1;                \
    const int zlo_ = cz_ > 0 ? cz_ - 1 : 0, zhi_ = cz_ < gn.z - 1 ? cz_ + 1 : gn.z - 1;                \
    const float4 pa_ = spq[g0_], pb_ = spq[gl_];                                                       \
    const int one_row_ = staged && floe_cell_axis(pa_.y, go.y, go.w, gn.y) == floe_cell_axis(pb_.y, go.y, go.w, gn.y) && \
                         (!gn.w || floe_cell_axis(pa_.z, go.z, go.w, gn.z) == floe_cell_axis(pb_.z, go.z, go.w, gn.z)); \
    const int gxa_ = floe_cell_axis(pa_.x, go.x, go.w, gn.x), gxb_ = floe_cell_axis(pb_.x, go.x, go.w, gn.x); \
    const int gxlo_ = gxa_ > 0 ? gxa_ - 1 : 0, gxhi_ = gxb_ < gn.x - 1 ? gxb_ + 1 : gn.x - 1;              \
    /* where the query lies inside its cell (fractions f in cell units),   \
     * cells none of whose points is within the radius are skipped */        \
    const float fx_ = (pq_.x - go.x) * go.w - (float)cx_, fy_ = (pq_.y - go.y) * go.w - (float)cy_;         \
    const float fz_ = gn.w ? (pqz_ - go.z) * go.w - (float)cz_ : 0.0f;                                 \
    const int trim_ = fx_ >= 0.0f && fx_ < 1.0f && fy_ >= 0.0f && fy_ < 1.0f && fz_ >= 0.0f && fz_ < 1.0f; \
    const float lim_ = rc2 * go.w * go.w * 1.001f

/* candidate t (a float4 of a target's spos): the lists' test, then LD(at)
 * (the declarations of what the walk stages besides the positions, from
 * index `at` of the staged or global arrays) and BODY */
#define FLOE_CELL_PAIR_(t, fresh, xt, self, LD, at, ...)             \
    do {                                                             \
        const float dx_ = t.x - pq_.x, dy_ = t.y - pq_.y;            \
        float d2_ = dx_ * dx_ + dy_ * dy_;                           \
        if (gn.w) {                                                  \
            const float dz_ = t.z - pqz_;                            \
            d2_ = d2_ + dz_ * dz_;                                   \
        }                                                            \
        if (d2_ < rc2) {                                             \
            const uint j = as_uint(t.w);                             \
            if (j != (self)) {                                       \
                const float3 xj_ = (fresh) ? t.xyz : floe_load3(xt, j); \
                const float3 d = floe_min_image(xi - xj_, per);      \
                const float r2 = d.x * d.x + d.y * d.y + d.z * d.z;  \
                LD(at)                                               \
                __VA_ARGS__                                          \
            }                                                        \
        }                                                            \
    } while (0)

#define FLOE_CELL_NONE_(...)
/* a weight per candidate (m or V) staged in __local float cw[] with the
 * positions: wj (the kernel defines the global read, wj = its array[j]) */
#define FLOE_CELL_WL_(l) const float wj = cw[l];

/* The slots [ma_, mb_) of row (y_, z_) that the query tests: its three
 * cells along x, less those whose nearest point is farther than the radius
 * (by a margin of 0.1% of r^2, far above the rounding of the cell
 * fractions: a skipped candidate would fail the test anyway, so the sums
 * are unchanged). Not trimmed where the query lies outside the grid. */
#define FLOE_CELL_RANGE_(cs, row_, y_, z_, ma_, mb_)                                                  \
    uint ma_, mb_;                                                                                    \
    do {                                                                                              \
        const float ey_ = y_ < cy_ ? fy_ : y_ > cy_ ? 1.0f - fy_ : 0.0f;                              \
        const float ez_ = z_ < cz_ ? fz_ : z_ > cz_ ? 1.0f - fz_ : 0.0f;                              \
        const float e2_ = ey_ * ey_ + ez_ * ez_;                                                      \
        const int lo_ = !trim_ || fx_ * fx_ + e2_ < lim_, hi_ = !trim_ || (1.0f - fx_) * (1.0f - fx_) + e2_ < lim_; \
        const uint xa_ = (uint)(lo_ ? xlo_ : cx_), xb_ = (uint)(hi_ ? xhi_ : cx_);                    \
        ma_ = cs[row_ + xa_];                                                                         \
        mb_ = !trim_ || e2_ < lim_ ? cs[row_ + xb_ + 1] : ma_;                                        \
    } while (0)

#define FLOE_CELL_WALK(cand, sp, cs, fresh, xt, self, ...) \
    FLOE_CELL_WALK_X(cand, sp, cs, fresh, xt, self, FLOE_CELL_NONE_, FLOE_CELL_NONE_, FLOE_CELL_NONE_, __VA_ARGS__)

/* ... staging more per-slot data of the target with the positions:
 * ST(l, g) copies slot g into local index l; LDL(l) / LDG(g) declare the
 * candidate's data from local index l / global slot g */
#define FLOE_CELL_WALK_X(cand, sp, cs, fresh, xt, self, ST, LDL, LDG, ...)                                   \
    do {                                                                                                     \
        if (one_row_) {                                                                                      \
            for (int z_ = zlo_; z_ <= zhi_; z_++)                                                            \
                for (int y_ = ylo_; y_ <= yhi_; y_++) {                                                      \
                    const uint row_ = (uint)gn.x * ((uint)y_ + (uint)gn.y * (uint)z_);                       \
                    const uint ga_ = cs[row_ + (uint)gxlo_], gb_ = cs[row_ + (uint)gxhi_ + 1];               \
                    FLOE_CELL_RANGE_(cs, row_, y_, z_, ma_, mb_);                                            \
                    for (uint base_ = ga_; base_ < gb_; base_ += FLOE_CAND) {                                \
                        barrier(CLK_LOCAL_MEM_FENCE);                                                        \
                        for (uint k_ = lid_; k_ < FLOE_CAND && base_ + k_ < gb_; k_ += FLOE_WGS) {           \
                            cand[k_] = sp[base_ + k_];                                                       \
                            ST(k_, base_ + k_)                                                               \
                        }                                                                                    \
                        barrier(CLK_LOCAL_MEM_FENCE);                                                        \
                        if (act) {                                                                           \
                            const uint top_ = base_ + FLOE_CAND < gb_ ? base_ + FLOE_CAND : gb_;             \
                            const uint ka_ = ma_ > base_ ? ma_ : base_, kb_ = mb_ < top_ ? mb_ : top_;       \
                            for (uint k_ = ka_; k_ < kb_; k_++) {                                            \
                                const float4 t_ = cand[k_ - base_];                                          \
                                FLOE_CELL_PAIR_(t_, fresh, xt, self, LDL, k_ - base_, __VA_ARGS__);          \
                            }                                                                                \
                        }                                                                                    \
                    }                                                                                        \
                }                                                                                            \
        } else if (act) {                                                                                    \
            for (int z_ = zlo_; z_ <= zhi_; z_++)                                                            \
                for (int y_ = ylo_; y_ <= yhi_; y_++) {                                                      \
                    const uint row_ = (uint)gn.x * ((uint)y_ + (uint)gn.y * (uint)z_);                       \
                    FLOE_CELL_RANGE_(cs, row_, y_, z_, a_, b_);                                              \
                    for (uint k_ = a_; k_ < b_; k_++) {                                                      \
                        const float4 t_ = sp[k_];                                                            \
                        FLOE_CELL_PAIR_(t_, fresh, xt, self, LDG, k_, __VA_ARGS__);                          \
                    }                                                                                        \
                }                                                                                            \
        }                                                                                                    \
    } while (0)

#endif
