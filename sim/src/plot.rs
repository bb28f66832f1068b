//! One SVG per scenario: limit, inflight and p90 latency over time, every row on the same
//! axes, resilix vegas drawn thickest. Made with plotters' SVG backend; no font backend is
//! compiled in, so plotters estimates text extents and writes `<text>` elements that any
//! viewer renders with its own fonts (nothing is needed on the machine that runs the sim).

use std::path::Path;

use plotters::prelude::*;

use crate::client::Row;
use crate::runner::ScenarioResult;

fn colour(row: Row) -> RGBColor {
    match row.name() {
        "vegas" => RGBColor(31, 90, 200),
        "gradient2" => RGBColor(230, 140, 20),
        "aimd" => RGBColor(40, 160, 70),
        "static" => RGBColor(120, 120, 120),
        _ => RGBColor(200, 40, 40),
    }
}

fn max_of(it: impl Iterator<Item = f64>) -> f64 {
    it.filter(|x| x.is_finite()).fold(0.0, f64::max)
}

type Res = Result<(), Box<dyn std::error::Error>>;

pub fn write_svg(r: &ScenarioResult, dir: &Path) -> Res {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{}.svg", r.scenario.name));
    let root = SVGBackend::new(&path, (1000, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    title.titled(
        &format!("{}: {}", r.scenario.name, r.scenario.about),
        ("sans-serif", 18),
    )?;
    let panels = body.split_evenly((3, 1));
    let secs = r
        .rows
        .iter()
        .map(|x| x.series.limit.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;

    // Limit, with the upstream's C dashed.
    let servers = &r.rows[0].series.servers;
    let top = max_of(
        r.rows
            .iter()
            .flat_map(|x| x.series.limit.iter().copied())
            .chain(servers.iter().copied()),
    ) * 1.1
        + 1.0;
    let top = top
        .min(max_of(servers.iter().copied()) * 5.0 + 10.0)
        .max(1.0);
    let mut ch = ChartBuilder::on(&panels[0])
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(55)
        .caption("limit (dashed: C)", ("sans-serif", 15))
        .build_cartesian_2d(0.0..secs, 0.0..top)?;
    ch.configure_mesh()
        .x_desc("s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    ch.draw_series(DashedLineSeries::new(
        servers
            .iter()
            .enumerate()
            .map(|(i, &c)| (i as f64, c.min(top))),
        6,
        4,
        ShapeStyle::from(&BLACK).stroke_width(1),
    ))?;
    for row in r.rows.iter().rev() {
        let w = if row.row.name() == "vegas" { 3 } else { 1 };
        let c = colour(row.row);
        ch.draw_series(LineSeries::new(
            row.series
                .limit
                .iter()
                .enumerate()
                .map(|(i, &y)| (i as f64, y.min(top))),
            ShapeStyle::from(&c).stroke_width(w),
        ))?
        .label(row.row.name())
        .legend(move |(x, y)| {
            PathElement::new(
                vec![(x, y), (x + 18, y)],
                ShapeStyle::from(&c).stroke_width(w),
            )
        });
    }
    ch.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;

    // Inflight.
    let top = max_of(
        r.rows
            .iter()
            .flat_map(|x| x.series.inflight.iter().copied()),
    ) * 1.1
        + 1.0;
    let mut ch = ChartBuilder::on(&panels[1])
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(55)
        .caption("in flight (mean per client)", ("sans-serif", 15))
        .build_cartesian_2d(0.0..secs, 0.0..top)?;
    ch.configure_mesh()
        .x_desc("s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    for row in r.rows.iter().rev() {
        let w = if row.row.name() == "vegas" { 3 } else { 1 };
        ch.draw_series(LineSeries::new(
            row.series
                .inflight
                .iter()
                .enumerate()
                .map(|(i, &y)| (i as f64, y)),
            ShapeStyle::from(&colour(row.row)).stroke_width(w),
        ))?;
    }

    // p90 latency, log scale: scenarios span 50 ms to 60 s.
    let lat = r
        .rows
        .iter()
        .flat_map(|x| x.series.p90_ms.iter().copied())
        .filter(|x| x.is_finite() && *x > 0.0);
    let (lo, hi) = lat.fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    let (lo, hi) = if lo.is_finite() {
        (lo * 0.8, hi * 1.25)
    } else {
        (1.0, 10.0)
    };
    let mut ch = ChartBuilder::on(&panels[2])
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(55)
        .caption("p90 latency the limiter sees, ms (log)", ("sans-serif", 15))
        .build_cartesian_2d(0.0..secs, (lo..hi).log_scale())?;
    ch.configure_mesh()
        .x_desc("s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    for row in r.rows.iter().rev() {
        let w = if row.row.name() == "vegas" { 3 } else { 1 };
        // One line per stretch with calls: no line across seconds in which nothing ended.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for (i, &y) in row.series.p90_ms.iter().enumerate() {
            if y.is_finite() && y > 0.0 {
                runs.last_mut().unwrap().push((i as f64, y));
            } else if !runs.last().unwrap().is_empty() {
                runs.push(Vec::new());
            }
        }
        for pts in runs.into_iter().filter(|r| !r.is_empty()) {
            let style = ShapeStyle::from(&colour(row.row)).stroke_width(w);
            if pts.len() == 1 {
                // A lone second (low traffic): a dot, since a one-point line draws nothing.
                ch.draw_series(
                    pts.into_iter()
                        .map(|p| Circle::new(p, 2 + w, style.filled())),
                )?;
            } else {
                ch.draw_series(LineSeries::new(pts, style))?;
            }
        }
    }
    root.present()?;
    Ok(())
}
