//! Running statistics of one metric (Welford's algorithm: numerically stable, O(1) memory).

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
    mean: f64,
    m2: f64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            count: 0,
            total: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
        }
    }
}

impl Stats {
    /// Adds one value; NaN means "not measured" and is skipped.
    pub fn push(&mut self, value: f64) {
        if value.is_nan() {
            return;
        }
        self.count += 1;
        self.total += value;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        let delta = value - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (value - self.mean);
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
        let count = self.count + other.count;
        let delta = other.mean - self.mean;
        self.m2 +=
            other.m2 + delta * delta * (self.count as f64 * other.count as f64) / count as f64;
        self.mean += delta * other.count as f64 / count as f64;
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
            self.mean
        }
    }

    /// Population standard deviation (0 when fewer than two values).
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2 / self.count as f64).sqrt()
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
}
