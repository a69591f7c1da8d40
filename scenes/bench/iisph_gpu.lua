-- GPU benchmark for the IISPH module's OpenCL path (docs/iisph.md, "OpenCL
-- path"): the 3D dam break of dam_break_gpu.lua with IISPH: a water cube of
-- 1 m side at spacing d = 1 / round(cbrt(n)) in a 4 x 3 x 1.5 m open tank,
-- density tolerance 0.05%, CFL-adaptive time step (dt <= cfl d / v_max and
-- the solve's force condition, as the iisph module does). Runs `steps`
-- steps (default 150) after a warm-up run, statistics twice, no frame files.
--
--   floe bench scenes/bench/iisph_gpu.lua --backend opencl --set n=1M
--   n: 100k, 1M, 4M or any count (k/M suffixes); steps: number of timed
--   steps; warmup: simulated seconds before them (default 0.05 s: the start's
--   compression and the kernel builds); tolerance; cfl; chebyshev;
--   gradient_correction (0 or 1, iisph.solve's kernel gradient correction);
--   warm_start and omega (iisph.solve's, defaults 0.5 and 0.5);
--   reorder_every (the neighbours stage's, default 10)
local floe = require "floe"

local function count(s)
  s = tostring(s)
  local v, suf = s:match("^([%d%.]+)([kKmM]?)$")
  assert(v, "n must be a number with an optional k or M suffix (got " .. s .. ")")
  local mul = (suf == "k" or suf == "K") and 1e3 or (suf == "m" or suf == "M") and 1e6 or 1
  return tonumber(v) * mul
end

local n_want = count(floe.param("n", "100k"))
local steps = floe.param("steps", 150)
local warmup = floe.param("warmup", 0.05)
local tolerance = floe.param("tolerance", 0.0005)
local cfl = floe.param("cfl", 0.6)
local side = math.floor(n_want ^ (1 / 3) + 0.5)
local d = 1.0 / side

local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { 4.1, 6.0, 1.6 } },
}
sim:load{ "sph", "iisph" }
local n = sim:fluid_box{ min = { 0, 0, 0 }, max = { 1, 1, 1 }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 }, layers = 2, open_top = true }
floe.log(string.format("bench: %d fluid particles (n = %s), spacing %.5g m, IISPH tolerance %.3g%%, cfl %.2g, "
  .. "%d timed steps", n, floe.param("n", "100k"), d, 100 * tolerance, cfl, steps))

sim:pipeline{
  { "neighbours", reorder_every = floe.param("reorder_every", 10) },
  "sph.density",
  "gravity",
  { "iisph.solve", tolerance = tolerance, chebyshev = floe.param("chebyshev", 0.9),
    gradient_correction = floe.param("gradient_correction", 0) ~= 0,
    warm_start = floe.param("warm_start", 0.5), omega = floe.param("omega", 0.5) },
  "integrate",
}
-- warm-up: the kernel builds, and the first steps, which start at dt = 1e-4 s
-- and remove the start's compression (docs/iisph.md); `floe bench` reports
-- the last sim:run only
sim:run{ end_time = warmup, fps = 1 / warmup, cfl = cfl }
-- the timed run: about `steps` steps: the span is `steps` times the last
-- warm-up step's dt (the adaptive dt changes; the summary counts the steps
-- that ran). Two frames: statistics only twice.
local info = sim:info()
local dt = info.dt or 0
assert(dt > 0, "no time step after the warm-up")
local span = steps * dt
sim:run{ end_time = span, fps = 2 / span, cfl = cfl, out = "out/bench_iisph_gpu" }
