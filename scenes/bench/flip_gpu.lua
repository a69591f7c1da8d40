-- GPU benchmark of the flip module (docs/flip.md, "The OpenCL path"): Guay's
-- 2D comparison scene (flip_2d_vs_wcsph.lua) at n particles: a square block
-- of water (half the box edge) collapsing in a 1 m x 1 m box, spacing
-- d = 0.5 / round(sqrt(n)), a 256^2 grid (cell 1/256 m, radius 3 cells;
-- 264^2 cells with the ghost layers), c = 20 m/s, PIC 0.05, smooth sampling,
-- fixed dt = 0.25 min(d, h) / c. No time step limit (courant = 0) and no
-- copies of the grids to the host (host_fps = 0): the step is the five
-- flip launches plus the core's blow-up check. Runs `steps` steps (default
-- 2000) in 2 frames, no frame files.
--
--   floe bench scenes/bench/flip_gpu.lua --backend opencl --set n=64k
--   n: particles (k/M suffixes), steps, grid (cells per metre), sampling
local floe = require "floe"

local function count(s)
  s = tostring(s)
  local v, suf = s:match("^([%d%.]+)([kKmM]?)$")
  assert(v, "n must be a number with an optional k or M suffix (got " .. s .. ")")
  local mul = (suf == "k" or suf == "K") and 1e3 or (suf == "m" or suf == "M") and 1e6 or 1
  return tonumber(v) * mul
end

local n_want = count(floe.param("n", "64k"))
local steps = floe.param("steps", 2000)
local grid = floe.param("grid", 256)
local c = floe.param("speed_of_sound", 20)
local side = 0.5
local d = side / math.floor(math.sqrt(n_want) + 0.5)
local dt = floe.param("dt", 0.25 * math.min(d, 1 / grid) / c)

local sim = floe.sim{
  dim = 2, spacing = d, gravity = { 0, -9.81 },
  domain = { min = { 0, 0 }, max = { 1, 1 } },
}
sim:load "flip"
local n = sim:fluid_box{ min = { 0, 0 }, max = { side, side }, density = 1000 }
floe.log(string.format("bench: flip 2D, %d particles (n = %s), spacing %.4g m, %d^2 grid, dt %.3g s, %d steps",
  n, floe.param("n", "64k"), d, grid, dt, steps))

sim:pipeline{
  { "flip.splat", cell = 1 / grid, radius = 3 },
  { "flip.grid", speed_of_sound = c, courant = 0, host_fps = 0 },
  { "flip.advect", pic = 0.05, sampling = floe.param("sampling", "smooth") },
}
-- warm-up: builds the OpenCL kernels (once per run) and fills the caches;
-- `floe bench` reports the last sim:run only
sim:run{ end_time = 20 * dt, fps = 1 / (20 * dt), dt = dt }
-- two frames: statistics (a copy back of x, v) only twice per run
local r = sim:run{ end_time = steps * dt, fps = 2 / (steps * dt), dt = dt, out = "out/bench_flip_gpu" }
floe.log(string.format("flip %d particles: %.1f steps/s wall (%d steps in %.3f s)", n, r.steps / r.wall_s, r.steps,
  r.wall_s))
