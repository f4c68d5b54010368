-- delayq: move due entries from the delayed queue onto the target list.
-- Mirrors: Redisson QueueTransferTask / RedissonDelayedQueue transfer script (3.x/4.x): the same
-- end state (values RPUSHed in due order, entries gone from the order list and the zset, the new
-- head's score returned), except that a malformed entry is quarantined instead of aborting the
-- script part-way (which in Redisson leaves a half-done batch that is pushed again next time).
--
-- KEYS[1]: target list    NAME
-- KEYS[2]: timeout zset   redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list     redisson_delay_queue:{NAME}
-- KEYS[4]: quarantine     delayq_quarantine:{NAME} (list of raw malformed entries)
-- ARGV[1]: now, epoch milliseconds
-- ARGV[2]: most entries to move in this call (Redisson uses 100)
-- ARGV[3]: '1' when the queue prefers the legacy dLc0 reading of an ambiguous entry
-- Returns: { moved, quarantined, head score as a string or false when the zset is empty }
local prefer_legacy = ARGV[3] == '1'
local due = redis.call('zrangebyscore', KEYS[2], '-inf', ARGV[1], 'limit', 0, tonumber(ARGV[2]))
local moved, quarantined = 0, 0
if #due > 0 then
    local values = {}
    for _, entry in ipairs(due) do
        local value = delayq_value(entry, prefer_legacy)
        if value then
            values[#values + 1] = value
            moved = moved + 1
        else
            redis.call('rpush', KEYS[4], entry)
            quarantined = quarantined + 1
        end
        redis.call('lrem', KEYS[3], 1, entry)
    end
    if #values > 0 then
        redis.call('rpush', KEYS[1], unpack(values))
    end
    redis.call('zrem', KEYS[2], unpack(due))
end

local head = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
return { moved, quarantined, head[2] or false }
