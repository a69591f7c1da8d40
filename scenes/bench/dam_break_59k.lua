-- Reference benchmark (issue: core): 3D dam break, water block 1 x 1 x 1 m at
-- particle radius 0.0125 m (spacing 0.025 m: 40^3 = 64,000 fluid particles
-- with Floe's cell-centred lattice), tank 4 x 3 x 1.5 m, viscosity 0.01,
-- fixed dt = 0.0005 s, 1 s simulated (2000 steps).
--
--   floe bench scenes/bench/dam_break_59k.lua [--threads N] [--set seconds=0.1]
local floe = require "floe"

local seconds = floe.param("seconds", 1.0)
local viscosity = floe.param("viscosity", 0.01)
local sim = floe.sim{
  dim = 3, radius = 0.0125, gravity = { 0, -9.81, 0 },
  -- generous domain: a droplet thrown over a wall must not end the benchmark
  domain = { min = { -1, -0.2, -1 }, max = { 5, 8, 2.5 } },
}
sim:load "wcsph"
local n = sim:fluid_box{ min = { 0, 0, 0 }, max = { 1, 1, 1 }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 }, layers = 3 }  -- closed tank
floe.log(string.format("bench: %d fluid particles", n))

-- dt = 0.0005 with spacing 0.025 allows c <= 0.4 d / dt = 20 m/s
sim:pipeline{
  "neighbours",
  "wcsph.density",
  { "wcsph.pressure", speed_of_sound = 20 },
  "gravity",
  { "wcsph.viscosity", kind = "xsph", alpha = viscosity },
  "wcsph.pressure_force",
  "integrate",
}
sim:run{ end_time = seconds, fps = 20, dt = 0.0005, out = "out/bench_dam_break_59k" }
