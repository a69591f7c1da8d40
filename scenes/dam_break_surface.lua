-- The 3D dam break of scenes/dam_break.lua with its water surfaced as a
-- mesh every output frame (surface.anisotropic: Yu & Turk kernels, marching
-- tetrahedra; docs/surface.md): out/dam_break_surface/surface.NNNN.obj and
-- .ply beside the particle frames water.NNNN.ply. Coarser and shorter than
-- the dam break so that it finishes in under a minute on 2 cores.
--
--   floe run scenes/dam_break_surface.lua [--set seconds=1] [--set surface.anisotropic.cell=0.5]
local floe = require "floe"

local water = floe.preset "water"
local solver = floe.preset "wcsph"
local d = floe.param("spacing", 0.035)
local seconds = floe.param("seconds", 1.0)

local tank = { 1.6, 0.9, 0.6 }
local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { tank[1] + 0.1, 2.0, tank[3] + 0.1 } },
}
sim:load{ "sph", "wcsph" }
sim:load "surface"

local n = sim:fluid_box{ min = { 0, 0, 0 }, max = { 0.4, 0.8, tank[3] }, density = water.density }
sim:boundary_box{ min = { 0, 0, 0 }, max = tank, layers = 2 }
floe.log(string.format("dam break with surfaces: %d fluid particles, spacing %.4g m", n, d))

-- The step as in dam_break.lua; surface.anisotropic is a per-frame stage:
-- it is not run in the steps, but once after each output frame.
local c = water.speed_of_sound
sim:pipeline{
  { "neighbours", reorder_every = solver.reorder_every },
  "sph.density",
  { "wcsph.pressure", speed_of_sound = c, gamma = solver.gamma, courant = solver.courant },
  "gravity",
  { "wcsph.viscosity", kind = "artificial", alpha = water.artificial_viscosity,
    boundary_alpha = water.wall_friction },
  "wcsph.pressure_force",
  "integrate",
  { "surface.anisotropic", cell = 0.5, format = "both" },
}

sim:run{
  end_time = seconds, fps = 30, cfl = solver.cfl,
  out = "out/dam_break_surface", name = "water",
}
