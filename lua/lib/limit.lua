-- delayq lib/limit.lua: the slots and tokens of a queue's limits (delayq_limit_*:{NAME}).
--
-- Times are the server's (TIME), in ms with a fraction. A slot is a zset member (delivery id ->
-- lease end); a cap is full while as many leases have not run out. A rate is GCRA: member 'q'
-- (the queue) or 'k:KEY' of the rate zset holds its theoretical arrival time (TAT); a start is
-- granted when now >= TAT, or when TAT falls within now's millisecond (the start is then granted
-- at TAT, so that one call may grant several starts of a fast rate), and then
-- TAT = max(TAT, now - T/2) + T, T = period / count (see src/limit/mod.rs for the bound that gives).
-- delayq_limit_spec(limits, version): the limits stored in the hash `limits` (written by
-- src/limit/stored.rs; one HMGET), as { cap, count, period, key_cap, key_count, key_period }
-- (0: none), when they still carry `version`; else nil and the reply for the worker: { 3 }
-- they changed (read them again), { 8, field } a field is malformed (a hand edit: nothing
-- starts until they are stored again).
-- delayq_limit_queue_wait(slots, tat, now, spec): 0 when the queue-wide limits let a job start
-- now; else ms until they may, and 'slot' or 'token'.
-- delayq_limit_key_wait(key_slots, tat, key, now, spec): the same for one key's limits; a key
-- paused (member 'p:KEY' of the rate zset, scored +inf so that no trim of old arrival times
-- drops it) waits DELAYQ_LIMIT_PAUSED_WAIT, tried again then or at once when resumed.
-- delayq_limit_grant(slots, tat, busy, key_slots, spec, now, id, key, lease_end): takes the
-- slots and tokens of a start (the key's when key is not '').
-- delayq_limit_renew(slots, busy, key_slots, id, key, lease_end): pushes delivery id's leases
-- (queue-wide, and the key's when key is not '') to lease_end; 1 when it held one, else 0.
-- delayq_limit_release(slots, held, busy, key_slots, parked, id, key, now): drops them (the job
-- settled), making the key due at once when it has values held back; 1 when it held one.

-- The stored fields the scripts read, each with its spec name and largest value (a count fits
-- 32 bits; a period is at most 366 days, as Rate::validate checks).
local delayq_limit_fields = {
    { 'concurrency', 'cap', 4294967295 },
    { 'rate_count', 'count', 4294967295 },
    { 'rate_period_ms', 'period', 31622400000 },
    { 'key_concurrency', 'key_cap', 4294967295 },
    { 'key_rate_count', 'key_count', 4294967295 },
    { 'key_rate_period_ms', 'key_period', 31622400000 },
}

local function delayq_limit_spec(limits, version)
    local found = redis.call('hmget', limits, 'version', 'concurrency', 'rate_count',
        'rate_period_ms', 'key_concurrency', 'key_rate_count', 'key_rate_period_ms')
    if (found[1] or '') ~= version then
        return nil, { 3 }
    end
    local spec = {}
    for i, field in ipairs(delayq_limit_fields) do
        local raw = found[i + 1]
        local n = 0
        if raw then
            local digits = string.match(raw, '^%+?(%d+)$')
            n = digits and tonumber(digits)
            if not n or n < 1 or n > field[3] then
                return nil, { 8, field[1] }
            end
        end
        spec[field[2]] = n
    end
    if (spec.count > 0) ~= (spec.period > 0) then
        return nil, { 8, 'rate_count' }
    end
    if (spec.key_count > 0) ~= (spec.key_period > 0) then
        return nil, { 8, 'key_rate_count' }
    end
    return spec
end

local function delayq_limit_slots_wait(slots, now, cap)
    if cap <= 0 then
        return 0
    end
    -- Run-out leases are dropped only when they would fill the cap: below it they cost nothing.
    if redis.call('zcard', slots) < cap then
        return 0
    end
    redis.call('zremrangebyscore', slots, '-inf', delayq_ms(math.floor(now)))
    if redis.call('zcard', slots) < cap then
        return 0
    end
    local first = redis.call('zrange', slots, 0, 0, 'withscores')
    return math.max(1, tonumber(first[2]) - now)
end

local function delayq_limit_tat_wait(tat, member, now, count)
    if count <= 0 then
        return 0
    end
    local at = tonumber(redis.call('zscore', tat, member) or 0)
    if at < math.floor(now) + 1 then
        return 0
    end
    return at - now
end

local function delayq_limit_tat_take(tat, member, now, count, period, horizon)
    if count <= 0 then
        return
    end
    local t = period / count
    local at = tonumber(redis.call('zscore', tat, member) or 0)
    redis.call('zadd', tat, string.format('%.3f', math.max(at, now - t / 2) + t), member)
    -- An arrival time that far back is worth no more than none.
    redis.call('zremrangebyscore', tat, '-inf', '(' .. delayq_ms(now - horizon))
end

local function delayq_limit_queue_wait(slots, tat, now, spec)
    local wait = delayq_limit_slots_wait(slots, now, spec.cap)
    if wait > 0 then
        return wait, 'slot'
    end
    wait = delayq_limit_tat_wait(tat, 'q', now, spec.count)
    if wait > 0 then
        return wait, 'token'
    end
    return 0, ''
end

local DELAYQ_LIMIT_PAUSED_WAIT = 60000

local function delayq_limit_key_wait(key_slots, tat, key, now, spec)
    if redis.call('zscore', tat, 'p:' .. key) then
        return DELAYQ_LIMIT_PAUSED_WAIT
    end
    local wait = delayq_limit_slots_wait(key_slots, now, spec.key_cap)
    if wait > 0 then
        return wait
    end
    return delayq_limit_tat_wait(tat, 'k:' .. key, now, spec.key_count)
end

local function delayq_limit_grant(slots, tat, busy, key_slots, spec, now, id, key, lease_end)
    local horizon = math.max(spec.period, spec.key_period)
    if spec.cap > 0 then
        redis.call('zadd', slots, delayq_ms(lease_end), id)
    end
    delayq_limit_tat_take(tat, 'q', now, spec.count, spec.period, horizon)
    if key == '' then
        return
    end
    if spec.key_cap > 0 then
        redis.call('zadd', key_slots, delayq_ms(lease_end), id)
        redis.call('zremrangebyscore', busy, '-inf', delayq_ms(math.floor(now)))
        if (tonumber(redis.call('zscore', busy, key)) or 0) < lease_end then
            redis.call('zadd', busy, delayq_ms(lease_end), key)
        end
    end
    delayq_limit_tat_take(tat, 'k:' .. key, now, spec.key_count, spec.key_period, horizon)
end

local function delayq_limit_renew(slots, busy, key_slots, id, key, lease_end)
    local held = 0
    if redis.call('zscore', slots, id) then
        redis.call('zadd', slots, delayq_ms(lease_end), id)
        held = 1
    end
    if key ~= '' and redis.call('zscore', key_slots, id) then
        redis.call('zadd', key_slots, delayq_ms(lease_end), id)
        redis.call('zadd', busy, delayq_ms(lease_end), key)
        held = 1
    end
    return held
end

local function delayq_limit_release(slots, held, busy, key_slots, parked, id, key, now)
    local had = redis.call('zrem', slots, id)
    if key == '' then
        return had
    end
    had = math.max(had, redis.call('zrem', key_slots, id))
    if redis.call('llen', parked) > 0 then
        local score = tonumber(redis.call('zscore', held, key))
        if not score or score > now then
            redis.call('zadd', held, delayq_ms(math.floor(now)), key)
        end
    end
    if redis.call('zcard', key_slots) == 0 then
        redis.call('zrem', busy, key)
    end
    return had
end
