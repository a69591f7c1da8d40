/* The boxes of a domain decomposition (decomp_geom.h). */
#include "decomp_geom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the halo's share of a split: the area of its internal cuts, each axis'
 * cuts crossing the whole extent of the others */
static double cut_area(const int p[3], const double ext[3], int dim)
{
    double a = 0;
    for (int k = 0; k < dim; k++) {
        double face = 1;
        for (int j = 0; j < dim; j++)
            face *= j == k ? 1 : ext[j];
        a += (p[k] - 1) * face;
    }
    return a;
}

int dd_geom_init(dd_geom *g, int ranks, int dim, const double ext[3], int mode)
{
    memset(g, 0, sizeof *g);
    g->ranks = ranks;
    int longest = 0;
    for (int k = 1; k < dim; k++)
        longest = ext[k] > ext[longest] ? k : longest;
    int best[3] = {1, 1, 1};
    best[longest] = ranks;
    if (mode != DD_SLABS) {
        double best_area = INFINITY;
        int best_cut = 0;
        for (int a = 1; a <= ranks; a++) {
            if (ranks % a)
                continue;
            for (int b = 1; b <= ranks / a; b++) {
                if ((ranks / a) % b)
                    continue;
                int p[3] = {a, b, ranks / a / b};
                if (dim == 2 && p[2] != 1)
                    continue;
                int cut = (p[0] > 1) + (p[1] > 1) + (p[2] > 1);
                if (mode == DD_BOXES && cut < 2 && best_cut >= 2)
                    continue;
                double area = cut_area(p, ext, dim);
                /* boxes: the first split cutting two axes wins over any slab */
                int better = (mode == DD_BOXES && cut >= 2 && best_cut < 2) || area < best_area * (1 - 1e-9) ||
                             (area <= best_area * (1 + 1e-9) && cut < best_cut);
                if (better) {
                    memcpy(best, p, sizeof best);
                    best_area = area;
                    best_cut = cut;
                }
            }
        }
    }
    /* levels: the axes cut, the most parts first (the longest axis on ties) */
    int order[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (best[order[j]] > best[order[i]] ||
                (best[order[j]] == best[order[i]] && ext[order[j]] > ext[order[i]])) {
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    size_t total = 0;
    int nodes = 1;
    for (int i = 0; i < 3; i++) {
        if (best[order[i]] < 2 && !(i == 0 && ranks == 1))
            continue;
        int l = g->levels++;
        g->axis[l] = order[i];
        g->parts[l] = best[order[i]];
        g->nodes[l] = nodes;
        g->off[l] = total;
        total += (size_t)nodes * (size_t)(g->parts[l] + 1);
        nodes *= g->parts[l];
    }
    g->cuts = malloc(total * sizeof *g->cuts);
    if (!g->cuts)
        return -1;
    for (int l = 0; l < g->levels; l++)
        for (int node = 0; node < g->nodes[l]; node++) {
            double *c = dd_geom_row(g, l, node);
            for (int i = 0; i <= g->parts[l]; i++)
                c[i] = i == 0 ? -INFINITY : INFINITY;
        }
    return 0;
}

void dd_geom_free(dd_geom *g)
{
    free(g->cuts);
    g->cuts = NULL;
}

/* the last piece whose lower cut is <= v */
static int piece(const double *c, int parts, double v)
{
    int lo = 0, hi = parts - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (c[mid] <= v)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int dd_geom_node(const dd_geom *g, int l, const float *x)
{
    int node = 0;
    for (int k = 0; k < l; k++)
        node = node * g->parts[k] + piece(dd_geom_row(g, k, node), g->parts[k], x[g->axis[k]]);
    return node;
}

int dd_geom_owner(const dd_geom *g, const float *x) { return dd_geom_node(g, g->levels, x); }

void dd_geom_box(const dd_geom *g, int r, double lo[3], double hi[3])
{
    int idx[3] = {0, 0, 0};
    for (int l = g->levels - 1, q = r; l >= 0; l--) {
        idx[l] = q % g->parts[l];
        q /= g->parts[l];
    }
    for (int k = 0; k < 3; k++)
        lo[k] = -INFINITY, hi[k] = INFINITY;
    for (int l = 0, node = 0; l < g->levels; l++) {
        const double *c = dd_geom_row(g, l, node);
        lo[g->axis[l]] = c[idx[l]];
        hi[g->axis[l]] = c[idx[l] + 1];
        node = node * g->parts[l] + idx[l];
    }
}

/* the bin edge nearer quantile q of bin b, which holds (before, acc] of the
 * histogram's sum; a tie takes the far edge */
static int q_edge(double q, double before, double acc, int b) { return q - before < acc - q ? b : b + 1; }

double dd_geom_cut_row(dd_geom *g, int l, int node, const double *hist, int nb, double lo, double hi)
{
    double *c = dd_geom_row(g, l, node);
    const int parts = g->parts[l];
    const double w = (hi - lo) / nb;
    double total = 0, acc = 0;
    int last = 0; /* the bin edge of the last cut */
    for (int b = 0; b < nb; b++)
        total += hist[b];
    /* each cut on the bin edge nearer its quantile: a bin can hold a whole
     * layer of a lattice (a rank's 2-3% in a dam break's undisturbed
     * column), and always the far edge gave the lower ranks up to a layer
     * more */
    int r = 1;
    for (int b = 0; b < nb && r < parts; b++) {
        const double before = acc;
        acc += hist[b];
        while (r < parts && total > 0 && acc >= total * r / parts) {
            const int e = q_edge(total * r / parts, before, acc, b);
            last = e > last ? e : last;
            c[r++] = lo + last * w;
        }
    }
    /* an empty parent: even cuts over the range */
    for (; r < parts; r++)
        c[r] = total > 0 ? hi : lo + (hi - lo) * r / parts;
    c[0] = -INFINITY;
    c[parts] = INFINITY;
    /* the fullest part against the mean, by the histogram */
    double most = 0;
    for (int p = 0, b = 0; p < parts; p++) {
        const int end = p + 1 < parts && isfinite(c[p + 1]) && c[p + 1] < hi ? (int)lround((c[p + 1] - lo) / w) : nb;
        double sum = 0;
        for (; b < end && b < nb; b++)
            sum += hist[b];
        most = sum > most ? sum : most;
    }
    return total > 0 ? most / (total / parts) : 1;
}

void dd_geom_describe(const dd_geom *g, char *buf, size_t len)
{
    static const char axes[] = "xyz";
    if (g->levels <= 1) {
        snprintf(buf, len, "%d slabs along %c", g->ranks, axes[g->levels ? g->axis[0] : 0]);
        return;
    }
    int n = snprintf(buf, len, "%d", g->parts[0]);
    for (int l = 1; l < g->levels && n > 0 && (size_t)n < len; l++)
        n += snprintf(buf + n, len - (size_t)n, "x%d", g->parts[l]);
    for (int l = 0; l < g->levels && n > 0 && (size_t)n < len; l++)
        n += snprintf(buf + n, len - (size_t)n, "%s%c", l ? ", " : " boxes (", axes[g->axis[l]]);
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ")");
}
