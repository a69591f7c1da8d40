/* Device neighbour search (core/src/opencl/sort.c and lists.c drive it): the same
 * sorted-key scheme as core/src/neighbours.c.
 *   nb_keys     cell key of every particle, its arrival rank in the cell
 *   scan_*      exclusive prefix sum of the cell counts -> cell start table
 *   nb_scatter  slot = start[key] + rank (arrival order within a cell)
 *   nb_stable   within each cell, order by particle index: the result is
 *               exactly the C path's stable counting sort, deterministic
 *               and the sorted positions (float4, the particle index in
 *               w) for streaming candidate loads
 *   nb_build    fixed-stride lists, neighbour-major: idx[k * pitch + i],
 *               candidates in ascending slot order per row of 3 cells, so
 *               each list holds the C list's neighbours in the C order */
#include "core/sph.h"

#define SCAN_WG 256
#define SCAN_PER 16 /* one block of 4096 words: 2.9M cells scan in 3 launches */

inline int nb_axis(float x, float o, float inv, int n)
{
    float f = (x - o) * inv;
    if (!(f >= 0.0f))
        return 0;
    if (f >= (float)n)
        return n - 1;
    int i = (int)f;
    return i < n ? i : n - 1;
}

/* grid: go = (origin x, y, z, 1/cell), gn = (n0, n1, n2, dim == 3) */
__kernel void nb_keys(__global const float *x, uint n, float4 go, int4 gn, __global uint *key,
                      __global uint *rank, __global uint *count)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    uint ix = (uint)nb_axis(x[3 * i], go.x, go.w, gn.x);
    uint iy = (uint)nb_axis(x[3 * i + 1], go.y, go.w, gn.y);
    uint iz = gn.w ? (uint)nb_axis(x[3 * i + 2], go.z, go.w, gn.z) : 0u;
    uint k = ix + (uint)gn.x * iy + (uint)gn.x * (uint)gn.y * iz;
    key[i] = k;
    rank[i] = atomic_inc(&count[k]);
}

/* Exclusive scan of blocks of SCAN_WG * SCAN_PER words in place; block
 * totals into sums[group]. Local size SCAN_WG. Work item l scans words
 * l SCAN_PER .. l SCAN_PER + SCAN_PER - 1 of its block; the block moves
 * between global and local memory in coalesced rows (word k SCAN_WG + l by
 * item l), local memory padded by a word per 32 so that the items' runs of
 * SCAN_PER words fall into different banks. */
#define SCAN_PAD(i) ((i) + ((i) >> 5))
__kernel __attribute__((reqd_work_group_size(SCAN_WG, 1, 1)))
void scan_block(__global uint *data, uint n, __global uint *sums)
{
    __local uint tmp[SCAN_WG];
    __local uint blk[SCAN_PAD(SCAN_WG * SCAN_PER)];
    const uint lid = get_local_id(0), g = get_group_id(0);
    const uint gbase = g * SCAN_WG * SCAN_PER;
    for (int k = 0; k < SCAN_PER; k++) {
        const uint w = (uint)k * SCAN_WG + lid;
        blk[SCAN_PAD(w)] = gbase + w < n ? data[gbase + w] : 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint v[SCAN_PER], s = 0;
    for (int k = 0; k < SCAN_PER; k++) {
        v[k] = blk[SCAN_PAD(lid * SCAN_PER + k)];
        s += v[k];
    }
    tmp[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < SCAN_WG; off <<= 1) { /* Hillis-Steele, inclusive */
        uint t = lid >= off ? tmp[lid - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[lid] += t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint run = tmp[lid] - s; /* exclusive */
    for (int k = 0; k < SCAN_PER; k++) {
        blk[SCAN_PAD(lid * SCAN_PER + k)] = run;
        run += v[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < SCAN_PER; k++) {
        const uint w = (uint)k * SCAN_WG + lid;
        if (gbase + w < n)
            data[gbase + w] = blk[SCAN_PAD(w)];
    }
    if (lid == SCAN_WG - 1)
        sums[g] = tmp[lid];
}

/* the block's offset added to each of its words (coalesced rows) */
__kernel void scan_add(__global uint *data, uint n, __global const uint *sums)
{
    const uint lid = get_local_id(0), g = get_group_id(0);
    const uint gbase = g * SCAN_WG * SCAN_PER;
    const uint add = sums[g];
    for (int k = 0; k < SCAN_PER; k++) {
        const uint w = gbase + (uint)k * SCAN_WG + lid;
        if (w < n)
            data[w] += add;
    }
}

__kernel void nb_scatter(__global const uint *key, __global const uint *rank, __global const uint *start, uint n,
                         __global uint *tmp)
{
    const uint i = get_global_id(0);
    if (i < n)
        tmp[start[key[i]] + rank[i]] = i;
}

/* Slot s's particle i goes to a + r, r = its rank by index within its cell
 * [a, b) (byid: by id, the ids unique: neighbours { order = "id" } and
 * MPI, as nb_sorted_by_id on the C path); its sorted position with it (the
 * row is at hand: no gather pass) */
__kernel void nb_stable(__global const uint *tmp, __global const uint *key, __global const uint *start, uint n,
                        __global uint *order, __global const float *x, __global float4 *spos,
                        __global const uint *id, int byid)
{
    const uint s = get_global_id(0);
    if (s >= n)
        return;
    const uint i = tmp[s], c = key[i], a = start[c], b = start[c + 1];
    uint r = 0;
    if (byid) {
        const uint idi = id[i];
        for (uint k = a; k < b; k++)
            r += id[tmp[k]] < idi;
    } else {
        for (uint k = a; k < b; k++)
            r += tmp[k] < i;
    }
    order[a + r] = i;
    spos[a + r] = (float4)(x[3 * i], x[3 * i + 1], x[3 * i + 2], as_float(i)); /* w: the particle index */
}

/* Lists of nq query particles in a target set. same_set: the queries are the
 * target's particles, walked in sorted order (query i = order[q] at slot q).
 * per: periodic bits; plo/period as nb_grid (plo.w = cell edge);
 * stats[2 slot] = max count, stats[2 slot + 1] = sum of counts. Local size: any (reduced in local memory). */
__kernel void nb_build(int same_set, __global const float *xq, uint nq, __global const float4 *spos,
                       __global const uint *order, __global const uint *cs, float4 go, int4 gn, float r2,
                       int exclude_self, uint per, float4 plo, float4 period, __global uint *count,
                       __global uint *idx, uint stride, uint pitch, __global uint *stats, uint slot,
                       __global const uchar *near, int use_near)
{
    __local uint lmax, lsum;
    const uint q = get_global_id(0);
    if (get_local_id(0) == 0) {
        lmax = 0;
        lsum = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (q < nq) {
        uint i;
        float px, py, pz;
        if (same_set) {
            i = order[q];
            float4 p = spos[q];
            px = p.x;
            py = p.y;
            pz = gn.w ? p.z : 0.0f;
        } else {
            i = q;
            px = xq[3 * q];
            py = xq[3 * q + 1];
            pz = gn.w ? xq[3 * q + 2] : 0.0f;
        }
        const uint self = exclude_self ? i : 0xffffffffu;
        /* the query and its periodic images, in the order of nb_images in
         * neighbours.c: bit b of image m shifts the b-th shifted axis */
        const float qx = px, qy = py, qz = pz;
        float sh[3] = {0.0f, 0.0f, 0.0f};
        uint mask = 0;
        if (per) {
            for (int k = 0; k < 3; k++) {
                if (!(per & (1u << k)))
                    continue;
                const float c = k == 0 ? qx : k == 1 ? qy : qz;
                const float lo = k == 0 ? plo.x : k == 1 ? plo.y : plo.z;
                const float L = k == 0 ? period.x : k == 1 ? period.y : period.z;
                if (c < lo + plo.w)
                    sh[k] = L;
                else if (c >= lo + L - plo.w)
                    sh[k] = -L;
                if (sh[k] != 0.0f)
                    mask |= 1u << k;
            }
        }
        const int nimg = 1 << popcount(mask);
        uint c = 0;
        for (int im = 0; im < nimg; im++) {
            px = qx;
            py = qy;
            pz = qz;
            if (im) {
                if ((mask & 1u) && (im & 1))
                    px += sh[0];
                if ((mask & 2u) && ((im >> popcount(mask & 1u)) & 1))
                    py += sh[1];
                if ((mask & 4u) && ((im >> popcount(mask & 3u)) & 1))
                    pz += sh[2];
            }
            const int ix = nb_axis(px, go.x, go.w, gn.x);
            const int iy = nb_axis(py, go.y, go.w, gn.y);
            const int iz = gn.w ? nb_axis(pz, go.z, go.w, gn.z) : 0;
            /* no target in the block around the query's cell (nb_near_cells) */
            if (use_near && !near[(uint)ix + (uint)gn.x * ((uint)iy + (uint)gn.y * (uint)iz)])
                continue;
            const int xlo = ix > 0 ? ix - 1 : 0, xhi = ix < gn.x - 1 ? ix + 1 : gn.x - 1;
            const int ylo = iy > 0 ? iy - 1 : 0, yhi = iy < gn.y - 1 ? iy + 1 : gn.y - 1;
            const int zlo = iz > 0 ? iz - 1 : 0, zhi = iz < gn.z - 1 ? iz + 1 : gn.z - 1;
            for (int z = zlo; z <= zhi; z++)
                for (int y = ylo; y <= yhi; y++) {
                    const uint row = (uint)gn.x * ((uint)y + (uint)gn.y * (uint)z);
                    const uint a = cs[row + (uint)xlo], b = cs[row + (uint)xhi + 1];
                    for (uint k = a; k < b; k++) {
                        const float4 t = spos[k];
                        const float dx = t.x - px, dy = t.y - py;
                        float d2 = dx * dx + dy * dy;
                        if (gn.w) {
                            const float dz = t.z - pz;
                            d2 = d2 + dz * dz;
                        }
                        if (d2 < r2) { /* the index travels in w: no order[] read */
                            const uint j = as_uint(t.w);
                            if (j != self) {
                                if (c < stride)
                                    idx[(size_t)c * pitch + i] = j;
                                c++;
                            }
                        }
                    }
                }
        }
        /* a row longer than the stride is cut: the lists stay readable
         * (the host widens them when it sees the true count in stats) */
        count[i] = c < stride ? c : stride;
        atomic_max(&lmax, c);
        atomic_add(&lsum, c);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        atomic_max(&stats[2 * slot], lmax);
        atomic_add(&stats[2 * slot + 1], lsum);
    }
}

/* near[c] = 1 where a cell of the 3x3(x3) block around cell c holds a
 * particle of the sorted set (cell starts cs): nb_build skips the walk of a
 * query whose cell has none (the fluid far from the walls, for a static
 * wall set; no periodic axes). One work item per cell. */
__kernel void nb_near_cells(__global const uint *cs, int4 gn, uint ncells, __global uchar *near)
{
    const uint c = get_global_id(0);
    if (c >= ncells)
        return;
    const int ix = (int)(c % (uint)gn.x), iy = (int)((c / (uint)gn.x) % (uint)gn.y);
    const int iz = (int)(c / ((uint)gn.x * (uint)gn.y));
    const int xlo = ix > 0 ? ix - 1 : 0, xhi = ix < gn.x - 1 ? ix + 1 : gn.x - 1;
    const int ylo = iy > 0 ? iy - 1 : 0, yhi = iy < gn.y - 1 ? iy + 1 : gn.y - 1;
    const int zlo = iz > 0 ? iz - 1 : 0, zhi = iz < gn.z - 1 ? iz + 1 : gn.z - 1;
    uchar any = 0;
    for (int z = zlo; z <= zhi; z++)
        for (int y = ylo; y <= yhi; y++) {
            const uint row = (uint)gn.x * ((uint)y + (uint)gn.y * (uint)z);
            if (cs[row + (uint)xhi + 1] > cs[row + (uint)xlo])
                any = 1;
        }
    near[c] = any;
}

/* Lists of a set against itself without periodic axes, one work group of
 * NBL_WG consecutive sorted slots at a time. When the group's queries all
 * lie in one row of cells along x (the usual case: slots are sorted by
 * cell key, x fastest), each of the 9 (3 in 2D) neighbour rows is one
 * contiguous slot range for the whole group: it is staged through local
 * memory in chunks, and each query tests the part of the chunk inside its
 * own 3 cells, in ascending slot order. The hits are gathered in local
 * memory and written out neighbour-major at the end, so consecutive work
 * items write consecutive words. Otherwise (a group spanning two rows) each
 * query walks global memory as in nb_build. Either way the lists are
 * exactly nb_build's. Needs stride <= NBL_S (the host uses nb_build above). */
#define NBL_WG 128
#define NBL_T 256
#define NBL_S 64

__kernel __attribute__((reqd_work_group_size(NBL_WG, 1, 1)))
void nb_build_local(uint nq, __global const float4 *spos, __global const uint *cs, float4 go, int4 gn, float r2,
                    __global uint *count, __global uint *idx, uint stride, uint pitch, __global uint *stats,
                    uint slot, uint nown)
{
    __local float4 cand[NBL_T];
    __local uint hits[NBL_S * NBL_WG];
    __local uint lmax, lsum;
    const uint lid = get_local_id(0), q = get_global_id(0);
    const uint g0 = get_group_id(0) * NBL_WG;
    const uint glast = (g0 + NBL_WG < nq ? g0 + NBL_WG : nq) - 1;
    if (lid == 0) {
        lmax = 0;
        lsum = 0;
    }
    const int act = q < nq;
    const float4 p = spos[act ? q : g0];
    const uint i = as_uint(p.w);
    const int own = act && i < nown; /* MPI: a ghost's row stays empty (nown: the owned particles) */
    const float pz = gn.w ? p.z : 0.0f;
    const int ix = nb_axis(p.x, go.x, go.w, gn.x), iy = nb_axis(p.y, go.y, go.w, gn.y);
    const int iz = gn.w ? nb_axis(pz, go.z, go.w, gn.z) : 0;
    const int xlo = ix > 0 ? ix - 1 : 0, xhi = ix < gn.x - 1 ? ix + 1 : gn.x - 1;
    /* the group's first and last query (uniform over the group) */
    const float4 pa = spos[g0], pb = spos[glast];
    const int ya = nb_axis(pa.y, go.y, go.w, gn.y), yb = nb_axis(pb.y, go.y, go.w, gn.y);
    const int za = gn.w ? nb_axis(pa.z, go.z, go.w, gn.z) : 0, zb = gn.w ? nb_axis(pb.z, go.z, go.w, gn.z) : 0;
    const int ylo = iy > 0 ? iy - 1 : 0, yhi = iy < gn.y - 1 ? iy + 1 : gn.y - 1;
    const int zlo = iz > 0 ? iz - 1 : 0, zhi = iz < gn.z - 1 ? iz + 1 : gn.z - 1;
    uint c = 0;
    if (ya == yb && za == zb) {
        /* one row of cells: every query has the group's y and z ranges */
        const int xa = nb_axis(pa.x, go.x, go.w, gn.x), xb = nb_axis(pb.x, go.x, go.w, gn.x);
        const int gxlo = xa > 0 ? xa - 1 : 0, gxhi = xb < gn.x - 1 ? xb + 1 : gn.x - 1;
        for (int z = zlo; z <= zhi; z++)
            for (int y = ylo; y <= yhi; y++) {
                const uint row = (uint)gn.x * ((uint)y + (uint)gn.y * (uint)z);
                const uint ga = cs[row + (uint)gxlo], gb = cs[row + (uint)gxhi + 1];
                const uint ma = cs[row + (uint)xlo], mb = cs[row + (uint)xhi + 1];
                for (uint base = ga; base < gb; base += NBL_T) {
                    barrier(CLK_LOCAL_MEM_FENCE);
                    for (uint k = lid; k < NBL_T && base + k < gb; k += NBL_WG)
                        cand[k] = spos[base + k];
                    barrier(CLK_LOCAL_MEM_FENCE);
                    if (own) {
                        const uint top = base + NBL_T < gb ? base + NBL_T : gb;
                        const uint ka = ma > base ? ma : base, kb = mb < top ? mb : top;
                        for (uint k = ka; k < kb; k++) {
                            const float4 t = cand[k - base];
                            const float dx = t.x - p.x, dy = t.y - p.y;
                            float d2 = dx * dx + dy * dy;
                            if (gn.w) {
                                const float dz = t.z - pz;
                                d2 = d2 + dz * dz;
                            }
                            if (d2 < r2) {
                                const uint j = as_uint(t.w);
                                if (j != i) {
                                    if (c < NBL_S)
                                        hits[c * NBL_WG + lid] = j;
                                    c++;
                                }
                            }
                        }
                    }
                }
            }
    } else if (own) {
        /* the group spans two rows: each query on its own */
        for (int z = zlo; z <= zhi; z++)
            for (int y = ylo; y <= yhi; y++) {
                const uint row = (uint)gn.x * ((uint)y + (uint)gn.y * (uint)z);
                const uint a = cs[row + (uint)xlo], b = cs[row + (uint)xhi + 1];
                for (uint k = a; k < b; k++) {
                    const float4 t = spos[k];
                    const float dx = t.x - p.x, dy = t.y - p.y;
                    float d2 = dx * dx + dy * dy;
                    if (gn.w) {
                        const float dz = t.z - pz;
                        d2 = d2 + dz * dz;
                    }
                    if (d2 < r2) {
                        const uint j = as_uint(t.w);
                        if (j != i) {
                            if (c < NBL_S)
                                hits[c * NBL_WG + lid] = j;
                            c++;
                        }
                    }
                }
            }
    }
    if (act) {
        const uint w = c < stride ? c : stride;
        for (uint k = 0; k < w; k++)
            idx[(size_t)k * pitch + i] = hits[k * NBL_WG + lid];
        count[i] = w; /* cut as nb_build does */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (own) {
        atomic_max(&lmax, c);
        atomic_add(&lsum, c);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        atomic_max(&stats[2 * slot], lmax);
        atomic_add(&stats[2 * slot + 1], lsum);
    }
}

/* Verlet lists (core/src/opencl/verlet.c): lists built within support +
 * skin are reused while no pair can have closed the skin, and cut every
 * step to the pairs within the support radius by nb_cut.
 *
 * nb_moved: the largest squared displacement of a set's particles since
 * the lists' build (x0), into stats[word] as float bits (non-negative floats
 * order as their bits); a NaN position counts as infinitely far. The
 * positions packed as float4 into xp on the way (one load per candidate in
 * nb_cut instead of three). */
__kernel void nb_moved(__global const float *x, __global const float *x0, uint n, int dim3,
                       __global uint *stats, uint word, __global float4 *xp)
{
    __local uint lmax;
    const uint i = get_global_id(0);
    if (get_local_id(0) == 0)
        lmax = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) {
        xp[i] = (float4)(x[3 * i], x[3 * i + 1], x[3 * i + 2], 0.0f); /* for nb_cut's gathers */
        const float dx = x[3 * i] - x0[3 * i], dy = x[3 * i + 1] - x0[3 * i + 1];
        const float dz = dim3 ? x[3 * i + 2] - x0[3 * i + 2] : 0.0f;
        const float d2 = dx * dx + dy * dy + dz * dz;
        atomic_max(&lmax, d2 == d2 ? as_uint(d2) : 0x7f800000u);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0 && lmax)
        atomic_max(&stats[word], lmax);
}

/* Whether target j is within r2 of the query p: the distance as nb_build
 * computes it (target minus query, x then y then z), so the kept set is
 * the one a build now would find */
inline int nb_near(__global const float4 *xt, uint j, float px, float py, float pz, float r2, int dim3)
{
    const float4 t = xt[j];
    const float dx = t.x - px, dy = t.y - py;
    float d2 = dx * dx + dy * dy;
    if (dim3) {
        const float dz = t.z - pz;
        d2 = d2 + dz * dz;
    }
    return d2 < r2;
}

/* The cut of the skin lists in place (FLOE_CL_VERLET_CUT=swap; the
 * default is nb_cut_stable below): row i holds its scnt[i] skin
 * entries with the count[i] within r2 first (xt: the targets' positions
 * packed by nb_moved); the stages read count and idx as any lists. A row whose entries still sit on the right side of its
 * count (most rows, most steps) is only read; the others are partitioned
 * again (two pointers: the kept entries move only where an entry left, so
 * the row keeps a deterministic order, not the build's). fresh: rows just
 * built (the count says nothing yet). report: the counts to stats as
 * nb_build's (a build reports its own, wider counts). */
__kernel void nb_cut(uint nq, __global const float *xq, __global const float4 *xt, float r2, int dim3,
                     __global const uint *scnt, __global uint *count, __global uint *idx, uint pitch, int fresh,
                     int report, __global uint *stats, uint slot)
{
    __local uint lmax, lsum;
    const uint i = get_global_id(0);
    if (get_local_id(0) == 0) {
        lmax = 0;
        lsum = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < nq) {
        const float px = xq[3 * i], py = xq[3 * i + 1], pz = dim3 ? xq[3 * i + 2] : 0.0f;
        const uint m = scnt[i], old = fresh ? 0u : count[i];
        uint c = 0;
        int moved = fresh;
        for (uint k = 0; k < m; k++) {
            const int in = nb_near(xt, idx[(size_t)k * pitch + i], px, py, pz, r2, dim3);
            c += (uint)in;
            moved |= in != (k < old);
        }
        if (moved) {
            /* [0, lo) within, [hi, m) outside */
            uint lo = 0, hi = m;
            while (lo < hi) {
                const uint jl = idx[(size_t)lo * pitch + i];
                if (nb_near(xt, jl, px, py, pz, r2, dim3)) {
                    lo++;
                    continue;
                }
                uint jh = 0;
                int found = 0;
                while (lo < --hi) {
                    jh = idx[(size_t)hi * pitch + i];
                    if ((found = nb_near(xt, jh, px, py, pz, r2, dim3)))
                        break;
                }
                if (!found)
                    break;
                idx[(size_t)lo * pitch + i] = jh;
                idx[(size_t)hi * pitch + i] = jl;
                lo++;
            }
            count[i] = c;
        }
        if (report) {
            atomic_max(&lmax, c);
            atomic_add(&lsum, c);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (report && get_local_id(0) == 0) {
        atomic_max(&stats[2 * slot], lmax);
        atomic_add(&stats[2 * slot + 1], lsum);
    }
}

/* The cut in build order (the default; FLOE_CL_VERLET_CUT=swap: nb_cut):
 * the skin rows stay as built in sidx, and row i of idx holds the entries
 * within r2 in that order. Walking the skin row, each entry within r2 is
 * compared with the cut row's entry at its place; the cut row is written
 * only from the first difference on (most rows, most steps: not at all),
 * and the count only where it changed. fresh, report: as nb_cut. */
__kernel void nb_cut_stable(uint nq, __global const float *xq, __global const float4 *xt, float r2, int dim3,
                            __global const uint *scnt, __global const uint *sidx, __global uint *count,
                            __global uint *idx, uint pitch, int fresh, int report, __global uint *stats, uint slot)
{
    __local uint lmax, lsum;
    const uint i = get_global_id(0);
    if (get_local_id(0) == 0) {
        lmax = 0;
        lsum = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < nq) {
        const float px = xq[3 * i], py = xq[3 * i + 1], pz = dim3 ? xq[3 * i + 2] : 0.0f;
        const uint m = scnt[i], old = fresh ? 0u : count[i];
        uint c = 0;
        int same = !fresh;
        for (uint k = 0; k < m; k++) {
            const uint j = sidx[(size_t)k * pitch + i];
            if (nb_near(xt, j, px, py, pz, r2, dim3)) {
                if (same && (c >= old || idx[(size_t)c * pitch + i] != j))
                    same = 0;
                if (!same)
                    idx[(size_t)c * pitch + i] = j;
                c++;
            }
        }
        if (c != old || fresh)
            count[i] = c;
        if (report) {
            atomic_max(&lmax, c);
            atomic_add(&lsum, c);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (report && get_local_id(0) == 0) {
        atomic_max(&stats[2 * slot], lmax);
        atomic_add(&stats[2 * slot + 1], lsum);
    }
}
