-- delayq lib/queue.lua: adding pending entries, as Redisson's offer does.
--
-- delayq_schedule(timeout, order, channel, due, entry): ZADD the entry at due, RPUSH it onto
-- the order list, and publish due when it became the earliest entry.
-- delayq_publish_if_head(timeout, channel, entry, due): publish due when entry is now the
-- earliest pending entry (Redisson's rule: schedulers re-arm on an earlier head only).
-- delayq_tidy_index(order, index, ...): delayq's indexes of the order list (the position index,
-- the value index) follow its life: dropped when the list is empty (Java peers' polls and
-- removals leave stale members), and given the list's time to live (a Java peer's expire sets it
-- on the list only).
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

local function delayq_tidy_index(order, ...)
    local indexes = { ... }
    if redis.call('llen', order) == 0 then
        redis.call('unlink', unpack(indexes))
        return
    end
    local ttl = redis.call('pttl', order)
    for _, index in ipairs(indexes) do
        if ttl > 0 then
            redis.call('pexpire', index, ttl)
        elseif redis.call('pttl', index) > 0 then
            redis.call('persist', index)
        end
    end
end
