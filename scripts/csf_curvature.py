#!/usr/bin/env python3
"""Curvature estimators of a continuum surface force on 2D lattice discs.

A particle disc of radius R (in spacings d = 1; the lattice points within
R, optionally jittered) with the cubic spline of support H = 3 d (Floe's
kernel, docs/viscosity_tension.md). For each estimator of kappa = div n,
n = -g / |g| the unit outward normal where |g| H > threshold, g = sum_j
V_j grad W_ij, the script prints the curvature weighted by the radial
force V_i |g_i| (what sets the pressure inside: p = sigma kappa_w) times
R_eff = sqrt(N / pi), which a correct estimator makes 1, and its spread:

  adami     kappa_i = d sum_j V_j (n_j - n_i) . grad W_ij / sum_j V_j r_ij |W'_ij|
            (Adami, Hu & Adams 2010), over the neighbours with a normal
  matrix    kappa_i = tr(G_i M_i^-1), G = sum_j V_j (n_j - n_i) (x) grad W_ij,
            M = sum_j V_j (x_j - x_i) (x) grad W_ij (the corrected gradient,
            exact for a linear field on a cut neighbourhood)
  +smooth   the same with n from the Shepard-smoothed gradient
            sum_j V_j W_ij g_j / sum_j V_j W_ij

It also prints sum_i V_i |g_i| / (2 pi R_eff), the share of the colour
jump the fluid side carries (1/2 in the continuum).

  scripts/csf_curvature.py [--radii 10 20] [--jitter 0 0.05 0.1] [--threshold 0.1 0.3]
"""
import argparse

import numpy as np

H = 3.0


def W(r):
    q = r / H
    s = 40 / (7 * np.pi * H * H)
    return np.where(q <= 0.5, s * (6 * (q ** 3 - q ** 2) + 1), np.where(q <= 1, s * 2 * (1 - q) ** 3, 0))


def dW(r):
    q = r / H
    s = 40 / (7 * np.pi * H * H)
    return np.where(q <= 0.5, s * (18 * q * q - 12 * q) / H, np.where(q <= 1, -s * 6 * (1 - q) ** 2 / H, 0))


def disc(R, jitter, seed=0):
    g = np.arange(-R - 1, R + 2, dtype=float)
    X, Y = np.meshgrid(g, g)
    P = np.c_[X.ravel(), Y.ravel()]
    P = P[np.hypot(P[:, 0], P[:, 1]) <= R]
    return P + jitter * np.random.default_rng(seed).standard_normal(P.shape)


def estimate(P, thr, smooth, matrix):
    N = len(P)
    D = np.hypot(P[:, None, 0] - P[None, :, 0], P[:, None, 1] - P[None, :, 1])
    i, j = np.nonzero((D < H) & (D > 0))
    xij = P[i] - P[j]
    r = np.hypot(xij[:, 0], xij[:, 1])
    Wr = W(r)
    gW = (dW(r) / r)[:, None] * xij  # grad_i W_ij, V = 1
    g = np.stack([np.bincount(i, gW[:, k], N) for k in range(2)], 1)
    gs = g
    if smooth:
        S = W(0) + np.bincount(i, Wr, N)
        gs = np.stack([(np.bincount(i, Wr * g[j, k], N) + W(0) * g[:, k]) / S for k in range(2)], 1)
    gm = np.hypot(gs[:, 0], gs[:, 1])
    ok = gm * H > thr
    n = np.zeros_like(gs)
    n[ok] = -gs[ok] / gm[ok, None]
    c = (ok[i] & ok[j]).astype(float)
    if matrix:
        M = np.zeros((N, 2, 2))
        G = np.zeros((N, 2, 2))
        for a in range(2):
            for b in range(2):
                M[:, a, b] = np.bincount(i, -c * xij[:, a] * gW[:, b], N)
                G[:, a, b] = np.bincount(i, c * (n[j, a] - n[i, a]) * gW[:, b], N)
        det = M[:, 0, 0] * M[:, 1, 1] - M[:, 0, 1] * M[:, 1, 0]
        good = ok & (np.abs(det) > 0.05)
        dd = np.where(good, det, 1)
        Mi = np.stack([np.stack([M[:, 1, 1], -M[:, 0, 1]], 1), np.stack([-M[:, 1, 0], M[:, 0, 0]], 1)], 1) / dd[:, None, None]
        kap = np.where(good, np.einsum("nab,nba->n", G, Mi), 0)
    else:
        num = np.bincount(i, c * np.sum((n[j] - n[i]) * gW, 1), N)
        den = np.bincount(i, c * r * -dW(r), N)
        kap = np.where(ok & (den > 0), 2 * num / np.maximum(den, 1e-30), 0)
    rad = np.maximum(np.hypot(P[:, 0], P[:, 1]), 1e-9)
    w = -(g * P).sum(1) / rad  # inward radial |g|
    Reff = np.sqrt(N / np.pi)
    kw = np.sum(w * kap) / np.sum(w)
    rms = np.sqrt(np.sum(np.abs(w) * (kap - kw) ** 2) / np.sum(np.abs(w)))
    return kw * Reff, rms * Reff, kap.min() * Reff, kap.max() * Reff, np.sum(np.abs(w)) / (2 * np.pi * Reff)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--radii", nargs="+", type=float, default=[10, 20])
    ap.add_argument("--jitter", nargs="+", type=float, default=[0, 0.05, 0.1], help="in spacings (normal, rms)")
    ap.add_argument("--threshold", nargs="+", type=float, default=[0.1, 0.3], help="|g| H above which n exists")
    a = ap.parse_args()
    print("R/d  jitter  threshold  estimator        kappa_w R  spread R  min R  max R  sum V|g|/(2 pi R)")
    for R in a.radii:
        for jit in a.jitter:
            P = disc(R, jit)
            for thr in a.threshold:
                for smooth in (0, 1):
                    for matrix in (0, 1):
                        name = ("matrix" if matrix else "adami") + ("+smooth" if smooth else "")
                        k, s, lo, hi, share = estimate(P, thr, smooth, matrix)
                        print(f"{R:4g}  {jit:6g}  {thr:9g}  {name:15s}  {k:9.3f}  {s:8.2f}  {lo:5.1f}  {hi:5.1f}  {share:.3f}")


if __name__ == "__main__":
    main()
