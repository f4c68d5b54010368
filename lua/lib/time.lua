-- delayq lib/time.lua: the current time.
--
-- Every script gets "now" as ARGV[1]: epoch ms read by the client (delayq's Clock::Client, as
-- Redisson does), or the word 'server' to read the Redis server's TIME (Clock::Server).
-- delayq_now(arg): that time in epoch ms, as a number.
-- delayq_server_us(): the server's TIME in epoch microseconds, as a number (exact: below 2^53).
-- delayq_ms(n): a whole number of ms as decimal ASCII, never in exponent notation (a score, a
-- channel message).
-- delayq_clock_us(): a clock in microseconds for a call's time budget (only differences mean
-- anything): os.clock, the server's CPU time, where the scripting engine has it (Valkey, where
-- TIME returns the same value for a script's whole run, so a budget read from it never ends);
-- else TIME (Redis, which has no os library and whose TIME moves during a script).
local function delayq_server_us()
    local t = redis.call('time')
    return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function delayq_now(arg)
    if arg == 'server' then
        return math.floor(delayq_server_us() / 1000)
    end
    return tonumber(arg)
end

local function delayq_ms(n)
    return string.format('%.0f', n)
end

local delayq_os = rawget(_G, 'os')
local delayq_cpu_clock = delayq_os and rawget(delayq_os, 'clock')

local function delayq_clock_us()
    if delayq_cpu_clock then
        return delayq_cpu_clock() * 1000000
    end
    return delayq_server_us()
end
