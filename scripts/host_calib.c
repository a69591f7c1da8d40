/* How busy is the host? Two probes that do not depend on Floe, for reading
 * benchmark figures on a shared machine (docs/performance.md):
 *   fma: 12 independent AVX2 FMA chains, 1.2e9 FMAs; at two FMAs a cycle
 *        (the core's peak) the time gives the clock the core really ran at;
 *   mem: a random pointer chase (ns per dependent load) and a stream read
 *        (GB/s) over MB megabytes.
 * Build and run (one copy per core for the fma probe):
 *   gcc -O2 -march=native scripts/host_calib.c -o /tmp/host_calib
 *   /tmp/host_calib fma & /tmp/host_calib fma; wait
 *   /tmp/host_calib mem 4; /tmp/host_calib mem 16 */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fma_probe(void)
{
    const double t0 = now();
    const __m256 x = _mm256_set1_ps(1.0001f), y = _mm256_set1_ps(0.9999f);
    __m256 s[12];
    for (int k = 0; k < 12; k++)
        s[k] = _mm256_setzero_ps();
    for (long i = 0; i < 100000000L; i++)
#pragma GCC unroll 12 /* the chains in registers */
        for (int k = 0; k < 12; k++)
            s[k] = _mm256_fmadd_ps(x, y, s[k]);
    const double t = now() - t0;
    __m256 a = s[0];
    for (int k = 1; k < 12; k++)
        a = _mm256_add_ps(a, s[k]);
    float o[8];
    _mm256_storeu_ps(o, a);
    printf("fma: %.3f s for 1.2e9 FMAs, %.2f GHz at two a cycle (%g)\n", t, 1.2e9 / 2.0 / t / 1e9, (double)o[0]);
    return 0;
}

static int mem_probe(size_t mb)
{
    const size_t n = mb * 1024 * 1024 / 8;
    uint64_t *a = malloc(n * 8);
    if (!a || n < 2)
        return 1;
    for (size_t i = 0; i < n; i++)
        a[i] = i;
    uint64_t s = 88172645463325252ull; /* Sattolo's shuffle: one cycle through all */
    for (size_t i = n - 1; i > 0; i--) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const size_t j = s % i;
        const uint64_t t = a[i];
        a[i] = a[j], a[j] = t;
    }
    double t0 = now();
    uint64_t p = 0;
    for (size_t k = 0; k < 20000000; k++)
        p = a[p];
    const double t1 = now();
    double sum = 0;
    for (int r = 0; r < 10; r++)
        for (size_t i = 0; i < n; i++)
            sum += (double)a[i];
    const double t2 = now();
    printf("mem %zu MB: chase %.1f ns a load, stream %.1f GB/s (%llu %g)\n", mb, (t1 - t0) / 2e7 * 1e9,
           10.0 * (double)n * 8 / (t2 - t1) / 1e9, (unsigned long long)p, sum);
    free(a);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "fma") == 0)
        return fma_probe();
    if (argc > 1 && strcmp(argv[1], "mem") == 0)
        return mem_probe(argc > 2 ? (size_t)atoi(argv[2]) : 16);
    fprintf(stderr, "usage: %s fma | mem [MB]\n", argv[0]);
    return 2;
}
