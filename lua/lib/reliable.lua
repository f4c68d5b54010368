-- delayq: reliable-consumer prelude, prepended (by src/scripts.rs, after lib/entry.lua) to the
-- scripts of src/reliable.
--
-- delayq_now(arg): the current time in epoch ms: arg itself (the client's clock, decimal ASCII),
-- or the Redis server's clock when arg is 'server' (delayq's Clock::Server).
-- delayq_ms(n): a whole number of ms as decimal ASCII, never in exponent notation.
-- delayq_pack(legacy, id, value): a pending entry as Redisson packs it.
-- delayq_settled(settled, id) / delayq_remember_settled(settled, id): whether delivery id was
-- settled (acked, nacked, dead-lettered) in the last minute, and recording that it was. A settle
-- call that the client sends again after its reply was lost (a dropped connection) finds its
-- own earlier success there instead of reporting the delivery as no longer ours.
-- delayq_schedule(timeout, order, channel, due, entry): adds a new pending entry as Redisson's
-- offer does; delayq_publish_if_head(timeout, channel, entry, due) publishes due when entry is
-- now the earliest pending one.
local function delayq_now(arg)
    if arg == 'server' then
        local t = redis.call('time')
        return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    return tonumber(arg)
end

local function delayq_ms(n)
    return string.format('%.0f', n)
end

local function delayq_pack(legacy, id, value)
    if legacy then
        return struct.pack('dLc0', tonumber(id), string.len(value), value)
    end
    return struct.pack('Bc0Lc0', string.len(id), id, string.len(value), value)
end

local function delayq_publish_if_head(timeout, channel, entry, due)
    local head = redis.call('zrange', timeout, 0, 0)[1]
    if head == entry then
        redis.call('publish', channel, due)
    end
end

local function delayq_schedule(timeout, order, channel, due, entry)
    redis.call('zadd', timeout, due, entry)
    redis.call('rpush', order, entry)
    delayq_publish_if_head(timeout, channel, entry, due)
end

local DELAYQ_SETTLED_KEEP_MS = 60000

local function delayq_settled(settled, id)
    return redis.call('zscore', settled, id) ~= false
end

local function delayq_remember_settled(settled, id)
    local now = delayq_now('server')
    redis.call('zadd', settled, delayq_ms(now), id)
    redis.call('zremrangebyscore', settled, '-inf', '(' .. delayq_ms(now - DELAYQ_SETTLED_KEEP_MS))
    redis.call('pexpire', settled, DELAYQ_SETTLED_KEEP_MS)
end
