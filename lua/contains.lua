-- delayq: which of the given values are pending.
-- Mirrors: Redisson RedissonDelayedQueue#contains / containsAll (3.x/4.x).
--
-- KEYS[1]: order list     redisson_delay_queue:{NAME}
-- ARGV[1]: '1' when the queue prefers the legacy dLc0 reading of an ambiguous entry
-- ARGV[2..]: codec-encoded values (distinct)
-- Returns: how many of ARGV[2..] were found (stops walking when all were).
local prefer_legacy = ARGV[1] == '1'
local wanted, missing = {}, 0
for i = 2, #ARGV do
    if not wanted[ARGV[i]] then
        wanted[ARGV[i]] = true
        missing = missing + 1
    end
end
local total = missing

local entries = redis.call('lrange', KEYS[1], 0, -1)
for _, entry in ipairs(entries) do
    if missing == 0 then
        break
    end
    local value = delayq_value(entry, prefer_legacy)
    if value ~= nil and wanted[value] then
        wanted[value] = false
        missing = missing - 1
    end
end
return total - missing
