-- Speed comparison after Guay (2013), Fig. 6: the same 2D particles stepped
-- by `flip` (splat on a 256^2 grid, no sorting) or by `wcsph` (neighbour
-- search + SPH sums). A square block of water (half the box edge) collapses
-- in a 1 m x 1 m box; `particles` sets the count (16000, 32000, 64000 in
-- docs/flip.md), both solvers get the same particles, the same speed of
-- sound and the same fixed time step. Only the steps per second matter.
-- `--set sampling=kernel|linear` times flip's other grid reads.
--
--   floe bench scenes/bench/flip_2d_vs_wcsph.lua --set solver=flip  --set particles=64000
--   floe bench scenes/bench/flip_2d_vs_wcsph.lua --set solver=wcsph --set particles=64000
local floe = require "floe"

local solver = floe.param("solver", "flip")
local n = floe.param("particles", 64000)
local steps = floe.param("steps", 300)
local grid = floe.param("grid", 256)
local c = floe.param("speed_of_sound", 20)
local side = 0.5
local d = side / math.floor(math.sqrt(n) + 0.5)
local dt = floe.param("dt", 0.25 * math.min(d, 1 / grid) / c)

local margin = solver == "wcsph" and 4 * d or 0
local sim = floe.sim{
  dim = 2, spacing = d, gravity = { 0, -9.81 },
  domain = { min = { -margin, -margin }, max = { 1 + margin, 1 + margin } },
}
local count = sim:fluid_box{ min = { 0, 0 }, max = { side, side }, density = 1000 }

if solver == "flip" then
  sim:load "flip"
  sim:pipeline{
    { "flip.splat", cell = 1 / grid, radius = 3 },
    { "flip.grid", speed_of_sound = c, courant = 0 },
    { "flip.advect", pic = 0.05, sampling = floe.param("sampling", "smooth") },
  }
elseif solver == "wcsph" then
  sim:load{ "sph", "wcsph" }
  sim:boundary_box{ min = { 0, 0 }, max = { 1, 1 }, layers = 2 }
  sim:pipeline{
    "neighbours",
    "sph.density",
    { "wcsph.pressure", speed_of_sound = c, courant = 0 },
    "gravity",
    { "sph.xsph", alpha = 0.01 },
    "wcsph.pressure_force",
    "integrate",
  }
else
  error("solver must be flip or wcsph, got " .. tostring(solver))
end
floe.log(string.format("%s: %d particles, spacing %.4g m, dt %.3g s, %d steps", solver, count, d, dt, steps))
local r = sim:run{ end_time = steps * dt, fps = 1 / (steps * dt), dt = dt }
floe.log(string.format("%s %d particles: %.1f steps/s (%d steps in %.3f s)", solver, count, r.steps / r.wall_s, r.steps,
  r.wall_s))
