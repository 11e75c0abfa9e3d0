#!lua flags=allow-cross-slot-keys
-- The records due for one kind in the buckets of one server, most overdue
-- first: a hint for the workers, who load and step each again. With an
-- instance, what another instance claimed (until its claim ends) is
-- skipped, and with a claim too, what is listed is claimed for this one
-- (on one server; a cluster's Due claims with claim.lua what it keeps of
-- every server's list).
--
-- KEYS: per bucket, its due index of the kind and its claims
-- ARGV: 1 limit, 2 instance ('' lists without claims), 3 claim
--       (microseconds, 0 lists without claiming), then per bucket the
--       prefix of its record keys
-- Reply: {sec, usec, {bucket (0-based in KEYS), member, fields}...}
local clock = redis.call('TIME')
local sec, usec = tonumber(clock[1]), tonumber(clock[2])
local now = sec * 1000000 + usec
local limit, instance = tonumber(ARGV[1]), ARGV[2]
local function int(x) return string.format('%.0f', x) end

local function claimable(claims, m)
  if instance == '' then return true end
  local c = redis.call('HGET', claims, m)
  if not c then return true end
  local owner, untilAt = string.match(c, '^(.*) (%d+)$')
  return owner == instance or not untilAt or tonumber(untilAt) <= now
end

local found = {}
for b = 1, #KEYS / 2 do
  local index, claims = KEYS[2 * b - 1], KEYS[2 * b]
  local taken, offset = 0, 0
  while taken < limit do
    local page = redis.call('ZRANGEBYSCORE', index, '-inf', int(now), 'WITHSCORES', 'LIMIT', offset, limit)
    for i = 1, #page, 2 do
      if taken < limit and claimable(claims, page[i]) then
        table.insert(found, {tonumber(page[i + 1]), b, page[i]})
        taken = taken + 1
      end
    end
    if #page < 2 * limit then break end
    offset = offset + limit
  end
end
table.sort(found, function(x, y)
  if x[1] ~= y[1] then return x[1] < y[1] end
  if x[2] ~= y[2] then return x[2] < y[2] end
  return x[3] < y[3]
end)

local out = {sec, usec}
for i = 1, math.min(limit, #found) do
  local b, m = found[i][2], found[i][3]
  local rec = redis.call('HGETALL', ARGV[3 + b] .. m)
  if #rec == 0 then
    -- Only a key deleted behind the store's back leaves an entry without
    -- its record: drop it, or it would head the list for ever.
    redis.call('ZREM', KEYS[2 * b - 1], m)
  else
    if instance ~= '' and tonumber(ARGV[3]) > 0 then
      redis.call('HSET', KEYS[2 * b], m, instance .. ' ' .. int(now + tonumber(ARGV[3])))
    end
    table.insert(out, {b - 1, m, rec})
  end
end
return out
