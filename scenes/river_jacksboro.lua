-- A river on real terrain (Kipfer & Westermann 2006): the Jacksboro fault
-- elevation model (USGS, scenes/terrain/README.md), the 128 x 128 crop,
-- scaled 1:1000 (a table-top landscape 9.5 m across, 0.3..1.0 m high: one
-- pixel, 74.5 m east-west in the data, becomes 7.45 cm; the data's 92.8 m
-- north-south pixels are drawn square too, a 20% squeeze). Water enters
-- from a disc high in a valley head (pixel 27, 85: the highest sample with
-- more than 40 upstream cells, found by a D8 flow accumulation over the
-- height map) and runs down the valley into the closed basin at pixel
-- 31, 117 (0.48 m), where it makes a lake. Water reaching the domain's
-- edge leaves through a sink.
--
--   floe run scenes/river_jacksboro.lua [--set spacing=0.03] [--set seconds=20]
--   floe bench scenes/river_jacksboro.lua --set spacing=0.015 --set lake_level=0.73 --set fps=200 \
--       --set warmup=1 --set seconds=0.1 --set carpet_files=0
--       (99k particles in the lake, the source running, the carpet built every
--       frame; 1M at spacing=0.007: docs/performance.md, "Rivers on terrain")
--   warmup=K: a first run of K frames that the figures leave out (kernel
--       builds, first uploads, the lists' first sizing); the bench reports
--       the second run. carpet_files=0: the carpet is built every frame but
--       its PLY and PNG are not encoded (floe bench writes no files anyway).
--       Use --set seconds, not --frames (which would cut the warm-up too).
--
-- Output per frame: the water particles, the carpet (carpet.NNNN.ply with
-- depth, speed and flow per vertex; carpet.NNNN.png), the wet map
-- (wet.NNNN.png); terrain.ply once. docs/terrain.md.
local floe = require "floe"

local d = floe.param("spacing", 0.03)
local seconds = floe.param("seconds", 20)
local rate = floe.param("rate", 0.02)          -- m^3/s at the source (20 l/s)
local lake_level = floe.param("lake_level", 0) -- > 0: the basin filled to this height at the start
local carpet_files = floe.param("carpet_files", 1) -- 0: the carpet built every frame, no carpet files
local px = 0.0745                              -- one pixel at 1:1000

local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 }, threads = floe.param("threads", 0),
  domain = { min = { 0.8, 0.2, 5.0 }, max = { 4.2, 1.3, 127 * px } },
}
sim:load{ "sph", "wcsph" }
sim:load "terrain"

local t = sim:terrain{ file = "scenes/terrain/jacksboro_crop128_16bit.png", cell = px, scale = 0.001 }
floe.log(string.format("terrain %d x %d samples, %.2f x %.2f m, heights %.3f..%.3f m",
                       t.nx, t.nz, t.max[1], t.max[2], t.min_height, t.max_height))

-- the source: a disc 12 cm above the valley head, 4 spacings wide, pouring
-- down (lower and narrower, its faster jet splashes the pool it makes)
local sx, sz = 27 * px, 85 * px
sim:source{ shape = "disc", centre = { sx, sim:terrain_height(sx, sz) + floe.param("source_height", 0.12), sz }, direction = { 0, -1, 0.3 },
            radius = floe.param("source_radius", 4) * d, rate = rate, start = 0, stop = floe.param("source_stop", 0) }
sim:sink{ edge = true }
if lake_level > 0 then
  local n = sim:lake{ level = lake_level, min = { 31 * px - 0.8, 117 * px - 0.8 }, max = { 31 * px + 0.8, 126.5 * px } }
  floe.log(string.format("lake: %d particles up to %.3f m", n, lake_level))
end

local cs = floe.param("speed_of_sound", 30)
sim:pipeline{
  { "neighbours", method = floe.param("neighbours", "cells") },
  "sph.density",
  { "wcsph.pressure" },
  "gravity",
  { "wcsph.viscosity", kind = "artificial", alpha = 0.05 },
  "wcsph.pressure_force",
  "integrate",
  { "terrain.collide", restitution = 0.1, friction = 0.3, wet_friction = 0.05, freeze_speed = 0.02 },
  "emit",
  "terrain.output",
  { "terrain.carpet", cell = 1, radius = 1.5, colour = "depth", mesh = carpet_files, image = carpet_files },
}

local fps = floe.param("fps", 10)
local warmup = floe.param("warmup", 0)
if warmup > 0 then
  sim:run{ frames = warmup, fps = fps, out = "out/river_jacksboro", attributes = { "v", "id" } }
end
local r = sim:run{ end_time = seconds, fps = fps, out = "out/river_jacksboro", attributes = { "v", "id" } }
local f = sim:flow()
floe.log(string.format("%d particles; %.1f kg in, %.1f kg out (%d emitted, %d removed)", sim:count "fluid",
                       f.mass_in, f.mass_out, f.emitted, f.removed))
