-- Boxes of density 250, 500, 750 and 2000 kg/m^3 dropped into a tank of
-- water at rest (issue 15): the first three float at drafts of 0.25, 0.5
-- and 0.75 of their height, the last sinks and rests on the floor. The
-- boxes are held still for `hold` seconds while the water settles.
--
--   floe run scenes/floating_boxes.lua [--set spacing=0.02] [--set seconds=3]
-- Output: water.NNNN.ply, each box as NAME.NNNN.obj, bodies.csv (docs/rigid.md).
local floe = require "floe"

local d = floe.param("spacing", 0.02)
local seconds = floe.param("seconds", 3)
local hold = floe.param("hold", 0.5)
local tank = { 1.2, 0.6, 0.4 }
local depth = 0.35
local sim = floe.sim{ dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { tank[1] + 0.1, 1.2, tank[3] + 0.1 } } }
sim:load{ "sph", "iisph" }
local rigid = sim:load "rigid"

sim:fluid_box{ min = { 0, 0, 0 }, max = { tank[1], depth, tank[3] } }
sim:boundary_box{ min = { 0, 0, 0 }, max = tank, layers = 2, open_top = true }
rigid.walls{ min = { 0, 0, 0 }, max = tank, open_top = true }

local h = 0.16
for k, ratio in ipairs{ 0.25, 0.5, 0.75, 2 } do
  rigid.body{ name = string.format("box%d", k), shape = "box", size = { h, h, h }, density = 1000 * ratio,
              position = { 0.15 + 0.3 * (k - 1), depth + h / 2 + 0.05, tank[3] / 2 }, hold = hold }
end

sim:pipeline{
  "neighbours", "sph.density", "gravity",
  { "rigid.viscosity", alpha = 0.02, speed_of_sound = 20 },
  { "iisph.solve", tolerance = 0.0002, boundary_pressure = "mirror" },
  { "rigid.force", solver = "iisph", boundary_pressure = "mirror" },
  "integrate", "rigid.step", "rigid.output",
}
sim:run{ end_time = seconds, fps = 30, out = "out/floating_boxes", name = "water" }
