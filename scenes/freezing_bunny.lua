-- Kim 2020 Figure 9: a liquid sphere dropped on a cold Stanford bunny
-- freezes to glaze on it and to icicles that hang from it (modules/freeze,
-- docs/freezing.md). Water: IISPH with Kim's viscosity and wall viscosity
-- (eqs. 37-40), He tension and air pressure (eqs. 33-36); then the film,
-- growth direction and phase change of his Algorithm 1. About 50k water
-- particles at the default spacing (Kim's count), steps of at most 0.006 s (his
-- step) and a CFL number of 0.4 below it: at this size his fixed step moves
-- the falling water up to 2.6 spacings a step, through the walls. With every
-- length times S (--set scale=S, the particle count kept) the CFL number at a
-- fixed step drops as 1 / sqrt(S); --set scale=44 --set fixed=true runs his
-- count at his fixed 0.006 s (a bunny 13.2 m tall; docs/freezing.md).
--
--   floe run scenes/freezing_bunny.lua [--set spacing=0.0085] [--set seconds=4]
--       [--set model=kim|thermal] [--set glaze=30] [--set icicle=60] [--out DIR]
--       [--set scale=44 --set fixed=true]
--
-- Writes water.NNNN.ply, ice.NNNN.ply (id, m, ice_kind, ice_dir, ice_time),
-- bunny.0000.ply, ice_surface.NNNN.obj (the anisotropic ice surface) and picture.NNNN.png.
-- The mesh comes from FLOE_MODEL_DIR, by default ../shared/data/models.
local floe = require "floe"
local freezing = require "floe.freezing"

local water = floe.preset "water"
local S = floe.param("scale", 1)
local d = floe.param("spacing", 0.0085 * S)
local seconds = floe.param("seconds", 4.0)
local models = os.getenv("FLOE_MODEL_DIR") or "../shared/data/models"

local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.35 * S, -0.1 * S, -0.35 * S }, max = { 0.35 * S, 1.0 * S, 0.35 * S } },
}
sim:load{ "sph", "iisph", "viscosity", "tension", "freeze", "surface" }

-- the bunny 0.3 S m tall, its base on the floor, centred on the y axis
local file = models .. "/bunny_10k.obj"
local raw = floe.mesh_info{ file = file }
local s = 0.3 * S / (raw.max[2] - raw.min[2])
local nb = sim:boundary_mesh{
  file = file, scale = s,
  translation = { -s * (raw.min[1] + raw.max[1]) / 2, -s * raw.min[2], -s * (raw.min[3] + raw.max[3]) / 2 },
  set = "bunny",
}
sim:boundary_box{ min = { -0.3 * S, -0.02 * S, -0.3 * S }, max = { 0.3 * S, 0.95 * S, 0.3 * S }, layers = 2, set = "tank" }
sim:boundary_set{ name = "ice" }
local n = sim:fluid_sphere{ centre = { 0, 0.55 * S, 0 }, radius = floe.param("radius", 0.2) * S, density = water.density }
floe.log(string.format("freezing bunny: %d water particles, %d on the bunny, spacing %.4g m", n, nb, d))

sim:pipeline(freezing.pipeline{ cold = "bunny", surface = floe.param("surface", true),
                                picture = floe.param("pictures", true) and { eye = { 0.75 * S, 0.55 * S, 0.75 * S },
                                  target = { 0, 0.15 * S, 0 }, solids = "bunny" } })
sim:on_frame(freezing.report)
local run = { end_time = seconds, fps = 30, out = "out/freezing_bunny", name = "water",
              formats = { "ply" }, attributes = freezing.attributes }
if floe.param("fixed", false) then   -- Kim's fixed step
  run.dt = floe.param("dt", 0.006)
else
  run.dt_max, run.cfl = floe.param("dt", 0.006), floe.param("cfl", 0.4)
end
sim:run(run)
