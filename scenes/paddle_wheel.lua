-- A paddle wheel on a hinge, turned by a dam break (issue 15: ODE's joints).
-- The wheel is two crossed plates glued together (rigid.fix) and hinged to
-- the world about z at its centre (rigid.hinge); the on_frame line and
-- bodies.csv give its angular velocity.
--
--   floe run scenes/paddle_wheel.lua [--set dim=3] [--set spacing=0.01] [--set seconds=3]
local floe = require "floe"

local dim = floe.param("dim", 2)
local d = floe.param("spacing", dim == 2 and 0.01 or 0.02)
local seconds = floe.param("seconds", 3)
local function v(x, y, z) if dim == 2 then return { x, y } end return { x, y, z } end
local depth = 0.3
local tank = v(1.6, 0.9, depth)
local sim = floe.sim{ dim = dim, spacing = d, gravity = v(0, -9.81, 0),
  domain = { min = v(-0.1, -0.1, -0.1), max = v(1.7, 1.5, depth + 0.1) } }
sim:load{ "sph", "wcsph" }
local rigid = sim:load "rigid"

sim:fluid_box{ min = v(0, 0, 0), max = v(0.5, 0.6, depth) }
sim:boundary_box{ min = v(0, 0, 0), max = tank, layers = 2, open_top = true }
rigid.walls{ min = v(0, 0, 0), max = tank, open_top = true }

-- the wheel: centre 0.25 m above the floor, 1 m from the water's left wall
local c = { 1.0, 0.25, depth / 2 }
local len, thick = 0.4, 4 * d
local a = rigid.body{ name = "paddle_a", shape = "box", size = v(len, thick, depth - 4 * d), density = 400,
                      position = v(c[1], c[2], c[3]), carve = false }
local b = rigid.body{ name = "paddle_b", shape = "box", size = v(thick, len, depth - 4 * d), density = 400,
                      position = v(c[1], c[2], c[3]), carve = false }
rigid.fix{ body = b, to = a }
rigid.hinge{ body = a, anchor = c, axis = { 0, 0, 1 } }

sim:pipeline{
  "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = 30 }, "gravity",
  { "wcsph.viscosity", kind = "artificial", alpha = 0.02 },
  { "rigid.viscosity", alpha = 0.02 },
  "wcsph.pressure_force", "rigid.force", "integrate", "rigid.step", "rigid.output",
}
sim:on_frame(function(s, st)
  floe.log(string.format("t %.2f s  wheel angular velocity %.3f rad/s", st.time, a:state().angular_velocity[3]))
end)
sim:run{ end_time = seconds, fps = 30, out = "out/paddle_wheel", name = "water" }
