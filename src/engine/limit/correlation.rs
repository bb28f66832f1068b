//! Exponentially weighted Pearson correlations of inflight against throughput and against
//! latency, with a memory of `span` windows (spec §5.3, Uber's "running window (typically
//! lasting 50 intervals)"). An EW estimate instead of a 50-slot ring: the same horizon in
//! 64 bytes whatever `correlationWindow` is set to (ADR 0102).

#[derive(Clone, Debug, Default)]
pub struct Correlation {
    alpha: f64,
    n: u32,
    mx: f64,
    my: f64,
    mz: f64,
    vx: f64,
    vy: f64,
    vz: f64,
    cxy: f64,
    cxz: f64,
}

impl Correlation {
    pub fn new(span: u32) -> Self {
        Correlation {
            alpha: 1.0 / span.max(2) as f64,
            ..Default::default()
        }
    }

    pub fn clear(&mut self) {
        *self = Correlation::new(0).with_alpha(self.alpha);
    }

    fn with_alpha(mut self, a: f64) -> Self {
        self.alpha = a;
        self
    }

    /// Windows observed since the last clear.
    pub fn len(&self) -> u32 {
        self.n
    }

    /// x = mean inflight, y = throughput, z = latency.
    pub fn push(&mut self, x: f64, y: f64, z: f64) {
        if self.n == 0 {
            (self.mx, self.my, self.mz) = (x, y, z);
            self.n = 1;
            return;
        }
        self.n = self.n.saturating_add(1);
        // Early windows weigh equally (plain mean) until the EW horizon is reached.
        let a = self.alpha.max(1.0 / self.n as f64);
        let (dx, dy, dz) = (x - self.mx, y - self.my, z - self.mz);
        self.mx += a * dx;
        self.my += a * dy;
        self.mz += a * dz;
        let k = 1.0 - a;
        self.vx = k * (self.vx + a * dx * dx);
        self.vy = k * (self.vy + a * dy * dy);
        self.vz = k * (self.vz + a * dz * dz);
        self.cxy = k * (self.cxy + a * dx * dy);
        self.cxz = k * (self.cxz + a * dx * dz);
    }

    /// Inflight must actually have varied (coefficient of variation ≥ 2 %) for a
    /// correlation to mean anything; otherwise there is no evidence either way.
    pub fn varied(&self) -> bool {
        self.n >= 3 && self.vx.sqrt() >= 0.02 * self.mx.abs().max(1e-9)
    }

    fn pearson(c: f64, va: f64, vb: f64) -> f64 {
        let d = (va * vb).sqrt();
        if d <= 0.0 || !d.is_finite() {
            0.0
        } else {
            (c / d).clamp(-1.0, 1.0)
        }
    }

    /// The weighted mean latency over the memory (ns).
    pub fn mean_latency(&self) -> f64 {
        self.mz
    }

    /// corr(inflight, throughput); 0 without evidence.
    pub fn throughput(&self) -> f64 {
        if self.varied() {
            Self::pearson(self.cxy, self.vx, self.vy)
        } else {
            0.0
        }
    }

    /// corr(inflight, latency); 0 without evidence.
    pub fn latency(&self) -> f64 {
        if self.varied() {
            Self::pearson(self.cxz, self.vx, self.vz)
        } else {
            0.0
        }
    }

    /// The elasticity of throughput to inflight: the regression slope scaled at the means,
    /// d ln(throughput) / d ln(inflight). 1 when every extra call in flight is served at once
    /// (no queue), 0 when it only waits (saturated); 0 without evidence. Unlike a correlation it
    /// says how much throughput more inflight bought: window-to-window noise in a saturated
    /// upstream can correlate well with inflight and still buy almost nothing.
    pub fn throughput_elasticity(&self) -> f64 {
        if !self.varied() || self.my <= 0.0 {
            return 0.0;
        }
        self.cxy / self.vx * (self.mx / self.my)
    }
}
