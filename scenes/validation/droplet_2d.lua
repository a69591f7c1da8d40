-- Validation: a 2D droplet in zero gravity held by surface tension
-- (tension.akinci, WCSPH). Two measurements of the same droplet, tied by
-- theory through one surface tension sigma:
--   1. oscillation: after the droplet has settled and its pressure has been
--      measured, it is given the mode-2 velocity v = U (x, -y) / R; the probes "front_x" and "front_y"
--      write its extent along x and y (front_x - front_y ~ the mode-2
--      deformation); Rayleigh's period of mode 2 in 2D is
--      T = 2 pi sqrt(rho R^3 / (6 sigma));
--   2. Laplace: at rest before that, the pressure probe "centre" reads the
--      pressure inside, p = sigma / R in 2D (the free surface at p = 0), plus
--      a bulk term of the cohesion force that does not depend on R.
-- Akinci's gamma is a coefficient, not sigma (docs/viscosity_tension.md):
-- its curvature term makes the Laplace jump of sigma 0.094 N/m and the
-- periods of sigma 0.063 N/m at gamma = 1; its cohesion alone
-- (--set curvature=0) holds the droplet as an elastic solid.
-- `floe validate` compares the periods of droplets of R = 10 d and 20 d,
-- started from the lattice with the mode-2 velocity (settle = measure = 0,
-- as test_tension): T(2R) / T(R) = 2^1.5 whatever sigma is. The Laplace
-- pressures (--set settle=0.3 --set measure=0.3) give a sigma that does not
-- match the periods' (docs/validation.md).
--
-- `--set tension=air_pressure --set p_atm=146` runs the droplet on Kim's
-- uniform air pressure instead (docs/viscosity_tension.md, "A surface
-- tension of a given sigma": after settling it holds no surface tension).
--
--   floe run scenes/validation/droplet_2d.lua [--set radius=10] [--set gamma=1] [--set curvature=1]
local floe = require "floe"

local cells = floe.param("radius", 10)   -- R in spacings
local tension = floe.param("tension", "akinci")  -- akinci | air_pressure
local p_atm = floe.param("p_atm", 146)           -- Pa, tension.air_pressure
assert(tension == "akinci" or tension == "air_pressure", "tension must be akinci or air_pressure, not " .. tostring(tension))
local gamma = floe.param("gamma", 1)
local curvature = floe.param("curvature", 1)  -- factor of Akinci's curvature term (0: cohesion only)
local settle = floe.param("settle", 0)          -- seconds: damped, from the lattice to round
local measure = floe.param("measure", 0)        -- seconds: the pressure at rest before the kick
local oscillate = floe.param("oscillate", 1.0)  -- seconds of free oscillation after the kick (0: none)
local d = 0.001
local R = cells * d
local U = 0.01 * math.sqrt(10 / cells)  -- the same relative amplitude for any R (U ~ omega R ~ R^-1/2)

-- support 3 d: at 2 d a 2D Akinci droplet locks into its lattice (docs/viscosity_tension.md)
local sim = floe.sim{ dim = 2, spacing = d, support = 3, gravity = { 0, 0 },
                      domain = { min = { -8 * R, -8 * R }, max = { 8 * R, 8 * R } } }
sim:load{ "sph", "wcsph", "viscosity", "tension", "hello" }
sim:fluid_sphere{ centre = { 0, 0 }, radius = R, density = 1000 }

local function pipeline(damp)
  local p = { "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = 4 }, "gravity",
              tension == "air_pressure" and { "tension.air_pressure", p_atm = p_atm }
                                       or { "tension.akinci", gamma = gamma, curvature = curvature }, { "viscosity.laminar", nu = 1e-6 }, "wcsph.pressure_force" }
  if damp then p[#p + 1] = { "hello.damp", rate = 20 } end
  p[#p + 1] = "integrate"
  return p
end

-- 1. settle from the lattice to a round droplet at rest (settle > 0)
if settle > 0 then
  sim:pipeline(pipeline(true))
  sim:run{ end_time = settle, fps = 10, out = "out/droplet_2d/settle", formats = { "ply" } }
end

-- 2. the pressure inside at rest for `measure` seconds, then the mode-2
-- velocity and `oscillate` seconds of free oscillation
sim:pipeline(pipeline(false))
local pts = {}
for k = 0, 4 do pts[#pts + 1] = { 0.25 * R * math.cos(k * 2 * math.pi / 5), 0.25 * R * math.sin(k * 2 * math.pi / 5) } end
pts[#pts + 1] = { 0, 0 }
sim:probe{ name = "centre", points = pts, attributes = { "p" }, rate = 1000 }
sim:probe{ name = "front_x", kind = "front", axis = "x", rate = 500 }
sim:probe{ name = "front_y", kind = "front", axis = "y", rate = 500 }
local t_kick, kicked = sim.time + measure, oscillate <= 0
local function kick(s, t)
  kicked = true
  local sx, sy, n = 0, 0, s:count "fluid"
  for i = 1, n do
    local x, y = s:get("fluid", "x", i)
    sx, sy = sx + x, sy + y
  end
  -- under MPI each rank holds a part of the drop: its centre over every rank's
  local total
  total, sx, sy = s:reduce("sum", n, sx, sy)
  local cx, cy = sx / total, sy / total
  for i = 1, n do
    local x, y = s:get("fluid", "x", i)
    local vx, vy = s:get("fluid", "v", i)
    s:set("fluid", "v", i, vx + U * (x - cx) / R, vy - U * (y - cy) / R)
  end
  floe.log(string.format("t = %.4f s: mode-2 velocity U = %.4g m/s", t, U))
end
if not kicked and measure <= 0 then kick(sim, sim.time) end
sim:on_frame(function(s, st)
  if not kicked and st.time >= t_kick - 1e-9 then kick(s, st.time) end
end)
sim:run{ end_time = measure + oscillate, fps = 20, out = "out/droplet_2d", formats = { "ply" } }
