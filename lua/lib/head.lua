-- delayq lib/head.lua: a sorted set's lowest score, read without its member.
--
-- delayq_lowest_score(zset): the lowest score of zset as decimal ASCII ('-inf' and 'inf' as
-- such), or false when the set is empty. The head member is never copied: a ZRANGE of it copies
-- a whole 16 MiB entry into the reply (6-13 ms of the server's time), where this halves the
-- range of whole numbers with ZCOUNT (about 55 calls of O(log n) each, tens of µs). Scores
-- delayq and Redisson write are whole numbers of ms; a fractional lowest score comes out as its
-- floor. Outside +-2^53 (never written by either) it reads the head with ZRANGE after all.
-- Needs: time (delayq_ms).
local function delayq_lowest_score(zset)
    if redis.call('zcard', zset) == 0 then
        return false
    end
    if redis.call('zcount', zset, '-inf', '-inf') > 0 then
        return '-inf'
    end
    if redis.call('zcount', zset, '-inf', '(+inf') == 0 then
        return 'inf'
    end
    local limit = 9007199254740992
    local lo, hi = -limit, limit
    if redis.call('zcount', zset, '-inf', delayq_ms(lo)) > 0
        or redis.call('zcount', zset, '-inf', delayq_ms(hi)) == 0 then
        local head = redis.call('zrange', zset, 0, 0, 'withscores')
        return head[2]
    end
    -- Nothing at or below lo, something at or below hi: the lowest whole number with a score at
    -- or below it is the head's score rounded up.
    while hi - lo > 1 do
        local mid = lo + math.floor((hi - lo) / 2)
        if redis.call('zcount', zset, '-inf', delayq_ms(mid)) > 0 then
            hi = mid
        else
            lo = mid
        end
    end
    if redis.call('zcount', zset, delayq_ms(hi), delayq_ms(hi)) > 0 then
        return delayq_ms(hi)
    end
    return delayq_ms(hi - 1)
end
