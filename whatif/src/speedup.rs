//! The changes a what-if applies: `NAME=P%` makes every kernel, region or API call whose name
//! matches NAME take P % less time.

use crate::graph::{Graph, Kind};

/// One `NAME=P%`.
#[derive(Clone, Debug, PartialEq)]
pub struct Speedup {
    /// A name, or a pattern with `*` (any run of characters).
    pub pattern: String,
    /// The share of the time removed, 0.0 to 1.0.
    pub fraction: f64,
    /// Match the name exactly (a `*` in it is itself, as in C++ names).
    pub exact: bool,
}

impl Speedup {
    /// Parses `NAME=P%` (or `NAME=P`), P from 0 to 100.
    pub fn parse(text: &str) -> Result<Speedup, String> {
        let accepted = "a speedup is NAME=P% where NAME is a kernel, region or API name (`*` matches any characters) and P is from 0 to 100, e.g. gemm_kernel=50%";
        let (name, percent) = text
            .rsplit_once('=')
            .ok_or_else(|| format!("{text:?}: no '='; {accepted}"))?;
        let number: f64 = percent
            .trim()
            .trim_end_matches('%')
            .trim()
            .parse()
            .map_err(|_| format!("{text:?}: {percent:?} is not a percentage; {accepted}"))?;
        if name.trim().is_empty() || !(0.0..=100.0).contains(&number) {
            return Err(format!("{text:?}: {accepted}"));
        }
        Ok(Speedup {
            pattern: name.trim().to_string(),
            fraction: number / 100.0,
            exact: false,
        })
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        if self.exact {
            return self.pattern == name;
        }
        metron_export::wildcard::wildcard_match(&self.pattern, name, '*')
    }
}

/// The speedups of a what-if, resolved against a graph's names.
#[derive(Clone, Debug, Default)]
pub struct Speedups {
    /// The changes.
    pub list: Vec<Speedup>,
    /// Per name index of the graph, the factor its calls and operations take.
    name_factor: Vec<f64>,
    /// Per region stack of the graph, the factor CPU time under it takes.
    stack_factor: Vec<f64>,
}

impl Speedups {
    /// No change: the replay of the run as recorded.
    pub fn none(g: &Graph) -> Speedups {
        Speedups::resolve(Vec::new(), g).expect("no speedup always resolves")
    }

    /// Resolves `list` against `g`; a pattern that matches nothing is an error that lists
    /// some of the names it could have matched.
    pub fn resolve(list: Vec<Speedup>, g: &Graph) -> Result<Speedups, String> {
        let mut name_factor = vec![1.0; g.names.len()];
        let mut used = vec![false; list.len()];
        for (i, name) in g.names.iter().enumerate().skip(1) {
            for (k, s) in list.iter().enumerate() {
                if s.matches(name) {
                    name_factor[i] *= 1.0 - s.fraction;
                    used[k] = true;
                }
            }
        }
        if let Some(k) = used.iter().position(|u| !u) {
            return Err(format!(
                "{:?} matches no kernel, region or API call of this run; some of its names: {}",
                list[k].pattern,
                some_names(g)
            ));
        }
        let stack_factor = g
            .stacks
            .iter()
            .map(|stack| {
                let mut names: Vec<usize> = stack.clone();
                names.sort_unstable();
                names.dedup();
                names.iter().map(|&n| name_factor[n]).product()
            })
            .collect();
        Ok(Speedups {
            list,
            name_factor,
            stack_factor,
        })
    }

    /// Node `n`'s own duration under the speedups.
    pub fn duration(&self, g: &Graph, n: usize) -> i64 {
        let node = &g.nodes[n];
        match node.kind {
            Kind::Work { .. } => node
                .pieces
                .iter()
                .map(|p| scale(p.len, self.stack_factor[p.stack]))
                .sum(),
            _ => scale(node.base, self.name_factor[node.name]),
        }
    }

    /// The length of piece `k` of `Work` node `n` under the speedups.
    pub fn piece(&self, g: &Graph, n: usize, k: usize) -> i64 {
        let p = g.nodes[n].pieces[k];
        scale(p.len, self.stack_factor[p.stack])
    }

    /// Per piece boundary of `Work` node `n`, the length before it under the speedups
    /// (`pieces + 1` values, from 0 to the node's duration).
    pub fn prefixes(&self, g: &Graph, n: usize) -> Vec<i64> {
        let mut out = Vec::with_capacity(g.nodes[n].pieces.len() + 1);
        let mut sum = 0;
        out.push(0);
        for k in 0..g.nodes[n].pieces.len() {
            sum += self.piece(g, n, k);
            out.push(sum);
        }
        out
    }
}

fn scale(ns: i64, factor: f64) -> i64 {
    if factor == 1.0 {
        ns
    } else {
        (ns as f64 * factor).round() as i64
    }
}

/// A few of the graph's kernel, region and API names, for an error message.
fn some_names(g: &Graph) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for n in &g.nodes {
        let name = g.names[n.name].as_str();
        if !name.is_empty() && !seen.contains(&name) {
            seen.push(name);
        }
        if seen.len() >= 8 {
            break;
        }
    }
    for r in &g.regions {
        let name = g.names[r.name].as_str();
        if seen.len() < 12 && !seen.contains(&name) {
            seen.push(name);
        }
    }
    if seen.is_empty() {
        "(none: the run recorded no GPU API call, kernel or region)".to_string()
    } else {
        seen.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches() {
        let s = Speedup::parse("gemm*=25%").unwrap();
        assert_eq!(s.fraction, 0.25);
        assert!(s.matches("gemm_kernel"));
        assert!(!s.matches("my_gemm"));
        assert!(Speedup::parse("*reduce*=50")
            .unwrap()
            .matches("block_reduce_sum"));
        assert!(Speedup::parse("step=150%").is_err());
        assert!(Speedup::parse("step").unwrap_err().contains("NAME=P%"));
        assert!(Speedup::parse("=10%").is_err());
    }
}
