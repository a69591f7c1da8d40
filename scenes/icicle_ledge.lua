-- Water running off a cold horizontal ledge freezes to glaze on it and to
-- ice hanging from its edge (Kim 2020's freezing model, modules/freeze,
-- docs/freezing.md). The ledge sticks out of the tank's back wall; a block
-- of water on it is pushed towards the edge, runs over it and falls into
-- the tank, which is not cold. Water: IISPH with Kim's viscosity (eqs.
-- 37-40), He tension and air pressure (eqs. 33-36), as in his Algorithm 1.
-- The ledge is built by lua/floe/freezing.lua (freezing.ledge), as in
-- scenes/freezing_compare.lua and tests/test_freeze.c.
--
--   floe run scenes/icicle_ledge.lua [--set spacing=0.01] [--set seconds=1.8]
--       [--set model=kim|thermal] [--set anisotropic=true|false] [--set glaze=30] [--set icicle=45]
--       [--set fr=clamped|rescaled|none] [--set alpha=20] [--set T_solid=-30] [--set latent=334000]
--
-- Writes water.NNNN.ply (the fluid), ice.NNNN.ply (the ice particles: id, m,
-- ice_kind 1 glaze / 2 icicle / 3 thermal, ice_dir, ice_time), ledge.0000.ply,
-- ice_surface.NNNN.obj (the anisotropic ice surface) and picture.NNNN.png.
local floe = require "floe"
local freezing = require "floe.freezing"

local opts = {
  spacing = floe.param("spacing", 0.01), model = floe.param("model", "kim"), speed = floe.param("speed", 0.3),
  anisotropic = floe.param("anisotropic", true), glaze = floe.param("glaze", 30), icicle = floe.param("icicle", 45),
  alpha = floe.param("alpha", 20), fr = floe.param("fr", "clamped"), tension = floe.param("tension", true),
  T_solid = floe.param("T_solid", -30), latent = floe.param("latent", 334000),
  surface = floe.param("surface", true), pictures = floe.param("pictures", true),
}
local sim, ledge = freezing.ledge(opts)

sim:on_frame(function(s, st)
  local r = freezing.ledge_stats(s, ledge.max[1])
  floe.log(string.format("t = %.2f s: %d water, %d ice (%d glaze, %d icicle, %d thermal), lowest ice y = %s, "
                         .. "%d beyond the edge growing %.2f down, all the ice %.2f down",
                         st.time, r.water, r.ice, r.kinds[1], r.kinds[2], r.kinds[3],
                         r.low and string.format("%.3f m", r.low) or "-", r.beyond, r.down, r.all_down))
end)

sim:run{
  end_time = floe.param("seconds", 1.8), fps = 30, dt = floe.param("dt", 0.002),
  out = "out/icicle_ledge", name = "water",
  formats = { "ply" }, attributes = { "v", "id", "m", "ice_kind", "ice_dir", "ice_time", "Gamma", "T" },
}
