-- Kim 2020 Figure 9: a liquid sphere dropped on a cold Stanford bunny
-- freezes to glaze on it and to icicles that hang from it (modules/freeze,
-- docs/freezing.md). Water: IISPH with Kim's viscosity and wall viscosity
-- (eqs. 37-40), He tension and air pressure (eqs. 33-36); then the film,
-- growth direction and phase change of his Algorithm 1. About 50k water
-- particles at the default spacing (Kim's count), steps of at most 0.006 s (his
-- step) and a CFL number of 0.4 below it (at this spacing his fixed step moves
-- falling water 1.4 spacings a step, and some leaked through the walls).
--
--   floe run scenes/freezing_bunny.lua [--set spacing=0.0085] [--set seconds=4]
--       [--set model=kim|thermal] [--set glaze=30] [--set icicle=60] [--out DIR]
--
-- Writes water.NNNN.ply, ice.NNNN.ply (id, m, ice_kind, ice_dir, ice_time),
-- bunny.0000.ply, ice_surface.NNNN.obj (the anisotropic ice surface) and picture.NNNN.png.
-- The mesh comes from FLOE_MODEL_DIR, by default ../shared/data/models.
local floe = require "floe"
local freezing = require "floe.freezing"

local water = floe.preset "water"
local d = floe.param("spacing", 0.0085)
local seconds = floe.param("seconds", 4.0)
local models = os.getenv("FLOE_MODEL_DIR") or "../shared/data/models"

local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.35, -0.1, -0.35 }, max = { 0.35, 1.0, 0.35 } },
}
sim:load{ "sph", "iisph", "viscosity", "tension", "freeze", "surface" }

-- the bunny 0.3 m tall, its base on the floor, centred on the y axis
local file = models .. "/bunny_10k.obj"
local raw = floe.mesh_info{ file = file }
local s = 0.3 / (raw.max[2] - raw.min[2])
local nb = sim:boundary_mesh{
  file = file, scale = s,
  translation = { -s * (raw.min[1] + raw.max[1]) / 2, -s * raw.min[2], -s * (raw.min[3] + raw.max[3]) / 2 },
  set = "bunny",
}
sim:boundary_box{ min = { -0.3, -0.02, -0.3 }, max = { 0.3, 0.95, 0.3 }, layers = 2, set = "tank" }
sim:boundary_set{ name = "ice" }
local n = sim:fluid_sphere{ centre = { 0, 0.55, 0 }, radius = floe.param("radius", 0.2), density = water.density }
floe.log(string.format("freezing bunny: %d water particles, %d on the bunny, spacing %.4g m", n, nb, d))

sim:pipeline(freezing.pipeline{ cold = "bunny", surface = floe.param("surface", true),
                                picture = floe.param("pictures", true) and { eye = { 0.75, 0.55, 0.75 },
                                  target = { 0, 0.15, 0 }, solids = "bunny" } })
sim:on_frame(freezing.report)
sim:run{
  end_time = seconds, fps = 30, dt_max = floe.param("dt", 0.006), cfl = floe.param("cfl", 0.4),
  out = "out/freezing_bunny", name = "water",
  formats = { "ply" }, attributes = freezing.attributes,
}
