-- Water falling onto the Stanford bunny: the bunny is a mesh boundary
-- (sim:boundary_mesh samples its surface with boundary particles, Akinci et
-- al. 2012), a block of water drops onto it from above in a closed tank.
-- About 3k fluid particles and 700 on the bunny at the default spacing,
-- sized to finish in under a minute on a 2-core machine.
--
--   floe run scenes/bunny_in_tank.lua [--set spacing=0.015] [--set seconds=2] [--out DIR]
--
-- The mesh comes from FLOE_MODEL_DIR, by default ../shared/data/models (run
-- from the repository's root, with the shared data beside it).
local floe = require "floe"

local water = floe.preset "water"
local solver = floe.preset "wcsph"
local d = floe.param("spacing", 0.02)
local seconds = floe.param("seconds", 1.2)
local models = os.getenv("FLOE_MODEL_DIR") or "../shared/data/models"

local tank = { 0.6, 0.8, 0.45 }
local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { tank[1] + 0.1, 1.5, tank[3] + 0.1 } },
}
sim:load{ "sph", "wcsph" }

-- the bunny 0.35 m tall, standing on the floor in the middle of the tank,
-- turned to face the +x wall: its size and placement from its bounding box
local file = models .. "/bunny_10k.obj"
local raw = floe.mesh_info{ file = file }
local s = 0.35 / (raw.max[2] - raw.min[2])
local bunny = sim:boundary_mesh{
  file = file, scale = s, rotation = { 0, 90, 0 },
  translation = { tank[1] / 2 - s * (raw.min[3] + raw.max[3]) / 2, -s * raw.min[2],
                  tank[3] / 2 + s * (raw.min[1] + raw.max[1]) / 2 },
  set = "bunny",
}

local n = sim:fluid_box{ min = { 0.12, 0.42, 0.075 }, max = { 0.46, 0.66, 0.375 }, density = water.density }
sim:boundary_box{ min = { 0, 0, 0 }, max = tank, layers = 2 }  -- closed: splashes stay inside
floe.log(string.format("bunny in a tank: %d fluid particles, %d on the bunny (%s), spacing %.4g m", n, bunny,
                       raw.topology, d))

-- One step: neighbours, density and pressure, the accelerations, the
-- integration (as scenes/dam_break.lua).
local c = water.speed_of_sound
sim:pipeline{
  { "neighbours", reorder_every = solver.reorder_every },
  "sph.density",
  { "wcsph.pressure", speed_of_sound = c, gamma = solver.gamma, courant = solver.courant },
  "gravity",
  { "wcsph.viscosity", kind = "artificial", alpha = water.artificial_viscosity,
    boundary_alpha = water.wall_friction },
  "wcsph.pressure_force",
  "integrate",
}

sim:run{
  end_time = seconds, fps = 30, cfl = solver.cfl,
  out = "out/bunny_in_tank", name = "water",
  formats = { "ply" }, attributes = { "v", "rho", "p" },
}
