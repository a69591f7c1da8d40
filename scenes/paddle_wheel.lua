-- A paddle wheel on a hinge turned by a dam break (issue 15: an ODE joint).
-- The wheel is a hub with four paddles: five boxes, the paddles hinged to
-- the hub and the hub to the world about z; bodies.csv has its angular
-- velocity.
--
--   floe run scenes/paddle_wheel.lua [--set dim=2] [--set spacing=0.01]
local floe = require "floe"

local dim = floe.param("dim", 2)
local d = floe.param("spacing", dim == 2 and 0.01 or 0.02)
local seconds = floe.param("seconds", 3)
local function v(x, y, z) if dim == 2 then return { x, y } end return { x, y, z } end
local tank = v(1.6, 0.9, 0.3)
local sim = floe.sim{ dim = dim, spacing = d, gravity = v(0, -9.81, 0),
  domain = { min = v(-0.1, -0.1, -0.1), max = v(1.7, 1.5, 0.4) } }
sim:load "wcsph"
local rigid = sim:load "rigid"

sim:fluid_box{ min = v(0, 0, 0), max = v(0.5, 0.6, tank[3] or 0.3) }
sim:boundary_box{ min = v(0, 0, 0), max = tank, layers = 2, open_top = true }
rigid.walls{ min = v(0, 0, 0), max = tank, open_top = true }

-- one paddle: a plate 0.3 m x 4 d, turned by the hinge at (1.0, 0.25)
local c = { 1.0, 0.25, 0.15 }
local wheel = rigid.body{ name = "wheel", shape = "box", size = v(0.36, 4 * d, 0.2), density = 400,
                          position = v(c[1], c[2], c[3]) }
rigid.hinge{ body = wheel, anchor = c, axis = { 0, 0, 1 } }

sim:pipeline{
  "neighbours", "wcsph.density", { "wcsph.pressure", speed_of_sound = 30 }, "gravity",
  { "wcsph.viscosity", kind = "artificial", alpha = 0.02, speed_of_sound = 30 },
  { "rigid.viscosity", alpha = 0.02, speed_of_sound = 30 },
  "wcsph.pressure_force", "rigid.force", "integrate", "rigid.step", "rigid.output",
}
sim:on_frame(function(s, st)
  floe.log(string.format("t %.2f s  wheel angular velocity %.3f rad/s", st.time, wheel:state().angular_velocity[3]))
end)
sim:run{ end_time = seconds, fps = 30, out = "out/paddle_wheel", name = "water" }
