-- Exact sliding-window call budget over a whole grant chain, decided atomically.
--
-- KEYS[1]        version key of the grant tree (cached broker facts are valid only under it)
-- KEYS[2..n+1]   one sorted set per grant of the chain (the grant first, its root last);
--                members are call ids, scores are Redis time in ms
-- ARGV[1]        the version the caller's cached facts were loaded under
-- ARGV[2]        a fresh random version, stored if the key is missing (first use, Redis restart)
-- ARGV[3]        'consume' (policy allowed: take one unit everywhere) or 'probe' (only report)
-- ARGV[4]        the call id, the member added at every level
-- ARGV[3+2i], ARGV[4+2i]   calls and windowMs of level i
--
-- Replies: {'stale', currentVersion}                  nothing consumed; reload facts and retry
--          {'allowed', remaining, resetMs}            one unit taken at every level
--          {'exhausted', retryAfterMs, resetMs}       a level is full; nothing taken
--          {'probed', remaining, resetMs}             nothing taken
-- All keys share the root's hash tag, so the script runs on Redis Cluster.

local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], ARGV[2])
  current = ARGV[2]
end
if current ~= ARGV[1] then
  return {'stale', current}
end

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local consume = ARGV[3] == 'consume'
local levels = #KEYS - 1

local remaining = nil
local reset_ms = 0
local retry_after = 0
local used = {}

for i = 1, levels do
  local key = KEYS[i + 1]
  local calls = tonumber(ARGV[3 + 2 * i])
  local window = tonumber(ARGV[4 + 2 * i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local count = redis.call('ZCARD', key)
  used[i] = count
  if count >= calls then
    -- Room returns when the (count - calls + 1)-th oldest call leaves the window.
    local freeing = redis.call('ZRANGE', key, count - calls, count - calls, 'WITHSCORES')
    local wait = window
    if freeing[2] then wait = tonumber(freeing[2]) + window - now end
    if wait > retry_after then retry_after = wait end
  end
  local left = calls - count
  if consume then left = left - 1 end
  if left < 0 then left = 0 end
  if remaining == nil or left < remaining then
    remaining = left
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if oldest[2] then reset_ms = tonumber(oldest[2]) + window - now else reset_ms = window end
    if consume and count == 0 then reset_ms = window end
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
  local window = tonumber(ARGV[4 + 2 * i])
  redis.call('ZADD', key, now, ARGV[4])
  redis.call('PEXPIRE', key, window)
end
return {'allowed', remaining, reset_ms}
