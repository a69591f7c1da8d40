-- Zero gravity: a cube of water pulls itself into a sphere and oscillates
-- about it, driven by surface tension alone (WCSPH + tension + a little
-- laminar viscosity). on_frame logs the shape: r_max / R_eq (the farthest
-- particle from the centre over the radius of the sphere of equal volume:
-- sqrt(3) (pi/6)^(1/3) = 1.40 for a cube, about 1 for a sphere) and the
-- principal axis ratio of the particle cloud.
--
--   floe run scenes/droplet.lua [--set tension=akinci|he] [--set n=12] [--set dim=2]
--       [--set gamma=2] [--set kappa=1e-4] [--set seconds=1]
--
-- tension = akinci (default): Akinci et al. 2013 cohesion + curvature;
-- tension = he: He et al. 2014 / Kim 2020 eq. 33-35 (+ eq. 36 air pressure
-- with --set p_atm=...). See docs/viscosity_tension.md for how each behaves.
local floe = require "floe"

local dim = floe.param("dim", 3)
local d = floe.param("spacing", 0.001)
local n = floe.param("n", dim == 3 and 12 or 20)   -- particles along an edge of the cube
local seconds = floe.param("seconds", 1.0)
local tension = floe.param("tension", "akinci")
local gamma = floe.param("gamma", 2)
local kappa = floe.param("kappa", 1e-4)
local p_atm = floe.param("p_atm", 0)
local nu = floe.param("nu", 1e-5)
local c = floe.param("speed_of_sound", 4)

local a = n * d / 2
local function v(x, y, z) if dim == 2 then return { x, y } end return { x, y, z } end
local L = 6 * a
local sim = floe.sim{ dim = dim, spacing = d, gravity = v(0, 0, 0),
                      domain = { min = v(-L, -L, -L), max = v(L, L, L) } }
sim:load{ "sph", "wcsph", "viscosity", "tension" }
local count = sim:fluid_box{ min = v(-a, -a, -a), max = v(a, a, a) }
local r_eq = dim == 3 and (3 * count / (4 * math.pi)) ^ (1 / 3) * d or math.sqrt(count / math.pi) * d
floe.log(string.format("droplet: %d particles, cube edge %.4g m, R_eq %.4g m, tension %s", count, 2 * a, r_eq, tension))

local steps = { "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = c }, "gravity" }
if tension == "akinci" then
  steps[#steps + 1] = { "tension.akinci", gamma = gamma }
elseif tension == "he" then
  steps[#steps + 1] = { "tension.he", kappa = kappa }
  if p_atm > 0 then steps[#steps + 1] = { "tension.air_pressure", p_atm = p_atm } end
else
  error("tension must be akinci or he")
end
steps[#steps + 1] = { "viscosity.laminar", nu = nu }
steps[#steps + 1] = "wcsph.pressure_force"
steps[#steps + 1] = "integrate"
sim:pipeline(steps)

-- eigenvalues of a symmetric 3x3 matrix (cyclic Jacobi)
local function eigen3(A)
  for _ = 1, 50 do
    local p, q, m = 1, 2, math.abs(A[1][2])
    if math.abs(A[1][3]) > m then p, q, m = 1, 3, math.abs(A[1][3]) end
    if math.abs(A[2][3]) > m then p, q, m = 2, 3, math.abs(A[2][3]) end
    if m < 1e-300 then break end
    local th = 0.5 * math.atan(2 * A[p][q], A[q][q] - A[p][p])
    local cs, sn = math.cos(th), math.sin(th)
    for k = 1, 3 do
      local akp, akq = A[k][p], A[k][q]
      A[k][p], A[k][q] = cs * akp - sn * akq, sn * akp + cs * akq
    end
    for k = 1, 3 do
      local apk, aqk = A[p][k], A[q][k]
      A[p][k], A[q][k] = cs * apk - sn * aqk, sn * apk + cs * aqk
    end
  end
  return A[1][1], A[2][2], A[3][3]
end

sim:on_frame(function(s, st)
  local N = s:count "fluid"
  local m = { 0, 0, 0 }
  for i = 1, N do
    local x, y, z = s:get("fluid", "x", i)
    m[1], m[2], m[3] = m[1] + x / N, m[2] + y / N, m[3] + z / N
  end
  local C = { { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } }
  local rmax = 0
  for i = 1, N do
    local x, y, z = s:get("fluid", "x", i)
    local e = { x - m[1], y - m[2], z - m[3] }
    for p = 1, 3 do for q = 1, 3 do C[p][q] = C[p][q] + e[p] * e[q] / N end end
    rmax = math.max(rmax, math.sqrt(e[1] ^ 2 + e[2] ^ 2 + e[3] ^ 2))
  end
  local l1, l2, l3 = eigen3(C)
  local lo, hi
  if dim == 2 then
    lo, hi = math.huge, 0
    for _, l in ipairs{ l1, l2, l3 } do if l > 1e-30 then lo, hi = math.min(lo, l), math.max(hi, l) end end
  else
    lo, hi = math.min(l1, l2, l3), math.max(l1, l2, l3)
  end
  floe.log(string.format("t = %.3f s: r_max/R_eq = %.3f, principal axis ratio %.3f, max speed %.4f m/s",
                         st.time, rmax / r_eq, math.sqrt(hi / lo), st.max_speed))
end)

sim:run{ end_time = seconds, fps = floe.param("fps", 30), out = "out/droplet", name = "water",
         formats = { "ply", "vtk" }, attributes = { "v", "rho", "p", "id" } }
