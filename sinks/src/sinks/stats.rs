//! Running statistics of one metric: count, total, min, max and variance in O(1) memory.
//!
//! The variance uses shifted sums (the "shifted data" algorithm): every value is taken
//! relative to the stream's first value `K`, and the stream keeps `Σ(v−K)` and `Σ(v−K)²`.
//! With `K` close to the values (the first value of a region's durations is), this is as
//! stable as Welford's update and needs no division per value (Welford's takes one per value:
//! the summary pushes one value per region, and the division was a third of its cost).

/// Count, total, min, max and variance of a stream of values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Number of values.
    pub count: u64,
    /// Sum.
    pub total: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// The shift `K` (the first value, or the mean after a merge).
    shift: f64,
    /// `Σ(v − K)`.
    sum_d: f64,
    /// `Σ(v − K)²`.
    sum_d2: f64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            count: 0,
            total: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            shift: 0.0,
            sum_d: 0.0,
            sum_d2: 0.0,
        }
    }
}

impl Stats {
    /// Adds one value; NaN means "not measured" and is skipped.
    #[inline]
    pub fn push(&mut self, value: f64) {
        if value.is_nan() {
            return;
        }
        if self.count == 0 {
            self.shift = value;
        }
        self.count += 1;
        self.total += value;
        // Plain compares (the value is not NaN): `f64::min` handles NaN in a few more
        // instructions.
        if value < self.min {
            self.min = value;
        }
        if value > self.max {
            self.max = value;
        }
        let d = value - self.shift;
        self.sum_d += d;
        self.sum_d2 += d * d;
    }

    /// The sum of squared deviations from the mean.
    fn m2(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        (self.sum_d2 - self.sum_d * self.sum_d / self.count as f64).max(0.0)
    }

    /// Combines two streams (Chan et al.'s parallel update).
    pub fn merge(&mut self, other: &Stats) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *other;
            return;
        }
        let (mean_a, mean_b) = (self.mean(), other.mean());
        let count = self.count + other.count;
        let delta = mean_b - mean_a;
        let m2 = self.m2()
            + other.m2()
            + delta * delta * (self.count as f64 * other.count as f64) / count as f64;
        let mean = mean_a + delta * other.count as f64 / count as f64;
        // Re-based on the merged mean: Σ(v − mean) = 0 and Σ(v − mean)² = m2.
        self.shift = mean;
        self.sum_d = 0.0;
        self.sum_d2 = m2;
        self.count = count;
        self.total += other.total;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Mean (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.shift + self.sum_d / self.count as f64
        }
    }

    /// Population standard deviation (0 when fewer than two values).
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2() / self.count as f64).sqrt()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_match_the_textbook_formulas() {
        let values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let mut s = Stats::default();
        values.iter().for_each(|v| s.push(*v));
        assert_eq!((s.count, s.total, s.min, s.max), (8, 40.0, 2.0, 9.0));
        assert!((s.mean() - 5.0).abs() < 1e-12);
        assert!((s.stddev() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn merging_equals_pushing_everything_into_one() {
        let (mut a, mut b, mut all) = (Stats::default(), Stats::default(), Stats::default());
        for v in 0..10 {
            a.push(v as f64);
            all.push(v as f64);
        }
        for v in 10..25 {
            b.push((v * v) as f64);
            all.push((v * v) as f64);
        }
        a.merge(&b);
        assert_eq!(a.count, all.count);
        assert!((a.mean() - all.mean()).abs() < 1e-9);
        assert!((a.stddev() - all.stddev()).abs() < 1e-9);
    }

    #[test]
    fn large_values_with_a_small_spread_keep_their_variance() {
        // Durations near 10^9 ns that differ by a few ns: a naive Σv² − (Σv)²/n loses them.
        let mut s = Stats::default();
        let (mut sum, mut sum2) = (0.0, 0.0);
        for i in 0..100_000u64 {
            let v = 1.0e9 + (i % 7) as f64;
            s.push(v);
            sum += (i % 7) as f64;
            sum2 += ((i % 7) as f64).powi(2);
        }
        let n = 100_000.0;
        let var = sum2 / n - (sum / n) * (sum / n);
        assert!((s.mean() - (1.0e9 + sum / n)).abs() < 1e-6, "{}", s.mean());
        assert!(
            (s.stddev() - var.sqrt()).abs() < 1e-6,
            "{} vs {}",
            s.stddev(),
            var.sqrt()
        );
    }
}
