-- Validation: start-up of plane Poiseuille flow (Morris, Fox & Zhu 1997).
-- Water at rest between two walls (y = 0 and y = L), periodic along x, is
-- driven from t = 0 by a body acceleration F along x (the sim's gravity);
-- physical viscosity (viscosity.laminar, nu on the fluid and the walls).
-- The probe "profile" writes u_x at seven heights across the channel every
-- frame; `floe validate` compares them with the series solution
--   u(y, t) = F/(2 nu) y (L - y)
--           - sum_n 4 F L^2 / (nu pi^3 (2n+1)^3) sin((2n+1) pi y / L) exp(-(2n+1)^2 pi^2 nu t / L^2)
-- at t = 0.1, 0.2 and 1 s (steady: u_max = F L^2 / (8 nu) = 0.1 m/s).
--
--   floe run scenes/validation/poiseuille_2d.lua --set solver=wcsph|iisph|dfsph [--set rows=30]
--       [--set wall_velocity=mirror|extrapolated]  (viscosity.laminar at the walls)
local floe = require "floe"

local solver = floe.param("solver", "wcsph")
local rows = floe.param("rows", 30)     -- particles across the channel
local L, nu, F = 0.1, 0.01, 0.8         -- L^2 / nu = 1 s
local d = L / rows
local Lx = 12 * d                       -- the periodic length: 6 support radii
-- The walls stand a gap g = 0.05 d further out than the lattice: the first
-- fluid row next to a two-layer Akinci wall sums 3% above rho0 (the wall's
-- volumes come from its own kernel sum), and in a closed channel the
-- incompressible solvers can remove that only where there is room. The
-- channel is then L + 2 g wide, walls at y = -g and y = L + g.
local g = floe.param("gap", 0.05) * d

local sim = floe.sim{ dim = 2, spacing = d, gravity = { F, 0 }, periodic = { "x" },
                      domain = { min = { 0, -4 * d }, max = { Lx, L + 4 * d } } }
sim:load{ "sph", "wcsph", "iisph", "dfsph", "viscosity" }
sim:fluid_box{ min = { 0, 0 }, max = { Lx, L }, density = 1000 }
sim:boundary_solid_box{ min = { 0, -2 * d - g }, max = { Lx, -g }, set = "walls" }
sim:boundary_solid_box{ min = { 0, L + g }, max = { Lx, L + 2 * d + g }, set = "walls" }

local visc = { "viscosity.laminar", nu = nu, boundary_nu = nu, wall_velocity = floe.param("wall_velocity", "mirror") }
local steps = {
  wcsph = { "sph.density", { "wcsph.pressure", speed_of_sound = 2 }, "gravity", visc, "wcsph.pressure_force" },
  iisph = { "sph.density", "gravity", visc, "iisph.solve" },
  dfsph = { "sph.density", "gravity", visc, "dfsph.solve" },
}
if not steps[solver] then error(string.format("solver '%s': expected wcsph, iisph or dfsph", solver)) end
local p = { "neighbours" }
for _, s in ipairs(steps[solver]) do p[#p + 1] = s end
p[#p + 1] = "integrate"
sim:pipeline(p)

-- seven heights L/8 ... 7L/8: at least one support radius from the walls,
-- where the kernel-sum normalisation sees a full neighbourhood
local pts = {}
for k = 1, 7 do pts[k] = { Lx / 2, k * L / 8 } end
sim:probe{ name = "profile", points = pts, attributes = { "v" } }
sim:run{ end_time = 1.0, fps = 20, out = "out/poiseuille_2d", formats = { "ply" } }
