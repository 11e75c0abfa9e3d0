-- One decision of one scope, atomically: load the record, take the
-- server's time and, when needed, a fresh token, and apply the write
-- under its precondition. The driver checks what this wrote against
-- core.Step: the core is the only authority, this script only stores.
--
-- KEYS: 1 record, 2 token counter, 3 sweep index, 4 reconcile index,
--       5 claims, 6 waited, 7 changes channel (all of one bucket)
--       8 (optional) an operator's audit trail (store.Auditor)
-- ARGV: 1 mode (load, read, insert, update, delete), 2 member, 3 payload,
--       4 bucket, 5 expected version, 6 expected token (hex),
--       7 status, 8 fingerprint, 9 token (hex; empty: the fresh token),
--       10 version, 11 response, 12 error code, 13 attempts,
--       14..18 times (lu ra ca co ex): '' none, '=s.n' an instant,
--       '+s.n' the server's time plus s seconds and n nanoseconds,
--       19 sweep time (1..5, 0 none), 20 reconcile time (1..5, 0 none),
--       21 (with KEYS[8]) the audit entry, pushed only when the write holds
-- Reply: {1 written, sec, usec, counter, fields written but r} or
--        {0 precondition failed (or load, read), sec, usec, counter,
--        fields}. Only a load, and a write of the fresh token, take one
--        (counter 0: none), so that a read or a replay writes nothing: at
--        maxmemory (noeviction) reads, replays and deletes still work,
--        while each write that may grow the data starts with one that
--        Redis refuses (OOM) before anything is written.
local clock = redis.call('TIME')
local sec, usec = tonumber(clock[1]), tonumber(clock[2])
local m = ARGV[2]
-- Every key is read before any is written, so that a key of the wrong
-- type fails the script while it has written nothing.
local cur = redis.call('HGETALL', KEYS[1])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
redis.call('ZSCORE', KEYS[3], m)
redis.call('ZSCORE', KEYS[4], m)
redis.call('HEXISTS', KEYS[5], m)
local waited = redis.call('SISMEMBER', KEYS[6], m)
if KEYS[8] then redis.call('LLEN', KEYS[8]) end

local function int(x) return string.format('%.0f', x) end

-- A fresh token's counter: above every one handed out in the bucket, and
-- never below the server's clock in microseconds, so that a counter lost
-- with a failover's last writes starts again above them.
local function fresh()
  local c = math.max(last + 1, sec * 1000000 + usec)
  redis.call('SET', KEYS[2], int(c))
  return c
end

local function field(name)
  for i = 1, #cur, 2 do
    if cur[i] == name then return cur[i + 1] end
  end
  return nil
end

local mode = ARGV[1]
local holds
if mode == 'insert' then
  holds = #cur == 0
elseif mode == 'update' or mode == 'delete' then
  holds = #cur > 0 and field('v') == ARGV[5] and field('t') == ARGV[6]
else
  holds = false
end
if not holds then
  local c = 0
  if mode == 'load' then c = fresh() end
  return {0, sec, usec, c, cur}
end

local function changed()
  redis.call('ZREM', KEYS[3], m)
  redis.call('ZREM', KEYS[4], m)
  redis.call('HDEL', KEYS[5], m)
  if waited == 1 then
    redis.call('SREM', KEYS[6], m)
    redis.call('SPUBLISH', KEYS[7], ARGV[3])
  end
end

-- The audit first of the writes: at maxmemory it fails the script before
-- anything is written, so that a record never changes without its audit.
local function audit()
  if KEYS[8] then redis.call('RPUSH', KEYS[8], ARGV[21]) end
end

if mode == 'delete' then
  audit()
  redis.call('DEL', KEYS[1])
  changed()
  return {1, sec, usec, 0, {}}
end

-- value and due score (microseconds, rounded up) of a time spec
local function instant(spec)
  local kind, s, n = string.match(spec, '^([=+])(-?%d+)%.(%d%d%d%d%d%d%d%d%d)$')
  if not kind then error('idem: bad time spec ' .. spec) end
  s, n = tonumber(s), tonumber(n)
  if kind == '+' then
    n = n + usec * 1000
    s = s + sec + math.floor(n / 1000000000)
    n = n % 1000000000
  end
  return string.format('%.0f.%09d', s, n), s * 1000000 + math.ceil(n / 1000)
end

local names = {'lu', 'ra', 'ca', 'co', 'ex'}
local rec = {'s', ARGV[7], 'f', ARGV[8], 'v', ARGV[10]}
if ARGV[12] ~= '' then table.insert(rec, 'e'); table.insert(rec, ARGV[12]) end
if ARGV[13] ~= '' then table.insert(rec, 'n'); table.insert(rec, ARGV[13]) end
local scores = {}
for i = 1, 5 do
  local spec = ARGV[13 + i]
  if spec ~= '' then
    local value, score = instant(spec)
    table.insert(rec, names[i]); table.insert(rec, value)
    scores[i] = score
  end
end
local sweepAt, reconcileAt = tonumber(ARGV[19]), tonumber(ARGV[20])
if (sweepAt > 0 and not scores[sweepAt]) or (reconcileAt > 0 and not scores[reconcileAt]) then
  error('idem: a due index on a time the record does not have')
end

-- The writes, after every check.
local counter = 0
local tok = ARGV[9]
if tok == '' then
  counter = fresh()
  tok = string.format('%x%02x', counter, tonumber(ARGV[4]))
end
table.insert(rec, 't'); table.insert(rec, tok)
-- HSET first (after the audit): at maxmemory (noeviction) the first write
-- that may grow the data fails, and the script with it, having written
-- nothing.
audit()
local stored = {r = ARGV[11] ~= ''}
if stored.r then
  redis.call('HSET', KEYS[1], 'r', ARGV[11], unpack(rec))
else
  redis.call('HSET', KEYS[1], unpack(rec))
end
for i = 1, #rec, 2 do stored[rec[i]] = true end
local gone = {}
for i = 1, #cur, 2 do
  if not stored[cur[i]] then table.insert(gone, cur[i]) end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
changed()
if sweepAt > 0 then redis.call('ZADD', KEYS[3], int(scores[sweepAt]), m) end
if reconcileAt > 0 then redis.call('ZADD', KEYS[4], int(scores[reconcileAt]), m) end
return {1, sec, usec, counter, rec}
