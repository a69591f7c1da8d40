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
-- --set scale=S: every length (bunny, sphere, tank, spacing) times S, the
-- particle count unchanged; falls are sqrt(S) times faster, so the CFL
-- number v dt / d at a fixed dt drops as 1 / sqrt(S) (docs/freezing.md, "The
-- fixed step of 0.006 s")
local S = floe.param("scale", 1)
local d = floe.param("spacing", 0.0085 * S)
local seconds = floe.param("seconds", 0.24)
local models = os.getenv("FLOE_MODEL_DIR") or "../shared/data/models"

local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.35 * S, -0.1 * S, -0.35 * S }, max = { 0.35 * S, 1.0 * S, 0.35 * S } },
}
sim:load{ "sph", "iisph", "viscosity", "tension", "freeze" }
local file = models .. "/bunny_10k.obj"
local raw = floe.mesh_info{ file = file }
local s = 0.3 * S / (raw.max[2] - raw.min[2])
sim:boundary_mesh{
  file = file, scale = s,
  translation = { -s * (raw.min[1] + raw.max[1]) / 2, -s * raw.min[2], -s * (raw.min[3] + raw.max[3]) / 2 },
  set = "bunny",
}
sim:boundary_box{ min = { -0.3 * S, -0.02 * S, -0.3 * S }, max = { 0.3 * S, 0.95 * S, 0.3 * S }, layers = 2, set = "tank" }
sim:boundary_set{ name = "ice" }
local r = 0.2 * S
local n = sim:fluid_sphere{ centre = { 0, (0.3 + 0.02) * S + r, 0 }, radius = r, density = water.density }
floe.log(string.format("bench: %d water particles, scale %g, spacing %g m", n, S, d))
sim:pipeline(freezing.pipeline{ cold = "bunny" })
-- a line a frame: the ice, the largest speed and the CFL number it makes at
-- the issue's step of 0.006 s
local vmax = 0
sim:on_frame(function(sm, st)
  vmax = math.max(vmax, st.max_speed)
  floe.log(string.format("frame t = %.3f s: %d water, %d ice, largest speed %.3f m/s (so far %.3f), CFL at dt 0.006 s: %.2f (so far %.2f)",
    st.time, sm:count "fluid", sm:count "ice", st.max_speed, vmax, st.max_speed * 0.006 / d, vmax * 0.006 / d))
end)
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
