-- The two freezing models on the same scene: the icicle ledge (scenes/
-- icicle_ledge.lua) run with Kim 2020's model (film, growth direction,
-- glaze/icicle thresholds) and with the heat-transfer model (conduction
-- with latent heat, freeze.thermal), one after the other, then a table of
-- both per frame (docs/freezing.md, "The two models side by side").
--
--   floe run scenes/freezing_compare.lua [--set spacing=0.015] [--set seconds=1.5]
--       [--set T_solid=-196] [--set latent=334] [--out DIR]
--
-- The thermal model in real units freezes a water particle of spacing d on
-- a wall at T_solid in about rho L d^2 / (k |T_solid|): minutes for a
-- centimetre at -30 C, far beyond an animation's seconds. The defaults here
-- cool the ledge to -196 C (liquid nitrogen) and divide the latent heat by
-- 1000 (334 J/kg), so that the thermal ice forms within the run: an
-- accelerated thermal model, said so in the log. --set latent=334000 gives
-- the real one (no ice in 1.5 s; with 3340, one particle).
-- Writes kim/ and thermal/ below the output folder, each as icicle_ledge.lua.
local floe = require "floe"
local freezing = require "floe.freezing"

local d = floe.param("spacing", 0.015)
local seconds = floe.param("seconds", 1.5)
local T_solid = floe.param("T_solid", -196)
local latent = floe.param("latent", 334)
local rows = {}

for _, model in ipairs { "kim", "thermal" } do
  local sim, ledge = freezing.ledge{ spacing = d, model = model, T_solid = T_solid, latent = latent,
                                     pictures = floe.param("pictures", true) }
  sim:on_frame(function(s, st)
    local f = math.floor(st.time * 30 + 0.5)
    rows[f] = rows[f] or { time = st.time }
    rows[f][model] = freezing.ledge_stats(s, ledge.max[1])
  end)
  sim:run{ end_time = seconds, fps = 30, dt = 0.002, out = "out/freezing_compare/" .. model, name = "water",
           formats = { "ply" }, attributes = { "v", "id", "m", "ice_kind", "ice_dir", "ice_time", "Gamma", "T" } }
  sim:close()
end

floe.log(string.format("thermal model: ledge at %g C, latent heat %g J/kg%s", T_solid, latent,
                       latent < 334000 and " (accelerated: water's is 334000)" or ""))
floe.log("   t (s) |  kim: ice  glaze icicle lowest(m) beyond down | thermal: ice lowest(m) beyond")
local frames = {}
for f in pairs(rows) do frames[#frames + 1] = f end
table.sort(frames)
for _, f in ipairs(frames) do
  local r, k, t = rows[f], rows[f].kim, rows[f].thermal
  if k and t and f % 5 == 0 then
    floe.log(string.format("  %6.2f | %9d %6d %6d %9s %6d %4.2f | %12d %9s %6d", r.time, k.ice, k.kinds[1],
                           k.kinds[2], k.low and string.format("%.3f", k.low) or "-", k.beyond, k.down, t.ice,
                           t.low and string.format("%.3f", t.low) or "-", t.beyond))
  end
end
