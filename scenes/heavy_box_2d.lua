-- A heavy box sinking onto the floor of a 2D tank, the scene of
-- test_rigid_float's heavy_box_rests_on_the_floor with its release as
-- parameters; it ends with the largest rise of the box's energy after the
-- release. Fluid particles caught between the box and the floor can get
-- pressures far above the hydrostatic and kick the box up: iisph.solve's
-- trapped_floor (on by default) bounds them; `--set trapped_floor=0`
-- shows the kick (docs/iisph.md, "Trapped particles").
--
--   floe run scenes/heavy_box_2d.lua [--set deg=5] [--set w=0.3] [--set ratio=2] [--set solver=wcsph]
--                                    [--set trapped_floor=0]
-- (with ratio above 2 the box starts at the floor: keep deg small enough
-- that its corners stay above it)
local floe = require "floe"

local d, W, H = 0.02, 0.8, 0.25
local w, h = floe.param("w", 0.2), 0.1
local ratio, deg = floe.param("ratio", 2), floe.param("deg", 0)
local solver = floe.param("solver", "iisph")
local seconds = floe.param("seconds", 3)
local trapped = floe.param("trapped_floor", 1)
if solver ~= "iisph" and solver ~= "wcsph" then
  error(string.format("solver '%s': expected iisph or wcsph", solver))
end

local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -9.81 },
                      domain = { min = { -0.1, -0.1 }, max = { W + 0.1, 1 } } }
sim:load{ "sph", solver }
local rigid = sim:load "rigid"
sim:fluid_box{ min = { 0, 0 }, max = { W, H } }
sim:boundary_box{ min = { 0, 0 }, max = { W, H + 0.3 }, layers = 2, open_top = true }
rigid.walls{ min = { 0, 0 }, max = { W, H + 0.3 }, open_top = true }
-- the box's top at the water's surface, or its bottom just above the floor
local y0 = math.max(H + h / 2 - ratio * h, h / 2 + 0.001)
local box = rigid.body{ name = "box", shape = "box", size = { w, h }, density = 1000 * ratio,
                        position = { W / 2, y0 }, rotation = deg, hold = 0.5 }

local stages = { "neighbours", "sph.density", "gravity", { "rigid.viscosity", alpha = 0.05, speed_of_sound = 20 } }
if solver == "iisph" then
  stages[#stages + 1] = { "iisph.solve", tolerance = 0.0005, boundary_pressure = "mirror", damping = 2,
                          trapped_floor = trapped }
  stages[#stages + 1] = { "rigid.force", solver = "iisph", boundary_pressure = "mirror" }
else
  stages[#stages + 1] = { "wcsph.pressure", speed_of_sound = 20 }
  stages[#stages + 1] = "wcsph.pressure_force"
  stages[#stages + 1] = { "rigid.force", solver = "wcsph" }
end
stages[#stages + 1] = "integrate"
stages[#stages + 1] = "rigid.step"
sim:pipeline(stages)

-- the box's energy (potential above the floor and kinetic) and lowest point, each frame
local lowest, rise, low = math.huge, 0, 0
sim:on_frame(function(_, st)
  local q = box:state()
  local th = 2 * math.atan(q.quaternion[4], q.quaternion[1])
  low = q.position[2] - (h / 2 * math.abs(math.cos(th)) + w / 2 * math.abs(math.sin(th)))
  local e = q.mass * 9.81 * (q.position[2] - h / 2) + 0.5 * q.mass * (q.velocity[1] ^ 2 + q.velocity[2] ^ 2)
  if st.time > 0.5 + 1e-9 then
    lowest = math.min(lowest, e)
    rise = math.max(rise, e - lowest)
  end
end)
sim:run{ end_time = seconds, fps = 20, dt_max = 0.004, out = "out/heavy_box_2d" }
local pe = box:state().mass * 9.81 * (y0 - h / 2)
floe.log(string.format("heavy box (%s%s, ratio %g, %g deg, %g m wide): largest energy rise after the release %.2f J "
  .. "(its potential energy above the floor at the release %.2f J); lowest point at the end %.4f m",
  solver, trapped > 0 and string.format(", trapped_floor %g", trapped) or "", ratio, deg, w, rise, pe, low))
