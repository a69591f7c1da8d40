-- Martin & Moyce (1952) dam break (n^2 = 2, a = 0.1 m) with WCSPH set up
-- as the scenes were before and after the delta-SPH change
-- (docs/validation.md, "WCSPH and IISPH defaults"): the density (dens = sum: sph.density,
-- delta: wcsph.continuity{delta = 0.1}), the viscosity between fluid
-- particles (visc = art: Monaghan alpha; lam: Morris with water's nu;
-- art+lam) and the walls (wall = friction: Monaghan boundary_alpha 0.5, the
-- old wall_friction; noslip: Morris with water's nu against the walls,
-- mirrored velocities; free: no shear stress) and the walls' pressure
-- (press = mirror: Akinci's p_b = p_i; adami: Adami et al. 2012's
-- extrapolated wall pressure, wcsph.pressure_force{walls = "extrapolated"};
-- gc = 1 adds its gradient_correction).
-- Logs one line per frame,
--   ROW T Z tau H outside
-- (front Z = (max x + d/2) / a at T = t sqrt(2 g / a); column height at the
-- left wall H = (max y + d/2) / 2a at tau = t sqrt(g / a); fluid particle
-- centres past a wall surface), which scripts/martin_moyce.py compares with
-- tests/validation/:
--
--   floe run scenes/validation/dam_break_2d_wcsph.lua --threads 1 --set resolution=40 \
--       --set dens=delta --set visc=art --set wall=noslip > log; python3 scripts/martin_moyce.py log
local floe = require "floe"
local a = 0.1
local res = floe.param("resolution", 20)
local dens = floe.param("dens", "sum")      -- sum | delta
local visc = floe.param("visc", "art")      -- art | lam | art+lam
local wall = floe.param("wall", "friction") -- friction | noslip | free
local press = floe.param("press", "mirror") -- mirror | adami
local gc = floe.param("gc", 0)              -- 1: wcsph.pressure_force{gradient_correction}
local wv = floe.param("wv", "mirror")       -- no-slip wall velocity: mirror | extrapolated (Adami)
local alpha = floe.param("alpha", 0.02)
-- solver = iisph: sph.density and iisph.solve instead (dens, visc, press and
-- gc do not apply); wall = friction is the scenes' boundary_viscosity 0.01
-- m^2/s (iisph.solve's wall friction), noslip / free as for WCSPH
local solver = floe.param("solver", "wcsph")
-- bnu: the walls' viscosity with wall = noslip (default water's 1e-6 m^2/s;
-- a larger value is a diagnostic of the under-resolved wall shear,
-- docs/validation.md, not a setting)
local bnu = floe.param("bnu", 1e-6)
-- gate_speed > 0 (m/s): the gate is lifted at that speed from the release
-- on (moved every 0.5 ms) instead of removed at once; it stops when its
-- lower edge is 2.2 a up (a sensitivity study of the release: Martin &
-- Moyce's gate speed is not in the shared data, docs/validation.md)
local gate_speed = floe.param("gate_speed", 0)
local c = floe.param("c", 25)
local tend = floe.param("T", 4.4)
local d = a / res
local g = 9.81
local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -g },
  domain = { min = { -4 * d, -4 * d }, max = { 5 * a + 4 * d, 6 * a } } }
sim:load{ "sph", "wcsph", "iisph", "hello", "viscosity" }
sim:fluid_box{ min = { 0, 0 }, max = { a, 2 * a }, density = 1000 }
sim:boundary_box{ min = { 0, 0 }, max = { 5 * a, 3 * a }, layers = 2, open_top = true }
sim:boundary_solid_box{ min = { a + 0.5 * d, 0 }, max = { a + 2.5 * d, 2.2 * a }, set = "gate" }
local function pipe_iisph(settling)
  local p = { "neighbours", "sph.density", "gravity" }
  if wall == "noslip" then
    p[#p+1] = { "viscosity.laminar", nu = 1e-6, boundary_nu = bnu, wall_velocity = wv }
  end
  p[#p+1] = { "iisph.solve", damping = settling and 20 or 0,
              boundary_viscosity = (wall == "friction" and not settling) and 0.01 or 0 }
  p[#p+1] = "integrate"
  return p
end
local function pipe(settling)
  if solver == "iisph" then return pipe_iisph(settling) end
  local p = { "neighbours" }
  if dens == "sum" then p[#p+1] = "sph.density" else p[#p+1] = { "wcsph.continuity", delta = 0.1 } end
  p[#p+1] = { "wcsph.pressure", speed_of_sound = c }
  p[#p+1] = "gravity"
  local balpha = wall == "friction" and 0.5 or 0
  if visc == "art" or visc == "art+lam" then
    p[#p+1] = { "wcsph.viscosity", kind = "artificial", alpha = alpha, boundary_alpha = balpha }
  end
  if visc == "lam" or visc == "art+lam" or wall == "noslip" then
    p[#p+1] = { "viscosity.laminar", nu = (visc == "lam" or visc == "art+lam") and 1e-6 or 0,
                boundary_nu = wall == "noslip" and bnu or 0, wall_velocity = wv }
  end
  p[#p+1] = { "wcsph.pressure_force", walls = press == "adami" and "extrapolated" or "mirror",
              gradient_correction = gc == 1 }
  if settling then p[#p+1] = { "hello.damp", rate = 5 } end
  p[#p+1] = "integrate"
  return p
end
sim:pipeline(pipe(true))
sim:run{ end_time = 0.4, fps = 10, out = "out/dam_break_2d_wcsph/settle", formats = { "ply" } }
if gate_speed <= 0 then sim:remove_set "gate" end
sim:pipeline(pipe(false))
local t0 = sim.time
local fps = gate_speed > 0 and 2000 or 200
local scale = math.sqrt(2 * g / a)
-- the front as scenes/dam_break_2d.lua and `floe validate` take it: the
-- outermost particle with two others within 1.5 d (front.probe.csv, which
-- scripts/martin_moyce.py reads when given the run's folder)
sim:probe{ name = "front", kind = "front", axis = "x", time_origin = t0, time_scale = scale, scale = 1 / a,
           min_neighbours = 2 }
sim:on_frame(function(s, st)
  if gate_speed > 0 and gate_speed * (st.time - t0) < 2.2 * a then
    local dy = gate_speed / fps
    for i = 1, s:count "gate" do
      local x, y = s:get("gate", "x", i)
      s:set("gate", "x", i, x, y + dy)
    end
  end
  if st.frame % (fps // 200) ~= 0 then return end
  local xmax, ymax, out = 0, 0, 0
  for i = 1, s:count "fluid" do
    local x, y = s:get("fluid", "x", i)
    if x > xmax then xmax = x end
    if x < 0 or x > 5 * a or y < 0 then out = out + 1 end
  end
  -- column height at the wall: highest particle with x < d
  local h = 0
  for i = 1, s:count "fluid" do
    local x, y = s:get("fluid", "x", i)
    if x < 1.5 * d and y > h then h = y end
  end
  floe.log(string.format("ROW %.4f %.4f %.4f %.4f %d", (st.time - t0) * scale, (xmax + 0.5 * d) / a,
    (st.time - t0) * math.sqrt(g / a), (h + 0.5 * d) / (2 * a), out))
end)
sim:run{ end_time = tend / scale, fps = fps, out = "out/dam_break_2d_wcsph", formats = {} }
