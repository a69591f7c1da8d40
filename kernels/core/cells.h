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
 * FLOE_CELL_WALK_BEGIN(...) BODY FLOE_CELL_WALK_END (below) runs BODY
 * for each neighbour j in a target set. Where staged and the work group's
 * queries lie in one row of cells (the usual case: slots are sorted by
 * cell key, x fastest), each of the 9 (3 in 2D) rows of neighbour cells is
 * one contiguous slot range for the whole group, read once into local
 * memory (cand, FLOE_CAND float4s) in chunks; else each query reads its
 * candidates from global memory. */
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

/* The query (above), and where it lies inside its cell (fractions f in cell
 * units): cells none of whose points is within the radius are skipped */
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
    const float4 pa_ = spq[g0_], pb_ = spq[gl_];                                                       \
    const int one_row_ = staged && floe_cell_axis(pa_.y, go.y, go.w, gn.y) == floe_cell_axis(pb_.y, go.y, go.w, gn.y) && \
                         (!gn.w || floe_cell_axis(pa_.z, go.z, go.w, gn.z) == floe_cell_axis(pb_.z, go.z, go.w, gn.z)); \
    const int gxa_ = floe_cell_axis(pa_.x, go.x, go.w, gn.x), gxb_ = floe_cell_axis(pb_.x, go.x, go.w, gn.x); \
    const int gxlo_ = gxa_ > 0 ? gxa_ - 1 : 0, gxhi_ = gxb_ < gn.x - 1 ? gxb_ + 1 : gn.x - 1;              \
    const float fx_ = (pq_.x - go.x) * go.w - (float)cx_, fy_ = (pq_.y - go.y) * go.w - (float)cy_;         \
    const float fz_ = gn.w ? (pqz_ - go.z) * go.w - (float)cz_ : 0.0f;                                 \
    const int trim_ = fx_ >= 0.0f && fx_ < 1.0f && fy_ >= 0.0f && fy_ < 1.0f && fz_ >= 0.0f && fz_ < 1.0f; \
    const float lim_ = rc2 * go.w * go.w * 1.001f

/* The slots [ma_, mb_) of row (y_, z_) that the query tests: its three
 * cells along x, less those whose nearest point is farther than the radius
 * (by a margin of 0.1% of r^2, far above the rounding of the cell
 * fractions: a skipped candidate would fail the test anyway, so the sums
 * are unchanged). Not trimmed where the query lies outside the grid; empty
 * for a row outside the grid (in_ = 0). */
#define FLOE_CELL_RANGE_(cs, row_, in_, y_, z_, ma_, mb_)                                             \
    uint ma_ = 0u, mb_ = 0u;                                                                          \
    if (in_) {                                                                                        \
        const float ey_ = y_ < cy_ ? fy_ : y_ > cy_ ? 1.0f - fy_ : 0.0f;                              \
        const float ez_ = z_ < cz_ ? fz_ : z_ > cz_ ? 1.0f - fz_ : 0.0f;                              \
        const float e2_ = ey_ * ey_ + ez_ * ez_;                                                      \
        const int lo_ = !trim_ || fx_ * fx_ + e2_ < lim_, hi_ = !trim_ || (1.0f - fx_) * (1.0f - fx_) + e2_ < lim_; \
        const uint xa_ = (uint)(lo_ ? xlo_ : cx_), xb_ = (uint)(hi_ ? xhi_ : cx_);                    \
        ma_ = cs[row_ + xa_];                                                                         \
        mb_ = !trim_ || e2_ < lim_ ? cs[row_ + xb_ + 1] : ma_;                                        \
    }

/* No staging of more data than the positions */
#define FLOE_CELL_NONE_(l, g)

/* FLOE_CELL_WALK_BEGIN(cand, sp, cs, fresh, xt, self, ST) BODY FLOE_CELL_WALK_END
 * runs BODY for each neighbour j of the query in target set (sp, cs; x =
 * xt where not fresh), with j, d = x_i - x_j (minimum image) and r2 = |d|^2
 * in scope, skipping self. ST(l, g) (a macro, FLOE_CELL_NONE_ for none)
 * copies more of slot g into local index l when a chunk is staged; BODY
 * reads such data with FLOE_CELL_STAGED(local array, global expression).
 * In a group whose queries share one row of cells (one_row_) each row's
 * slot range is staged in chunks of FLOE_CAND; otherwise each query reads
 * its own range from global memory, in one pass of the chunk loop. The
 * loops around the barriers run the same number of times in every work
 * item (rows -1..1 around the query's, out-of-grid ones empty; the chunk
 * loop over the group's range or once), which PoCL's work-item loops
 * need. No variadic macro: OpenCL C 1.2 compilers reject them. */
#define FLOE_CELL_WALK_BEGIN(cand, sp, cs, fresh, xt, self, ST)                                          \
    for (int dz_ = gn.w ? -1 : 0; dz_ <= (gn.w ? 1 : 0); dz_++)                                          \
        for (int dy_ = -1; dy_ <= 1; dy_++) {                                                            \
            const int y_ = cy_ + dy_, z_ = cz_ + dz_;                                                    \
            const int in_ = y_ >= 0 && y_ < gn.y && z_ >= 0 && z_ < gn.z;                                \
            const uint row_ = in_ ? (uint)gn.x * ((uint)y_ + (uint)gn.y * (uint)z_) : 0u;                \
            FLOE_CELL_RANGE_(cs, row_, in_, y_, z_, ma_, mb_);                                           \
            const uint ga_ = one_row_ ? (in_ ? cs[row_ + (uint)gxlo_] : 0u) : 0u;                         \
            const uint gb_ = one_row_ ? (in_ ? cs[row_ + (uint)gxhi_ + 1] : 0u) : 1u;                     \
            for (uint base_ = ga_; base_ < gb_; base_ += one_row_ ? FLOE_CAND : 1u) {                    \
                if (one_row_) {                                                                          \
                    barrier(CLK_LOCAL_MEM_FENCE);                                                        \
                    for (uint l_ = lid_; l_ < FLOE_CAND && base_ + l_ < gb_; l_ += FLOE_WGS) {           \
                        cand[l_] = sp[base_ + l_];                                                       \
                        ST(l_, base_ + l_)                                                               \
                    }                                                                                    \
                    barrier(CLK_LOCAL_MEM_FENCE);                                                        \
                }                                                                                        \
                const uint top_ = base_ + FLOE_CAND < gb_ ? base_ + FLOE_CAND : gb_;                     \
                const uint ka_ = !act ? 0u : !one_row_ ? ma_ : ma_ > base_ ? ma_ : base_;                \
                const uint kb_ = !act ? 0u : !one_row_ ? mb_ : mb_ < top_ ? mb_ : top_;                  \
                for (uint k_ = ka_; k_ < kb_; k_++) {                                                    \
                    const float4 t_ = one_row_ ? cand[k_ - base_] : sp[k_];                              \
                    const float dx_ = t_.x - pq_.x, dy2_ = t_.y - pq_.y;                                 \
                    float d2_ = dx_ * dx_ + dy2_ * dy2_;                                                 \
                    if (gn.w) {                                                                          \
                        const float dz2_ = t_.z - pqz_;                                                  \
                        d2_ = d2_ + dz2_ * dz2_;                                                         \
                    }                                                                                    \
                    const uint j = as_uint(t_.w);                                                        \
                    if (d2_ < rc2 && j != (self)) {                                                      \
                        const float3 xj_ = (fresh) ? t_.xyz : floe_load3(xt, j);                         \
                        const float3 d = floe_min_image(xi - xj_, per);                                  \
                        const float r2 = d.x * d.x + d.y * d.y + d.z * d.z;                              \
                        {

#define FLOE_CELL_WALK_END \
                        }  \
                    }      \
                }          \
            }              \
        }

/* inside BODY: staged data of the candidate (local array l, index k_ - base_)
 * or, where the group walks global memory, the global expression g */
#define FLOE_CELL_STAGED(l, g) (one_row_ ? l[k_ - base_] : (g))

#endif
