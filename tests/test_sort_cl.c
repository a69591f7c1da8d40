/* The core's device sort (ABI 1.11: api->cl_sort; core/src/opencl/sort.c,
 * kernels/core/sort.cl) against a stable sort on the host: the keys and
 * their payload in the same order, equal keys in their first order, bits
 * above the sorted ones ignored (and carried), sizes that fill no tile
 * exactly, an odd number of passes, empty and one-key input. On PoCL;
 * skipped without an OpenCL device. */
#include "cl_fixture.h"

#include <floe/module.h>

#include <stdlib.h>
#include <string.h>

typedef int (*write_fn)(void *queue, void *mem, uint32_t blocking, size_t off, size_t size, const void *ptr,
                        uint32_t nwait, const void *wait, void *event);
typedef int (*read_fn)(void *queue, void *mem, uint32_t blocking, size_t off, size_t size, void *ptr, uint32_t nwait,
                       const void *wait, void *event);

static floe_ctx *device_ctx(void)
{
    floe_sim_def def = floe_sim_default_def();
    def.spacing = 0.01f;
    def.backend = "opencl";
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    floe_ctx_set_log_level(ctx, FLOE_LOG_WARN);
    return ctx;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

typedef struct entry {
    uint64_t key, sorted; /* the whole key, and the bits the sort reads */
    uint32_t val;
} entry;

/* the host's stable sort: by the sorted bits, then by first position */
static int by_key(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->sorted != y->sorted)
        return x->sorted < y->sorted ? -1 : 1;
    return x->val < y->val ? -1 : x->val > y->val;
}

/* sort n keys on the device by their low `bits` bits, the payload 0 .. n - 1,
 * and compare with the host's stable sort word for word */
static void check_sort(floe_ctx *ctx, const uint64_t *keys, uint32_t n, int bits)
{
    const floe_api *api = floe_core_api();
    write_fn wr = (write_fn)api->cl_fn("clEnqueueWriteBuffer");
    read_fn rd = (read_fn)api->cl_fn("clEnqueueReadBuffer");
    cr_assert(wr && rd);
    void *kb = api->cl_scratch(ctx, "test.keys", (size_t)n * 8 + 8), *vb = api->cl_scratch(ctx, "test.vals", (size_t)n * 4 + 4);
    cr_assert(kb && vb);
    uint32_t *val = malloc((size_t)n * 4 + 4);
    uint64_t *got = malloc((size_t)n * 8 + 8);
    entry *ref = malloc((size_t)n * sizeof *ref + sizeof *ref);
    const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    for (uint32_t i = 0; i < n; i++) {
        val[i] = i;
        ref[i] = (entry){keys[i], keys[i] & mask, i};
    }
    qsort(ref, n, sizeof *ref, by_key);
    if (n) {
        cr_assert_eq(wr(api->cl_queue(ctx), kb, 1, 0, (size_t)n * 8, keys, 0, NULL, NULL), 0);
        cr_assert_eq(wr(api->cl_queue(ctx), vb, 1, 0, (size_t)n * 4, val, 0, NULL, NULL), 0);
    }
    cr_assert_eq(api->cl_sort(ctx, kb, vb, n, bits), FLOE_OK, "%s", floe_ctx_error(ctx));
    if (n) {
        cr_assert_eq(rd(api->cl_queue(ctx), kb, 1, 0, (size_t)n * 8, got, 0, NULL, NULL), 0);
        cr_assert_eq(rd(api->cl_queue(ctx), vb, 1, 0, (size_t)n * 4, val, 0, NULL, NULL), 0);
    }
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(val[i], ref[i].val, "n %u, %d bits: entry %u holds key %u, the host's sort has %u", n, bits, i,
                     val[i], ref[i].val);
        cr_assert_eq(got[i], ref[i].key, "n %u, %d bits: entry %u's key %llx, expected %llx", n, bits, i,
                     (unsigned long long)got[i], (unsigned long long)ref[i].key);
    }
    free(val);
    free(got);
    free(ref);
}

Test(sort_cl, random_keys_of_every_width_match_the_host_stable_sort)
{
    need_opencl();
    floe_ctx *ctx = device_ctx();
    const uint32_t n = 100003; /* 25 tiles of 4096 and 1699 keys */
    uint64_t *k = malloc((size_t)n * 8);
    for (uint32_t i = 0; i < n; i++)
        k[i] = rng();
    check_sort(ctx, k, n, 64); /* 16 passes */
    check_sort(ctx, k, n, 30); /* 8 passes; the 34 bits above are ignored, and carried */
    check_sort(ctx, k, n, 12); /* 3 passes: the odd count is copied back */
    free(k);
    floe_ctx_destroy(ctx);
}

Test(sort_cl, duplicate_keys_keep_their_order)
{
    need_opencl();
    floe_ctx *ctx = device_ctx();
    const uint32_t n = 54321;
    uint64_t *k = malloc((size_t)n * 8);
    for (uint32_t i = 0; i < n; i++)
        k[i] = rng() % 37; /* about 1470 of each */
    check_sort(ctx, k, n, 6);
    for (uint32_t i = 0; i < n; i++)
        k[i] = 5; /* all equal: the payload stays 0 .. n - 1 */
    check_sort(ctx, k, n, 64);
    for (uint32_t i = 0; i < n; i++)
        k[i] = n - i; /* reversed, every digit of the low 16 bits */
    check_sort(ctx, k, n, 16);
    free(k);
    floe_ctx_destroy(ctx);
}

Test(sort_cl, sizes_around_a_tile_and_empty_input)
{
    need_opencl();
    floe_ctx *ctx = device_ctx();
    const uint32_t sizes[] = {0, 1, 2, 3, 255, 4095, 4096, 4097, 8191, 12289};
    uint64_t *k = malloc(12289 * 8);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        for (uint32_t i = 0; i < sizes[s]; i++)
            k[i] = rng() % 1000;
        check_sort(ctx, k, sizes[s], 10);
        check_sort(ctx, k, sizes[s], 0); /* no bits: nothing moves */
    }
    free(k);
    /* empty input needs no buffer */
    const floe_api *api = floe_core_api();
    cr_assert_eq(api->cl_sort(ctx, NULL, NULL, 0, 64), FLOE_OK, "%s", floe_ctx_error(ctx));
    floe_ctx_destroy(ctx);
}

Test(sort_cl, bad_arguments_and_the_cpu_backend_are_refused)
{
    const floe_api *api = floe_core_api();
    floe_sim_def def = floe_sim_default_def();
    def.spacing = 0.01f;
    char err[512];
    floe_ctx *ctx = floe_ctx_create(&def, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    cr_assert_neq(api->cl_sort(ctx, NULL, NULL, 10, 8), FLOE_OK);
    cr_assert(strstr(floe_ctx_error(ctx), "OpenCL backend is not active"), "%s", floe_ctx_error(ctx));
    floe_ctx_destroy(ctx);
    if (floe_cl_devices(count_line, NULL) <= 0)
        return;
    ctx = device_ctx();
    cr_assert_eq(api->cl_sort(ctx, NULL, NULL, 10, 8), FLOE_ERR_ARG);
    cr_assert(strstr(floe_ctx_error(ctx), "no buffer"), "%s", floe_ctx_error(ctx));
    cr_assert_eq(api->cl_sort(ctx, NULL, NULL, 10, 65), FLOE_ERR_ARG);
    cr_assert(strstr(floe_ctx_error(ctx), "65 key bits"), "%s", floe_ctx_error(ctx));
    floe_ctx_destroy(ctx);
}
