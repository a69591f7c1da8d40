-- Archimedes (issue 15), the box of tests/test_rigid_float.c (0.64 x 0.32 m,
-- 2D, d = 0.02 m, in a tank 1.2 m wide with 0.33 m of water, held `hold` s,
-- then free): its draft / height averaged over the last `avg` s of `t`,
-- from two free surfaces: the top particle of each column + d/2, and the
-- fluid's volume in two strips 0.1 m wide by the side walls (particles x
-- d^2 over the strips' width, above the fluid's bottom edge there: the
-- lowest particles - d/2). docs/rigid.md, "Archimedes". W, H (tank width,
-- water depth), w, h (the box), offset (added to the box's start height)
-- and dt_max can be set; the earlier, smaller box: --set W=0.8 --set H=0.25
-- --set w=0.48 --set h=0.16. Keep H - ratio h an odd multiple of d/2 (the
-- box's bottom on a row of the fluid's lattice; see the test).
--
--   floe run scenes/archimedes_volume_2d.lua --set solver=iisph --set bp=extrapolate --set ratio=0.25 [--set t=5.5 --set avg=4] [--set hold=0.52]
local floe = require "floe"
local d = 0.02
local W, H = floe.param("W", 1.2), floe.param("H", 0.33)
local w, h = floe.param("w", 0.64), floe.param("h", 0.32)
local ratio = floe.param("ratio", 0.5)
local avg = floe.param("avg", 1)
local seconds = floe.param("t", 2.5)
local solver = floe.param("solver", "wcsph")
local sim = floe.sim{ dim = 2, spacing = d, gravity = {0, -9.81}, domain = { min = {-0.1, -0.1}, max = {W + 0.1, 1} } }
sim:load{ 'sph', solver }
local rigid = sim:load 'rigid'
sim:fluid_box{ min = {0, 0}, max = {W, H} }
sim:boundary_box{ min = {0, 0}, max = {W, H + 0.3}, layers = 2, open_top = true }
rigid.walls{ min = {0, 0}, max = {W, H + 0.3}, open_top = true }
local y0 = H + h / 2 - ratio * h + floe.param("offset", 0)
local b = rigid.body{ name = 'box', shape = 'box', size = {w, h}, density = 1000 * ratio, position = {W / 2, y0}, hold = floe.param("hold", 0.5) }
if solver == "wcsph" then
  sim:pipeline{ 'neighbours', 'sph.density', { 'wcsph.pressure', speed_of_sound = floe.param("c", 20) }, 'gravity',
    { 'wcsph.viscosity', kind = 'artificial', alpha = floe.param("alpha", 0.05) }, 'wcsph.pressure_force',
    { 'rigid.force', alpha = 0.05, speed_of_sound = 20, boundary_pressure = floe.param("bp", "extrapolate") }, 'integrate', 'rigid.step' }
else
  local bp = floe.param("bp", "mirror")
  sim:pipeline{ 'neighbours', 'sph.density', 'gravity', { 'rigid.viscosity', alpha = 0.05, speed_of_sound = 20 },
    { 'iisph.solve', tolerance = 0.0005, boundary_pressure = bp, damping = 2 },
    { 'rigid.force', solver = 'iisph', boundary_pressure = bp }, 'integrate', 'rigid.step' }
end
local x0, x1 = 1.5 * d, 0.12
local top_d, cnt_d, n, gap_s = 0, 0, 0, 0
sim:on_frame(function(s, st)
  if st.time <= seconds - avg then return end
  local q = b:state()
  local low = q.position[2] - h / 2
  local col, cnt, bot = {}, 0, {}
  for i = 1, s:count 'fluid' do
    local x, y = s:get('fluid', 'x', i)
    local xl = x < W / 2 and x or W - x
    if xl > x0 and xl < x1 then
      local k = math.floor(x / d)
      if not col[k] or y > col[k] then col[k] = y end
    end
    if xl >= 0.02 and xl < 0.12 then cnt = cnt + 1
      local k = math.floor(x / d); if not bot[k] or y < bot[k] then bot[k] = y end end
  end
  local top, nc = 0, 0
  for _, y in pairs(col) do top = top + y; nc = nc + 1 end
  local surf_top = top / nc + d / 2
  local bs, bn = 0, 0
  for _, y in pairs(bot) do bs = bs + y; bn = bn + 1 end
  local edge = bs / bn - d / 2
  gap_s = gap_s + edge
  local surf_cnt = edge + cnt * d * d / (2 * 0.10)
  top_d, cnt_d, n = top_d + (surf_top - low) / h, cnt_d + (surf_cnt - low) / h, n + 1
end)
sim:run{ end_time = seconds, fps = 20, dt_max = floe.param("dt_max", 0.004), out = 'out/archimedes_volume_2d' }
floe.log(string.format("floor edge of the fluid %.2f mm", 1000 * gap_s / n))
floe.log(string.format("ratio %g %s %s: draft/h from top+d/2 %.4f (%.1f%%), from the strips' volume %.4f (%.1f%%), last %g s",
  ratio, solver, solver == "wcsph" and floe.param("bp", "extrapolate") or floe.param("bp", "mirror"), top_d / n, 100 * (top_d / n / ratio - 1), cnt_d / n, 100 * (cnt_d / n / ratio - 1), avg))
