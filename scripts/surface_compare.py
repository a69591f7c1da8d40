#!/usr/bin/env python3
"""Floe's surfacer against splashsurf on the same particle frame.

    scripts/surface_compare.py BUILD RUN_DIR FRAME [--cell 0.5] [--threads 2] [--backend cpu|opencl]

RUN_DIR is a Floe run folder (its run.yaml gives the spacing d and the kernel
support H); FRAME the number of its fluid.NNNN.ply to surface. Both tools get
the same kernel support (splashsurf: smoothing length H / 2 in particle radii,
compact support twice that, with the radius r = d (3 / 4 pi)^(1/3) whose
sphere has Floe's particle volume d^3, so that both colour fields are 1
inside), the same cell (cube) edge, the same iso value of the colour field
(0.5), the same threads (--backend opencl: Floe on the device), and both
write one binary PLY. Time: each tool's own
figure, reading the particles and writing the mesh included (Floe: floe
surface's ms per frame; splashsurf: its "surface reconstruction" total).
Peak memory: the process's maximum resident set (splashsurf's includes the
Python interpreter and numpy, about 30 MB). Volume: divergence theorem over
the triangles; closed: every edge used by exactly two triangles. Needs numpy
and pysplashsurf (pip install pysplashsurf)."""
import argparse, math, os, re, shutil, subprocess, sys, tempfile


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


def run_measured(cmd):
    """run cmd; its output, exit status and its own peak resident set in MB,
    through GNU time (a child forked from this Python process would count this
    process's pages as its own); None when /usr/bin/time is missing"""
    timer = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        full = [timer, "-f", "%M", "-o", rss.name] + cmd if timer else cmd
        p = subprocess.run(full, capture_output=True, text=True)
        text = rss.read().strip().splitlines()
        peak = float(text[-1]) / 1024 if timer and text and text[-1].isdigit() else None
        return p.stdout + p.stderr, p.returncode, peak


def run_splashsurf(args, spacing, support):
    """splashsurf's own command line (pysplashsurf.run_splashsurf), as its users run it:
    radius, smoothing length and cube size in particle radii; PLY in, PLY out."""
    r = spacing * (3 / (4 * math.pi)) ** (1 / 3)
    d = tempfile.mkdtemp(prefix="splashsurf_cmp.")
    try:
        out = os.path.join(d, "surface.ply")
        cli = ["splashsurf", "reconstruct", args.ply, "-o", out, "-r", repr(r), "-l", repr(support / 2 / r),
               "-c", repr(args.cell * spacing / r), "-t", "0.5", "--subdomain-grid=on", "--mt-files=off",
               "--mt-particles=on"]
        code = "import sys, pysplashsurf; pysplashsurf.run_splashsurf(sys.argv[1:])"
        log, rc, peak = run_measured([sys.executable, "-c", code] + cli)
        if rc or not os.path.exists(out):
            sys.exit(f"splashsurf failed:\n{log[-3000:]}")
        t = re.search(r"surface reconstruction: [^\n]*\(total: ([\d.]+)s\)", log)
        v, tri = read_mesh_ply(out)
        vol, bad = mesh_stats(v, tri)
        return float(t.group(1)), len(tri), vol, bad, peak
    finally:
        shutil.rmtree(d)


def read_mesh_ply(path):
    """vertices and triangles of a binary little-endian PLY whose vertices start
    with float x y z and whose faces are 'list uchar int|uint'"""
    import numpy as np
    with open(path, "rb") as f:
        head = b""
        while not head.endswith(b"end_header\n"):
            head += f.readline()
        text = head.decode()
        nv = int(re.search(r"element vertex (\d+)", text).group(1))
        nf = int(re.search(r"element face (\d+)", text).group(1))
        vprops = re.findall(r"property float (\w+)", text.split("element vertex")[1].split("element face")[0])
        v = np.frombuffer(f.read(nv * 4 * len(vprops)), dtype="<f4").reshape(nv, len(vprops))[:, :3]
        itype = "<u4" if re.search(r"list uchar uint", text) else "<i4"
        rec = np.dtype([("n", "u1"), ("i", itype, 3)])
        t = np.frombuffer(f.read(nf * rec.itemsize), dtype=rec)["i"]
    return v, t


def run_floe(args, method):
    d = tempfile.mkdtemp(prefix="floe_surface_cmp.")
    try:
        shutil.copy(os.path.join(args.run, "run.yaml"), d)
        shutil.copy(args.ply, os.path.join(d, "fluid.0000.ply"))
        cmd = [os.path.join(args.build, "core", "floe"), "surface", d, "--method", method,
               "--cell", str(args.cell), "--quiet", "--threads", str(args.threads), "--format", "ply",
               "--backend", args.backend]
        out, rc, peak = run_measured(cmd)
        if rc:
            sys.exit(f"{' '.join(cmd)} failed:\n{out}")
        per = re.search(r"\(([\d.]+) ms per frame", out)
        v, t = read_mesh_ply(os.path.join(d, "surface.0000.ply"))
        vol, bad = mesh_stats(v, t)
        return float(per.group(1)) / 1e3, len(t), vol, bad, peak
    finally:
        shutil.rmtree(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("run")
    ap.add_argument("frame", type=int)
    ap.add_argument("--cell", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--backend", default="cpu", choices=("cpu", "opencl"))
    args = ap.parse_args()
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
    rows.append(("splashsurf",) + run_splashsurf(args, spacing, support))
    n = len(read_ply_xyz(ply))
    print(f"{n} particles, spacing {spacing}, support {support}, cell {args.cell} d, {args.threads} threads, "
          f"Floe on {args.backend}")
    print("| tool | s per frame | triangles | volume (m^3) | edges not shared by 2 | peak RSS (MB) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        mem = f"{r[5]:.1f}" if r[5] is not None else "?"
        print(f"| {r[0]} | {r[1]:.3f} | {r[2]} | {r[3]:.5g} | {r[4]} | {mem} |")


if __name__ == "__main__":
    main()
