/* The marching-cubes table, derived rather than typed in: for each of the
 * 256 inside/outside patterns of a cell's corners, the surface's trace on
 * each face of the cell is a set of segments between the face's crossed
 * edges; on a face with two diagonally opposite inside corners (the
 * ambiguous face) each inside corner is cut off on its own. The rule
 * depends on the face's four corners alone, so the two cells sharing a
 * face trace it the same way and the mesh has no cracks. Each segment is
 * turned so that, seen from outside the cell, the inside corners lie on
 * its left; the segments then join into closed, consistently turned loops
 * (every crossed edge lies on two faces of the cell: it ends one segment
 * and starts another), and each loop is cut into triangles (triangulate).
 * Every crossed grid edge thus carries one vertex shared by the loops of
 * the four cells around it, which close around it in one cycle: the mesh
 * is a closed, oriented 2-manifold, as with the tetrahedra (mesher.c),
 * with about a third of their triangles. The table follows the field's sign
 * pattern only (the "separate the inside corners" choice on every face),
 * not the trilinear interpolant's topology (Chernyaev's 33 cases); the
 * difference is where the field is near the iso value at a face's centre,
 * a feature below the cell size. */
#include "surface.h"

#include <math.h>
#include <string.h>

const int mc_edge[12][2] = {
    {0, 1}, {2, 3}, {4, 5}, {6, 7},  /* along x */
    {0, 2}, {1, 3}, {4, 6}, {5, 7},  /* along y */
    {0, 4}, {1, 5}, {2, 6}, {3, 7},  /* along z */
};

static int edge_of(int a, int b)
{
    for (int e = 0; e < 12; e++)
        if ((mc_edge[e][0] == a && mc_edge[e][1] == b) || (mc_edge[e][0] == b && mc_edge[e][1] == a))
            return e;
    return -1;
}

static void corner_pos(int c, double p[3])
{
    p[0] = c & 1;
    p[1] = c >> 1 & 1;
    p[2] = c >> 2 & 1;
}

static void edge_mid(int e, double m[3])
{
    double a[3], b[3];
    corner_pos(mc_edge[e][0], a);
    corner_pos(mc_edge[e][1], b);
    for (int k = 0; k < 3; k++)
        m[k] = 0.5 * (a[k] + b[k]);
}

/* the segment (s, t) on the face of outward normal n turned so that the
 * point ref (inside) lies on its left seen from outside: n x (t - s) points
 * towards ref */
static void add_segment(int next[12], int s, int t, const double n[3], const double ref[3])
{
    double ms[3], mt[3], d[3], c[3], r[3];
    edge_mid(s, ms);
    edge_mid(t, mt);
    for (int k = 0; k < 3; k++) {
        d[k] = mt[k] - ms[k];
        r[k] = ref[k] - 0.5 * (ms[k] + mt[k]);
    }
    c[0] = n[1] * d[2] - n[2] * d[1];
    c[1] = n[2] * d[0] - n[0] * d[2];
    c[2] = n[0] * d[1] - n[1] * d[0];
    if (c[0] * r[0] + c[1] * r[1] + c[2] * r[2] > 0)
        next[s] = t;
    else
        next[t] = s;
}

/* the two edges lie on one face of the cell */
static int same_face(int e, int f)
{
    const int a = mc_edge[e][0], b = mc_edge[e][1], c = mc_edge[f][0], d = mc_edge[f][1];
    for (int k = 0; k < 3; k++)
        for (int side = 0; side < 2; side++)
            if ((a >> k & 1) == side && (b >> k & 1) == side && (c >> k & 1) == side && (d >> k & 1) == side)
                return 1;
    return 0;
}

/* One loop's triangles. A diagonal between two vertices on one face of
 * the cell could also be drawn by the cell on the other side of that face
 * (a loop visits four vertices of a face where the face is ambiguous), and
 * that edge would then have four triangles: such diagonals are not used.
 * Among the other triangulations, the one of the shortest diagonals
 * (measured between the edges' midpoints): no thin fans across a loop.
 * The loop runs counter-clockwise around the inside seen from outside the
 * cell, so its right-hand normal points into the fluid: the triangles are
 * turned the other way. */
static int triangulate(mc_table *t, int cs, const int loop[12], int len)
{
    double cost[12][12];     /* best total diagonal length of the polygon loop[i..j] */
    int split[12][12];
    double mid[12][3];
    for (int i = 0; i < len; i++)
        edge_mid(loop[i], mid[i]);
    for (int gap = 1; gap < len; gap++)
        for (int i = 0; i + gap < len; i++) {
            const int j = i + gap;
            cost[i][j] = gap == 1 ? 0 : 1e30;
            split[i][j] = -1;
            for (int k = i + 1; k < j; k++) {
                /* triangle (i, k, j): its sides i-k and k-j are loop segments or diagonals */
                if (cost[i][k] >= 1e30 || cost[k][j] >= 1e30)
                    continue;
                double c = cost[i][k] + cost[k][j];
                const int diag_ik = k - i > 1, diag_kj = j - k > 1;
                if ((diag_ik && same_face(loop[i], loop[k])) || (diag_kj && same_face(loop[k], loop[j])))
                    continue;
                for (int d = 0; d < 2; d++) {
                    const int a = d ? k : i, b = d ? j : k;
                    if (b - a > 1)
                        c += sqrt((mid[a][0] - mid[b][0]) * (mid[a][0] - mid[b][0]) +
                                  (mid[a][1] - mid[b][1]) * (mid[a][1] - mid[b][1]) +
                                  (mid[a][2] - mid[b][2]) * (mid[a][2] - mid[b][2]));
                }
                if (c < cost[i][j] - 1e-12) {
                    cost[i][j] = c;
                    split[i][j] = k;
                }
            }
        }
    /* the side 0 - (len - 1) closes the loop: it is a segment, never a diagonal */
    if (len < 3 || cost[0][len - 1] >= 1e30)
        return -1;
    int stack[24][2], top = 0;
    stack[top][0] = 0, stack[top++][1] = len - 1;
    while (top--) {
        const int i = stack[top][0], j = stack[top][1], k = split[i][j];
        if (j - i < 2)
            continue;
        uint8_t *tri = t->tri[cs][t->ntri[cs]++];
        tri[0] = (uint8_t)loop[i];
        tri[1] = (uint8_t)loop[j];
        tri[2] = (uint8_t)loop[k];
        stack[top][0] = i, stack[top++][1] = k;
        stack[top][0] = k, stack[top++][1] = j;
    }
    return 0;
}

int mc_table_build(mc_table *t)
{
    memset(t, 0, sizeof *t);
    for (int cs = 0; cs < 256; cs++) {
        int next[12];
        for (int e = 0; e < 12; e++)
            next[e] = -1;
        for (int k = 0; k < 3; k++)
            for (int side = 0; side < 2; side++) {
                const int u = (k + 1) % 3, v = (k + 2) % 3, base = side << k;
                const int q[4] = {base, base | 1 << u, base | 1 << u | 1 << v, base | 1 << v};
                double n[3] = {0, 0, 0};
                n[k] = side ? 1 : -1;
                int in[4], nin = 0;
                for (int i = 0; i < 4; i++)
                    nin += in[i] = cs >> q[i] & 1;
                if (nin == 0 || nin == 4)
                    continue;
                if (nin == 2 && in[0] == in[2]) { /* ambiguous: cut off each inside corner */
                    for (int i = 0; i < 4; i++)
                        if (in[i]) {
                            double ref[3];
                            corner_pos(q[i], ref);
                            add_segment(next, edge_of(q[(i + 3) % 4], q[i]), edge_of(q[i], q[(i + 1) % 4]), n, ref);
                        }
                    continue;
                }
                int cross[2], nc = 0;
                double ref[3] = {0, 0, 0};
                for (int i = 0; i < 4; i++) {
                    if (in[i] != in[(i + 1) % 4])
                        cross[nc++] = edge_of(q[i], q[(i + 1) % 4]);
                    if (in[i]) {
                        double p[3];
                        corner_pos(q[i], p);
                        for (int d = 0; d < 3; d++)
                            ref[d] += p[d] / nin;
                    }
                }
                add_segment(next, cross[0], cross[1], n, ref);
            }
        /* every crossed edge: one segment out, one in; follow the loops */
        int seen[12] = {0}, indeg[12] = {0};
        for (int e = 0; e < 12; e++)
            if (next[e] >= 0)
                indeg[next[e]]++;
        for (int e = 0; e < 12; e++) {
            const int crossed = (cs >> mc_edge[e][0] & 1) != (cs >> mc_edge[e][1] & 1);
            if (crossed != (next[e] >= 0) || indeg[e] != crossed)
                return -1;
        }
        for (int e0 = 0; e0 < 12; e0++) {
            if (next[e0] < 0 || seen[e0])
                continue;
            int loop[12], len = 0;
            for (int e = e0; !seen[e]; e = next[e]) {
                seen[e] = 1;
                loop[len++] = e;
            }
            if (triangulate(t, cs, loop, len))
                return -1;
        }
    }
    return 0;
}
