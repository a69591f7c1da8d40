/* Sums over the fluid neighbours of boundary particles on the device (the
 * OpenCL side of <floe/wall_sums.h>), for wall conditions that give each
 * wall particle a value extrapolated from the fluid around it: Adami et
 * al. 2012's wall pressure (kernels/wcsph/walls.cl) and wall velocity
 * (kernels/viscosity/walls.cl).
 *
 * The neighbour lists go from fluid particles to boundary particles, so the
 * sums are scattered from the fluid rows, as on the C path; on the device
 * many fluid particles add to one wall particle at once, so the additions
 * are atomic (a compare-and-swap loop on the float's bits, OpenCL 1.2 core
 * 32-bit atomics). Their order is the device's: the sums agree with the C
 * path's to rounding, not bit for bit. */
#ifndef FLOE_CL_WALLS_H
#define FLOE_CL_WALLS_H

/* *p += v, atomically */
inline void floe_atomic_addf(volatile __global float *p, float v)
{
    union {
        uint u;
        float f;
    } old, upd;
    do {
        old.f = *p;
        upd.f = old.f + v;
    } while (atomic_cmpxchg((volatile __global uint *)p, old.u, upd.u) != old.u);
}

/* the kernel: zero n floats of s */
#define FLOE_WALLS_ZERO_KERNEL(name)                          \
    __kernel void name(uint n, __global float *s)             \
    {                                                         \
        const uint i = get_global_id(0);                      \
        if (i < n)                                            \
            s[i] = 0.0f;                                      \
    }

#endif
