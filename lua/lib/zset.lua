-- delayq lib/zset.lua: reading a zset without copying its members.
--
-- delayq_first_score(key): the lowest score of the zset `key` as a decimal string, or false when
-- it is empty. `ZRANGE key 0 0 WITHSCORES` would copy the head member into the script (a whole
-- entry: 16 MiB for a 16 MiB value, tens of ms), so the score is found by bisection over whole
-- numbers with `ZCOUNT` instead (at most 55 calls, each O(log n), no member read): the smallest
-- whole number at or above the lowest score (the score itself for the whole milliseconds every
-- client writes). Scores beyond +-2^53 fall back to reading the head.
local function delayq_first_score(key)
    if redis.call('zcard', key) == 0 then
        return false
    end
    local lo, hi = -9007199254740992, 9007199254740992
    if redis.call('zcount', key, '-inf', lo - 1) > 0 or redis.call('zcount', key, '-inf', hi) == 0 then
        return redis.call('zrange', key, 0, 0, 'withscores')[2]
    end
    while lo < hi do
        local mid = lo + math.floor((hi - lo) / 2)
        if redis.call('zcount', key, '-inf', mid) > 0 then
            hi = mid
        else
            lo = mid + 1
        end
    end
    return string.format('%.0f', lo)
end
