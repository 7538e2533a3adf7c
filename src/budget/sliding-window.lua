-- Sliding-window call budget over a whole grant chain, decided atomically.
--
-- KEYS[1]        version key of the grant tree (cached broker facts are valid only under it)
-- KEYS[2..n+1]   one window per grant of the chain (the grant first, its root last)
-- ARGV[1]        the version the caller's cached facts were loaded under
-- ARGV[2]        'consume' (policy allowed: take one unit everywhere) or 'probe' (only report)
-- ARGV[3]        '' to use Redis TIME, or a time in ms (tests of the window against a model)
-- ARGV[4+3i-3], ARGV[5+3i-3], ARGV[6+3i-3]   calls, windowMs and bucketMs of level i
--
-- A window is exact (bucketMs 0): a list of the allowed calls' times, oldest first, about
-- 11 bytes a call. A large budget is bucketed (bucketMs > 0): a hash of bucket start -> count,
-- at most windowMs / bucketMs + 1 buckets whatever the budget. A bucket counts in full until its end leaves the window, so a
-- bucketed window never admits more than the exact one would; it may admit fewer, for at most
-- one bucket's time.
--
-- Replies: {'missing'}                               no version: rebuild the tree's windows first
--          {'stale', currentVersion}                 nothing consumed; reload facts and retry
--          {'allowed', remaining, resetMs, atMs}     one unit taken at every level, at atMs
--          {'exhausted', retryAfterMs, resetMs}      a level is full; nothing taken
--          {'probed', remaining, resetMs}            nothing taken
-- All keys share the root's hash tag, so the script runs on one Redis Cluster slot.

local current = redis.call('GET', KEYS[1])
if not current then
  return {'missing'}
end
if current ~= ARGV[1] then
  return {'stale', current}
end

local now
if ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
else
  local clock = redis.call('TIME')
  now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end
local consume = ARGV[2] == 'consume'

-- Exact: drops the calls that left the window; answers the count, when the oldest leaves, and
-- when room returns once the window is full (the (count - calls + 1)-th oldest leaves).
local function exact_window(key, calls, window)
  while true do
    local head = redis.call('LINDEX', key, 0)
    if not head or tonumber(head) > now - window then break end
    redis.call('LPOP', key)
  end
  local count = redis.call('LLEN', key)
  local reset, wait = window, 0
  if count > 0 then reset = tonumber(redis.call('LINDEX', key, 0)) + window - now end
  if count >= calls then wait = tonumber(redis.call('LINDEX', key, count - calls)) + window - now end
  return count, reset, wait
end

-- Bucketed: a hash of bucket start -> count, with `n` the total counted and `h` the start of the
-- oldest bucket still counted. Buckets leave from `h` on, one bucket length apart, so a check
-- touches O(1) fields; a window idle for longer than itself is simply dropped.
local function bucketed_window(key, calls, window, bucket)
  local h = tonumber(redis.call('HGET', key, 'h'))
  if h and h + bucket + window <= now then
    if now - (h + bucket + window) >= window + bucket then
      redis.call('DEL', key)
      h = nil
    else
      local n = tonumber(redis.call('HGET', key, 'n')) or 0
      while h + bucket + window <= now do
        n = n - (tonumber(redis.call('HGET', key, h)) or 0)
        redis.call('HDEL', key, h)
        h = h + bucket
      end
      redis.call('HSET', key, 'n', n, 'h', h)
    end
  end
  local count = tonumber(redis.call('HGET', key, 'n')) or 0
  if count <= 0 or not h then return 0, window + bucket, 0 end
  local reset, wait = h + bucket + window - now, 0
  if count >= calls then
    local freed, start = 0, h
    while start <= now do
      freed = freed + (tonumber(redis.call('HGET', key, start)) or 0)
      if count - freed < calls then
        wait = start + bucket + window - now
        break
      end
      start = start + bucket
    end
  end
  return count, reset, wait
end

local levels = #KEYS - 1
local remaining, reset_ms, retry_after = nil, 0, 0
for i = 1, levels do
  local key = KEYS[i + 1]
  local calls = tonumber(ARGV[1 + 3 * i])
  local window = tonumber(ARGV[2 + 3 * i])
  local bucket = tonumber(ARGV[3 + 3 * i])
  local count, reset, wait
  if bucket == 0 then
    count, reset, wait = exact_window(key, calls, window)
  else
    count, reset, wait = bucketed_window(key, calls, window, bucket)
  end
  if wait > retry_after then retry_after = wait end
  local left = calls - count
  if consume then left = left - 1 end
  if left < 0 then left = 0 end
  if remaining == nil or left < remaining then
    remaining = left
    reset_ms = reset
    if consume and count == 0 then reset_ms = window + bucket end
  end
end

if not consume then
  return {'probed', remaining or 0, reset_ms}
end
if retry_after > 0 then
  return {'exhausted', retry_after, reset_ms}
end

for i = 1, levels do
  local key = KEYS[i + 1]
  local window = tonumber(ARGV[2 + 3 * i])
  local bucket = tonumber(ARGV[3 + 3 * i])
  if bucket == 0 then
    -- Should the clock step back, a time out of order stays until those before it leave: the
    -- window then counts it longer than needed, never shorter.
    redis.call('RPUSH', key, now)
  else
    local start = now - now % bucket
    redis.call('HINCRBY', key, start, 1)
    redis.call('HINCRBY', key, 'n', 1)
    if not redis.call('HGET', key, 'h') then redis.call('HSET', key, 'h', start) end
  end
  redis.call('PEXPIRE', key, window + bucket)
end
return {'allowed', remaining, reset_ms, now}
