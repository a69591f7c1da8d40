-- Archimedes with the body held: the box of tests/test_rigid_float.c
-- (0.48 x 0.16 m, density ratio 0.5, 2D, d = 0.02 m, tank 0.8 m wide with
-- 0.25 m of water) held still at its Archimedes position (`lower` m lower)
-- for the whole run. Logs, averaged over the last second:
--   surface - bottom   the free surface from the top particles of the
--                      columns near the side walls, minus the box's bottom
--   force / (rho g w)  the fluid's vertical force on the box as a depth
--   level - surface    the hydrostatic level y + p / (rho0 g) of the fluid
--                      near the side walls (lower 0.1 m) minus that surface
--   first row          the distance from the box's bottom layer (d/2 above
--                      its bottom) down to the top fluid particle of each
--                      column under it (the box's corners left out), in d
-- With nobody = 1 the tank has no body (the level alone). docs/rigid.md,
-- "Archimedes".
--
--   floe run scenes/archimedes_held_2d.lua --set solver=iisph [--set lower=0.04] [--set nobody=1] [--set bp=extrapolate]
local floe = require "floe"
local d = floe.param("d", 0.02)
local W, H = 0.8, 0.25
local solver = floe.param("solver", "iisph")
-- the bodies' boundary pressure: mirror, or extrapolate (docs/rigid.md, "Forces")
local bp = floe.param("bp", "mirror")
local seconds = floe.param("t", 2.5)
local verbose = floe.param("verbose", 0) == 1
local sim = floe.sim{ dim = 2, spacing = d, gravity = {0, -9.81}, domain = { min = {-0.1, -0.1}, max = {W + 0.1, 1} } }
sim:load{ "sph", solver }
local rigid = sim:load "rigid"
sim:fluid_box{ min = {0, 0}, max = {W, H} }
sim:boundary_box{ min = {0, 0}, max = {W, H + 0.3}, layers = 2, open_top = true }
rigid.walls{ min = {0, 0}, max = {W, H + 0.3}, open_top = true }
local h, w, ratio = 0.16, 0.48, 0.5
local y0 = H + h / 2 - ratio * h - floe.param("lower", 0)
local nobody = floe.param("nobody", 0) == 1
local b = not nobody and rigid.body{ name = "box", shape = "box", size = {w, h}, density = 1000 * ratio,
                                     position = {W / 2, y0}, hold = 1e9 }
if solver == "iisph" then
  sim:pipeline{ "neighbours", "sph.density", "gravity",
    { "rigid.viscosity", alpha = 0.05, speed_of_sound = 20 },
    { "iisph.solve", tolerance = 0.0005, boundary_pressure = bp, damping = 2 },
    { "rigid.force", solver = "iisph", boundary_pressure = bp },
    "integrate", "rigid.step" }
else
  sim:pipeline{ "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = floe.param("c", 20) }, "gravity",
    { "wcsph.viscosity", kind = "artificial", alpha = floe.param("alpha", 0.05) },
    { "rigid.viscosity", alpha = 0.05, speed_of_sound = 20 },
    "wcsph.pressure_force", { "rigid.force", boundary_pressure = bp }, "integrate", "rigid.step" }
end
local sub, force, level, gap, n = 0, 0, 0, 0, 0
sim:on_frame(function(s, st)
  local low = b and b:state().position[2] - h / 2 or 0
  local col, top, cnt = {}, 0, 0
  for i = 1, s:count "fluid" do
    local x, y = s:get("fluid", "x", i)
    if (x > 1.5 * d and x < 0.12) or (x < W - 1.5 * d and x > W - 0.12) then
      local k = math.floor(x / d)
      if not col[k] or y > col[k] then col[k] = y end
    end
  end
  for _, y in pairs(col) do top = top + y; cnt = cnt + 1 end
  local surf = top / cnt + d / 2
  local fd = b and b:state().force[2] / (1000 * 9.81 * w) or 0
  local lv, nl = 0, 0
  for i = 1, s:count "fluid" do
    local x, y = s:get("fluid", "x", i)
    if y < 0.1 and y > 2 * d and (x < 0.12 or x > W - 0.12) and x > 2 * d and x < W - 2 * d then
      lv = lv + y + s:get("fluid", "p", i) / (1000 * 9.81); nl = nl + 1
    end
  end
  -- the first fluid row under the box: per column, the highest particle below the layer
  local under, gs, ng = {}, 0, 0
  if b then
    local layer = low + d / 2
    for i = 1, s:count "fluid" do
      local x, y = s:get("fluid", "x", i)
      if math.abs(x - W / 2) < w / 2 - 2 * d and y < layer then
        local k = math.floor(x / d)
        if not under[k] or y > under[k] then under[k] = y end
      end
    end
    for _, y in pairs(under) do gs = gs + (layer - y) / d; ng = ng + 1 end
  end
  local row = ng > 0 and gs / ng or 0
  if st.time > seconds - 1 then
    sub, force, level, gap, n = sub + surf - low, force + fd, level + lv / nl - surf, gap + row, n + 1
  end
  if verbose then
    floe.log(string.format("t %.2f surface - bottom %.4f force depth %.4f level - surface %.4f", st.time, surf - low, fd,
      lv / nl - surf))
  end
end)
sim:run{ end_time = seconds, fps = 20, dt_max = 0.004, out = "out/archimedes_held_2d" }
if n > 0 then
  floe.log(string.format("surface - bottom %.5f m, force / (rho g w) %.5f m (x %.4f), level - surface %.5f m, "
    .. "first row %.3f d below the layer (d = %g)", sub / n, force / n, force / sub, level / n, gap / n, d))
end
