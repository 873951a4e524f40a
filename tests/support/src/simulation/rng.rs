//! The seeded random numbers of a simulation.
//!
//! ChaCha8 with a fixed seed expansion gives the same stream for a seed on
//! every platform and crate version; ranges and chances are computed here
//! from raw `u64`s, so no library's sampling algorithm can change them.

use std::time::Duration;

use rand_chacha::{
    ChaCha8Rng,
    rand_core::{RngCore, SeedableRng},
};

/// One stream of draws: the fault schedule and the scenario each get their
/// own, so what the scenario draws does not shift the faults.
#[derive(Debug, Clone)]
pub(crate) struct SimRng(ChaCha8Rng);

impl SimRng {
    pub(crate) fn new(seed: u64, stream: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Self(rng)
    }

    /// A number in `0..n` (0 when `n` is 0), by multiply-and-shift.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `p` (never for `p <= 0` or NaN, always for `p >= 1`).
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        // 53 random bits make a uniform f64 in [0, 1).
        let unit = (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        unit < p
    }

    /// A duration in `[0, max]`, in whole milliseconds.
    pub(crate) fn up_to(&mut self, max: Duration) -> Duration {
        let millis = u64::try_from(max.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(self.below(millis.saturating_add(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si2_a_seed_gives_the_same_draws_and_another_seed_others() {
        let draws = |seed| {
            let mut rng = SimRng::new(seed, 1);
            (0..32).map(|_| rng.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
        assert!(draws(7).iter().all(|&d| d < 1000));
    }

    #[test]
    fn si2_chances_and_durations_stay_in_bounds() {
        let mut rng = SimRng::new(1, 1);
        assert!((0..100).all(|_| !rng.chance(0.0) && !rng.chance(f64::NAN) && rng.chance(1.0)));
        assert!((0..100).all(|_| rng.up_to(Duration::from_millis(5)) <= Duration::from_millis(5)));
        assert_eq!(rng.up_to(Duration::ZERO), Duration::ZERO);
        let hits = (0..10_000).filter(|_| rng.chance(0.25)).count();
        assert!((2_000..3_000).contains(&hits), "{hits}");
    }
}
