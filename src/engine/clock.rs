//! Time in the engine is a number passed in: monotonic nanoseconds. Nothing here reads a clock
//! on its own; the binding and the simulator own the clock (governor's `Clock` shape).

/// Monotonic nanoseconds.
pub type Nanos = u64;

pub const NANOS_PER_MS: u64 = 1_000_000;

/// A source of monotonic time.
pub trait Clock {
    fn now(&self) -> Nanos;
}

/// The real clock: nanoseconds since the clock was created.
#[derive(Debug)]
pub struct MonotonicClock {
    origin: std::time::Instant,
}

impl MonotonicClock {
    pub fn new() -> Self {
        MonotonicClock {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn now(&self) -> Nanos {
        // +1 s so that no real call ever starts at 0, which the engine may treat as "unset".
        self.origin.elapsed().as_nanos() as u64 + 1_000_000_000
    }
}

/// A clock that moves only when told: for deterministic tests.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: std::cell::Cell<Nanos>,
}

impl ManualClock {
    pub fn new(start: Nanos) -> Self {
        ManualClock {
            now: std::cell::Cell::new(start),
        }
    }
    pub fn advance_ms(&self, ms: u64) {
        self.now.set(self.now.get() + ms * NANOS_PER_MS);
    }
    pub fn advance_ns(&self, ns: u64) {
        self.now.set(self.now.get() + ns);
    }
    pub fn set(&self, now: Nanos) {
        self.now.set(now);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Nanos {
        self.now.get()
    }
}
