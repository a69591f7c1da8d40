-- The reference dam break (scenes/bench/dam_break_59k.lua: 59,319 fluid
-- particles, d = 0.025 m, WCSPH) with floating boxes in its path: the cost
-- of the rigid coupling and ODE against the step (issue 15).
--
--   floe bench scenes/bench/dam_break_59k_bodies.lua --threads 2 [--set bodies=10] [--set seconds=0.25] [--set one_pass=0]
local floe = require "floe"

local seconds = floe.param("seconds", 0.25)
local viscosity = floe.param("viscosity", 0.01)
local nbodies = floe.param("bodies", 10)
local d = 0.025
local sim = floe.sim{ dim = 3, radius = d / 2, gravity = { 0, -9.81, 0 },
  domain = { min = { -1, -0.2, -1 }, max = { 5, 8, 2.5 } } }
sim:load{ "sph", "wcsph" }
local rigid = sim:load "rigid"
local per_side = 39
local gap = (1 - per_side * d) / 2
local n = sim:fluid_box{ min = { gap, gap, gap }, max = { 1 - gap, 1 - gap, 1 - gap }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 }, layers = 3 }
rigid.walls{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 } }
-- boxes of 0.15 m (6 spacings) in rows of 5 across the tank, 1.4 m on
local placed = 0
for k = 1, nbodies do
  local i, j = (k - 1) % 5, (k - 1) // 5
  rigid.body{ name = string.format("box%d", k), shape = "box", size = { 0.15, 0.15, 0.15 }, density = 400 + 20 * (k % 10),
              position = { 1.4 + 0.3 * j, 0.076, 0.15 + 0.3 * i } }
  placed = placed + 1
end
floe.log(string.format("bench: %d fluid particles, %d bodies (%d body particles)", n, placed, sim:count "bodies"))
-- one_pass = 1 (default): the fluid-body friction in rigid.force's pass over
-- the rows; 0: the separate rigid.viscosity stage (two passes a step)
local couple = floe.param("one_pass", 1) == 1
  and { { "wcsph.pressure_force", xsph = viscosity }, { "rigid.force", alpha = 0.02, speed_of_sound = 20 } }
  or { { "rigid.viscosity", alpha = 0.02, speed_of_sound = 20 }, { "wcsph.pressure_force", xsph = viscosity }, "rigid.force" }
local stages = { "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = 20 }, "gravity" }
for _, st in ipairs(couple) do stages[#stages + 1] = st end
stages[#stages + 1] = "integrate"
stages[#stages + 1] = "rigid.step"
sim:pipeline(stages)
sim:run{ end_time = seconds, fps = 20, dt = 0.0005, out = "out/bench_dam_break_59k_bodies" }
