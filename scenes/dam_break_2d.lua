-- 2D dam break of Martin & Moyce (1952), n^2 = 2: a water column of width a
-- and height 2a collapses along a dry floor. With --set experiment=koshizuka_oka
-- the same column (L = a) in Koshizuka & Oka's (1996) tank, 4a long, against
-- their measured front (a = 0.146 m is their laboratory's column). The column first settles behind
-- a gate (hydrostatic pressure, like the experiment's water at rest), then
-- the gate is removed. The probe "front" writes the surge front Z = z/a
-- against T = t sqrt(2 g / a) (front.probe.csv), beside the measured front it is
-- compared with (tests/validation/); on_frame logs it too.
--
--   floe run scenes/dam_break_2d.lua [--set solver=wcsph|iisph|dfsph] [--set a=0.1] [--set resolution=40]
--                                    [--set experiment=martin_moyce|koshizuka_oka] [--set walls=friction|physical]
--   floe compare scenes/dam_break_2d.lua --vary solver=wcsph,iisph,dfsph --out DIR
local floe = require "floe"

local water = floe.preset "water"
local a = floe.param("a", 0.1)
local res = floe.param("resolution", 40)
local solver = floe.param("solver", "wcsph")
local experiment = floe.param("experiment", "martin_moyce")
-- walls = friction: the walls hold the flow by a friction (wcsph: Monaghan
-- alpha = wall_friction against boundary particles; iisph: boundary_viscosity
-- 0.01 m^2/s); physical: water's nu against the walls (viscosity.laminar,
-- no-slip), and for wcsph delta-SPH density, Adami's wall pressure and the
-- gradient correction (docs/validation.md, "WCSPH and IISPH defaults"). dfsph keeps
-- its step either way.
local walls = floe.param("walls", "friction")
if walls ~= "friction" and walls ~= "physical" then
  error(string.format("walls '%s': expected friction or physical", walls))
end
local physical = walls == "physical"
-- per experiment: the tank's length in a, the last T compared, the measured front
local experiments = {
  martin_moyce = { tank = 5, T_end = 2.6,
                   reference = "../tests/validation/dambreak2d_martin_moyce_n2eq2_a2.25in_table2_front.csv" },
  koshizuka_oka = { tank = 4, T_end = 3.2,
                    reference = "../tests/validation/dambreak2d_koshizuka_oka_1996_experiment.csv" },
}
local E = experiments[experiment]
if not E then
  error(string.format("experiment '%s': expected martin_moyce or koshizuka_oka", experiment))
end
local d = a / res
local g = 9.81

local sim = floe.sim{
  dim = 2, spacing = d, gravity = { 0, -g },
  domain = { min = { -4 * d, -4 * d }, max = { E.tank * a + 4 * d, 6 * a } },
}
sim:load{ "sph", "wcsph", "iisph", "dfsph", "hello", "viscosity" }
sim:fluid_box{ min = { 0, 0 }, max = { a, 2 * a }, density = water.density }
sim:boundary_box{ min = { 0, 0 }, max = { E.tank * a, 3 * a }, layers = 2, open_top = true }
sim:boundary_solid_box{ min = { a + 0.5 * d, 0 }, max = { a + 2.5 * d, 2.2 * a }, set = "gate" }

-- One step per solver; damping settles the column behind the gate. Wall
-- friction as each solver's test uses it (docs/validation.md).
local c = water.speed_of_sound
local nu = water.kinematic_viscosity
local steps = {
  wcsph = function(settling)
    if physical then
      return { { "wcsph.continuity", delta = 0.1 }, { "wcsph.pressure", speed_of_sound = c }, "gravity",
               { "wcsph.viscosity", kind = "artificial", alpha = water.artificial_viscosity, boundary_alpha = 0 },
               { "viscosity.laminar", nu = nu, boundary_nu = nu },
               { "wcsph.pressure_force", walls = "extrapolated", gradient_correction = true } }
    end
    return { "sph.density", { "wcsph.pressure", speed_of_sound = c }, "gravity",
             { "wcsph.viscosity", kind = "artificial", alpha = water.artificial_viscosity,
               boundary_alpha = water.wall_friction },
             "wcsph.pressure_force" }
  end,
  iisph = function(settling)
    local p = { "sph.density", "gravity" }
    if physical then p[#p + 1] = { "viscosity.laminar", nu = nu, boundary_nu = nu } end
    p[#p + 1] = { "iisph.solve", damping = settling and 20 or 0,
                  boundary_viscosity = (settling or physical) and 0 or 0.01 }
    return p
  end,
  dfsph = function(settling)
    local p = { "sph.density", "gravity" }
    if not settling then p[#p + 1] = { "sph.xsph", alpha = 0, boundary_alpha = 0.05 } end
    p[#p + 1] = "dfsph.solve"
    return p
  end,
}
if not steps[solver] then
  error(string.format("solver '%s': expected wcsph, iisph or dfsph", solver))
end
local function pipeline(settling)
  local p = { "neighbours" }
  for _, s in ipairs(steps[solver](settling)) do p[#p + 1] = s end
  if settling and solver ~= "iisph" then p[#p + 1] = { "hello.damp", rate = solver == "wcsph" and 5 or 20 } end
  p[#p + 1] = "integrate"
  return p
end

-- 1. settle behind the gate
sim:pipeline(pipeline(true))
sim:run{ end_time = 0.4, fps = 10, out = "out/dam_break_2d/settle", formats = { "ply" } }

-- 2. remove the gate and release; the clock of the probe starts here
sim:remove_set "gate"
sim:pipeline(pipeline(false))
local t0 = sim.time
local scale = math.sqrt(2 * g / a)
-- the front: the outermost particle with two others within 1.5 d (a
-- droplet thrown ahead of the surge is not its front, as in the solver tests)
sim:probe{ name = "front", kind = "front", axis = "x", time_origin = t0, time_scale = scale, scale = 1 / a,
           min_neighbours = 2, reference = E.reference }
sim:on_frame(function(s, st)
  if st.frame % 10 == 0 then
    local xmax = 0
    for i = 1, s:count "fluid" do
      local x = s:get("fluid", "x", i)
      if x > xmax then xmax = x end
    end
    xmax = s:reduce("max", xmax) -- under MPI: over every rank's particles
    floe.log(string.format("T = %.3f  Z = %.3f", (st.time - t0) * scale, (xmax + 0.5 * d) / a))
  end
end)
sim:run{ end_time = E.T_end / scale, fps = 200, out = "out/dam_break_2d", name = "water", formats = { "ply", "vtk" } }
