//! The Redis key layout and the Lua scripts that make each change atomic.
//!
//! Keys (all under the configured prefix `P`):
//! - `P:breaker:{provider}` — string, JSON `{"v": version, "b": Breaker::shared()}`; TTL
//!   [`BREAKER_TTL`], refreshed on every write.
//! - `P:breakers` — set of provider names with a breaker key (so a poll reads them all
//!   in one call); same TTL; members whose key expired are removed by the poll.
//! - `P:breaker` — pub/sub channel: JSON `{"p": provider, "v": version, "b": breaker}`
//!   for every write.
//! - `P:probe:{provider}` — string `{replica}:{lease}`, the fleet's one half-open probe;
//!   `SET NX PX lease`, deleted only by its holder (value checked).
//! - `P:lease:{name}` — string `{holder}`, a named fleet-wide lease (one health checker
//!   per provider); taken when absent, renewed only by its holder, expiring after its TTL.
//! - `P:budget:{scope}` — hash: `spent` and `reserved` (integer pico-dollars),
//!   `r:{id}` = the amount of each outstanding reservation (ids are chosen by the
//!   replica), `d:{id}` tombstones for ids dropped before their reserve arrived, `l:{id}`
//!   for reservations that lapsed unsettled (so a settle that arrives after its lease still
//!   counts, once), and `s:{push}` for pushes of spend made while degraded (so a push whose
//!   reply was lost, sent again, counts once). No TTL: spend persists.
//! - `P:leases:{scope}` — sorted set: reservation ids and the markers above scored by
//!   their expiry (Unix ms); lapsed ones are purged by every budget script.
//! - `P:rate:{bucket}` — string: the GCRA's TAT in µs; TTL = how far it is ahead + 60 s.
//! - `P:kv:{key}` — string: a value kept by `SharedState::kv_put`, with its TTL.
//!
//! Money is never a float: amounts travel as decimal strings and are added by Redis's
//! own 64-bit `HINCRBY`; "does it fit" is read from the sign of a headroom computed the
//! same way.

use std::sync::LazyLock;
use std::time::Duration;

use ::redis::Script;

/// How long a breaker outlives its last write (an idle provider's state is forgotten).
pub(super) const BREAKER_TTL: Duration = Duration::from_secs(24 * 3600);

/// Key and channel names under one prefix.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Keys {
        Keys {
            prefix: prefix.to_owned(),
        }
    }

    pub(super) fn breaker(&self, provider: &str) -> String {
        format!("{}:breaker:{provider}", self.prefix)
    }

    /// The prefix of every breaker key (the poll script appends provider names).
    pub(super) fn breaker_prefix(&self) -> String {
        format!("{}:breaker:", self.prefix)
    }

    pub(super) fn breaker_index(&self) -> String {
        format!("{}:breakers", self.prefix)
    }

    pub(super) fn channel(&self) -> String {
        format!("{}:breaker", self.prefix)
    }

    pub(super) fn probe(&self, provider: &str) -> String {
        format!("{}:probe:{provider}", self.prefix)
    }

    pub(super) fn lease(&self, name: &str) -> String {
        format!("{}:lease:{name}", self.prefix)
    }

    pub(super) fn books(&self, scope: &str) -> String {
        format!("{}:budget:{scope}", self.prefix)
    }

    pub(super) fn leases(&self, scope: &str) -> String {
        format!("{}:leases:{scope}", self.prefix)
    }

    pub(super) fn kv(&self, key: &str) -> String {
        format!("{}:kv:{key}", self.prefix)
    }

    pub(super) fn rate(&self, bucket: &str) -> String {
        format!("{}:rate:{bucket}", self.prefix)
    }
}

/// Write a breaker if nobody wrote it since it was read, index it and publish it.
/// KEYS: breaker, index. ARGV: expected value ('' = absent), new value, TTL ms, channel,
/// message, provider. Returns 1 when written, 0 on conflict.
pub(super) static BREAKER_CAS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
",
    )
});

/// Every indexed breaker, as a flat list `[provider, value, ...]`; drops index members
/// whose key expired. KEYS: index. ARGV: breaker key prefix.
pub(super) static BREAKER_ALL: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local out = {}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local v = redis.call('GET', ARGV[1] .. name)
  if v then
    out[#out + 1] = name
    out[#out + 1] = v
  else
    redis.call('SREM', KEYS[1], name)
  end
end
return out
",
    )
});

/// Delete the probe lease if this replica still holds it. KEYS: probe. ARGV: holder.
pub(super) static PROBE_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
",
    )
});

/// Extend the probe lease to at least ARGV[2] ms from now if this replica holds it.
/// KEYS: probe. ARGV: holder, ms.
pub(super) static PROBE_RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
",
    )
});

/// Take the named lease if free, or renew it if this holder has it.
/// KEYS: lease. ARGV: holder, TTL ms. Returns 1 when held by ARGV[1].
pub(super) static LEASE_TAKE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
",
    )
});

/// Give the named lease back if this holder has it.
/// KEYS: lease. ARGV: holder. Returns 1 when it was ARGV[1]'s.
pub(super) static LEASE_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
",
    )
});

/// Shared by the budget scripts: negate a canonical decimal integer string; drop a
/// reservation (leaving a short-lived tombstone when it is not there yet, so a reserve
/// whose reply was lost cannot take effect after its replica gave up on it); purge
/// lapsed reservations and tombstones; read the books.
const BUDGET_LIB: &str = r"
local function neg(s)
  if s == '0' then return '0' end
  if string.sub(s, 1, 1) == '-' then return string.sub(s, 2) end
  return '-' .. s
end
local function unreserve(books, leases, id)
  local amount = redis.call('HGET', books, 'r:' .. id)
  redis.call('ZREM', leases, id)
  if amount then
    redis.call('HINCRBY', books, 'reserved', neg(amount))
    redis.call('HDEL', books, 'r:' .. id)
    return true
  end
  return false
end
local function mark(books, leases, name, now, ms)
  redis.call('HSET', books, name, '1')
  redis.call('ZADD', leases, tonumber(now) + ms, name)
end
local function drop(books, leases, id, now)
  if not unreserve(books, leases, id) then
    -- not reserved (yet): a RESERVE of this id arriving late must not take effect
    mark(books, leases, 'd:' .. id, now, 600000)
  end
end
local function purge(books, leases, now)
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now)) do
    local kind = string.sub(m, 1, 2)
    if kind == 'd:' or kind == 'l:' or kind == 's:' then
      redis.call('HDEL', books, m)
      redis.call('ZREM', leases, m)
    elseif unreserve(books, leases, m) then
      -- lapsed unsettled: its holder may still settle it, once (after an outage)
      mark(books, leases, 'l:' .. m, now, 86400000)
    end
  end
end
local function field(books, name)
  return redis.call('HGET', books, name) or '0'
end
";

/// Reserve if spend + reservations + extra + amount ≤ limit, where `extra` is what this
/// replica knows Redis does not (spend and reservations from an outage).
/// KEYS: books, leases. ARGV: now ms, limit, amount, extra, expiry ms, the reservation id
/// (chosen by the replica, so it can be dropped even when this script's reply is lost).
/// Returns `{1 reserved | 0 refused | -1 already dropped, spent, reserved}` (amounts as
/// decimal strings).
pub(super) static RESERVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{BUDGET_LIB}
local books, leases = KEYS[1], KEYS[2]
purge(books, leases, ARGV[1])
redis.call('HSET', books, 'headroom', ARGV[2])
redis.call('HINCRBY', books, 'headroom', neg(field(books, 'spent')))
redis.call('HINCRBY', books, 'headroom', neg(field(books, 'reserved')))
redis.call('HINCRBY', books, 'headroom', neg(ARGV[4]))
local headroom = redis.call('HINCRBY', books, 'headroom', neg(ARGV[3]))
redis.call('HDEL', books, 'headroom')
if headroom < 0 then
  return {{0, field(books, 'spent'), field(books, 'reserved')}}
end
if redis.call('HEXISTS', books, 'd:' .. ARGV[6]) == 1 then
  return {{-1, field(books, 'spent'), field(books, 'reserved')}}
end
local id = ARGV[6]
redis.call('HINCRBY', books, 'reserved', ARGV[3])
redis.call('HSET', books, 'r:' .. id, ARGV[3])
redis.call('ZADD', leases, ARGV[5], id)
return {{1, field(books, 'spent'), field(books, 'reserved')}}
"
    ))
});

/// Settle a reservation, push spend made while degraded, or drop reservations; with
/// nothing to do it only purges and reads. Every form counts its spend once however often
/// it is sent (a reply lost, the push sent again on resync):
/// - settling reservation `id` adds its spend only while the reservation is held (`r:`) or
///   lapsed unsettled (`l:`); once settled neither is there, and a second settle adds
///   nothing;
/// - a push of spend with a push id adds it unless that id's marker (`s:`, kept a day) says
///   it was added already.
///
/// KEYS: books, leases. ARGV: now ms, spend delta, the reservation it settles ('' for
/// none), push id ('' for none), ids to drop...
/// Returns `{spent, reserved}` (decimal strings).
pub(super) static SETTLE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{BUDGET_LIB}
local books, leases, now = KEYS[1], KEYS[2], ARGV[1]
purge(books, leases, now)
local count = ARGV[2] ~= '0'
if ARGV[3] ~= '' then
  if unreserve(books, leases, ARGV[3]) then
  elseif redis.call('HDEL', books, 'l:' .. ARGV[3]) == 1 then
    redis.call('ZREM', leases, 'l:' .. ARGV[3])
  else
    count = false
  end
elseif ARGV[4] ~= '' and count then
  if redis.call('HEXISTS', books, 's:' .. ARGV[4]) == 1 then
    count = false
  else
    mark(books, leases, 's:' .. ARGV[4], now, 86400000)
  end
end
for i = 5, #ARGV do drop(books, leases, ARGV[i], now) end
if count then redis.call('HINCRBY', books, 'spent', ARGV[2]) end
return {{field(books, 'spent'), field(books, 'reserved')}}
"
    ))
});

/// The GCRA of `ratelimit::Gcra`, in integer µs (exact below 2⁵³).
/// KEYS: bucket. ARGV: now µs, step = max(cost, 1) × spacing, add = cost × spacing,
/// burst = max(period, spacing), check (1: admit if it fits; 0: add unconditionally).
/// Returns 0 when admitted, otherwise the wait in µs.
pub(super) static GCRA: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local now = tonumber(ARGV[1])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
if ARGV[5] == '1' then
  local ahead = tat + tonumber(ARGV[2]) - now
  local burst = tonumber(ARGV[4])
  if ahead > burst then return ahead - burst end
end
local add = tonumber(ARGV[3])
if add > 0 then
  local new = tat + add
  local ttl = math.floor((new - now) / 1000) + 60000
  redis.call('SET', KEYS[1], string.format('%.0f', new), 'PX', string.format('%.0f', ttl))
end
return 0
",
    )
});
