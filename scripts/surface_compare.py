#!/usr/bin/env python3
"""Floe's surfacer against splashsurf on the same particle frame.

    scripts/surface_compare.py BUILD RUN_DIR FRAME [--cell 0.5] [--threads 2]

RUN_DIR is a Floe run folder (its run.yaml gives the spacing d and the kernel
support H); FRAME the number of its fluid.NNNN.ply to surface. Both tools get
the same kernel support (splashsurf: smoothing length H / 2 in particle radii
r = d / 2, compact support twice that), the same cell (cube) edge and the same
iso value of the colour field (0.5). Each tool runs in its own process, so
its peak memory is that process's maximum resident set (ru_maxrss, which
includes the interpreter or the program itself: the baseline of each is
printed too). Volume: divergence theorem over the triangles; closed: every
edge used by exactly two triangles. Needs numpy and pysplashsurf
(pip install pysplashsurf)."""
import argparse, os, re, resource, shutil, subprocess, sys, tempfile, time


def read_ply_xyz(path):
    import numpy as np
    with open(path, "rb") as f:
        head = b""
        while not head.endswith(b"end_header\n"):
            line = f.readline()
            if not line:
                sys.exit(f"{path}: no end_header")
            head += line
        text = head.decode("ascii", "replace")
        n = int(re.search(r"element vertex (\d+)", text).group(1))
        props = re.findall(r"property float (\w+)", text.split("element vertex")[1].split("element")[0])
        data = np.frombuffer(f.read(4 * n * len(props)), dtype="<f4").reshape(n, len(props))
    return data[:, [props.index(c) for c in "xyz"]].astype(np.float32)


def mesh_stats(v, t):
    import numpy as np
    v = np.asarray(v, dtype=np.float64)
    t = np.asarray(t, dtype=np.int64)
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0
    e = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
    _, counts = np.unique(e[:, 0] * (len(v) + 1) + e[:, 1], return_counts=True)
    return vol, int((counts != 2).sum())


def read_floe_ply(path):
    import numpy as np
    with open(path, "rb") as f:
        head = b""
        while not head.endswith(b"end_header\n"):
            head += f.readline()
        text = head.decode()
        nv = int(re.search(r"element vertex (\d+)", text).group(1))
        nf = int(re.search(r"element face (\d+)", text).group(1))
        v = np.frombuffer(f.read(nv * 24), dtype="<f4").reshape(nv, 6)[:, :3]
        rec = np.dtype([("n", "u1"), ("i", "<i4", 3)])
        t = np.frombuffer(f.read(nf * rec.itemsize), dtype=rec)["i"]
    return v, t


def child_splashsurf(args):
    import numpy as np
    import pysplashsurf
    x = read_ply_xyz(args.ply)
    r = args.spacing / 2
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    res = pysplashsurf.reconstruction_pipeline(
        x.astype(np.float64), particle_radius=r, rest_density=1000.0,
        smoothing_length=args.support / 2 / r, cube_size=args.cell * args.spacing / r,
        iso_surface_threshold=0.5, multi_threading=True)
    dt = time.perf_counter() - t0
    mesh = res[0] if isinstance(res, tuple) else res
    m = mesh.mesh if hasattr(mesh, "mesh") else mesh
    v, t = np.asarray(m.vertices), np.asarray(m.triangles)
    vol, bad = mesh_stats(v, t)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"RESULT splashsurf {dt:.3f} {len(t)} {vol:.6e} {bad} {peak / 1024:.1f} {base / 1024:.1f}")


def run_floe(args, method):
    d = tempfile.mkdtemp(prefix="floe_surface_cmp.")
    try:
        shutil.copy(os.path.join(args.run, "run.yaml"), d)
        shutil.copy(args.ply, os.path.join(d, "fluid.0000.ply"))
        cmd = [os.path.join(args.build, "core", "floe"), "surface", d, "--method", method,
               "--cell", str(args.cell), "--quiet", "--threads", str(args.threads)]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if out.returncode:
            sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        per = re.search(r"\(([\d.]+) ms per frame", out.stdout + out.stderr)
        v, t = read_floe_ply(os.path.join(d, "surface.0000.ply"))
        vol, bad = mesh_stats(v, t)
        return float(per.group(1)) / 1e3 if per else wall, len(t), vol, bad, peak / 1024
    finally:
        shutil.rmtree(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("run")
    ap.add_argument("frame", type=int)
    ap.add_argument("--cell", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ply", help=argparse.SUPPRESS)
    ap.add_argument("--spacing", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--support", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child_splashsurf(args)
    rec = open(os.path.join(args.run, "run.yaml")).read()
    spacing = float(re.search(r"^spacing: ([\d.e+-]+)", rec, re.M).group(1))
    support = float(re.search(r"^support: ([\d.e+-]+)", rec, re.M).group(1))
    ply = os.path.join(args.run, f"fluid.{args.frame:04d}.ply")
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    os.environ.update(env)
    rows = []
    for method in ("mc", "anisotropic"):
        args.ply = ply
        rows.append((f"Floe surface.{method}",) + run_floe(args, method))
    out = subprocess.run([sys.executable, __file__, args.build, args.run, str(args.frame), "--child", "--ply", ply,
                          "--spacing", str(spacing), "--support", str(support), "--cell", str(args.cell)],
                         capture_output=True, text=True, env=env)
    line = [l for l in out.stdout.splitlines() if l.startswith("RESULT")]
    if not line:
        sys.exit(f"splashsurf failed:\n{out.stdout}\n{out.stderr}")
    f = line[0].split()
    rows.append(("splashsurf", float(f[2]), int(f[3]), float(f[4]), int(f[5]), float(f[6])))
    n = len(read_ply_xyz(ply))
    print(f"{n} particles, spacing {spacing}, support {support}, cell {args.cell} d, {args.threads} threads")
    print("| tool | s per frame | triangles | volume (m^3) | edges not shared by 2 | peak RSS (MB) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.3f} | {r[2]} | {r[3]:.5g} | {r[4]} | {r[5]:.1f} |")


if __name__ == "__main__":
    main()
