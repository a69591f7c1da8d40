-- Benchmark of the freezing stages (issue: freezing): scenes/freezing_bunny.lua
-- (Kim 2020 Fig. 9, about 55k water particles at d = 0.0085 m, dt = 0.006 s,
-- IISPH + Kim viscosity + He tension and air pressure + freeze.film,
-- freeze.direction, freeze.transition) with the sphere starting 2 cm above
-- the bunny, so that the freezing stages work from the first steps; no
-- surface or pictures. The figure: the share of the freezing stages in the
-- step (ms per stage from floe bench), and simulated seconds per minute.
--
--   FLOE_MODEL_DIR=../shared/data/models floe bench scenes/bench/freezing_bunny_50k.lua --threads 2 [--set seconds=0.24]
--   FLOE_MODEL_DIR=../shared/data/models floe bench scenes/bench/freezing_bunny_50k.lua --backend opencl --set seconds=5 [--set cfl=0.4]
local floe = require "floe"
local freezing = require "floe.freezing"

local water = floe.preset "water"
local d = floe.param("spacing", 0.0085)
local seconds = floe.param("seconds", 0.24)
local models = os.getenv("FLOE_MODEL_DIR") or "../shared/data/models"

local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.35, -0.1, -0.35 }, max = { 0.35, 1.0, 0.35 } },
}
sim:load{ "sph", "iisph", "viscosity", "tension", "freeze" }
local file = models .. "/bunny_10k.obj"
local raw = floe.mesh_info{ file = file }
local s = 0.3 / (raw.max[2] - raw.min[2])
sim:boundary_mesh{
  file = file, scale = s,
  translation = { -s * (raw.min[1] + raw.max[1]) / 2, -s * raw.min[2], -s * (raw.min[3] + raw.max[3]) / 2 },
  set = "bunny",
}
sim:boundary_box{ min = { -0.3, -0.02, -0.3 }, max = { 0.3, 0.95, 0.3 }, layers = 2, set = "tank" }
sim:boundary_set{ name = "ice" }
local r = 0.2
local n = sim:fluid_sphere{ centre = { 0, 0.3 + 0.02 + r, 0 }, radius = r, density = water.density }
floe.log(string.format("bench: %d water particles", n))
sim:pipeline(freezing.pipeline{ cold = "bunny" })
-- the issue's fixed dt of 0.006 s; --set cfl=0.4: at most 0.006 s under that
-- CFL number, as scenes/freezing_bunny.lua runs
local cfl = floe.param("cfl", 0)
local run = { end_time = seconds, fps = 25, out = "out/bench_freezing_bunny", name = "water" }
if cfl > 0 then
  run.dt_max, run.cfl = 0.006, cfl
else
  run.dt = 0.006
end
sim:run(run)
