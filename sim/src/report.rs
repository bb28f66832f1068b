//! The table and the JSON (`{ "scenarios": [ { "name", "algorithm", "metrics": { … } } ] }`).

use std::fmt::Write;

use crate::goals;
use crate::metrics::Metric;
use crate::runner::ScenarioResult;

fn num(x: Option<f64>) -> String {
    match x {
        None => "never".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

fn json_num(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => {
            // Four significant decimals are plenty for a simulation; keep integers clean.
            let r = (v * 1e4).round() / 1e4;
            if r == r.trunc() && r.abs() < 1e15 {
                format!("{}", r as i64)
            } else {
                format!("{r}")
            }
        }
        _ => "null".into(),
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

pub fn json(results: &[ScenarioResult]) -> String {
    let mut entries = Vec::new();
    for r in results {
        for row in &r.rows {
            let metrics: Vec<String> = row
                .metrics
                .iter()
                .map(|(k, v)| format!("{}: {}", json_str(k), json_num(*v)))
                .collect();
            entries.push(format!(
                "    {{ \"name\": {}, \"algorithm\": {}, \"metrics\": {{ {} }} }}",
                json_str(r.scenario.name),
                json_str(row.row.name()),
                metrics.join(", ")
            ));
        }
    }
    format!("{{ \"scenarios\": [\n{}\n] }}\n", entries.join(",\n"))
}

fn value(m: &[Metric], name: &str) -> Option<f64> {
    m.iter().find(|x| x.0 == name).and_then(|x| x.1)
}

/// A block per scenario: one line per algorithm, the metrics as columns; then the vegas
/// row's goals, met or not.
pub fn table(results: &[ScenarioResult], seeds: u32) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "resilix simulator: {} scenarios, median of {seeds} seed(s) per row; times are virtual.",
        results.len()
    );
    for r in results {
        let _ = writeln!(o, "\n{} - {}", r.scenario.name, r.scenario.about);
        let names: Vec<&str> = r.rows[0].metrics.iter().map(|m| m.0).collect();
        let widths: Vec<usize> = names.iter().map(|n| n.len().max(7)).collect();
        let mut head = format!("  {:<14}", "algorithm");
        for (n, w) in names.iter().zip(&widths) {
            let _ = write!(head, " {:>w$}", n, w = w);
        }
        let _ = writeln!(o, "{head}");
        for row in &r.rows {
            let mut line = format!("  {:<14}", row.row.name());
            for (m, w) in row.metrics.iter().zip(&widths) {
                // Times in windows mean nothing for an algorithm without windows (static).
                let cell = if m.0.ends_with("Windows") && row.row.window_s().is_none() {
                    "n/a".into()
                } else {
                    num(m.1)
                };
                let _ = write!(line, " {:>w$}", cell, w = w);
            }
            let _ = writeln!(o, "{line}");
        }
        let gs = goals::for_scenario(r.scenario.name);
        if let Some(vegas) = r.rows.iter().find(|x| x.row.name() == "vegas") {
            if !gs.is_empty() {
                let parts: Vec<String> = gs
                    .iter()
                    .map(|g| {
                        let v = value(&vegas.metrics, g.metric);
                        let met = v.is_some_and(|x| (g.ok)(x));
                        format!(
                            "{} {} ({}) {}",
                            g.metric,
                            g.text,
                            num(v),
                            if met { "MET" } else { "NOT MET" }
                        )
                    })
                    .collect();
                let who = if gs[0].from_issue {
                    "issue goals"
                } else {
                    "our goals"
                };
                let _ = writeln!(o, "  vegas {who}: {}", parts.join("; "));
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_are_valid_json() {
        assert_eq!(json_num(Some(1.0)), "1");
        assert_eq!(json_num(Some(0.123456)), "0.1235");
        assert_eq!(json_num(None), "null");
        assert_eq!(json_num(Some(f64::NAN)), "null");
        assert_eq!(json_str("a\"b"), "\"a\\\"b\"");
    }
}
