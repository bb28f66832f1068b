//! The pure engine: no napi, no timers, no threads. Time and randomness are passed in.

pub mod breaker;
pub mod bulkhead;
pub mod clock;
mod core;
pub mod limit;
pub mod limiter;
mod option_error;
pub mod options;
pub mod permit;
pub mod policy_set;
pub mod priority;
pub mod queue;
pub mod quota;
pub mod quota_fleet;
pub mod quota_headers;
mod quota_shape;
pub mod registry;
pub mod retry;
pub mod rng;
mod sample;
pub mod standing;
pub mod tenants;
pub mod throttle;
mod verdict;

pub use self::core::Engine;
pub use breaker::{BreakerState, BreakerTransition, TripCause, WindowCounts};
pub use clock::{Nanos, NANOS_PER_MS};
pub use options::{
    Algorithm, BreakerOptions, BulkheadOptions, LimiterOptions, OptionError, PolicyOptions,
    QueueOptions, RegistryOptions, ThrottleOptions,
};
pub use policy_set::{Acquired, Costed, KeyStats, PolicySet, RejectReason, StalePermit};
pub use priority::{Priority, DEFAULT_LEVEL};
pub use queue::QueueRefusal;
pub use registry::{KeyHandle, RegistryError, Resolved, StaleHandle, Worth};
pub use retry::{BudgetOptions, Decision, Jitter, Refusal, RetryOn, RetryPolicy};
pub use rng::SplitMix64;
pub use sample::Sample;
pub use tenants::tenant_id;
pub use verdict::Verdict;
