//! The outcome of one call, as the policies see it (docs/design.md "Verdicts", ADR 0108).

/// How a settled call is classified. The JS layer maps results to these; the numeric
/// codes are the wire format of the binding's `settle`, so they are fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Verdict {
    /// Resolved, no status, or a 1xx–3xx status: a latency sample, a breaker success.
    Success = 0,
    /// 5xx or a thrown error: a sample that must not read as health (Netflix #176).
    Failure = 1,
    /// 429 / 503: a strong reduce signal for the limiter, not a breaker failure.
    Overload = 2,
    /// Other 4xx: the upstream did work; a latency sample without pressure.
    Answered = 3,
    /// Our own deadline passed: the strongest reduce signal, a breaker failure.
    Timeout = 4,
    /// Refused by one of our own policies: ignored by every policy.
    Rejected = 5,
    /// The caller's own signal aborted the call: no observation at all.
    Cancelled = 6,
}

impl Verdict {
    pub const ALL: [Verdict; 7] = [
        Verdict::Success,
        Verdict::Failure,
        Verdict::Overload,
        Verdict::Answered,
        Verdict::Timeout,
        Verdict::Rejected,
        Verdict::Cancelled,
    ];

    /// The verdict for a wire code, or `None` for an unknown code.
    pub fn from_code(code: u32) -> Option<Verdict> {
        Verdict::ALL.get(code as usize).copied()
    }

    /// The public name (the JS layer's verdict strings).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Success => "success",
            Verdict::Failure => "failure",
            Verdict::Overload => "overload",
            Verdict::Answered => "answered",
            Verdict::Timeout => "timeout",
            Verdict::Rejected => "rejected",
            Verdict::Cancelled => "cancelled",
        }
    }

    /// True when the call produced no information about the upstream.
    pub fn is_ignored(self) -> bool {
        matches!(self, Verdict::Rejected | Verdict::Cancelled)
    }
}
