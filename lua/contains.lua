-- delayq: which of the given values are pending.
-- Mirrors: Redisson RedissonDelayedQueue#contains / containsAll (3.x/4.x).
--
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3..]: codec-encoded values (distinct)
-- Returns: how many of ARGV[3..] were found (stops walking when all were).
local legacy = ARGV[2] == '1'
local wanted, missing = {}, 0
for i = 3, #ARGV do
    if not wanted[ARGV[i]] then
        wanted[ARGV[i]] = true
        missing = missing + 1
    end
end
local total = missing

local entries = redis.call('lrange', KEYS[3], 0, -1)
for _, entry in ipairs(entries) do
    if missing == 0 then
        break
    end
    local value = delayq_value(entry, legacy)
    if value ~= nil and wanted[value] then
        wanted[value] = false
        missing = missing - 1
    end
end
return total - missing
