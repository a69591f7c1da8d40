/* The core's device sort (api->cl_sort, core/src/opencl/sort.c): a stable
 * LSD radix sort of 64-bit keys with a uint payload, RADIX_BITS bits a pass.
 *
 *   radix_count    each tile's count of each digit, digit-major:
 *                  hist[d * ntiles + tile]; the core's scan over hist then
 *                  gives every (digit, tile) its first slot
 *   radix_scatter  each tile's keys to their slots: within a digit, in
 *                  tile order and within the tile in index order (stable)
 *
 * dmask keeps a pass's digit to the bits asked for (the last pass may read
 * fewer than RADIX_BITS). A tile is RADIX_WG x RADIX_PER keys. Its digits come into local memory
 * in coalesced rows; work item l then owns keys l RADIX_PER ..
 * l RADIX_PER + RADIX_PER - 1 of the tile and counts them in a column of
 * its own (no atomics), so the exclusive scan of the columns in (digit,
 * item) order is each key's rank. */
#define RADIX_BITS 4
#define RADIX_DIGITS (1 << RADIX_BITS)
#define RADIX_WG 256
#define RADIX_PER 16
#define RADIX_TILE (RADIX_WG * RADIX_PER)
#define RPAD(i) ((i) + ((i) >> 5)) /* a word per 32: an item's run of 16 words lies in other banks */

/* the tile's digits into dig (coalesced), each item's counts into its column
 * cnt[RPAD(d * RADIX_WG + lid)] */
static void tile_count(__global const ulong *key, uint n, uint shift, uint dmask, __local uchar *dig,
                       __local uint *cnt)
{
    const uint lid = get_local_id(0), base = get_group_id(0) * RADIX_TILE;
    for (int k = 0; k < RADIX_PER; k++) {
        const uint w = (uint)k * RADIX_WG + lid;
        dig[w] = base + w < n ? (uchar)((key[base + w] >> shift) & dmask) : (uchar)0;
    }
    for (int d = 0; d < RADIX_DIGITS; d++)
        cnt[RPAD((uint)d * RADIX_WG + lid)] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < RADIX_PER; k++) {
        const uint w = lid * RADIX_PER + (uint)k;
        if (base + w < n)
            cnt[RPAD((uint)dig[w] * RADIX_WG + lid)]++;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel __attribute__((reqd_work_group_size(RADIX_WG, 1, 1)))
void radix_count(__global const ulong *key, uint n, uint shift, uint dmask, uint ntiles, __global uint *hist)
{
    __local uchar dig[RADIX_TILE];
    __local uint cnt[RPAD(RADIX_DIGITS * RADIX_WG)];
    __local uint part[RADIX_WG];
    const uint lid = get_local_id(0);
    tile_count(key, n, shift, dmask, dig, cnt);
    /* item l sums 16 items' counts of digit l / 16; 16 items then add those */
    const uint d = lid / 16, c0 = (lid % 16) * 16;
    uint s = 0;
    for (uint c = 0; c < 16; c++)
        s += cnt[RPAD(d * RADIX_WG + c0 + c)];
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < RADIX_DIGITS) {
        uint t = 0;
        for (uint c = 0; c < 16; c++)
            t += part[lid * 16 + c];
        hist[lid * ntiles + get_group_id(0)] = t;
    }
}

__kernel __attribute__((reqd_work_group_size(RADIX_WG, 1, 1)))
void radix_scatter(__global const ulong *key, __global const uint *val, uint n, uint shift, uint dmask, uint ntiles,
                   __global const uint *hist, __global ulong *okey, __global uint *oval)
{
    __local uchar dig[RADIX_TILE];
    __local uint cnt[RPAD(RADIX_DIGITS * RADIX_WG)];
    __local uint tmp[RADIX_WG];
    __local uint first[RADIX_DIGITS];
    const uint lid = get_local_id(0), g = get_group_id(0), base = g * RADIX_TILE;
    tile_count(key, n, shift, dmask, dig, cnt);
    /* exclusive scan of the 4096 column words in (digit, item) order: item l
     * takes words 16 l .. 16 l + 15, Hillis-Steele over the 256 sums */
    uint v[16], s = 0;
    for (int k = 0; k < 16; k++) {
        v[k] = cnt[RPAD(lid * 16 + (uint)k)];
        s += v[k];
    }
    tmp[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < RADIX_WG; off <<= 1) {
        const uint t = lid >= off ? tmp[lid - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[lid] += t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint run = tmp[lid] - s;
    for (int k = 0; k < 16; k++) {
        cnt[RPAD(lid * 16 + (uint)k)] = run;
        run += v[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* digit d's keys of this tile start at slot hist[d ntiles + g]; the scan
     * counted the tile's keys of smaller digits too */
    if (lid < RADIX_DIGITS)
        first[lid] = hist[lid * ntiles + g] - cnt[RPAD(lid * RADIX_WG)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < RADIX_PER; k++) {
        const uint w = lid * RADIX_PER + (uint)k;
        if (base + w >= n)
            break;
        const uint d = dig[w], at = RPAD(d * RADIX_WG + lid);
        const uint slot = first[d] + cnt[at];
        cnt[at]++;
        okey[slot] = key[base + w];
        oval[slot] = val[base + w];
    }
}
