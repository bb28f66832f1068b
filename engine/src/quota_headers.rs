//! The rate-limit headers that LLM and SaaS APIs send, read into one [`Reading`] (ADR 1101):
//! OpenAI's `x-ratelimit-*` (resets as Go durations), Anthropic's `anthropic-ratelimit-*`
//! (resets as RFC 3339 times), the IETF draft's `ratelimit-*` (seconds), `retry-after` and
//! `retry-after-ms`. Untrusted input: a value that does not parse is no reading.

/// Which budget a reading is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    Requests,
    Tokens,
    InputTokens,
    OutputTokens,
}

impl Dimension {
    /// Every dimension, at its code − 1.
    pub const ALL: [Dimension; 4] = [
        Dimension::Requests,
        Dimension::Tokens,
        Dimension::InputTokens,
        Dimension::OutputTokens,
    ];

    /// The binding's code: 1 requests, 2 tokens, 3 input tokens, 4 output tokens.
    pub fn from_code(code: u32) -> Option<Dimension> {
        Self::ALL.get((code as usize).wrapping_sub(1)).copied()
    }

    /// The suffix the families name it by.
    fn suffix(self) -> &'static str {
        match self {
            Dimension::Requests => "requests",
            Dimension::Tokens => "tokens",
            Dimension::InputTokens => "input-tokens",
            Dimension::OutputTokens => "output-tokens",
        }
    }
}

/// One dimension's state as the upstream announced it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DimReading {
    pub dim: Dimension,
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    /// Time until the budget is whole again, ns.
    pub reset_ns: Option<u64>,
}

/// Everything one response said.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    pub dims: Vec<DimReading>,
    /// From `retry-after-ms` when valid, else `retry-after`, ns.
    pub retry_after_ns: Option<u64>,
}

const NS_PER_S: f64 = 1e9;

/// A non-negative decimal number (`12`, `1.5`, `.5`); no sign, no exponent.
fn decimal(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    if s.bytes().filter(|&b| b == b'.').count() > 1 || s == "." {
        return None;
    }
    s.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn to_ns(x: f64) -> u64 {
    if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        x.round() as u64
    }
}

/// A Go-style duration as OpenAI writes it: `6m0s`, `1s`, `59.5s`, `20ms`, `1h2m3s`, `300us`,
/// `5ns`; ns, saturating.
pub fn parse_duration(s: &str) -> Option<u64> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let n = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let value = decimal(&rest[..n])?;
        rest = &rest[n..];
        let (unit, len) = [
            ("ns", 1.0),
            ("us", 1e3),
            ("µs", 1e3),
            ("ms", 1e6),
            ("s", NS_PER_S),
            ("m", 60.0 * NS_PER_S),
            ("h", 3600.0 * NS_PER_S),
        ]
        .iter()
        .filter(|(u, _)| rest.starts_with(u))
        .map(|(u, f)| (*f, u.len()))
        .next()?;
        total += value * unit;
        rest = &rest[len..];
    }
    Some(to_ns(total))
}

/// Days from 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

fn digits(s: &str, n: usize) -> Option<i64> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Unix ms of a valid date and time of day.
fn unix_ms(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> Option<i64> {
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    if h > 23 || mi > 59 || s > 60 {
        return None;
    }
    Some(((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000 + s * 1000)
}

/// An RFC 3339 date-time (`2024-05-01T12:00:03.250Z`, offsets allowed) as Unix ms.
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.len() < 20 || !s.is_ascii() {
        return None;
    }
    let b = s.as_bytes();
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let base = unix_ms(
        digits(&s[0..4], 4)?,
        digits(&s[5..7], 2)?,
        digits(&s[8..10], 2)?,
        digits(&s[11..13], 2)?,
        digits(&s[14..16], 2)?,
        digits(&s[17..19], 2)?,
    )?;
    let mut rest = &s[19..];
    let mut frac_ms = 0f64;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        frac_ms = format!("0.{}", &r[..n]).parse::<f64>().ok()? * 1000.0;
        rest = &r[n..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':' =>
        {
            let h = digits(&rest[1..3], 2)?;
            let m = digits(&rest[4..6], 2)?;
            if h > 23 || m > 59 {
                return None;
            }
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (h * 60 + m)
        }
        _ => return None,
    };
    Some(base + frac_ms.floor() as i64 - offset_min * 60_000)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// An HTTP-date in its IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`) as Unix ms.
pub fn parse_http_date_ms(s: &str) -> Option<i64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [wd, d, mo, y, t, "GMT"] = parts[..] else {
        return None;
    };
    if wd.len() != 4 || !wd.ends_with(',') {
        return None;
    }
    let mo = MONTHS.iter().position(|m| *m == mo)? as i64 + 1;
    let tp: Vec<&str> = t.split(':').collect();
    let [h, mi, sec] = tp[..] else {
        return None;
    };
    unix_ms(
        digits(y, 4)?,
        mo,
        digits(d, 2)?,
        digits(h, 2)?,
        digits(mi, 2)?,
        digits(sec, 2)?,
    )
}

/// Ns from `wall_now_ms` until Unix ms `at` (0 when it has passed).
fn until(at: i64, wall_now_ms: f64) -> u64 {
    to_ns(((at as f64 - wall_now_ms) * 1e6).max(0.0))
}

/// Plain seconds from this many on are a Unix time, not a delay (about 31.7 years): GitHub's
/// `x-ratelimit-reset` is one, and read as a delay it would hold a key for decades.
const UNIX_SECONDS_FROM: f64 = 1e9;

/// A reset in any form the families write: a duration (`6m0s`), seconds (`12`, `1.5`), a Unix
/// time in seconds, or an RFC 3339 time (both relative to `wall_now_ms`, the Unix time in ms).
/// Ns from now.
pub fn parse_reset(s: &str, wall_now_ms: f64) -> Option<u64> {
    if let Some(x) = decimal(s) {
        if x >= UNIX_SECONDS_FROM {
            return Some(until((x * 1000.0) as i64, wall_now_ms));
        }
        return Some(to_ns(x * NS_PER_S));
    }
    if let Some(ns) = parse_duration(s) {
        return Some(ns);
    }
    parse_rfc3339_ms(s).map(|at| until(at, wall_now_ms))
}

/// `retry-after`: delay-seconds (a decimal accepted) or an HTTP-date. Ns from now.
pub fn parse_retry_after(s: &str, wall_now_ms: f64) -> Option<u64> {
    if let Some(x) = decimal(s) {
        return Some(to_ns(x * NS_PER_S));
    }
    parse_http_date_ms(s.trim()).map(|at| until(at, wall_now_ms))
}

/// `retry-after-ms`: ms, possibly fractional. Ns.
pub fn parse_retry_after_ms(s: &str) -> Option<u64> {
    decimal(s).map(|x| to_ns(x * 1e6))
}

/// A count: the first number of the value (`100`, or the IETF draft's `100, 100;w=60`).
fn count(v: &str) -> Option<u64> {
    let first = v.split([',', ';']).next()?.trim();
    if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    first.parse().ok()
}

#[derive(Clone, Copy, PartialEq)]
enum Field {
    Limit,
    Remaining,
    Reset,
}

/// `(dimension, field, from a named family)` of a header name, if it is one.
fn classify(name: &str) -> Option<(Dimension, Field, bool)> {
    let field = |s: &str| match s {
        "limit" => Some(Field::Limit),
        "remaining" => Some(Field::Remaining),
        "reset" => Some(Field::Reset),
        _ => None,
    };
    if let Some(rest) = name.strip_prefix("x-ratelimit-") {
        // OpenAI: x-ratelimit-<field>-<dimension>; generic: x-ratelimit-<field>.
        if let Some(f) = field(rest) {
            return Some((Dimension::Requests, f, false));
        }
        let (f, d) = rest.split_once('-')?;
        let dim = Dimension::ALL.into_iter().find(|x| x.suffix() == d)?;
        return Some((dim, field(f)?, true));
    }
    if let Some(rest) = name.strip_prefix("anthropic-ratelimit-") {
        // Anthropic: anthropic-ratelimit-<dimension>-<field>.
        let (d, f) = rest.rsplit_once('-')?;
        let dim = Dimension::ALL.into_iter().find(|x| x.suffix() == d)?;
        return Some((dim, field(f)?, true));
    }
    let rest = name.strip_prefix("ratelimit-")?;
    Some((Dimension::Requests, field(rest)?, false))
}

/// Reads a response's headers, given as (lower-case name, value) pairs.
pub fn read_headers<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    wall_now_ms: f64,
) -> Reading {
    // Per dimension: the fields, and whether each came from a named family (which wins).
    let mut dims: [(DimReading, [bool; 3]); 4] = Dimension::ALL.map(|dim| {
        (
            DimReading {
                dim,
                limit: None,
                remaining: None,
                reset_ns: None,
            },
            [false; 3],
        )
    });
    let mut retry_after = None;
    let mut retry_after_ms = None;
    for (name, value) in headers {
        match name {
            "retry-after" => retry_after = parse_retry_after(value, wall_now_ms),
            "retry-after-ms" => retry_after_ms = parse_retry_after_ms(value),
            _ => {
                let Some((dim, field, named)) = classify(name) else {
                    continue;
                };
                let (r, from_named) = &mut dims[dim as usize];
                let i = field as usize;
                if from_named[i] && !named {
                    continue;
                }
                let set = match field {
                    Field::Limit => count(value).map(|v| r.limit = Some(v)),
                    Field::Remaining => count(value).map(|v| r.remaining = Some(v)),
                    Field::Reset => parse_reset(value, wall_now_ms).map(|v| r.reset_ns = Some(v)),
                };
                if set.is_some() {
                    from_named[i] |= named;
                }
            }
        }
    }
    Reading {
        dims: dims
            .into_iter()
            .map(|(r, _)| r)
            .filter(|r| r.limit.is_some() || r.remaining.is_some() || r.reset_ns.is_some())
            .collect(),
        retry_after_ns: retry_after_ms.or(retry_after),
    }
}

/// Reads headers passed as one block of `name: value` lines (names in any case).
pub fn read_header_block(block: &str, wall_now_ms: f64) -> Reading {
    let lines: Vec<(String, &str)> = block
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim()))
        .collect();
    read_headers(lines.iter().map(|(n, v)| (n.as_str(), *v)), wall_now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000 * MS;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("6m0s"), Some(360 * S));
        assert_eq!(parse_duration("1s"), Some(S));
        assert_eq!(parse_duration("59.5s"), Some(59_500 * MS));
        assert_eq!(parse_duration("20ms"), Some(20 * MS));
        assert_eq!(parse_duration("1h2m3s"), Some(3723 * S));
        assert_eq!(parse_duration("0s"), Some(0));
        assert_eq!(parse_duration("1.5m"), Some(90 * S));
        assert_eq!(parse_duration("300us"), Some(300_000));
        assert_eq!(parse_duration("300µs"), Some(300_000));
        assert_eq!(parse_duration("5ns"), Some(5));
        assert_eq!(parse_duration(" 2s "), Some(2 * S));
        for bad in ["", "6", "m", "1x", "-1s", "1.2.3s", "s1", "1s2"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rfc3339_times() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_ms("2024-05-01T12:00:03Z"),
            Some(1_714_564_803_000)
        );
        assert_eq!(
            parse_rfc3339_ms("2024-05-01T12:00:03.250Z"),
            Some(1_714_564_803_250)
        );
        assert_eq!(
            parse_rfc3339_ms("2024-05-01T14:00:03+02:00"),
            Some(1_714_564_803_000)
        );
        assert_eq!(
            parse_rfc3339_ms("2024-05-01t12:00:03z"),
            Some(1_714_564_803_000)
        );
        assert!(parse_rfc3339_ms("2024-02-29T00:00:00Z").is_some());
        for bad in [
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-05-01T24:00:00Z",
            "2024-05-01T12:00:03",
            "2024-05-01 12:00Z",
            "yesterday",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn http_dates() {
        assert_eq!(
            parse_http_date_ms("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777_000)
        );
        assert_eq!(parse_http_date_ms("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        assert_eq!(parse_http_date_ms("Sun, 06 Nov 1994 08:49:37 PST"), None);
    }

    #[test]
    fn resets_in_each_form() {
        let now = 1_714_564_800_000.0; // 2024-05-01T12:00:00Z
        assert_eq!(parse_reset("6m0s", now), Some(360 * S));
        assert_eq!(parse_reset("12", now), Some(12 * S));
        assert_eq!(parse_reset("1.5", now), Some(1_500 * MS));
        assert_eq!(parse_reset("0", now), Some(0));
        assert_eq!(
            parse_reset("2024-05-01T12:00:03.250Z", now),
            Some(3_250 * MS)
        );
        assert_eq!(parse_reset("2024-05-01T11:00:00Z", now), Some(0), "past");
        assert_eq!(parse_reset("1714564830", now), Some(30 * S), "Unix seconds");
        assert_eq!(
            parse_reset("1714564700", now),
            Some(0),
            "Unix seconds, past"
        );
        assert_eq!(parse_reset("-3", now), None);
        assert_eq!(parse_reset("soon", now), None);
    }

    #[test]
    fn retry_after_forms() {
        let now = 784_111_770_000.0;
        assert_eq!(parse_retry_after("2", now), Some(2 * S));
        assert_eq!(parse_retry_after("1.5", now), Some(1_500 * MS));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(7 * S)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now + 1e7),
            Some(0)
        );
        assert_eq!(parse_retry_after("later", now), None);
        assert_eq!(parse_retry_after_ms("1500"), Some(1_500 * MS));
        assert_eq!(parse_retry_after_ms("12.5"), Some(12_500_000));
        assert_eq!(parse_retry_after_ms("-1"), None);
    }

    #[test]
    fn openai_headers() {
        let r = read_headers(
            [
                ("x-ratelimit-limit-requests", "500"),
                ("x-ratelimit-remaining-requests", "499"),
                ("x-ratelimit-reset-requests", "120ms"),
                ("x-ratelimit-limit-tokens", "200000"),
                ("x-ratelimit-remaining-tokens", "198000"),
                ("x-ratelimit-reset-tokens", "6m0s"),
                ("content-type", "application/json"),
            ],
            0.0,
        );
        assert_eq!(
            r.dims,
            vec![
                DimReading {
                    dim: Dimension::Requests,
                    limit: Some(500),
                    remaining: Some(499),
                    reset_ns: Some(120 * MS)
                },
                DimReading {
                    dim: Dimension::Tokens,
                    limit: Some(200_000),
                    remaining: Some(198_000),
                    reset_ns: Some(360 * S)
                },
            ]
        );
        assert_eq!(r.retry_after_ns, None);
    }

    #[test]
    fn anthropic_headers() {
        let now = 1_714_564_800_000.0;
        let r = read_headers(
            [
                ("anthropic-ratelimit-requests-limit", "50"),
                ("anthropic-ratelimit-requests-remaining", "49"),
                ("anthropic-ratelimit-requests-reset", "2024-05-01T12:00:01Z"),
                ("anthropic-ratelimit-tokens-remaining", "80000"),
                ("anthropic-ratelimit-input-tokens-limit", "40000"),
                ("anthropic-ratelimit-input-tokens-remaining", "39000"),
                (
                    "anthropic-ratelimit-input-tokens-reset",
                    "2024-05-01T12:00:02.500Z",
                ),
                ("anthropic-ratelimit-output-tokens-remaining", "7000"),
                (
                    "anthropic-ratelimit-output-tokens-reset",
                    "2024-05-01T12:00:10Z",
                ),
            ],
            now,
        );
        let by = |d| r.dims.iter().find(|x| x.dim == d).copied().unwrap();
        assert_eq!(by(Dimension::Requests).reset_ns, Some(S));
        assert_eq!(by(Dimension::Requests).remaining, Some(49));
        assert_eq!(by(Dimension::Tokens).remaining, Some(80_000));
        assert_eq!(by(Dimension::InputTokens).limit, Some(40_000));
        assert_eq!(by(Dimension::InputTokens).reset_ns, Some(2_500 * MS));
        assert_eq!(by(Dimension::OutputTokens).reset_ns, Some(10 * S));
        assert_eq!(r.dims.len(), 4);
    }

    #[test]
    fn a_refusal_with_both_hints_prefers_the_finer() {
        let r = read_headers([("retry-after", "2"), ("retry-after-ms", "1500")], 0.0);
        assert_eq!(r.retry_after_ns, Some(1_500 * MS));
        let r = read_headers([("retry-after", "2"), ("retry-after-ms", "x")], 0.0);
        assert_eq!(r.retry_after_ns, Some(2 * S));
    }

    #[test]
    fn generic_headers_and_garbage() {
        let r = read_headers(
            [
                ("ratelimit-limit", "100, 100;w=60"),
                ("ratelimit-remaining", "7"),
                ("ratelimit-reset", "30"),
                ("x-ratelimit-remaining-tokens", "lots"),
                ("x-ratelimit-reset-tokens", "whenever"),
            ],
            0.0,
        );
        assert_eq!(
            r.dims,
            vec![DimReading {
                dim: Dimension::Requests,
                limit: Some(100),
                remaining: Some(7),
                reset_ns: Some(30 * S)
            }]
        );
        // A named family wins over the generic header, whatever the order.
        let r = read_headers(
            [
                ("x-ratelimit-remaining-requests", "3"),
                ("x-ratelimit-remaining", "9"),
            ],
            0.0,
        );
        assert_eq!(r.dims[0].remaining, Some(3));
    }

    #[test]
    fn a_block_of_lines() {
        let r = read_header_block(
            "X-RateLimit-Remaining-Tokens: 10\n\nx-ratelimit-reset-tokens:1s\nnot a header\nRetry-After: 3\n",
            0.0,
        );
        assert_eq!(r.dims[0].dim, Dimension::Tokens);
        assert_eq!(r.dims[0].remaining, Some(10));
        assert_eq!(r.dims[0].reset_ns, Some(S));
        assert_eq!(r.retry_after_ns, Some(3 * S));
        assert_eq!(Dimension::from_code(2), Some(Dimension::Tokens));
        assert_eq!(Dimension::from_code(0), None);
        assert_eq!(Dimension::from_code(5), None);
    }
}
