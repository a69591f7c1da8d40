/* Marching cubes of modules/surface on the device (surface_cl.c), on the
 * sparse grid the splat left there: one work item per grid point, the
 * cell whose lowest corner it is, and the three grid edges that start at
 * it (+x, +y, +z) are the edges it owns.
 *
 *   mc_count: the cell's triangles (cubes.c's table) and the owned edges
 *             the iso surface crosses (one vertex each)
 *   (the host: exclusive scans of both counts, api->cl_scan)
 *   mc_emit:  the owned vertices at their offsets, and the cell's
 *             triangles, each corner the vertex of its edge's owner: the
 *             point at the edge's lower end, maybe in a neighbouring block,
 *             at that point's offset plus the rank of the edge's axis
 *             among its crossed edges
 *
 * Points, patterns and positions as mesher.c computes them (a point is
 * inside when its value exceeds iso; a vertex at t = (iso - f_a) /
 * (f_b - f_a) in float, its coordinates in double), no contraction: the
 * triangles come in the host's order and the vertices at the host's
 * positions; the host numbers the vertices by first use as mesher.c does.
 * nbr holds for each block the 8 blocks of its 2x2x2 neighbourhood (block
 * c at offset (c & 1, c >> 1 & 1, c >> 2 & 1), -1 absent: values 0). */

#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__constant uchar mc_edge[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3},
                                   {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};

/* the value at local point (lx, ly, lz), 0..15, of the 2x2x2 blocks nb */
static float value_at(__global const float *val, const int nb[8], int lx, int ly, int lz)
{
    const int bi = (lx >> 3) | (ly >> 3) << 1 | (lz >> 3) << 2;
    if (nb[bi] < 0)
        return 0.0f;
    return val[(size_t)nb[bi] * 512 + (size_t)(lx & 7) + 8 * ((size_t)(ly & 7) + 8 * (size_t)(lz & 7))];
}

/* the crossed edges among the three owned by local point (x, y, z): bit
 * 0 +x, bit 1 +y, bit 2 +z */
static int crossed(__global const float *val, const int nb[8], int x, int y, int z, float iso)
{
    const int in = value_at(val, nb, x, y, z) > iso;
    return (in != (value_at(val, nb, x + 1, y, z) > iso)) | (in != (value_at(val, nb, x, y + 1, z) > iso)) << 1 |
           (in != (value_at(val, nb, x, y, z + 1) > iso)) << 2;
}

static int pattern_of(__global const float *val, const int nb[8], int lx, int ly, int lz, float iso, float f[8])
{
    int pattern = 0;
    for (int c = 0; c < 8; c++) {
        f[c] = value_at(val, nb, lx + (c & 1), ly + (c >> 1 & 1), lz + (c >> 2 & 1));
        pattern |= (f[c] > iso) << c;
    }
    return pattern;
}

__kernel void mc_count(uint npts, __global const float *val, __global const int *nbr, __global const uchar *ntri,
                       float iso, __global uint *tcount, __global uint *vcount)
{
    const uint gid = get_global_id(0);
    if (gid >= npts)
        return;
    const uint b = gid >> 9, l = gid & 511u;
    const int lx = (int)(l & 7u), ly = (int)((l >> 3) & 7u), lz = (int)(l >> 6);
    int nb[8];
    for (int c = 0; c < 8; c++)
        nb[c] = nbr[8 * (size_t)b + c];
    float f[8];
    const int pattern = pattern_of(val, nb, lx, ly, lz, iso, f);
    tcount[gid] = pattern == 0 || pattern == 255 ? 0u : (uint)ntri[pattern];
    const int cr = crossed(val, nb, lx, ly, lz, iso);
    vcount[gid] = (uint)((cr & 1) + (cr >> 1 & 1) + (cr >> 2 & 1));
}

__kernel void mc_emit(uint npts, __global const float *val, __global const int *nbr, __global const int *coord,
                      __global const uchar *ntri, __global const uchar *tri, float iso, __global const uint *toff,
                      __global const uint *voff, double lo0, double lo1, double lo2, double cell,
                      __global float *vout, __global uint *tout)
{
    const uint gid = get_global_id(0);
    if (gid >= npts)
        return;
    const uint b = gid >> 9, l = gid & 511u;
    const int lx = (int)(l & 7u), ly = (int)((l >> 3) & 7u), lz = (int)(l >> 6);
    int nb[8];
    for (int c = 0; c < 8; c++)
        nb[c] = nbr[8 * (size_t)b + c];
    float f[8];
    const int pattern = pattern_of(val, nb, lx, ly, lz, iso, f);
    /* the owned vertices: mesher.c's edge_vertex from corner 0 to 1, 2, 4 */
    const long p[3] = {(long)coord[3 * b] * 8 + lx, (long)coord[3 * b + 1] * 8 + ly, (long)coord[3 * b + 2] * 8 + lz};
    const double lo[3] = {lo0, lo1, lo2};
    uint at = voff[gid];
    for (int k = 0; k < 3; k++) {
        const int bit = 1 << k;
        if ((f[0] > iso) == (f[bit] > iso))
            continue;
        const float t = (iso - f[0]) / (f[bit] - f[0]);
        __global float *v = vout + 3 * (size_t)at++;
        for (int d = 0; d < 3; d++)
            v[d] = (float)(lo[d] + cell * ((double)p[d] + t * (float)(d == k)));
    }
    if (pattern == 0 || pattern == 255)
        return;
    const uint t0 = toff[gid];
    for (int i = 0; i < (int)ntri[pattern]; i++)
        for (int k = 0; k < 3; k++) {
            const int e = tri[36 * pattern + 3 * i + k], a = mc_edge[e][0], axis = a ^ mc_edge[e][1];
            const int ox = lx + (a & 1), oy = ly + (a >> 1 & 1), oz = lz + (a >> 2 & 1);
            const int ob = nb[(ox >> 3) | (oy >> 3) << 1 | (oz >> 3) << 2];
            const uint og = (uint)ob * 512u + (uint)((ox & 7) + 8 * ((oy & 7) + 8 * (oz & 7)));
            const int cr = crossed(val, nb, ox, oy, oz, iso);
            const int rank = axis == 1 ? 0 : axis == 2 ? (cr & 1) : (cr & 1) + (cr >> 1 & 1);
            tout[3 * ((size_t)t0 + i) + k] = voff[og] + (uint)rank;
        }
}

/* Numbering the vertices by first use along the triangles (the host
 * mesher's order), in parallel: each vertex's first corner is the least
 * corner index q = 3 t + k that names it (atomic_min: the same whatever
 * the order), a corner is a "first" when it is its vertex's first corner,
 * an exclusive scan of those flags numbers the vertices, and the
 * triangles are rewritten. */
__kernel void mc_first_init(uint nv, __global uint *first)
{
    const uint v = get_global_id(0);
    if (v < nv)
        first[v] = 0xffffffffu;
}

__kernel void mc_first_min(uint ncorner, __global const uint *tri, __global uint *first)
{
    const uint q = get_global_id(0);
    if (q < ncorner)
        atomic_min(&first[tri[q]], q);
}

__kernel void mc_first_flag(uint ncorner, __global const uint *tri, __global const uint *first, __global uint *flag)
{
    const uint q = get_global_id(0);
    if (q < ncorner)
        flag[q] = first[tri[q]] == q;
}

/* flag now holds the exclusive scan: vertex v's number is flag[first[v]] */
__kernel void mc_renumber_vertices(uint nv, __global const uint *first, __global const uint *flag,
                                   __global const float *vin, __global float *vout)
{
    const uint v = get_global_id(0);
    if (v >= nv)
        return;
    if (first[v] == 0xffffffffu) /* on no triangle: not kept (marching cubes makes none such) */
        return;
    const uint to = flag[first[v]];
    for (int d = 0; d < 3; d++)
        vout[3 * (size_t)to + d] = vin[3 * (size_t)v + d];
}

__kernel void mc_renumber_corners(uint ncorner, __global uint *tri, __global const uint *first,
                                  __global const uint *flag)
{
    const uint q = get_global_id(0);
    if (q < ncorner)
        tri[q] = flag[first[tri[q]]];
}
