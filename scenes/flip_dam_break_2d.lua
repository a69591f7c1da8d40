-- 2D dam break of Martin & Moyce (1952), n^2 = 2, with the grid-splat
-- PIC/FLIP module `flip` (Guay 2013): a water column of width a and height
-- 2a settles behind a gate (a box obstacle, with velocity damping), then the
-- gate is left out of the pipeline and the column collapses along the
-- floor. The tank is the sim domain: its faces are the walls. on_frame
-- prints the surge front Z = z/a against T = t sqrt(2 g / a), to compare
-- with tests/validation/dambreak2d_martin_moyce_n2eq2_a2.25in_table2_front.csv
-- (tests/test_flip.c checks it within 15%). `raycast.render` writes images
-- of the density field to out/flip_dam_break_2d/frames/.
--
--   floe run scenes/flip_dam_break_2d.lua [--set a=0.1] [--set resolution=40] [--set render=false]
local floe = require "floe"

local a = floe.param("a", 0.1)
local res = floe.param("resolution", 40)
local render = floe.param("render", true)
local pic = floe.param("pic", 0.05)
local d = a / res
local g = 9.81
local c = 20 -- speed of sound: 10x the largest speed, sqrt(2 g 2a) = 2 m/s

local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -g }, domain = { min = { 0, 0 }, max = { 5 * a, 3 * a } } }
sim:load{ "flip", "hello", "raycast" }
local n = sim:fluid_box{ min = { 0, 0 }, max = { a, 2 * a }, density = 1000 }
floe.log(string.format("flip dam break: %d particles, spacing %.4g m, grid cell %.4g m", n, d, 2 * d))

local function pipeline(settling)
  local p = {}
  if settling then -- the gate: a thin box just right of the column, taller than the water
    p[#p + 1] = { "flip.obstacle", shape = "box", centre = { a + 2 * d, 1.5 * a }, size = { 4 * d, 3 * a } }
  end
  p[#p + 1] = "flip.splat"
  p[#p + 1] = { "flip.grid", speed_of_sound = c }
  p[#p + 1] = { "flip.advect", pic = pic }
  if settling then p[#p + 1] = { "hello.damp", rate = 5 } end
  if render then
    p[#p + 1] = { "raycast.render", folder = "flip_dam_break_2d/frames", name = settling and "settle" or "front",
                  fps = settling and 10 or 100, width = 800 }
  end
  return p
end

-- 1. settle behind the gate
sim:pipeline(pipeline(true))
sim:run{ end_time = 0.4, fps = 10 }

-- 2. release
sim:pipeline(pipeline(false))
local t0 = sim.time
local scale = math.sqrt(2 * g / a)
sim:on_frame(function(s, st)
  local xmax = 0
  for i = 1, s:count "fluid" do
    local x = s:get("fluid", "x", i)
    if x > xmax then xmax = x end
  end
  if st.frame % 10 == 0 then
    floe.log(string.format("T = %.3f  Z = %.3f", (st.time - t0) * scale, (xmax + 0.5 * d) / a))
  end
end)
sim:run{ end_time = 2.6 / scale, fps = 200, out = "out/flip_dam_break_2d", name = "water", formats = { "ply" },
         attributes = { "v" } }
