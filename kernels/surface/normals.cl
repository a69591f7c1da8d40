/* Vertex normals of modules/surface on the device (surface_cl.c), as
 * mesher.c's vertex_normals_par computes them: each vertex sums the
 * (unnormalised) normals of its triangles in triangle order, then
 * normalises; a vertex on degenerate triangles only gets (0, 1, 0).
 *
 *   nrm_zero:   cnt and pos to 0
 *   nrm_face:   each triangle's normal, and its corners counted per vertex
 *   (the host: an exclusive scan of the counts, api->cl_scan)
 *   nrm_place:  each corner's triangle into its vertex's list
 *   nrm_vertex: each list sorted (short: insertion sort) and summed */

#pragma OPENCL FP_CONTRACT OFF

__kernel void nrm_zero(uint n, __global uint *cnt, __global uint *pos)
{
    const uint i = get_global_id(0);
    if (i < n)
        cnt[i] = 0, pos[i] = 0;
}

__kernel void nrm_face(uint nt, __global const float *v, __global const uint *tri, __global float *fn,
                       __global uint *cnt)
{
    const uint t = get_global_id(0);
    if (t >= nt)
        return;
    const uint i0 = tri[3 * (size_t)t], i1 = tri[3 * (size_t)t + 1], i2 = tri[3 * (size_t)t + 2];
    const float a0 = v[3 * (size_t)i0], a1 = v[3 * (size_t)i0 + 1], a2 = v[3 * (size_t)i0 + 2];
    const float u0 = v[3 * (size_t)i1] - a0, u1 = v[3 * (size_t)i1 + 1] - a1, u2 = v[3 * (size_t)i1 + 2] - a2;
    const float w0 = v[3 * (size_t)i2] - a0, w1 = v[3 * (size_t)i2 + 1] - a1, w2 = v[3 * (size_t)i2 + 2] - a2;
    fn[3 * (size_t)t] = u1 * w2 - u2 * w1;
    fn[3 * (size_t)t + 1] = u2 * w0 - u0 * w2;
    fn[3 * (size_t)t + 2] = u0 * w1 - u1 * w0;
    atomic_inc(&cnt[i0]);
    atomic_inc(&cnt[i1]);
    atomic_inc(&cnt[i2]);
}

/* start: the exclusive scan of the counts */
__kernel void nrm_place(uint nt, __global const uint *tri, __global const uint *start, __global uint *pos,
                        __global uint *list)
{
    const uint t = get_global_id(0);
    if (t >= nt)
        return;
    for (int k = 0; k < 3; k++) {
        const uint vi = tri[3 * (size_t)t + k];
        list[start[vi] + atomic_inc(&pos[vi])] = t;
    }
}

__kernel void nrm_vertex(uint nv, __global const uint *start, __global uint *list, __global const float *fn,
                         __global float *nrm)
{
    const uint vi = get_global_id(0);
    if (vi >= nv)
        return;
    __global uint *l = &list[start[vi]];
    const uint len = start[vi + 1] - start[vi];
    for (uint i = 1; i < len; i++) /* insertion sort: triangle order */
        for (uint j = i; j > 0 && l[j - 1] > l[j]; j--) {
            const uint x = l[j];
            l[j] = l[j - 1];
            l[j - 1] = x;
        }
    float n0 = 0, n1 = 0, n2 = 0;
    for (uint i = 0; i < len; i++) {
        n0 += fn[3 * (size_t)l[i]];
        n1 += fn[3 * (size_t)l[i] + 1];
        n2 += fn[3 * (size_t)l[i] + 2];
    }
    const float len2 = n0 * n0 + n1 * n1 + n2 * n2, r = sqrt(len2);
    if (r > 0)
        n0 /= r, n1 /= r, n2 /= r;
    else
        n0 = n2 = 0, n1 = 1;
    nrm[3 * (size_t)vi] = n0;
    nrm[3 * (size_t)vi + 1] = n1;
    nrm[3 * (size_t)vi + 2] = n2;
}
