//! Folding what a flame graph cannot show: frames narrower than about one pixel.
//!
//! inferno's `--minwidth` leaves out frames under a width and says nothing. Here each parent's
//! narrow callees are merged into one frame, `[N stacks folded]`, that keeps their samples, so
//! the picture stays small and fast for 10⁵ distinct stacks (a program whose calls take
//! many paths draws a frame per path and depth otherwise) and every sample is still under the
//! root. What was folded is counted ([`Folding`]) and said in the picture's subtitle and in
//! `metadata.json` (`outputs.report.folded`).

use std::collections::HashMap;
use std::fmt::Write as _;

/// Frames narrower than this share of all samples are folded: one pixel of inferno's default
/// 1,200-pixel width.
pub const MIN_SHARE: f64 = 1.0 / 1200.0;

/// What [`fold_narrow`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Folding {
    /// Distinct stacks read.
    pub stacks: usize,
    /// Stacks cut short, their narrow part merged into a `[N stacks folded]` frame.
    pub stacks_folded: usize,
    /// Samples read (all of them are still in the picture).
    pub samples: u64,
    /// Samples now under a `[N stacks folded]` frame.
    pub samples_folded: u64,
    /// Lines handed to the flame graph.
    pub lines_drawn: usize,
}

impl Folding {
    /// The picture's subtitle, or `None` when nothing was folded.
    pub fn subtitle(&self) -> Option<String> {
        (self.stacks_folded > 0).then(|| {
            format!(
                "{} of {} distinct stacks folded where narrower than {:.2} % ({} of {} samples, in [N stacks folded] frames)",
                self.stacks_folded,
                self.stacks,
                100.0 * MIN_SHARE,
                self.samples_folded,
                self.samples
            )
        })
    }
}

/// One stack: its frames (interned) and count.
struct Line {
    frames: Vec<u32>,
    count: u64,
}

/// `folded` (one `a;b;c count` per line) with every frame narrower than `min_share` of the
/// samples merged into one `[N stacks folded]` frame under its parent; lines that do not
/// parse are left out and counted as stacks neither drawn nor folded (never silently: the
/// caller reports [`Folding::stacks`] against the lines it gave).
pub fn fold_narrow(folded: &str, min_share: f64) -> (String, Folding) {
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut names: Vec<&str> = Vec::new();
    let mut lines: Vec<Line> = Vec::new();
    for l in folded.lines() {
        let Some((stack, count)) = l.trim_end().rsplit_once(' ') else {
            continue;
        };
        let Ok(count) = count.parse::<u64>() else {
            continue;
        };
        let frames = stack
            .split(';')
            .map(|f| {
                *ids.entry(f).or_insert_with(|| {
                    names.push(f);
                    (names.len() - 1) as u32
                })
            })
            .collect();
        lines.push(Line { frames, count });
    }
    // Stacks sharing a prefix are neighbours once sorted (by frame id: any order groups).
    lines.sort_unstable_by(|a, b| a.frames.cmp(&b.frames));
    let samples: u64 = lines.iter().map(|l| l.count).sum();
    let mut folding = Folding {
        stacks: lines.len(),
        samples,
        ..Folding::default()
    };
    let min = (samples as f64 * min_share).ceil().max(1.0) as u64;
    let mut out = String::new();
    let mut prefix = String::new();
    fold_level(&lines, 0, min, &names, &mut prefix, &mut out, &mut folding);
    folding.lines_drawn = out.lines().count();
    (out, folding)
}

/// Writes the stacks of `lines` (which share their first `depth` frames, spelled in `prefix`)
/// from frame `depth` on.
fn fold_level(
    lines: &[Line],
    depth: usize,
    min: u64,
    names: &[&str],
    prefix: &mut String,
    out: &mut String,
    folding: &mut Folding,
) {
    let (mut narrow_stacks, mut narrow_samples) = (0usize, 0u64);
    let mut i = 0;
    while i < lines.len() {
        let Some(&frame) = lines[i].frames.get(depth) else {
            // A stack that ends here: its samples are this prefix's own.
            let _ = writeln!(out, "{prefix} {}", lines[i].count);
            i += 1;
            continue;
        };
        let mut j = i;
        let mut total = 0;
        while j < lines.len() && lines[j].frames.get(depth) == Some(&frame) {
            total += lines[j].count;
            j += 1;
        }
        if total >= min {
            let len = prefix.len();
            if depth > 0 {
                prefix.push(';');
            }
            prefix.push_str(names[frame as usize]);
            fold_level(&lines[i..j], depth + 1, min, names, prefix, out, folding);
            prefix.truncate(len);
        } else {
            narrow_stacks += j - i;
            narrow_samples += total;
        }
        i = j;
    }
    if narrow_stacks > 0 {
        folding.stacks_folded += narrow_stacks;
        folding.samples_folded += narrow_samples;
        let sep = if depth > 0 { ";" } else { "" };
        let _ = writeln!(
            out,
            "{prefix}{sep}[{narrow_stacks} stacks folded] {narrow_samples}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_callees_are_merged_into_one_counted_frame() {
        let text = "p;main;hot 90\np;main;a 4\np;main;b;c 3\np;main;b;d 2\np;idle 1\n";
        let (out, f) = fold_narrow(text, 0.05);
        // 5 % of 100 samples: `idle` (1), `a` (4), `c` (3) and `d` (2) are narrower; `b` (5)
        // is not, so its two callees fold under it.
        assert_eq!(
            out,
            "p;main;hot 90\np;main;b;[2 stacks folded] 5\np;main;[1 stacks folded] 4\np;[1 stacks folded] 1\n"
        );
        let total: u64 = out
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 100);
        assert_eq!(
            f,
            Folding {
                stacks: 5,
                stacks_folded: 4,
                samples: 100,
                samples_folded: 10,
                lines_drawn: 4,
            }
        );
    }
}
