-- delayq: give back in-flight values whose visibility deadline has passed (their consumer died,
-- hung or lost its connection), and prune attempt counters nobody touched for a long time.
-- Not in Redisson. Idempotent and safe with any number of reapers: each value moves exactly once.
--
-- Helpers: time, guard, settle
-- KEYS[1]: target list        NAME
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}
-- KEYS[5]: counters touched   delayq_attempts_seen:{NAME}
-- KEYS[6]: claim leases       delayq_claims:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format (not used)
-- ARGV[3]: most values to give back (and counters to prune) in this call
-- ARGV[4]: how long an untouched attempt counter is kept, ms (0: forever)
-- Returns: { values given back, counters pruned, earliest remaining deadline or false,
--            { claim lists whose lease ran out }, { foreign members } } (the client gives the
--            claim lists back with unclaim.lua, which can name each one as a key). A member of
--            the claim leases that is not named like one of this queue's claim lists
--            (delayq_claim:{NAME}:...) is removed and returned as foreign, never given back: a
--            reaper must not drain a list someone else wrote into the zset.
local now = delayq_now(ARGV[1])
local limit = tonumber(ARGV[3])
local expired = redis.call('zrangebyscore', KEYS[2], '-inf', delayq_ms(now), 'limit', 0, limit)
local returned = 0
for _, id in ipairs(expired) do
    local value = redis.call('hget', KEYS[3], id)
    redis.call('hdel', KEYS[3], id)
    redis.call('zrem', KEYS[2], id)
    if value then
        redis.call('rpush', KEYS[1], value)
        returned = returned + 1
    end
end

local pruned = 0
local keep = tonumber(ARGV[4])
if keep > 0 then
    local stale = redis.call('zrangebyscore', KEYS[5], '-inf', delayq_ms(now - keep), 'limit', 0, limit)
    for _, value in ipairs(stale) do
        redis.call('hdel', KEYS[4], value)
        redis.call('zrem', KEYS[5], value)
        pruned = pruned + 1
    end
end

local head = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
local lapsed, foreign = {}, {}
for _, claim in ipairs(redis.call('zrangebyscore', KEYS[6], '-inf', delayq_ms(now), 'limit', 0, limit)) do
    if delayq_is_claim_of(KEYS[6], claim) then
        lapsed[#lapsed + 1] = claim
    else
        redis.call('zrem', KEYS[6], claim)
        foreign[#foreign + 1] = claim
    end
end
return { returned, pruned, head[2] or false, lapsed, foreign }
