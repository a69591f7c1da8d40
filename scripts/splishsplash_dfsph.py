#!/usr/bin/env python3
"""SPlisHSPlasH's DFSPH on its dam break, measured the way `floe bench` measures Floe's.

    scripts/splishsplash_dfsph.py [--scene DamBreakModel.json] [--radius 0.0125] [--stop 1.0]
                                  [--viscosity 0.01] [--out DIR]

Runs SPlisHSPlasH (pysplishsplash, `pip install pysplishsplash`; tested with
2.19.0) without its GUI on a copy of its scene data/Scenes/DamBreakModel.json
with `particleRadius` set (0.0125: the 59,319-particle block of Floe's
scenes/bench/dfsph_dam_break_59k.lua; the `--param` switch of its command line
does not resize the block), the wall model's path made absolute, and
optionally another standard viscosity (`--viscosity 0`: none). Prints

  - steps, mean dt, the density solver's and the divergence solver's mean
    iterations a step (SPlisHSPlasH's own counts, read after every step);
  - the mean density error: mean over the fluid of max(rho / rho0 - 1, 0) of
    the densities SPlisHSPlasH computed at the start of the last step,
    averaged over the frames at 20 frames/s (what Floe's run record holds per
    frame: frame_stats in core/src/run.c) and over every step;
  - wall and CPU time (user + system, all threads) of the simulation loop
    (runSimulation: the set-up with its volume maps excluded) and of the
    whole process.

The scene is found in the wheel's data folder (sys.prefix/bin/data/Scenes in a
virtual environment, or beside the pysplishsplash module: a wheel unpacked
with unzip keeps it under pysplishsplash-*.data/data/bin/data), or given with
--scene. Set OMP_NUM_THREADS for the thread count."""
import argparse, glob, json, os, sys, tempfile, time


def find_scene(name):
    import pysplishsplash
    here = os.path.dirname(os.path.abspath(pysplishsplash.__file__))
    cands = [os.path.join(sys.prefix, "bin", "data", "Scenes", name)]
    cands += glob.glob(os.path.join(here, "pysplishsplash-*.data", "data", "bin", "data", "Scenes", name))
    for c in cands:
        if os.path.isfile(c):
            return c
    sys.exit("SPlisHSPlasH's scene %s not found (looked in %s); give --scene" % (name, ", ".join(cands)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scene", default=None, help="SPlisHSPlasH scene JSON (default: the wheel's DamBreakModel.json)")
    ap.add_argument("--radius", type=float, default=0.0125)
    ap.add_argument("--stop", type=float, default=1.0, help="simulated seconds")
    ap.add_argument("--viscosity", type=float, default=None, help="standard viscosity (default: the scene's)")
    ap.add_argument("--out", default=None, help="output folder (its Cache keeps the volume maps)")
    ap.add_argument("--fps", type=float, default=20.0, help="frames a second for the per-frame density error")
    ap.add_argument("--frames", action="store_true", help="a line per frame: steps, iterations, largest speed, density error")
    a = ap.parse_args()

    t_proc = time.time()
    c_proc = os.times()
    import numpy as np
    import pysplishsplash as sph

    src = os.path.abspath(a.scene or find_scene("DamBreakModel.json"))
    d = json.load(open(src))
    d["Configuration"]["particleRadius"] = a.radius
    for rb in d.get("RigidBodies", []):
        g = rb.get("geometryFile")
        if g and not os.path.isabs(g):
            rb["geometryFile"] = os.path.normpath(os.path.join(os.path.dirname(src), g))
    if a.viscosity is not None:
        for m in d.get("Materials", []):
            m.setdefault("Standard viscosity", {})["viscosity"] = a.viscosity
    out = os.path.abspath(a.out or tempfile.mkdtemp(prefix="sph_dfsph_"))
    os.makedirs(out, exist_ok=True)
    scene = os.path.join(out, "DamBreakModel_r%g.json" % a.radius)
    json.dump(d, open(scene, "w"), indent=1)

    base = sph.Exec.SimulatorBase()
    base.init(["splishsplash_dfsph", "--no-gui", "--no-initial-pause", "--stopAt", str(a.stop),
               "--output-dir", out, scene], "SPlisHSPlasH")

    st = {"steps": 0, "it": 0, "itv": 0, "err_step": 0.0, "err_frames": [], "next_frame": 1.0 / a.fps, "dt": 0.0}

    def max_speed():
        sim = sph.Simulation.getCurrent()
        v2 = 0.0
        for k in range(sim.numberOfFluidModels()):
            fm = sim.getFluidModel(k)
            b = fm.getFieldBuffer("velocity")
            v = np.frombuffer(b, dtype=np.float32 if b.itemsize == 4 else np.float64)[:3 * fm.numActiveParticles()]
            v2 = max(v2, float((v.reshape(-1, 3) ** 2).sum(axis=1).max()))
        return v2 ** 0.5

    def density_error():
        sim = sph.Simulation.getCurrent()
        e, n = 0.0, 0
        for k in range(sim.numberOfFluidModels()):
            fm = sim.getFluidModel(k)
            m = fm.numActiveParticles()
            rho = np.frombuffer(fm.getFieldBuffer("density"), dtype=np.float32 if
                                fm.getFieldBuffer("density").itemsize == 4 else np.float64)[:m]
            e += float(np.maximum(rho / fm.getDensity0() - 1.0, 0.0).sum())
            n += m
        return e / n if n else 0.0

    def on_step():
        sim = sph.Simulation.getCurrent()
        ts = sim.getTimeStep()
        if st["steps"] == 0:
            st["t_first"], st["c_first"] = time.time(), os.times()
        st["t_last"], st["c_last"] = time.time(), os.times()
        st["steps"] += 1
        st["it"] += ts.getValueInt(sph.TimeStepDFSPH.SOLVER_ITERATIONS)
        st["itv"] += ts.getValueInt(sph.TimeStepDFSPH.SOLVER_ITERATIONS_V)
        e = density_error()
        st["err_step"] += e
        t = sph.TimeManager.getCurrent().getTime()
        if t >= st["next_frame"] - 1e-9:
            st["err_frames"].append(e)
            if a.frames:
                print("frame t=%.4f: steps %d, iterations %d, largest speed %.3f m/s, density error %.4f%%" %
                      (t, st["steps"] - st.get("s0", 0), st["it"] - st.get("i0", 0), max_speed(), 100 * e), flush=True)
                st["s0"], st["i0"] = st["steps"], st["it"]
            while st["next_frame"] <= t + 1e-9:
                st["next_frame"] += 1.0 / a.fps

    base.setTimeStepCB(on_step)
    base.initSimulation()
    sim = sph.Simulation.getCurrent()
    npart = sum(sim.getFluidModel(k).numActiveParticles() for k in range(sim.numberOfFluidModels()))
    t0, c0 = time.time(), os.times()
    base.runSimulation()
    t1, c1 = time.time(), os.times()
    t_end = sph.TimeManager.getCurrent().getTime()
    base.cleanup()
    c_end = os.times()
    n = st["steps"]
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    cpu1 = (st["c_last"].user - st["c_first"].user) + (st["c_last"].system - st["c_first"].system) if n > 1 else 0.0
    print("splishsplash: %d fluid particles, %.3f s simulated in %d steps (mean dt %.3f ms)" %
          (npart, t_end, n, 1e3 * t_end / max(n, 1)))
    print("splishsplash: iterations a step %.2f (divergence %.2f)" % (st["it"] / max(n, 1), st["itv"] / max(n, 1)))
    fr = st["err_frames"]
    print("splishsplash: density error %.4f%% (mean of %d frames), %.4f%% (mean of every step)" %
          (100 * sum(fr) / max(len(fr), 1), len(fr), 100 * st["err_step"] / max(n, 1)))
    print("splishsplash: steps 2-%d: %.2f s wall, %.2f s CPU, %.1f ms CPU a step" %
          (n, st["t_last"] - st["t_first"] if n > 1 else 0.0, cpu1, 1e3 * cpu1 / max(n - 1, 1)))
    print("splishsplash: simulation loop (set-up left after the volume maps, every step) %.2f s wall, %.2f s CPU;"
          " process %.2f s wall, %.2f s CPU" % (t1 - t0, cpu, time.time() - t_proc,
                                                (c_end.user - c_proc.user) + (c_end.system - c_proc.system)))


if __name__ == "__main__":
    main()
