-- Reference benchmark for the DFSPH module: a 3D dam break (a water block of
-- 39^3 = 59,319 particles at radius 0.0125 m, tank 4 x 3 x 1.5 m, 1 s
-- simulated), the scene of SPlisHSPlasH's data/Scenes/DamBreakModel.json
-- with particleRadius 0.0125 (dam_break_59k.lua's block and tank, the block
-- moved off the walls where SPlisHSPlasH's stands), solved with
-- DFSPH to a density tolerance of 0.05% and a divergence tolerance of 0.1%
-- (docs/dfsph.md, docs/performance.md). As that scene, the fluid has
-- SPlisHSPlasH's "standard" viscosity 0.01 m^2/s between fluid particles
-- (Monaghan's form, none against the walls: its boundaryViscosity is 0);
-- `--set viscosity=0` leaves it out.
--
--   floe bench scenes/bench/dfsph_dam_break_59k.lua [--threads N] [--set seconds=0.1] [--set cfl=0.4]
local floe = require "floe"

local seconds = floe.param("seconds", 1.0)
local per_side = floe.param("per_side", 39)
local nu = floe.param("viscosity", 0.01)
local d = 0.025
local sim = floe.sim{
  dim = 3, radius = 0.0125, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { 4.1, 6.0, 1.6 } },
}
sim:load{ "sph", "viscosity", "dfsph" }
-- where SPlisHSPlasH puts its block: the region [-1.95, -0.95] x [0.05, 1.05]
-- x [-0.5, 0.5] of its tank [-2, 2] x [0, 3] x [-0.75, 0.75], sampled from
-- one spacing inside (first particle 0.075 m from the left wall and the
-- floor, 0.275 m from the front and back walls, which it does not touch;
-- fluid_box puts particles at min + d / 2)
local o = { 0.05 + d / 2, 0.05 + d / 2, 0.25 + d / 2 }
local n = sim:fluid_box{ min = o, max = { o[1] + per_side * d, o[2] + per_side * d, o[3] + per_side * d }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 }, layers = 2, open_top = true }
floe.log(string.format("bench: %d fluid particles", n))

-- the viscosity in dfsph.solve's set-up pass (its `viscosity`), or with
-- `--set visc_stage=1` as the stage viscosity.laminar (the same formula,
-- its own neighbour pass)
local visc_stage = floe.param("visc_stage", 0) ~= 0
local steps = { "neighbours", "sph.density", "gravity" }
if nu > 0 and visc_stage then
  steps[#steps + 1] = { "viscosity.laminar", nu = nu, form = "monaghan", boundary_nu = 0 }
end
steps[#steps + 1] = { "dfsph.solve", tolerance = floe.param("tolerance", 0.0005),
                      divergence_tolerance = floe.param("divergence_tolerance", 0.001),
                      viscosity = visc_stage and 0 or nu }
steps[#steps + 1] = "integrate"
sim:pipeline(steps)
sim:run{ end_time = seconds, fps = 20, cfl = floe.param("cfl", 0.4), out = "out/bench_dfsph_dam_break_59k" }
