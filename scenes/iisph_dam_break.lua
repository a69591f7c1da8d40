-- 3D dam break with IISPH (Ihmsen et al. 2013, the water solver of Kim 2020
-- section 3.1; Akinci et al. 2012 boundaries): the scene of dam_break.lua,
-- solved to a density tolerance of 0.05% with a CFL-adaptive time step
-- instead of WCSPH's acoustic one. About 12k fluid particles.
--
--   floe run scenes/iisph_dam_break.lua [--set spacing=0.02] [--set tolerance=0.0001] [--frames 60] [--out DIR]
--
-- Other modules' force stages (viscosity, surface tension) go between
-- "gravity" and "iisph.solve": they add to a, which the solve treats as the
-- non-pressure acceleration of the predicted advection.
local floe = require "floe"

local water = floe.preset "water"
local d = floe.param("spacing", 0.025)
local seconds = floe.param("seconds", 2.0)
local tolerance = floe.param("tolerance", 0.0005)

local tank = { 1.6, 0.9, 0.6 }
local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { tank[1] + 0.1, 2.0, tank[3] + 0.1 } },
}
sim:load{ "sph", "iisph" }

local n = sim:fluid_box{ min = { 0, 0, 0 }, max = { 0.4, 0.8, tank[3] }, density = water.density }
sim:boundary_box{ min = { 0, 0, 0 }, max = tank, layers = 2, open_top = true }
floe.log(string.format("IISPH dam break: %d fluid particles, spacing %.4g m", n, d))

-- One step: neighbours, the density sum, the non-pressure accelerations
-- (gravity, then anything that adds to a), the pressure solve (adds the
-- pressure acceleration to a), the integration.
sim:pipeline{
  "neighbours",
  "sph.density",
  "gravity",
  { "iisph.solve", tolerance = tolerance, omega = 0.5 },
  "integrate",
}

sim:run{
  end_time = seconds, fps = 30, cfl = 0.4,
  out = "out/iisph_dam_break", name = "water",
  formats = { "ply", "vtk" }, attributes = { "v", "rho", "p" },
}
