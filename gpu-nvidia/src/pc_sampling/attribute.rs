//! Attribution at the end of the run: each table entry's samples by plain stall reason, to
//! its kernel's region(s) (the launch's when the samples carry its correlation id, else shared
//! in proportion to GPU time) and source line.

use super::*;

// ---------------------------------------------------------------------------------------------
// Attribution and outputs (pure: tested without a GPU).

/// A kernel launch as the kernel records saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// Demangled kernel name (as in `kernels.csv`).
    pub kernel: String,
    /// Correlation id.
    pub correlation: u32,
    /// The region open at the launch (`(no region)` when none).
    pub region: String,
    /// GPU time, ns.
    pub duration_ns: u64,
}

/// Splits `total` among `weights` in proportion, integers summing to `total` (largest
/// remainder; ties to the earlier weight). All-zero weights split evenly.
pub fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    if weights.is_empty() {
        return Vec::new();
    }
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    let w: Vec<u128> = if sum == 0 {
        vec![1; weights.len()]
    } else {
        weights.iter().map(|&w| u128::from(w)).collect()
    };
    let sum: u128 = w.iter().sum();
    let mut out: Vec<u64> = w
        .iter()
        .map(|&x| (u128::from(total) * x / sum) as u64)
        .collect();
    let mut rest = total - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(u128::from(total) * w[i] % sum));
    for i in order {
        if rest == 0 {
            break;
        }
        out[i] += 1;
        rest -= 1;
    }
    out
}

/// A PC's source: file, line, and the `(file, line)`s it is inlined at, innermost first
/// (empty when not inlined).
pub type Source = (String, u32, Vec<(String, u32)>);

/// Resolves a PC (cubin CRC, function, offset) to its [`Source`]; `None` without line
/// information.
pub type SourceOf<'a> = dyn FnMut(u64, &CString, u64) -> Option<Source> + 'a;

/// The rows of a run: each table entry's samples by plain reason (its `_not_issued` twin as
/// detail), in its kernel's region(s), at its source line. `reasons`: CUPTI's (index, name).
pub fn attribute(
    table: &Table,
    functions: &Functions,
    reasons: &[(u32, String)],
    launches: &[Launch],
    source: &mut SourceOf<'_>,
) -> Vec<Row> {
    let mut name_of: Vec<Option<&str>> = vec![None; MAX_REASON_INDEX];
    for (i, n) in reasons {
        if (*i as usize) < MAX_REASON_INDEX {
            name_of[*i as usize] = Some(n);
        }
    }
    // plain index → not-issued index
    let mut twin: Vec<Option<usize>> = vec![None; MAX_REASON_INDEX];
    for (i, n) in reasons {
        if is_plain_reason(n) {
            let ni = format!("{n}_not_issued");
            twin[*i as usize % MAX_REASON_INDEX] = reasons
                .iter()
                .find(|(_, m)| *m == ni)
                .map(|(j, _)| *j as usize);
        }
    }
    let by_corr: HashMap<u32, &Launch> = launches.iter().map(|l| (l.correlation, l)).collect();
    // kernel → [(region, GPU time)] in first-seen order
    let mut regions_of: HashMap<&str, Vec<(&str, u64)>> = HashMap::new();
    for l in launches {
        let v = regions_of.entry(l.kernel.as_str()).or_default();
        match v.iter_mut().find(|(r, _)| *r == l.region) {
            Some(e) => e.1 += l.duration_ns,
            None => v.push((l.region.as_str(), l.duration_ns)),
        }
    }
    let mut demangled: HashMap<(u64, u32), String> = HashMap::new();
    let mut lines: HashMap<(u64, u32, u64), Option<Source>> = HashMap::new();
    let mut rows = Vec::new();
    let mut entries: Vec<(PcKey, &[u64])> = table.entries().collect();
    entries.sort_by_key(|(k, _)| (k.crc, k.function_index, k.pc_offset, k.correlation));
    for (key, counts) in entries {
        let fname = functions.name(key.crc, key.function_index);
        let function = fname.map_or_else(
            || format!("function#{}", key.function_index),
            |c| c.to_string_lossy().into_owned(),
        );
        let kernel = demangled
            .entry((key.crc, key.function_index))
            .or_insert_with(|| metron::gpu::demangle_kernel(&function))
            .clone();
        let (file, line, inlined_at) = match fname {
            Some(c) => lines
                .entry((key.crc, key.function_index, key.pc_offset))
                .or_insert_with(|| source(key.crc, c, key.pc_offset))
                .clone()
                .unwrap_or_default(),
            None => Source::default(),
        };
        // The region shares of this entry.
        let joined = key.correlation != 0 && by_corr.contains_key(&key.correlation);
        let shares: Vec<(String, u64)> = match by_corr.get(&key.correlation) {
            Some(l) if joined => vec![(l.region.clone(), 1)],
            _ => match regions_of.get(kernel.as_str()) {
                Some(v) => v.iter().map(|(r, d)| (r.to_string(), *d)).collect(),
                None => vec![("(no region)".to_string(), 1)],
            },
        };
        let weights: Vec<u64> = shares.iter().map(|(_, w)| *w).collect();
        for (i, &n) in counts.iter().enumerate() {
            let Some(name) = name_of[i] else { continue };
            if n == 0 || !is_plain_reason(name) {
                continue;
            }
            let ni = twin[i].map_or(0, |j| counts[j]);
            let parts = apportion(n, &weights);
            let ni_parts = apportion(ni, &weights);
            for ((region, _), (s, q)) in shares.iter().zip(parts.into_iter().zip(ni_parts)) {
                if s == 0 {
                    continue;
                }
                rows.push(Row {
                    kernel: kernel.clone(),
                    region: region.clone(),
                    function: function.clone(),
                    pc_offset: key.pc_offset,
                    file: file.clone(),
                    line,
                    inlined_at: inlined_at.clone(),
                    reason: short_reason(name).to_string(),
                    samples: s,
                    not_issued: q,
                    correlation: if joined { key.correlation } else { 0 },
                });
            }
        }
    }
    rows
}
