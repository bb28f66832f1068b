//! Goals for the `vegas` row, stricter than the acceptance tests; the failure-mode goals are
//! ours ("what passing the reported failure looks like") and say so. They are reported, met or
//! not; they never change a scenario.

pub struct Goal {
    pub metric: &'static str,
    pub text: &'static str,
    pub ok: fn(f64) -> bool,
    /// `true`: a project goal for the scenario; `false`: ours, for a reported failure mode.
    pub from_issue: bool,
}

const fn g(
    metric: &'static str,
    text: &'static str,
    ok: fn(f64) -> bool,
    from_issue: bool,
) -> Goal {
    Goal {
        metric,
        text,
        ok,
        from_issue,
    }
}

pub fn for_scenario(name: &str) -> Vec<Goal> {
    match name {
        "batch-100" | "batch-1000" | "batch-10000" | "batch-10000-60s" => vec![
            g("shed", "= 0 (a batch is not overload)", |x| x == 0.0, true),
            g("drainOverIdeal", "<= 3", |x| x <= 3.0, true),
        ],
        "batch-unbounded" => vec![
            g("shed", "= 0", |x| x == 0.0, true),
            g(
                "limitGrowth",
                "> 1 (grows while the batch drains)",
                |x| x > 1.0,
                true,
            ),
        ],
        "batch-1000-500ms" => vec![
            g("served", ">= 200", |x| x >= 200.0, true),
            g("timedOutWaiting", "<= 20 (2 %)", |x| x <= 20.0, true),
        ],
        "open-loop-2x" => vec![
            g("goodputPct", ">= 90 %", |x| x >= 90.0, true),
            g("p99QueueWaitMs", "<= 1000 ms", |x| x <= 1000.0, true),
            g("mostWaiting", "< 20 000 (the cap)", |x| x < 20_000.0, true),
        ],
        "open-loop-2x-1.5s" => vec![g("goodputPct", ">= 90 %", |x| x >= 90.0, true)],
        "priorities" => vec![
            g("criticalGoodputPct", ">= 99 %", |x| x >= 99.0, true),
            g("criticalP90OverNoLoad", "<= 1.5", |x| x <= 1.5, true),
            g(
                "sheddableShareOfLostPct",
                ">= 95 % (the shedding falls on sheddable)",
                |x| x >= 95.0,
                true,
            ),
        ],
        "tenants" => vec![g(
            "worstLightOverFair",
            ">= 0.9 (each light tenant keeps 90 % of its fair share)",
            |x| x >= 0.9,
            true,
        )],
        "llm-slots" | "llm-slots-45s" | "llm-slots-exact" | "llm-slots-45s-exact" => vec![
            g("breakerTrips", "= 0", |x| x == 0.0, true),
            g(
                "meanLimitOverSlots",
                "0.75-1.5 x slots",
                |x| (0.75..=1.5).contains(&x),
                true,
            ),
            g("throughputPct", ">= 90 %", |x| x >= 90.0, true),
            g("baselineOverTtft", "<= 2", |x| x > 0.0 && x <= 2.0, true),
        ],
        "llm-slots-below-start"
        | "llm-slots-below-start-16"
        | "llm-slots-above-start"
        | "llm-slots-above-start-16" => vec![
            g(
                "meanLimitOverSlots",
                "0.75-1.5 x slots",
                |x| (0.75..=1.5).contains(&x),
                true,
            ),
            g("baselineOverTtft", "<= 2", |x| x > 0.0 && x <= 2.0, true),
            g("throughputPct", ">= 90 %", |x| x >= 90.0, true),
            g("timeouts", "= 0 (over the second half)", |x| x == 0.0, true),
        ],
        // Streams that end apart must not cut the limit below the slots (ADR 1220).
        "llm-slots-busy" => vec![
            g(
                "meanLimitOverSlots",
                "1-1.5 x slots",
                |x| (1.0..=1.5).contains(&x),
                true,
            ),
            g("throughputPct", ">= 95 %", |x| x >= 95.0, true),
            g("timeouts", "= 0 (over the second half)", |x| x == 0.0, true),
        ],
        "llm-slots-priorities" => vec![g(
            "criticalTtftP90OverStream",
            "<= 1.5 stream lengths",
            |x| x <= 1.5,
            true,
        )],
        "converge" => vec![
            g("convergenceWindows", "<= 10 windows", |x| x <= 10.0, true),
            g(
                "meanLimitOverCapacity",
                "0.9-1.25 x C",
                |x| (0.9..=1.25).contains(&x),
                true,
            ),
            g("oscillationPct", "<= 10 %", |x| x <= 10.0, true),
            g("goodputPct", ">= 99 %", |x| x >= 99.0, true),
            g("p90OverNoLoad", "<= 1.5", |x| x <= 1.5, true),
        ],
        "capacity-halves" => vec![
            g("recoveryS", "<= 15 s", |x| x <= 15.0, true),
            g("recoveryWindows", "<= 10 windows", |x| x <= 10.0, true),
            g("restoreWindows", "<= 10 windows", |x| x <= 10.0, true),
        ],
        "production" => vec![g(
            "shedBeforeBreakerS",
            "> 0 s (sheds first)",
            |x| x > 0.0,
            true,
        )],
        "streaming" => vec![
            g("shedPct", "= 0", |x| x == 0.0, true),
            g("minLimitOverDemand", ">= 1", |x| x >= 1.0, true),
        ],
        "low-traffic" => vec![
            g("reactionS", "<= 120 s", |x| x <= 120.0, true),
            g("recovered", "= 1", |x| x == 1.0, true),
        ],
        "baseline-shift" => vec![g("goodputPct", ">= 97 %", |x| x >= 97.0, true)],
        "idle" => vec![g("recovered", "= 1", |x| x == 1.0, true)],
        "real-small" => vec![g(
            "meanLimitOverCapacity",
            "0.5-2 x C (the Node tests' band)",
            |x| (0.5..=2.0).contains(&x),
            false,
        )],
        "real-from-above" => vec![
            g(
                "meanLimitOverCapacity",
                "0.5-2 x C (the Node tests' band)",
                |x| (0.5..=2.0).contains(&x),
                false,
            ),
            g(
                "inBandS",
                "<= 5 s (within 0.5-2 x C from then on)",
                |x| x <= 5.0,
                true,
            ),
        ],
        "fleet" => vec![
            g("jain", ">= 0.95", |x| x >= 0.95, true),
            g(
                "sumLimitOverCapacity",
                "0.85-1.5",
                |x| (0.85..=1.5).contains(&x),
                true,
            ),
            g("p90OverNoLoad", "<= 1.6", |x| x <= 1.6, true),
            g("goodputPct", ">= 95 %", |x| x >= 95.0, true),
        ],
        "fleet-3" | "fleet-join" => vec![
            g("jain", ">= 0.95", |x| x >= 0.95, true),
            g(
                "sumLimitOverCapacity",
                "0.85-1.5",
                |x| (0.85..=1.5).contains(&x),
                true,
            ),
        ],
        "fleet-real" | "fleet-real-8" => vec![
            g("jain", ">= 0.95", |x| x >= 0.95, true),
            g("sumLimitOverCapacity", "<= 2", |x| x <= 2.0, true),
            g("p90OverNoLoad", "<= 3", |x| x <= 3.0, true),
            g("goodputPct", ">= 85 %", |x| x >= 85.0, true),
        ],
        "lucky-fast-sample" => vec![g(
            "meanLimitOverCapacity",
            ">= 0.8 (no collapse)",
            |x| x >= 0.8,
            false,
        )],
        "probe-under-load" => vec![
            g(
                "meanLimitOverCapacity",
                "<= 1.25 (still limits)",
                |x| x <= 1.25,
                false,
            ),
            g("p90OverNoLoad", "<= 1.5", |x| x <= 1.5, false),
        ],
        "uniform-timeouts" => vec![
            g(
                "limitDuringFaultOverCapacity",
                "< 1 (does not grow)",
                |x| x < 1.0,
                false,
            ),
            g("recovered", "= 1", |x| x == 1.0, false),
        ],
        "fast-failures" => vec![
            g(
                "limitDuringFaultOverCapacity",
                "<= 1.25 (fast != healthy)",
                |x| x <= 1.25,
                false,
            ),
            g("recovered", "= 1", |x| x == 1.0, false),
        ],
        "modest-overload" => vec![
            g(
                "meanLimitOverCapacity",
                "<= 1.25 (no creep)",
                |x| x <= 1.25,
                false,
            ),
            g("p90OverNoLoad", "<= 1.5", |x| x <= 1.5, false),
        ],
        "heavy-load-subsides" => vec![g("recovered", "= 1 (heals)", |x| x == 1.0, false)],
        "long-incident" => vec![
            g(
                "meanLimitOverCapacity",
                "<= 1.25 (keeps limiting)",
                |x| x <= 1.25,
                true,
            ),
            g("p90OverNoLoad", "<= 1.5", |x| x <= 1.5, false),
        ],
        "start-overloaded" => vec![
            g(
                "meanLimitOverCapacity",
                "0.8-1.25 (recovers)",
                |x| (0.8..=1.25).contains(&x),
                true,
            ),
            g("convergenceS", "<= 60 s", |x| x <= 60.0, true),
            g("goodputPct", ">= 90 %", |x| x >= 90.0, false),
        ],
        "rate-quota" => vec![
            g(
                "callsPerAccepted",
                "<= 1.3 (the throttle sheds the doomed calls)",
                |x| x <= 1.3,
                true,
            ),
            g("acceptedPct", ">= 95 % of the quota", |x| x >= 95.0, true),
        ],
        "retry-storm" => vec![
            g(
                "attemptsPerFirst",
                "<= 1.25 (the budget holds)",
                |x| x <= 1.25,
                true,
            ),
            g("goodputPct", ">= 90 %", |x| x >= 90.0, false),
        ],
        _ => Vec::new(),
    }
}
