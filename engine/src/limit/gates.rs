//! The shared gates: what every latency algorithm's proposal passes through, in this order,
//! before it becomes the limit. Each is a rule a reported failure taught; each names its ADR.

use super::vegas::log_factor;

/// What the gates know about the window that just closed.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Most calls were healthy (success or answered).
    pub healthy: bool,
    /// The most calls in flight at once.
    pub peak: f64,
    /// Most calls started after the limit last moved (a raise or a deep cut).
    pub fresh: bool,
    /// The configured `initialLimit`.
    pub initial: f64,
}

/// The calls a limit may stand above the concurrency actually used: Vegas's beta, 6·f(L).
#[inline]
pub fn slack(limit: f64) -> f64 {
    6.0 * log_factor(limit)
}

/// Apply the gates to `next`, proposed from `before`.
pub fn apply(before: f64, mut next: f64, w: &Window) -> f64 {
    if next > before {
        // 1. A raise needs health: a window of failures says nothing good (ADR 0108).
        // 2. A raise needs demand: the limit within `slack` of the concurrency used, or below
        //    `initialLimit`, which a healthy upstream may always climb back to (ADR 0107).
        // 3. Once per round trip: a window whose calls mostly started before the last move
        //    reads the latency from before it (ADR 0112).
        let demand = w.peak + slack(before) >= before || before < w.initial;
        if !w.healthy || !demand || !w.fresh {
            return before;
        }
        // 4. Never more than `slack` above the concurrency used (or `initialLimit`): a limit
        //    floating far above the calls in flight lets a capacity drop in at full force
        //    (ADR 0113).
        next = next.min((w.peak + slack(before)).max(w.initial).max(before));
    } else if next < before {
        // 5. App-limited: under half the limit in use, latency is no reason to cut it (Netflix
        //    Vegas's inflight < L/2 rule; ADR 0107). Drops still cut it.
        if w.peak * 2.0 < before {
            return before;
        }
        // 6. One deep cut per round trip: the window after a cut still holds calls admitted
        //    before it (ADR 0113). −f is always allowed.
        let step = before - log_factor(before);
        if !w.fresh && next < step {
            next = step;
        }
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Window = Window {
        healthy: true,
        peak: 20.0,
        fresh: true,
        initial: 20.0,
    };

    #[test]
    fn a_healthy_fresh_full_window_passes_a_raise_up_to_slack_above_use() {
        assert_eq!(apply(20.0, 26.0, &W), 26.0);
        assert_eq!(apply(20.0, 40.0, &W), 26.0, "capped at peak + 6");
    }

    #[test]
    fn raises_need_health_demand_and_freshness() {
        assert_eq!(
            apply(
                20.0,
                26.0,
                &Window {
                    healthy: false,
                    ..W
                }
            ),
            20.0
        );
        assert_eq!(apply(20.0, 26.0, &Window { fresh: false, ..W }), 20.0);
        let unused = Window {
            peak: 13.0,
            initial: 4.0,
            ..W
        };
        assert_eq!(apply(20.0, 26.0, &unused), 20.0, "13 + 6 < 20: no demand");
        let near = Window {
            peak: 14.0,
            ..unused
        };
        assert_eq!(
            apply(20.0, 26.0, &near),
            20.0,
            "14 + 6 = 20: demand, capped at 20"
        );
        let below_initial = Window {
            peak: 2.0,
            initial: 20.0,
            ..W
        };
        assert_eq!(
            apply(10.0, 16.0, &below_initial),
            16.0,
            "back towards initialLimit"
        );
        assert_eq!(
            apply(18.0, 24.0, &below_initial),
            20.0,
            "but not past it unused"
        );
    }

    #[test]
    fn app_limited_windows_do_not_cut_on_latency() {
        let w = Window { peak: 9.0, ..W };
        assert_eq!(apply(20.0, 12.0, &w), 20.0);
        let w = Window { peak: 10.0, ..W };
        assert_eq!(apply(20.0, 12.0, &w), 12.0);
    }

    #[test]
    fn a_stale_window_cuts_by_f_at_most() {
        let w = Window { fresh: false, ..W };
        assert_eq!(apply(20.0, 12.0, &w), 19.0);
        assert_eq!(apply(200.0, 120.0, &Window { peak: 200.0, ..w }), 198.0);
        assert_eq!(apply(20.0, 19.5, &w), 19.5);
    }
}
