'use strict'
// The one script a fleet's quota runs in Redis (ADR 1102). Atomic, on Redis's clock (TIME):
// it keeps the fleet's window as each process keeps its own (the same buckets, a charge kept
// as long), settles what processes report, and grants a lease out of what is left.
//
// KEYS: the window (a hash), the processes seen (a sorted set); both share one hash tag.
// ARGV: id, gen known ('' at first), n budgets, RING, coolMs, then per budget windowMs,
//   bucket (µs, as the engine sizes it: a charge is kept RING of them), limit, ask, need,
//   own (this process's spend in its window); then m deltas as
//   (budget, field, amount) with field -1 for "the current lease's"; then r floors as
//   (budget, spend the upstream's headers imply); then s seeds as (budget, age in buckets,
//   amount, recorded 1/0: counted here before, so only if this window was lost); then the
//   longest a cooldown may last, ms (ADR 1104).
// A window counting other budgets than the caller's: an error reply, BUDGETS and the window's
//   (limit/windowMs, comma-separated), and nothing changed.
// Returns: gen, processes, coolMs left, lease life in ms, ms until the window has room (0:
//   granted), then per budget: granted, field, the window's spend after.

module.exports = `
local W, P = KEYS[1], KEYS[2]
local t = redis.call('TIME')
local nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowMs = math.floor(nowUs / 1000)
local id, known, n, RING, cool = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
-- The window's budgets (limit/windowMs each): a caller counting other budgets in it is told,
-- and changes nothing (ADR 1106).
local budgets = {}
for i = 0, n - 1 do budgets[#budgets + 1] = ARGV[8 + 6 * i] .. '/' .. ARGV[6 + 6 * i] end
budgets = table.concat(budgets, ',')
local theirs = redis.call('HGET', W, 'b')
if theirs and theirs ~= budgets then return redis.error_reply('BUDGETS ' .. theirs) end
local a = 6
local dims = {}
local longest = 0
for i = 0, n - 1 do
  local d = { w = tonumber(ARGV[a]), b = tonumber(ARGV[a + 1]), limit = tonumber(ARGV[a + 2]),
    ask = tonumber(ARGV[a + 3]), need = tonumber(ARGV[a + 4]), own = tonumber(ARGV[a + 5]) }
  a = a + 6
  local e = math.floor(nowUs / d.b)
  local head = tonumber(redis.call('HGET', W, 'h' .. i) or e)
  local sum = tonumber(redis.call('HGET', W, 's' .. i) or 0)
  if e > head then
    -- Free the buckets that left the window (at most a ring of them).
    for x = head - RING + 1, math.min(head + 1, e - RING) do
      local f = i .. ':' .. x
      local v = redis.call('HGET', W, f)
      if v then
        sum = sum - tonumber(v)
        redis.call('HDEL', W, f)
      end
    end
    head = e
  end
  d.head = head
  d.sum = sum
  -- A lease is spent by the end of its field's bucket: this one, or the next when this one
  -- is more than half gone. The window keeps a charge a bucket, and at least 100 ms, longer
  -- than the upstream.
  d.f = head
  if nowUs - head * d.b >= d.b / 2 then d.f = head + 1 end
  dims[i] = d
  if d.w > longest then longest = d.w end
end

local gen = redis.call('HGET', W, 'gen')
if not gen then
  gen = t[1] .. '.' .. t[2]
  redis.call('HSET', W, 'gen', gen)
end
if not theirs then redis.call('HSET', W, 'b', budgets) end
local lost = gen ~= known

local function add(i, x, amount)
  local d = dims[i]
  if d == nil or x <= d.head - RING or x > d.head + 1 then return end
  local f = i .. ':' .. x
  if amount < 0 then
    local v = tonumber(redis.call('HGET', W, f) or 0)
    amount = -math.min(-amount, v)
    if amount == 0 then return end
  end
  redis.call('HINCRBY', W, f, amount)
  d.sum = d.sum + amount
end

local m = tonumber(ARGV[a]); a = a + 1
for _ = 1, m do
  local i, x, v = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  a = a + 3
  if dims[i] ~= nil and x < 0 then x = dims[i].f end
  add(i, x, v)
end
local r = tonumber(ARGV[a]); a = a + 1
for _ = 1, r do
  local i, floor = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  a = a + 2
  local d = dims[i]
  if d ~= nil and floor > d.sum then add(i, d.head + 1, floor - d.sum) end
end
local s = tonumber(ARGV[a]); a = a + 1
for _ = 1, s do
  local i, age, v, recorded = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), ARGV[a + 3]
  a = a + 4
  if dims[i] ~= nil and (recorded == '0' or lost) then add(i, dims[i].head + 1 - age, v) end
end

-- No cooldown lasts past the bound from now, whoever wrote it: one written farther ahead (by an
-- older or hostile process) is brought back to it (ADR 1104).
local maxCool = tonumber(ARGV[a]) or 0
if maxCool <= 0 then maxCool = math.huge end
cool = math.min(cool, maxCool)
local c = tonumber(redis.call('HGET', W, 'cool') or 0) or 0
if c - nowMs > maxCool then
  c = nowMs + maxCool
  redis.call('HSET', W, 'cool', c)
end
if cool > 0 and nowMs + cool > c then
  c = nowMs + cool
  redis.call('HSET', W, 'cool', c)
end
local coolLeft = math.max(0, c - nowMs)

redis.call('ZADD', P, nowMs, id)
redis.call('ZREMRANGEBYSCORE', P, '-inf', nowMs - longest)
local procs = math.max(1, redis.call('ZCARD', P))

-- Room: every budget must hold what the first waiting call needs, and have some left (a
-- budget spent to its limit admits nothing: usage settled later would overrun it).
local wait = coolLeft
if wait == 0 then
  for i = 0, n - 1 do
    local d = dims[i]
    local free = d.limit - d.sum
    if d.need > free or free <= 0 then
      local short = math.max(d.need - free, 1 - free)
      local freed = 0
      local at = (d.head + 1) * d.b
      for x = d.head - RING + 1, d.head + 1 do
        freed = freed + tonumber(redis.call('HGET', W, i .. ':' .. x) or 0)
        if freed >= short then
          at = (x + RING) * d.b
          break
        end
      end
      wait = math.max(wait, math.ceil((at - nowUs) / 1000), 1)
    end
  end
end

-- Fair when the window is short: a process over an equal share takes a part of what is
-- free; one under it may take up to its share. Every budget grants the same part of what was
-- asked (the calls a lease admits spend all of them), at least what the first call needs.
-- Hungry processes (refused within two buckets) are served least-spent first: one that spent
-- more of the budget than another hungry one, by more than its call and a tenth of an equal
-- share, waits a bucket (its fraction of the budget spent is that of its most spent budget).
local needing, frac, slack, bms = false, 0, 0, nil
for i = 0, n - 1 do
  local d = dims[i]
  if d.need > 0 then needing = true end
  frac = math.max(frac, d.own / d.limit)
  slack = math.max(slack, d.need / d.limit)
  if bms == nil or d.b < bms then bms = d.b end
end
bms = math.max(1, math.ceil(bms / 1000))
if wait == 0 and needing then
  local lowest = nil
  for _, m in ipairs(redis.call('ZRANGE', P, 0, -1)) do
    if m ~= id then
      local v = redis.call('HGET', W, 'hu:' .. m)
      if v then
        local at, f = string.match(v, '([^:]+):([^:]+)')
        if nowMs - tonumber(at) <= 2 * bms and (lowest == nil or tonumber(f) < lowest) then lowest = tonumber(f) end
      end
    end
  end
  if lowest ~= nil and frac > lowest + slack + 0.1 / procs then wait = bms end
end
if needing then
  if wait > 0 then redis.call('HSET', W, 'hu:' .. id, nowMs .. ':' .. frac) else redis.call('HDEL', W, 'hu:' .. id) end
end

local part = 1
if wait == 0 then
  for i = 0, n - 1 do
    local d = dims[i]
    local free = d.limit - d.sum
    local cap = math.max(math.floor(d.limit / procs) - d.own, math.floor(free / procs))
    d.g = math.max(d.need, math.min(d.ask, free, cap))
    if d.ask > 0 then part = math.min(part, d.g / d.ask) end
  end
end
local life = nil
local out = { gen, procs, coolLeft, 0, wait }
for i = 0, n - 1 do
  local d = dims[i]
  local g = 0
  if wait == 0 then
    g = math.max(d.need, math.floor(d.ask * part))
    if g > 0 then add(i, d.f, g) end
  end
  local l = (d.f + 1) * d.b - nowUs
  if life == nil or l < life then life = l end
  redis.call('HSET', W, 's' .. i, d.sum, 'h' .. i, d.head)
  out[#out + 1] = g
  out[#out + 1] = d.f
  out[#out + 1] = d.sum
end
out[4] = math.max(0, math.floor(life / 1000))
redis.call('PEXPIRE', W, 2 * longest + 1000)
redis.call('PEXPIRE', P, 2 * longest + 1000)
return out
`
