-- The first impact of a 2D dam break on the far wall (Martin & Moyce's
-- column, n^2 = 2, a = 0.1 m, in a 5a tank), WCSPH or IISPH as
-- scenes/dam_break_2d.lua sets them up, for the IISPH impact measurements
-- of docs/validation.md ("IISPH at impact"). Logs per frame (fps, 500 by
-- default: every 2 ms)
--   IMP t  pmax  n  front
-- t from the release (s), pmax the largest particle pressure within 2 d of
-- the far wall below a (Pa), n the particles in that window, front the
-- outermost particle's x (m); the Shepard-interpolated pressure at (5a - d,
-- d) and (5a - d, a/4) is the points probe "wall" (wall.probe.csv, sampled
-- every step by default). The solver's iterations
-- per step are in the run record (run.yaml, iisph.iterations, mean and
-- max per frame).
--   floe run scenes/validation/impact_2d.lua --threads 1 --set solver=iisph > log
local floe = require "floe"
local water = floe.preset "water"
local a = 0.1
local res = floe.param("resolution", 20)
local solver = floe.param("solver", "wcsph")
local omega = floe.param("omega", 0.5)
local tol = floe.param("tolerance", 0.0005)
local bp = floe.param("boundary_pressure", "extrapolate")
local bvisc = floe.param("boundary_viscosity", 0.01)
local fps = floe.param("fps", 500)
local tend = floe.param("end_time", 0.45)
local dt_max = floe.param("dt_max", 0)           -- 0: 1/fps (the run's default)
local rate = floe.param("rate", 20000)           -- the wall probe's samples a second: every step
local d = a / res
local g = 9.81
local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -g },
  domain = { min = { -4 * d, -4 * d }, max = { 5 * a + 4 * d, 6 * a } } }
sim:load{ "sph", "wcsph", "iisph", "hello" }
sim:fluid_box{ min = { 0, 0 }, max = { a, 2 * a }, density = water.density }
sim:boundary_box{ min = { 0, 0 }, max = { 5 * a, 3 * a }, layers = 2, open_top = true }
sim:boundary_solid_box{ min = { a + 0.5 * d, 0 }, max = { a + 2.5 * d, 2.2 * a }, set = "gate" }
local function pipeline(settling)
  local p = { "neighbours", "sph.density" }
  if solver == "wcsph" then
    p[#p+1] = { "wcsph.pressure", speed_of_sound = water.speed_of_sound }
    p[#p+1] = "gravity"
    p[#p+1] = { "wcsph.viscosity", kind = "artificial", alpha = water.artificial_viscosity,
                boundary_alpha = water.wall_friction }
    p[#p+1] = "wcsph.pressure_force"
    if settling then p[#p+1] = { "hello.damp", rate = 5 } end
  elseif solver == "iisph" then
    p[#p+1] = "gravity"
    p[#p+1] = { "iisph.solve", damping = settling and 20 or 0, boundary_viscosity = settling and 0 or bvisc,
                omega = omega, tolerance = tol, boundary_pressure = bp }
  else
    error(string.format("solver '%s': expected wcsph or iisph", solver))
  end
  p[#p+1] = "integrate"
  return p
end
sim:pipeline(pipeline(true))
sim:run{ end_time = 0.4, fps = 10, out = "out/impact_2d/settle" }
sim:remove_set "gate"
sim:pipeline(pipeline(false))
local t0 = sim.time
sim:probe{ name = "wall", points = { { 5 * a - d, d }, { 5 * a - d, 0.25 * a } }, rate = rate }
sim:on_frame(function(s, st)
  local pmax, n, xmax = 0, 0, 0
  for i = 1, s:count "fluid" do
    local x, y = s:get("fluid", "x", i)
    if x > xmax then xmax = x end
    if x > 5 * a - 2 * d and y < a then
      n = n + 1
      local p = s:get("fluid", "p", i)
      if p > pmax then pmax = p end
    end
  end
  floe.log(string.format("IMP %.4f %.1f %d %.4f", st.time - t0, pmax, n, xmax))
end)
local run = { end_time = t0 + tend, fps = fps, out = "out/impact_2d" }
if dt_max > 0 then run.dt_max = dt_max end
sim:run(run)
