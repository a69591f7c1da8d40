#!/usr/bin/env python3
"""Kernel sums of the cubic spline (<floe/kernel.h>, support H) on a lattice
of spacing 1: sum_j V W_ij with V = 1, and M_zz = -sum_j V z_ij^2 (dW/dr)/r,
the factor by which the symmetric SPH pressure gradient of a linear field
is too large (docs/iisph.md, "Hydrostatic pressure").

    python3 scripts/lattice_sums.py [H]          (default H = 2, Floe's 2 d)
"""
import itertools
import math
import sys


def sigma(dim, H):
    return 40 / (7 * math.pi * H * H) if dim == 2 else 8 / (math.pi * H ** 3)


def w(q, dim, H):
    s = sigma(dim, H)
    if q <= 0.5:
        return s * (6 * (q ** 3 - q * q) + 1)
    return s * 2 * (1 - q) ** 3 if q <= 1 else 0.0


def dw(q, dim, H):
    s = sigma(dim, H)
    if q <= 0.5:
        return s * (18 * q * q - 12 * q) / H
    return -s * 6 * (1 - q) ** 2 / H if q <= 1 else 0.0


def main():
    H = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    R = range(-int(H) - 1, int(H) + 2)
    for dim in (2, 3):
        sw = mzz = 0.0
        for idx in itertools.product(R, repeat=dim):
            r = math.sqrt(sum(i * i for i in idx))
            sw += w(r / H, dim, H)
            if r > 0:
                mzz -= idx[-1] ** 2 * dw(r / H, dim, H) / r
        print(f"{dim}D square lattice, H = {H:g} d: sum V W = {sw:.5f}, M_zz = {mzz:.5f}")


if __name__ == "__main__":
    main()
