-- Archimedes in 2D: a wide box (0.48 x 0.16 m) of density ratio `ratio`
-- released in a tank of water (0.8 m wide, 0.25 m deep) after being held
-- still for `hold` seconds; each frame logs the draft over the box's height
-- (the free surface from the top particles between box and side walls,
-- minus the box's lowest point) and its mean from `avg_from` on
-- (docs/rigid.md, "Archimedes").
--
--   floe run scenes/archimedes_2d.lua --set solver=iisph --set spacing=0.01 --set ratio=0.5 \
--       --set t=2.5 --set avg_from=1.5 --set hold=0.5
local floe = require "floe"
local d = floe.param("spacing", 0.02)
local ratio = floe.param("ratio", 0.5)
local solver = floe.param("solver", "wcsph")
local s = floe.param("size", 0.16)
local wb = floe.param("bwidth", 0.48)
local W, H = floe.param("width", 0.8), floe.param("depth", 0.25)
local sim = floe.sim{ dim = 2, spacing = d, gravity = {0, -9.81}, domain = { min = {-0.1, -0.1}, max = {W + 0.1, 1.0} } }
sim:load{ "sph", solver }
local rigid = sim:load "rigid"
sim:fluid_box{ min = {0, 0}, max = {W, H} }
sim:boundary_box{ min = {0, 0}, max = {W, H + 0.3}, layers = 2, open_top = true }
local b = rigid.body{ name = "box", shape = "box", size = {wb, s}, density = 1000 * ratio,
                      position = {W / 2, H + s / 2 - ratio * s}, hold = floe.param("hold", 0.6) }
rigid.walls{ min = {0, 0}, max = {W, H + 0.3}, open_top = true }
local c = floe.param("c", 20)
local avg_from = floe.param("avg_from", 1.5)
if solver == "iisph" then
sim:pipeline{ "neighbours", "sph.density", "gravity",
  { "rigid.viscosity", alpha = 0.05 },
  { "iisph.solve", tolerance = floe.param("tol", 0.0005), boundary_pressure = "mirror", damping = 2 },
  { "rigid.force", solver = "iisph", boundary_pressure = "mirror" },
  "integrate", "rigid.step", "rigid.output" }
else
sim:pipeline{ "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = c }, "gravity",
  { "wcsph.viscosity", kind = "artificial", alpha = 0.05 },
  { "rigid.viscosity", alpha = 0.05 },
  "wcsph.pressure_force", "rigid.force",
  "integrate", "rigid.step", "rigid.output" }
end
local sum, n = 0, 0
sim:on_frame(function(sm, st)
  local q = b:state()
  local th = 2 * math.asin(q.quaternion[4])
  local bottom = q.position[2] - (s / 2 * math.abs(math.cos(th)) + wb / 2 * math.abs(math.sin(th)))
  -- free surface: mean top of the columns within 0.1 m of the side walls
  local top = {}
  for i = 1, sm:count "fluid" do
    local x, y = sm:get("fluid", "x", i)
    if (x > 1.5 * d and x < 0.12) or (x < W - 1.5 * d and x > W - 0.12) then local k = math.floor(x / d); if not top[k] or y > top[k] then top[k] = y end end
  end
  local m, cnt = 0, 0
  for _, y in pairs(top) do m = m + y; cnt = cnt + 1 end
  local surf = m / cnt + d / 2
  local r = (surf - bottom) / s
  if st.time > avg_from then sum = sum + r; n = n + 1 end
  floe.log(string.format("t %.2f draft/height %.4f (expected %.2f) angle %.2f deg  mean %.4f", st.time, r, ratio,
    2 * math.deg(math.asin(q.quaternion[4])), n > 0 and sum / n or 0))
end)
sim:run{ end_time = floe.param("t", 3), fps = 10, dt_max = 0.004, out = "out/archimedes_2d" }
