//! The key registry: one policy set per upstream key, at most `maxKeys` of them.
//!
//! A new key past the cap evicts an idle key (nothing in flight or queued), preferring keys in
//! their default state, least recently used first; a key that is protecting its upstream (a
//! breaker not closed, a limit cut below `initialLimit`, with a call settled within the last
//! 10 minutes) is not evicted while protecting keys hold less than half of the registry. When no
//! key can go, the new key is refused (`reason: 'registry'`): traffic on other keys cannot reset
//! a key's protection (ADR 0606), and keys that open breakers cannot fill the registry and lock
//! every new key out (ADR 0612): a refusal needs more than half the keys busy. Keys may come
//! from untrusted input, so the map uses SipHash with a random key (std `RandomState`, which
//! resists hash flooding) and key length is bounded. Recency is an intrusive doubly linked
//! list over slot indices: touch and evict are O(1) and allocate nothing.

use std::collections::HashMap;

use crate::breaker::BreakerState;
use crate::options::{PolicyOptions, RegistryOptions};
use crate::policy_set::PolicySet;
use crate::Nanos;

const NIL: u32 = u32::MAX;
/// How long a protecting key stays unevictable after its last settle: the limiter's idle
/// recovery has returned a cut limit to its last healthy value by then (ADR 0106), and an open
/// breaker has admitted probes many times over (ADR 0606).
pub const PROTECT_NS: Nanos = 10 * 60 * 1_000_000_000;
/// Bits of a key handle that hold the slot index (maxKeys ≤ 100 000 < 2^17).
pub const INDEX_BITS: u32 = 17;
/// Bits of a key handle that hold the slot's generation: 16, so that a JS handle (53 bits)
/// leaves 20 bits for the engine (ADR 0603: a million live instances per thread, not 4 096).
pub const GEN_BITS: u32 = 16;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
const GEN_MASK: u32 = (1 << GEN_BITS) - 1;

/// A key handle: slot index and generation, so a handle to an evicted key is detected.
pub type KeyHandle = u64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// Every key is busy and the registry is at `maxKeys`.
    Full { max_keys: u32 },
    /// The key is longer than `maxKeyLength` bytes.
    KeyTooLong { len: usize, max: u32 },
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegistryError::Full { max_keys } => write!(
                f,
                "the key registry is full: more than half of its {max_keys} keys (maxKeys) have calls in flight or queued, and the rest protect their upstream"
            ),
            RegistryError::KeyTooLong { len, max } => {
                write!(f, "key is {len} bytes long; keys may be at most {max} bytes (maxKeyLength)")
            }
        }
    }
}

/// What a key's state is worth keeping, for eviction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Worth {
    /// As a new key would start: breaker closed, limit at `initialLimit`. Evicted first.
    Default,
    /// Learned something (a raised limit, or protection older than `PROTECT_NS`). Evicted next.
    Adapted,
    /// Protecting its upstream (breaker not closed, or limit cut), recently used. Evicted only
    /// while such idle keys hold half of `maxKeys` or more (ADR 0612).
    Protecting,
}

/// A handle that names no live key (its key was evicted): resolve the key again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleHandle;

/// A resolved key: its handle, and the slot index whose previous key was evicted to make room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub handle: KeyHandle,
    /// The index part of `handle`; equal to an earlier key's index when that key was evicted.
    pub index: u32,
    pub created: bool,
}

#[derive(Debug)]
struct Entry {
    name: Box<str>,
    gen: u32,
    live: bool,
    prev: u32,
    next: u32,
    policies: PolicySet,
}

#[derive(Debug)]
pub struct Registry {
    opts: RegistryOptions,
    template: PolicyOptions,
    map: HashMap<Box<str>, u32>,
    entries: Vec<Entry>,
    free: Vec<u32>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
}

impl Registry {
    pub fn new(opts: RegistryOptions, template: PolicyOptions) -> Self {
        Registry {
            opts,
            template,
            // Grown with the keys: an instance with one key stays small (instances per request).
            map: HashMap::new(),
            entries: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    #[inline]
    fn handle_of(index: u32, gen: u32) -> KeyHandle {
        ((gen as u64) << INDEX_BITS) | index as u64
    }

    #[inline]
    fn index_of(&self, handle: KeyHandle) -> Option<usize> {
        let index = Self::slot_of(handle);
        let gen = (handle >> INDEX_BITS) as u32;
        let e = self.entries.get(index)?;
        (e.live && e.gen == gen && (handle >> (INDEX_BITS + GEN_BITS)) == 0).then_some(index)
    }

    /// The handle of `name`, creating its policy set if needed (evicting an idle key at the cap).
    pub fn resolve(&mut self, name: &str, now: Nanos) -> Result<Resolved, RegistryError> {
        if name.len() > self.opts.max_key_length as usize {
            return Err(RegistryError::KeyTooLong {
                len: name.len(),
                max: self.opts.max_key_length,
            });
        }
        if let Some(&i) = self.map.get(name) {
            self.touch(i);
            let e = &self.entries[i as usize];
            return Ok(Resolved {
                handle: Self::handle_of(i, e.gen),
                index: i,
                created: false,
            });
        }
        let live = self.entries.len() - self.free.len();
        if live >= self.opts.max_keys as usize {
            let victim = self.victim(now).ok_or(RegistryError::Full {
                max_keys: self.opts.max_keys,
            })?;
            self.remove(victim);
        }
        let policies = PolicySet::new(&self.template, now);
        let index = match self.free.pop() {
            Some(i) => {
                let e = &mut self.entries[i as usize];
                e.gen = (e.gen + 1) & GEN_MASK;
                e.name = name.into();
                e.live = true;
                e.policies = policies;
                i
            }
            None => {
                self.entries.push(Entry {
                    name: name.into(),
                    gen: 0,
                    live: true,
                    prev: NIL,
                    next: NIL,
                    policies,
                });
                (self.entries.len() - 1) as u32
            }
        };
        self.map.insert(name.into(), index);
        self.push_front(index);
        let gen = self.entries[index as usize].gen;
        Ok(Resolved {
            handle: Self::handle_of(index, gen),
            index,
            created: true,
        })
    }

    /// The key to evict for a new one: the least recently used idle key in its default state,
    /// else the least recently used idle key that protects nothing, else, once idle protecting
    /// keys hold half of `maxKeys` or more, the least recently used of them (ADR 0612); `None`
    /// when none can go.
    fn victim(&self, now: Nanos) -> Option<u32> {
        let mut fallback = None;
        let mut protecting = 0u64;
        let mut oldest_protecting = None;
        let mut i = self.tail;
        while i != NIL {
            let e = &self.entries[i as usize];
            if e.policies.is_idle() && !e.policies.quota_holds(now) {
                match self.worth(&e.policies, now) {
                    Worth::Default => return Some(i),
                    Worth::Adapted => {
                        fallback = fallback.or(Some(i));
                    }
                    Worth::Protecting => {
                        protecting += 1;
                        oldest_protecting = oldest_protecting.or(Some(i));
                    }
                }
            }
            i = e.prev;
        }
        fallback.or(oldest_protecting.filter(|_| protecting * 2 >= self.opts.max_keys as u64))
    }

    /// What forgetting this key's state would lose.
    pub fn worth(&self, p: &PolicySet, now: Nanos) -> Worth {
        let initial = self
            .template
            .limiter
            .as_ref()
            .map_or(0, |l| l.initial_limit);
        let limit = p.limiter().map_or(initial, |l| l.limit());
        let tripped = p
            .breaker()
            .is_some_and(|b| b.state(now) != BreakerState::Closed);
        if tripped || limit < initial {
            if now.saturating_sub(p.last_active()) < PROTECT_NS {
                return Worth::Protecting;
            }
            return Worth::Adapted;
        }
        if limit > initial {
            Worth::Adapted
        } else {
            Worth::Default
        }
    }

    fn remove(&mut self, index: u32) {
        self.unlink(index);
        let e = &mut self.entries[index as usize];
        e.live = false;
        let name = std::mem::take(&mut e.name);
        self.map.remove(&name);
        self.free.push(index);
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = {
            let e = &self.entries[i as usize];
            (e.prev, e.next)
        };
        if prev != NIL {
            self.entries[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.entries[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
    }

    fn push_front(&mut self, i: u32) {
        let old = self.head;
        {
            let e = &mut self.entries[i as usize];
            e.prev = NIL;
            e.next = old;
        }
        if old != NIL {
            self.entries[old as usize].prev = i;
        } else {
            self.tail = i;
        }
        self.head = i;
    }

    #[inline]
    fn touch(&mut self, i: u32) {
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
    }

    /// The policy set of a live handle, marking the key as recently used.
    #[inline]
    pub fn get_mut(&mut self, handle: KeyHandle) -> Result<&mut PolicySet, StaleHandle> {
        let i = self.index_of(handle).ok_or(StaleHandle)?;
        self.touch(i as u32);
        Ok(&mut self.entries[i].policies)
    }

    /// The policy set of a live handle, without touching recency.
    pub fn get(&self, handle: KeyHandle) -> Result<&PolicySet, StaleHandle> {
        let i = self.index_of(handle).ok_or(StaleHandle)?;
        Ok(&self.entries[i].policies)
    }

    /// The handle of a live key by name, without touching its recency.
    pub fn handle(&self, name: &str) -> Option<KeyHandle> {
        let &i = self.map.get(name)?;
        Some(Self::handle_of(i, self.entries[i as usize].gen))
    }

    /// The slot a handle names (live or not): an index below the registry's capacity.
    #[inline]
    pub fn slot_of(handle: KeyHandle) -> usize {
        (handle & INDEX_MASK) as usize
    }

    /// The policy set of a key by name, if alive.
    pub fn find(&self, name: &str) -> Option<&PolicySet> {
        self.map
            .get(name)
            .map(|&i| &self.entries[i as usize].policies)
    }

    /// The policy set of a key by name, if alive, without touching its recency.
    pub fn find_mut(&mut self, name: &str) -> Option<&mut PolicySet> {
        let i = *self.map.get(name)?;
        Some(&mut self.entries[i as usize].policies)
    }

    /// Live keys, most recently used first.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        let mut i = self.head;
        std::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let e = &self.entries[i as usize];
            i = e.next;
            Some(&*e.name)
        })
    }

    pub fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn options(&self) -> &RegistryOptions {
        &self.opts
    }

    /// What the live key `name` is worth keeping now, if alive.
    pub fn worth_of(&self, name: &str, now: Nanos) -> Option<Worth> {
        self.find(name).map(|p| self.worth(p, now))
    }
}
