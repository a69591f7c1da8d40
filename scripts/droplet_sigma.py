#!/usr/bin/env python3
"""The surface tension a 2D droplet run implies, two ways.

Reads the probe tables of scenes/validation/droplet_2d.lua runs (one folder
each, started from the lattice with the mode-2 velocity: settle=0,
measure=0) and prints, per folder, the mode-2 period (least-squares fit of
a damped cosine plus offset to front_x - front_y, as `floe validate`) and
the sigma of Rayleigh's 2D law omega^2 = 6 sigma / (rho R^3); and the mean
pressure of the probe "centre" after 0.1 s. Given two folders of radii R1 <
R2, the Laplace sigma (p(R1) - p(R2)) / (1/R1 - 1/R2), which removes any
pressure that does not depend on R.

  scripts/droplet_sigma.py DIR_R10 DIR_R20 [--radii 10 20] [--spacing 0.001]
"""
import argparse
import math

import numpy as np


def fit_period(t, D):
    """2 pi / w of the best fit of exp(-lam t)(a cos wt + b sin wt) + c."""
    def residual(w, lam):
        e = np.exp(-lam * t)
        F = np.stack([e * np.cos(w * t), e * np.sin(w * t), np.ones_like(t)], 1)
        x = np.linalg.lstsq(F, D, rcond=None)[0]
        return float(((F @ x - D) ** 2).sum())
    best = min((residual(w, lam), w, lam) for lam in (0, 0.25, 0.5, 1, 2, 3, 5) for w in np.arange(1, 100, 0.25))
    _, bw, lam = best
    r, bw = min((residual(w, lam), w) for w in np.arange(bw - 0.25, bw + 0.25, 0.005))
    return 2 * math.pi / bw, 1 - r / float(((D - D.mean()) ** 2).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--radii", nargs="+", type=float, default=[10, 20], help="R of each folder, in spacings")
    ap.add_argument("--spacing", type=float, default=0.001)
    ap.add_argument("--rho", type=float, default=1000)
    a = ap.parse_args()
    p = []
    for d, rc in zip(a.dirs, a.radii):
        R = rc * a.spacing
        X = np.genfromtxt(d + "/front_x.probe.csv", delimiter=",", names=True)
        Y = np.genfromtxt(d + "/front_y.probe.csv", delimiter=",", names=True)
        T, r2 = fit_period(X["time"] - X["time"][0], X["front_x"] - Y["front_y"])
        C = np.genfromtxt(d + "/centre.probe.csv", delimiter=",", names=True)
        m = C["time"] > 0.1
        cols = [n for n in C.dtype.names if n.startswith("p_")]
        pm = float(np.mean([C[n][m] for n in cols]))
        p.append((R, pm))
        print(f"{d}: R = {R:g} m, period {T:.4f} s (fit R^2 {r2:.2f}), sigma from the period "
              f"{4 * math.pi ** 2 * a.rho * R ** 3 / (6 * T * T):.4f} N/m; mean pressure inside {pm:.2f} Pa")
    if len(p) >= 2:
        (R1, p1), (R2, p2) = p[0], p[1]
        print(f"Laplace: sigma = (p(R1) - p(R2)) / (1/R1 - 1/R2) = {(p1 - p2) / (1 / R1 - 1 / R2):.4f} N/m")


if __name__ == "__main__":
    main()
