-- GPU benchmark (issue: OpenCL backend): the 3D dam break of
-- dam_break_59k.lua scaled to n fluid particles: a water cube of 1 m side
-- at spacing d = 1 / round(cbrt(n)) in a 4 x 3 x 1.5 m open tank, WCSPH with
-- XSPH viscosity 0.01, c = 20 m/s, fixed dt = 0.02 d (acoustic CFL 0.4).
-- Runs `steps` steps (default 200) in 2 frames, no frame files.
--
--   floe bench scenes/bench/dam_break_gpu.lua --backend opencl --set n=1M
--   n: 100k, 1M, 4M or any count (k/M suffixes); steps: number of steps;
--   fused: 1 (XSPH inside the pressure force pass) or 0 (separate stage);
--   reorder_every: the neighbours stage's reorder period (default 10);
--   skin: the neighbours stage's skin in support radii (default 0: lists
--   built every step; > 0: Verlet lists, slower here on the H200:
--   docs/opencl.md, "Verlet lists on the device")
local floe = require "floe"

local function count(s)
  s = tostring(s)
  local v, suf = s:match("^([%d%.]+)([kKmM]?)$")
  assert(v, "n must be a number with an optional k or M suffix (got " .. s .. ")")
  local mul = (suf == "k" or suf == "K") and 1e3 or (suf == "m" or suf == "M") and 1e6 or 1
  return tonumber(v) * mul
end

local n_want = count(floe.param("n", "100k"))
local steps = floe.param("steps", 200)
local viscosity = floe.param("viscosity", 0.01)
local side = math.floor(n_want ^ (1 / 3) + 0.5)
local d = 1.0 / side
local dt = 0.02 * d

local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { 4.1, 3.2, 1.6 } },
}
sim:load{ "sph", "wcsph" }
local n = sim:fluid_box{ min = { 0, 0, 0 }, max = { 1, 1, 1 }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 }, layers = 2, open_top = true }
floe.log(string.format("bench: %d fluid particles (n = %s), spacing %.5g m, dt %.3g s, %d steps",
  n, floe.param("n", "100k"), d, dt, steps))

-- fused = 1 (default): XSPH summed inside wcsph.pressure_force (one walk of
-- the neighbour lists); fused = 0: the separate sph.xsph stage
if floe.param("fused", 1) ~= 0 then
  sim:pipeline{
    { "neighbours", reorder_every = floe.param("reorder_every", 10), skin = floe.param("skin", 0) },
    "sph.density",
    { "wcsph.pressure", speed_of_sound = 20 },
    "gravity",
    { "wcsph.pressure_force", xsph = viscosity },
    "integrate",
  }
else
  sim:pipeline{
    { "neighbours", reorder_every = floe.param("reorder_every", 10), skin = floe.param("skin", 0) },
    "sph.density",
    { "wcsph.pressure", speed_of_sound = 20 },
    "gravity",
    { "sph.xsph", alpha = viscosity },
    "wcsph.pressure_force",
    "integrate",
  }
end
-- warm-up: 2 steps build the OpenCL kernels (once per run) and fill the
-- caches; `floe bench` reports the last sim:run only
sim:run{ end_time = 2 * dt, fps = 1 / (2 * dt), dt = dt }
-- two frames: statistics (a copy back) only twice per run
sim:run{ end_time = steps * dt, fps = 2 / (steps * dt), dt = dt, out = "out/bench_dam_break_gpu" }
