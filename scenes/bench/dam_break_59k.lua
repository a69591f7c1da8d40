-- Reference benchmark (issue: core): 3D dam break, water block of about
-- 1 x 1 x 1 m at particle radius 0.0125 m (spacing d = 0.025 m), tank
-- 4 x 3 x 1.5 m, viscosity 0.01, fixed dt = 0.0005 s, 1 s simulated (2000
-- steps). per_side particles along each edge of the block: 39 (default)
-- gives the issue's "about 59k" (39^3 = 59,319, a block of 0.975 m
-- centred in the 1 m corner cube), 40 the full 1 m cube (64,000).
--
-- length = k (weak scaling over MPI, docs/mpi.md): the block and the tank k
-- times as long along x, k times the particles (k = 4: 237,276).
-- width = k: the block and the tank k times as wide along z instead (the
-- flow along x is the reference's in every slab of a cut along z).
--
-- config = water (the water preset's step, as the WCSPH scenes build it:
-- density sum, Monaghan alpha 0.02 and wall_friction 0.5 against the walls)
-- or physical (the validated physical walls of docs/validation.md:
-- delta-SPH density, alpha 0.02 between fluid particles only, water's nu
-- at the walls (viscosity.laminar), Adami's wall pressure and the gradient
-- correction) instead of the reference step above (XSPH, no artificial
-- viscosity).
--
--   floe bench scenes/bench/dam_break_59k.lua [--threads N] [--set seconds=0.1]
--       [--set per_side=40] [--set fused=0] [--set length=4] [--set config=water|physical]
--   mpirun -np 4 floe bench scenes/bench/dam_break_59k.lua --threads 2 --set length=4
local floe = require "floe"

local seconds = floe.param("seconds", 1.0)
local viscosity = floe.param("viscosity", 0.01)
local per_side = floe.param("per_side", 39)
local length = floe.param("length", 1)
local width = floe.param("width", 1)
local d = 0.025
local sim = floe.sim{
  dim = 3, radius = d / 2, gravity = { 0, -9.81, 0 },
  -- generous domain: a droplet thrown over a wall must not end the benchmark
  domain = { min = { -1, -0.2, -1 }, max = { 4 * length + 1, 8, 1.5 * width + 1 } },
}
sim:load{ "sph", "wcsph", "viscosity" }
local gap = (1 - per_side * d) / 2
local n = sim:fluid_box{ min = { gap, gap, gap }, max = { length - gap, 1 - gap, width - gap }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = { 4 * length, 3, 1.5 * width }, layers = 3 }  -- closed tank
floe.log(string.format("bench: %d fluid particles", n))

-- dt = 0.0005 with spacing 0.025 allows c <= 0.4 d / dt = 20 m/s.
-- fused = 1 (default): XSPH summed inside wcsph.pressure_force, one walk of
-- the neighbour lists; fused = 0: the separate sph.xsph stage.
local forces = floe.param("fused", 1) ~= 0
  and { { "wcsph.pressure_force", xsph = viscosity } }
  or { { "sph.xsph", alpha = viscosity }, "wcsph.pressure_force" }
local stages = { "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = 20 }, "gravity" }
for _, s in ipairs(forces) do stages[#stages + 1] = s end
stages[#stages + 1] = "integrate"
local config = floe.param("config", "reference")
if config == "water" then
  stages = { "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = 20 }, "gravity",
             { "wcsph.viscosity", kind = "artificial", alpha = 0.02, boundary_alpha = 0.5 },
             "wcsph.pressure_force", "integrate" }
elseif config == "physical" then
  stages = { "neighbours", { "wcsph.continuity", delta = 0.1 }, { "wcsph.pressure", speed_of_sound = 20 }, "gravity",
             { "wcsph.viscosity", kind = "artificial", alpha = 0.02, boundary_alpha = 0 },
             { "viscosity.laminar", nu = 1e-6, boundary_nu = 1e-6 },
             { "wcsph.pressure_force", walls = "extrapolated", gradient_correction = true }, "integrate" }
elseif config ~= "reference" then
  error(string.format("config '%s': expected reference, water or physical", config))
end
sim:pipeline(stages)
sim:run{ end_time = seconds, fps = 20, dt = 0.0005, out = "out/bench_dam_break_59k" }
