-- 3D dam break with WCSPH (Becker & Teschner 2007; Akinci et al. 2012
-- boundaries): a water block collapses in an open tank and runs up the far
-- wall of a closed tank. The default scene of `make demo`: about 12k fluid particles, sized
-- to finish in about a minute on a 2-core machine.
--
--   floe run scenes/dam_break.lua [--set spacing=0.02] [--frames 60] [--out DIR]
local floe = require "floe"

local water = floe.preset "water"
local solver = floe.preset "wcsph"
local d = floe.param("spacing", 0.025)
local seconds = floe.param("seconds", 2.0)

local tank = { 1.6, 0.9, 0.6 }
local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { tank[1] + 0.1, 2.0, tank[3] + 0.1 } },
}
sim:load{ "sph", "wcsph" }

local n = sim:fluid_box{ min = { 0, 0, 0 }, max = { 0.4, 0.8, tank[3] }, density = water.density }
sim:boundary_box{ min = { 0, 0, 0 }, max = tank, layers = 2 }  -- closed: splashes stay inside
floe.log(string.format("dam break: %d fluid particles, spacing %.4g m", n, d))

-- One step: neighbours first (everything after reads the lists), then the
-- density sum and the equation of state, then the accelerations (gravity
-- starts them, viscosity and pressure add to them), then the integration.
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
}

sim:run{
  end_time = seconds, fps = 30, cfl = solver.cfl,
  out = "out/dam_break", name = "water",
  formats = { "ply", "vtk" }, attributes = { "v", "rho", "p" },
}
