-- Reference benchmark for the IISPH module: the 3D dam break of
-- dam_break_59k.lua (water block of about 1 x 1 x 1 m at particle radius
-- 0.0125 m: per_side = 39 gives 39^3 = 59,319 fluid particles, the issue's
-- "about 59k", 40 the full 1 m cube, 64,000; tank 4 x 3 x 1.5 m, 1 s
-- simulated), solved
-- with IISPH at a density tolerance of 0.05% and a CFL-adaptive time step
-- (dt <= 0.6 d / v_max: fewer, longer steps cost less in all than 0.4 here,
-- about 500 steps of 10 iterations against 700 of 6.5; docs/iisph.md).
--
--   floe bench scenes/bench/iisph_dam_break_59k.lua [--threads N] [--set seconds=0.1]
--       [--set per_side=40] [--set gradient_correction=1]
local floe = require "floe"

local seconds = floe.param("seconds", 1.0)
local tolerance = floe.param("tolerance", 0.0005)
local per_side = floe.param("per_side", 39)
local d = 0.025
local sim = floe.sim{
  dim = 3, radius = 0.0125, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { 4.1, 6.0, 1.6 } },
}
sim:load{ "sph", "iisph" }
local gap = (1 - per_side * d) / 2
local n = sim:fluid_box{ min = { gap, gap, gap }, max = { 1 - gap, 1 - gap, 1 - gap }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 }, layers = 2, open_top = true }
floe.log(string.format("bench: %d fluid particles", n))

sim:pipeline{
  "neighbours",
  "sph.density",
  "gravity",
  { "iisph.solve", tolerance = tolerance, chebyshev = floe.param("chebyshev", 0.9),
    chebyshev_delay = floe.param("cheb_delay", 4),
    gradient_correction = floe.param("gradient_correction", 0) ~= 0 },
  "integrate",
}
sim:run{ end_time = seconds, fps = 20, cfl = floe.param("cfl", 0.6), out = "out/bench_iisph_dam_break_59k" }
