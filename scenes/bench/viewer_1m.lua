-- Frames of a 1M-particle dam break (1 m cube at spacing 0.01 m, 1,380,816
-- wall particles) for the viewer's frame-rate measurement (docs/viewer.md):
--   floe run scenes/bench/viewer_1m.lua --backend opencl --out /tmp/v1m
--   floe view /tmp/v1m --bench 10
-- d = 0.02 gives 125k fluid particles for a smaller machine.
local floe = require "floe"
local d = floe.param("d", 0.01)
local sim = floe.sim{ dim = 3, radius = d / 2, gravity = { 0, -9.81, 0 },
  domain = { min = { -1, -0.2, -1 }, max = { 5, 8, 2.5 } } }
sim:load{ "sph", "wcsph" }
local n = sim:fluid_box{ min = { 0, 0, 0 }, max = { 1, 1, 1 }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 }, layers = 3 }
floe.log(string.format("viewer_1m: %d fluid particles", n))
sim:pipeline{ "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = 20 }, "gravity",
  { "wcsph.pressure_force", xsph = 0.01 }, "integrate" }
sim:run{ end_time = 0.2, fps = 10, dt = 0.0002, out = "out/viewer_1m" }
