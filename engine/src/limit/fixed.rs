//! A limit that never moves: the `static` comparison row, and `algorithm: 'fixed'`.

#[derive(Clone, Debug)]
pub struct FixedLimit {
    limit: u32,
}

impl FixedLimit {
    pub fn new(limit: u32) -> Self {
        FixedLimit { limit }
    }
    #[inline]
    pub fn current(&self) -> u32 {
        self.limit
    }
}
