-- 3D liquid with obstacles (Guay 2013, Fig. 3), solved by the grid-splat
-- PIC/FLIP module `flip`: a block of water is released into a box holding a
-- sphere, a box, a spinning capsule, a cluster of metaballs and a ramp
-- (plane), while a paddle sweeps back and forth along a scripted path. The
-- `raycast` module ray-casts the density grid to PNG frames (and an mp4 when
-- ffmpeg is on PATH) in flip_obstacles/frames below the output root
-- (out/flip_obstacles/frames, or DIR/flip_obstacles/frames with --out DIR).
--
--   floe run scenes/flip_obstacles.lua [--set spacing=0.02] [--set seconds=3] [--set render=false]
local floe = require "floe"

local d = floe.param("spacing", 0.02)
local seconds = floe.param("seconds", 2.0)
local render = floe.param("render", true)
local width = floe.param("width", 480)

local L = { 1.2, 0.7, 0.6 } -- the box (= the domain: its faces are the walls)
local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { 0, 0, 0 }, max = L },
}
sim:load{ "flip", "raycast" }
local n = sim:fluid_box{ min = { 0, 0, 0 }, max = { 0.35, 0.55, L[3] }, density = 1000 }
floe.log(string.format("flip_obstacles: %d particles, spacing %.3g m", n, d))

local c = 15 -- speed of sound (m/s): 5x the largest speed, density within ~4%
local stages = {
  { "flip.obstacle", shape = "sphere", centre = { 0.62, 0.0, 0.30 }, radius = 0.12 },
  { "flip.obstacle", shape = "box", centre = { 0.85, 0.08, 0.12 }, size = { 0.10, 0.16, 0.10 } },
  { "flip.obstacle", shape = "capsule", centre = { 0.55, 0.30, 0.45 }, axis = { 0.12, 0, 0 }, radius = 0.035,
    spin = { 0, 2.0, 0 } },
  { "flip.obstacle", shape = "metaballs", centre = { 0.95, 0.05, 0.42 }, blend = 0.02,
    balls = "0 0 0 0.06; 0.07 0.03 0 0.05; 0 0.03 0.07 0.05; -0.05 0.08 0.02 0.04" },
  { "flip.obstacle", shape = "plane", centre = { 1.12, 0, 0 }, normal = { -0.8, 1, 0 } },
  -- a paddle that sweeps across the far part of the box and back, every 2 s
  { "flip.obstacle", shape = "box", size = { 0.03, 0.25, 0.20 }, loop = true,
    path = "0 1.02 0.13 0.15; 1 1.02 0.13 0.45; 2 1.02 0.13 0.15" },
  "flip.splat",
  { "flip.grid", speed_of_sound = c },
  "flip.advect",
}
if render then
  stages[#stages + 1] = { "raycast.render", folder = "flip_obstacles/frames", name = "liquid", fps = 30,
    width = width, eye = { 1.45, 0.75, 1.25 }, target = { 0.6, 0.12, 0.3 }, orbit = 0.1, iso = 450 }
end
sim:pipeline(stages)

local r = sim:run{ end_time = seconds, fps = 30, out = "out/flip_obstacles", name = "water",
                   formats = { "ply" }, attributes = { "v" } }
floe.log(string.format("%d steps, %.3g particle-steps/s", r.steps, r.particle_steps_per_s))
