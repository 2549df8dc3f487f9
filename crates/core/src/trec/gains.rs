//! Gain values for the graded measures (nDCG, DCG, IDCG, nDCG_rel, RnDCG, G, RBP).
//!
//! The gain of a relevance level is the level itself unless the measure's parameters map it
//! to another value (`ndcg.1=3,2=9` gives level 1 gain 3 and level 2 gain 9). Documents whose
//! relevance is not a listed level (unjudged, or not in the qrels) have gain 0 — unless a
//! negative level such as `-1=...` is listed explicitly, as trec_eval allows.
//!
//! The ideal ranking takes the judged documents from the highest gain down, and stops at the
//! first level whose gain is not positive. Levels are ordered as trec_eval orders them: a
//! stable merge sort (the algorithm of glibc's `qsort`) whose comparison is the difference of
//! two gains truncated to an integer, so gains less than 1 apart keep the order in which they
//! were listed (mapped levels first, in parameter order, then the unmapped levels ascending).

/// A level -> gain mapping, in the order it was given.
pub type GainMap = [(i64, f64)];

/// Above this many relevance levels only the levels that occur get an entry (trec_eval would
/// list every level from 0 up; the difference cannot change a value unless mapped gains are
/// less than 1 apart).
const DENSE_LEVELS_MAX: i64 = 4096;

/// One relevance level with its gain and the number of judged documents at that level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelGain {
    /// The relevance level.
    pub level: i64,
    /// Its gain.
    pub gain: f64,
    /// Judged documents at this level.
    pub count: u64,
}

/// The gains of one query: every level, sorted by gain ascending (trec_eval's order).
#[derive(Clone, Debug, PartialEq)]
pub struct Gains {
    gains: Vec<RelGain>,
}

impl Gains {
    /// Sets up the gains of one query from its judged `(level, count)` pairs (ascending) and
    /// the measure's mapping.
    pub fn new(levels: &[(i32, u64)], map: &GainMap) -> Gains {
        let mut gains: Vec<RelGain> = map
            .iter()
            .map(|&(level, gain)| RelGain {
                level,
                gain,
                count: 0,
            })
            .collect();
        let num_mapped = gains.len();
        let add_level = |gains: &mut Vec<RelGain>, level: i64, count: u64| {
            if let Some(g) = gains[..num_mapped].iter_mut().find(|g| g.level == level) {
                g.count = count;
            } else {
                gains.push(RelGain {
                    level,
                    gain: level as f64,
                    count,
                });
            }
        };
        let num_levels = levels.last().map_or(0, |(l, _)| i64::from(*l) + 1);
        if num_levels <= DENSE_LEVELS_MAX {
            let mut it = levels.iter().peekable();
            for level in 0..num_levels {
                let count = match it.peek() {
                    Some(&&(l, n)) if i64::from(l) == level => {
                        it.next();
                        n
                    }
                    _ => 0,
                };
                add_level(&mut gains, level, count);
            }
        } else {
            for &(l, n) in levels {
                add_level(&mut gains, i64::from(l), n);
            }
        }
        merge_sort(&mut gains, |a, b| truncated_difference(a.gain, b.gain));
        Gains { gains }
    }

    /// The levels, by gain ascending.
    pub fn levels(&self) -> &[RelGain] {
        &self.gains
    }

    /// Gain of a retrieved document's relevance value (0 if that level is not listed).
    #[inline]
    pub fn gain(&self, rel: i32) -> f64 {
        let rel = i64::from(rel);
        self.gains
            .iter()
            .find(|g| g.level == rel)
            .map_or(0.0, |g| g.gain)
    }

    /// Rescales gains to [0, 1] when any lies outside: `(g - min) / (max - min)` with min and
    /// max taken over the gains and 0 (what RBP does).
    pub fn normalized_to_unit(mut self) -> Gains {
        let (mut min, mut max) = (0.0f64, 0.0f64);
        for g in &self.gains {
            if g.gain < min {
                min = g.gain;
            }
            if g.gain > max {
                max = g.gain;
            }
        }
        if min < 0.0 || max > 1.0 {
            for g in &mut self.gains {
                g.gain = (g.gain - min) / (max - min);
            }
        }
        self
    }

    /// Walks the gains of the ideal ranking, rank by rank.
    pub fn ideal(&self) -> IdealGains<'_> {
        let cur = self.gains.len() as isize - 1;
        IdealGains {
            gains: &self.gains,
            cur,
            at_level: 0,
            gain: if cur >= 0 {
                self.gains[cur as usize].gain
            } else {
                0.0
            },
        }
    }
}

/// The gains of the ideal ranking: [`IdealGains::current`] starts at the highest gain listed
/// (even if no document has it), and each [`IdealGains::advance`] moves to the next rank.
#[derive(Clone, Debug)]
pub struct IdealGains<'a> {
    gains: &'a [RelGain],
    cur: isize,
    at_level: u64,
    gain: f64,
}

impl IdealGains<'_> {
    /// Gain at the current rank (before the first advance: the highest listed gain).
    #[inline]
    pub fn current(&self) -> f64 {
        self.gain
    }

    /// Moves to the next rank of the ideal ranking and returns its gain (0 once the judged
    /// documents are exhausted).
    #[inline]
    pub fn advance(&mut self) -> f64 {
        self.at_level += 1;
        while self.cur >= 0 && self.at_level > self.gains[self.cur as usize].count {
            self.at_level = 1;
            self.cur -= 1;
            self.gain = if self.cur >= 0 {
                self.gains[self.cur as usize].gain
            } else {
                0.0
            };
        }
        self.gain
    }
}

/// trec_eval's comparison of two gains: their difference converted to `int` (truncated).
fn truncated_difference(a: f64, b: f64) -> i32 {
    (a - b) as i32
}

/// Stable top-down merge sort, exactly as glibc's `msort` (so that a comparison that is not a
/// total order gives the same result as trec_eval's `qsort`).
fn merge_sort<T: Copy>(v: &mut [T], cmp: impl Fn(&T, &T) -> i32 + Copy) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (a, b) = v.split_at_mut(n1);
        merge_sort(a, cmp);
        merge_sort(b, cmp);
    }
    let mut out: Vec<T> = Vec::with_capacity(n);
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < n {
        if cmp(&v[i], &v[j]) <= 0 {
            out.push(v[i]);
            i += 1;
        } else {
            out.push(v[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&v[i..n1]);
    out.extend_from_slice(&v[j..]);
    v.copy_from_slice(&out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_gains_are_levels() {
        let g = Gains::new(&[(0, 5), (2, 1), (3, 2)], &[]);
        let levels: Vec<(i64, f64, u64)> = g
            .levels()
            .iter()
            .map(|r| (r.level, r.gain, r.count))
            .collect();
        assert_eq!(levels, [(0, 0.0, 5), (1, 1.0, 0), (2, 2.0, 1), (3, 3.0, 2)]);
        let mut ideal = g.ideal();
        let seq: Vec<f64> = (0..5).map(|_| ideal.advance()).collect();
        assert_eq!(seq, [3.0, 3.0, 2.0, 0.0, 0.0]);
        assert_eq!(g.gain(-1), 0.0);
    }

    #[test]
    fn mapped_gains_keep_given_order_when_less_than_one_apart() {
        // level 1 -> 0.5 and level 0 -> 0 compare "equal": mapped level stays first.
        let g = Gains::new(&[(0, 1), (1, 1)], &[(1, 0.5)]);
        let order: Vec<i64> = g.levels().iter().map(|r| r.level).collect();
        assert_eq!(order, [1, 0]);
        let g = Gains::new(&[(0, 1), (1, 1), (2, 1)], &[(2, 9.0), (1, 3.0)]);
        let order: Vec<i64> = g.levels().iter().map(|r| r.level).collect();
        assert_eq!(order, [0, 1, 2]);
    }
}
