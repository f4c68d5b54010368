-- delayq lib/time.lua: the current time.
--
-- Every script gets "now" as ARGV[1]: epoch ms read by the client (delayq's Clock::Client, as
-- Redisson does), or the word 'server' to read the Redis server's TIME (Clock::Server).
-- delayq_now(arg): that time in epoch ms, as a number.
-- delayq_ms(n): a whole number of ms as decimal ASCII, never in exponent notation (a score, a
-- channel message).
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
