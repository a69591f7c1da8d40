/* Neighbour search benchmark: see nb_bench() in neighbours.h. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "neighbours.h"

#include <floe/types.h>

#include <math.h>
#include <stdlib.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

static double nb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t xorshift64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* uniform in [-1, 1) */
static float jitter(uint64_t *s)
{
    return (float)((double)(xorshift64(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

FLOE_EXPORT int nb_bench(uint32_t n, int dim, int threads, int iters, double *updates_per_s,
                         double *sort_ms, double *build_ms, double *avg_neighbours)
{
    if (n == 0 || (dim != 2 && dim != 3) || iters <= 0 || threads < 0)
        return -1;

    /* Fluid density: particles on a cubic (square) lattice of spacing d with
     * a small jitter, support radius h = 2d, cells of edge h. */
    const float d = 0.01f, h = 2.0f * d, jit = 0.1f * d;
    uint32_t m = (uint32_t)ceil(dim == 3 ? cbrt((double)n) : sqrt((double)n));
    if (m == 0)
        m = 1;
    float *x = malloc((size_t)n * 3 * sizeof(float));
    if (!x)
        return -1;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t a = k % m, b = (k / m) % m, c = dim == 3 ? k / m / m : 0;
        x[3 * (size_t)k + 0] = ((float)a + 0.5f) * d + jit * jitter(&seed);
        x[3 * (size_t)k + 1] = ((float)b + 0.5f) * d + jit * jitter(&seed);
        x[3 * (size_t)k + 2] = dim == 3 ? ((float)c + 0.5f) * d + jit * jitter(&seed) : 0.0f;
    }
    const float lo[3] = {0.0f, 0.0f, 0.0f};
    const float hi[3] = {(float)m * d, (float)m * d, dim == 3 ? (float)m * d : 0.0f};

#ifdef _OPENMP
    int prev_threads = omp_get_max_threads();
    if (threads > 0)
        omp_set_num_threads(threads);
#endif

    int rc = -1;
    nb_grid g;
    nb_sorted s = {0};
    nb_list l = {0};
    if (nb_grid_init(&g, dim, lo, hi, h, (uint64_t)1 << 31))
        goto done;

    /* warm-up: grows all buffers to their steady-state size */
    if (nb_sort(&s, &g, x, n) || nb_build(&l, &g, x, n, &s, x, h, 1))
        goto done;

    double t_sort = 0.0, t_build = 0.0;
    for (int it = 0; it < iters; it++) {
        double t0 = nb_now();
        if (nb_sort(&s, &g, x, n))
            goto done;
        double t1 = nb_now();
        if (nb_build(&l, &g, x, n, &s, x, h, 1))
            goto done;
        double t2 = nb_now();
        t_sort += t1 - t0;
        t_build += t2 - t1;
    }
    double total = t_sort + t_build;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += l.count[i];

    if (updates_per_s)
        *updates_per_s = total > 0.0 ? (double)n * (double)iters / total : 0.0;
    if (sort_ms)
        *sort_ms = 1e3 * t_sort / iters;
    if (build_ms)
        *build_ms = 1e3 * t_build / iters;
    if (avg_neighbours)
        *avg_neighbours = (double)sum / (double)n;
    rc = 0;

done:
#ifdef _OPENMP
    omp_set_num_threads(prev_threads);
#endif
    nb_sorted_free(&s);
    nb_list_free(&l);
    free(x);
    return rc;
}
