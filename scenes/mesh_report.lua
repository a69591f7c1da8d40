-- Figures for docs/meshes.md: the shared meshes scaled to 0.4 m tall,
-- sampled as boundaries and filled with fluid at three spacings. Runs
-- nothing; prints one line per mesh and spacing.
--
--   floe run scenes/mesh_report.lua
local floe = require "floe"

local models = os.getenv("FLOE_MODEL_DIR") or "../shared/data/models"
local meshes = {
  { name = "bunny", file = models .. "/bunny_10k.obj" },
  { name = "dragon", file = models .. "/dragon_50k.obj", allow_open = true }, -- 16 pinched edges
  { name = "teapot", file = "/usr/share/assimp/models/Collada/teapots.DAE", object = "Teapot01" },
}
floe.log("mesh     d (m)  triangles  topology  boundary  per area d^2  s   fluid  per volume/d^3  s")
for _, m in ipairs(meshes) do
  local raw = floe.mesh_info{ file = m.file, object = m.object }
  local s = 0.4 / (raw.max[2] - raw.min[2])
  local placed = floe.mesh_info{ file = m.file, object = m.object, scale = s }
  for _, d in ipairs{ 0.02, 0.01, 0.005 } do
    local sim <close> = floe.sim{ spacing = d, domain = { min = { -1, -1, -1 }, max = { 1, 1, 1 } } }
    local t0 = os.clock()
    local nb = sim:boundary_mesh{ file = m.file, object = m.object, scale = s }
    local t1 = os.clock()
    local fluid, per, t2 = "-", "-", t1
    if placed.closed or m.allow_open then
      local nf = sim:fluid_mesh{ file = m.file, object = m.object, scale = s, allow_open = m.allow_open }
      t2 = os.clock()
      fluid, per = tostring(nf), string.format("%.3f", nf * d ^ 3 / placed.volume)
    end
    floe.log(string.format("%-7s %6.3f  %9d  %-8s  %8d  %12.3f  %4.2f  %7s  %14s  %4.2f", m.name, d, placed.triangles,
                           placed.closed and "closed" or "open", nb, nb * d * d / placed.area, t1 - t0, fluid, per,
                           t2 - t1))
  end
end
