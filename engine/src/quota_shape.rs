//! The sizes a key's quota is built with, shared by the quota and its fleet lease: a leaf, so
//! that neither file needs the other's sizes through it.

/// Dimensions (a cost over a window) per key: per minute and per day for each cost, say.
pub const MAX_DIMS: usize = 8;
/// Buckets of a window: its length / 60, one second of a minute.
pub const BUCKETS: u64 = 60;
/// Buckets a charge is kept for: a whole window after the end of its bucket, plus one more,
/// so that a charge is freed at least one bucket after the upstream frees it even when the
/// request reached the upstream up to a bucket later than it was charged (ADR 1100).
pub(crate) const RING: u64 = BUCKETS + 2;
