/* Compaction of a particle set on the device (core/src/opencl/compact.c):
 * the keep words of the caller become flags f[0..n-1] (1 = stays) with
 * f[n] = 0, an exclusive scan turns them into destinations, and each
 * survivor's source index is written at its destination, so one gather per
 * attribute (core.cl's permute) keeps the survivors in their order. */

/* f[i] = keep[i] != 0 for i < n, f[n] = 0; n + 1 work items */
__kernel void compact_flags(uint n, __global const uint *keep, __global uint *f)
{
    const uint i = get_global_id(0);
    if (i < n)
        f[i] = keep[i] != 0u;
    else if (i == n)
        f[n] = 0u;
}

/* after the exclusive scan s of the flags (n + 1 words): src[s[i]] = i for
 * every survivor i (s[i + 1] != s[i]) */
__kernel void compact_src(uint n, __global const uint *s, __global uint *src)
{
    const uint i = get_global_id(0);
    if (i < n && s[i + 1] != s[i])
        src[s[i]] = i;
}
