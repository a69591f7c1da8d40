/* Sinks on the device (core/src/emit.c): count the particles inside any
 * sink, so that the host reads 4 bytes a step and fetches the positions
 * only in the steps where something leaves. A sink is 8 floats: kind
 * (0 region, 1 the domain's side faces), unused, min[3], max[3] (for the
 * side faces: the inner box the water must stay in, on x and z). The
 * comparisons are emit.c's in_sink. */

__kernel void sinks(uint n, __global const float *x, __global const float *sk, int nsk, int dim,
                    volatile __global uint *count)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float p[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
    for (int s = 0; s < nsk; s++) {
        __global const float *b = sk + 8 * s;
        int out;
        if (b[0] != 0.0f) {
            out = 0;
            for (int k = 0; k < dim; k += k == 0 ? 2 : 1)
                out |= p[k] < b[2 + k] || p[k] > b[5 + k];
        } else {
            out = 1;
            for (int k = 0; k < dim; k++)
                out &= !(p[k] < b[2 + k] || p[k] > b[5 + k]);
        }
        if (out) {
            atomic_inc(count);
            return;
        }
    }
}
