/* Sinks on the device (core/src/emit.c): for each particle whether it is
 * inside a sink (keep[i] = 0) or not (1), the count of those inside and
 * their mass, so that the host reads 8 bytes a step and, in the steps
 * where something leaves, has the set compacted on the device along keep
 * (device.h's set_compact: keep holds 0 or 1), without copying it back. A sink is 8 floats: kind
 * (0 region, 1 the domain's side faces), unused, min[3], max[3] (for the
 * side faces: the inner box the water must stay in, on x and z). The
 * comparisons are emit.c's in_sink. out[0]: the count, out[1]: the mass
 * (a float's bits, added with compare-and-swap). */

static void add_float(volatile __global uint *p, float v)
{
    uint old = *p, seen;
    while ((seen = atomic_cmpxchg(p, old, as_uint(as_float(old) + v))) != old)
        old = seen;
}

__kernel void sinks(uint n, __global const float *x, __global const float *m, __global const float *sk, int nsk,
                    int dim, __global uint *keep, volatile __global uint *out)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float p[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
    int in = 0;
    for (int s = 0; s < nsk && !in; s++) {
        __global const float *b = sk + 8 * s;
        int o;
        if (b[0] != 0.0f) {
            o = 0;
            for (int k = 0; k < dim; k += k == 0 ? 2 : 1)
                o |= p[k] < b[2 + k] || p[k] > b[5 + k];
        } else {
            o = 1;
            for (int k = 0; k < dim; k++)
                o &= !(p[k] < b[2 + k] || p[k] > b[5 + k]);
        }
        in = o;
    }
    keep[i] = !in;
    if (in) {
        atomic_inc(&out[0]);
        add_float(&out[1], m[i]);
    }
}
