-- delayq lib/settle.lua: settling an in-flight delivery (ack, nack, dead).
--
-- Settle calls note the delivery id for a minute in delayq_settled:{NAME}, so that a call the
-- client sends again after its reply was lost (a dropped connection) finds its own earlier
-- success instead of reporting the delivery as no longer ours.
-- delayq_leave_flight(inflight, data, settled, id): takes delivery id out of flight. Returns its
-- value bytes (false when the id was in flight but its data is gone); or nil and the reply the
-- settle call gives at once: 1 when id was settled in the last minute (this call is a retry), 0
-- when it is no longer in flight (a reaper gave it back).
-- delayq_remember_settled(settled, id): notes that id was settled, by the server's clock.
-- delayq_ack(inflight, data, attempts, seen, settled, id): acknowledges delivery id (forgets
-- its value and attempt counter); ack.lua's reply.
-- delayq_extend(inflight, now, visibility, id): pushes delivery id's deadline to visibility ms
-- past now; the new deadline, or false when it is no longer in flight.
-- delayq_is_claim_of(claims, key): whether key is named like a claim list of the queue whose
-- claim leases are claims (delayq_claims:{NAME} -> delayq_claim:{NAME}:CONSUMER).
local DELAYQ_SETTLED_KEEP_MS = 60000

local function delayq_leave_flight(inflight, data, settled, id)
    if redis.call('zrem', inflight, id) == 0 then
        redis.call('hdel', data, id)
        if redis.call('zscore', settled, id) ~= false then
            return nil, 1
        end
        return nil, 0
    end
    local value = redis.call('hget', data, id)
    redis.call('hdel', data, id)
    return value or false
end

local function delayq_remember_settled(settled, id)
    local now = delayq_now('server')
    redis.call('zadd', settled, delayq_ms(now), id)
    redis.call('zremrangebyscore', settled, '-inf', '(' .. delayq_ms(now - DELAYQ_SETTLED_KEEP_MS))
    redis.call('pexpire', settled, DELAYQ_SETTLED_KEEP_MS)
end

local function delayq_is_claim_of(claims, key)
    local prefix = 'delayq_claim:' .. string.sub(claims, string.len('delayq_claims:') + 1) .. ':'
    return string.sub(key, 1, string.len(prefix)) == prefix and string.len(key) > string.len(prefix)
end

local function delayq_ack(inflight, data, attempts, seen, settled, id)
    local value, reply = delayq_leave_flight(inflight, data, settled, id)
    if reply then
        return reply
    end
    if value then
        redis.call('hdel', attempts, value)
        redis.call('zrem', seen, value)
    end
    delayq_remember_settled(settled, id)
    return 1
end

local function delayq_extend(inflight, now, visibility, id)
    if not redis.call('zscore', inflight, id) then
        return false
    end
    local deadline = now + visibility
    redis.call('zadd', inflight, 'xx', delayq_ms(deadline), id)
    return deadline
end
