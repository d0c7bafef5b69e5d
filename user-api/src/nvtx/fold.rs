//! Folding of NVTX range names (`METRON_NVTX_FOLD`), so the summary groups op instances.
//!
//! PyTorch's `emit_nvtx()` names every op instance uniquely (`aten::addmm, seq = 45,
//! op_id = 32`, and `, sizes = [[...]]` with `record_shapes=True`): a 20-step training run
//! gives thousands of one-count regions. With the default `pytorch` those suffixes are
//! dropped (`aten::addmm`), a user regex removes its matches instead, `off` keeps names as
//! given. A folded region keeps its raw name as the annotation `nvtx.name`. Folding happens
//! when a name is interned (a cache miss, off the cached hot path).

use std::sync::OnceLock;

/// How names are folded.
pub(crate) enum Fold {
    /// Names as given.
    Off,
    /// PyTorch's `, seq = N`, `, op_id = N`, `, sizes = [...]` suffixes dropped.
    PyTorch,
    /// Every match of the expression removed.
    Regex(regex::Regex),
}

impl Fold {
    /// From the setting's text (`Err` says why a regex was refused; folding is then off).
    pub(crate) fn parse(raw: Option<&str>) -> Result<Fold, String> {
        match raw.map(str::trim) {
            None | Some("") | Some("pytorch") | Some("on") | Some("true") | Some("1") => {
                Ok(Fold::PyTorch)
            }
            Some("off") | Some("none") | Some("false") | Some("0") => Ok(Fold::Off),
            Some(re) => regex::Regex::new(re)
                .map(Fold::Regex)
                .map_err(|e| format!("METRON_NVTX_FOLD={re:?} is not a regular expression ({e}); accepted: pytorch, off, or a regex whose matches are removed; NVTX names are not folded")),
        }
    }

    /// The folded name, or `None` when `text` stays as it is.
    pub(crate) fn apply(&self, text: &str) -> Option<String> {
        let folded = match self {
            Fold::Off => return None,
            Fold::PyTorch => pytorch(text),
            Fold::Regex(re) => re.replace_all(text, "").into_owned(),
        };
        (folded != text && !folded.is_empty()).then_some(folded)
    }
}

/// Drops `, seq = <digits>`, `, op_id = <digits>` anywhere and `, sizes = [...]` to the end.
fn pytorch(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(", ") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        let mut skipped = None;
        for key in ["seq = ", "op_id = "] {
            if let Some(num) = tail.strip_prefix(key) {
                let n = num.bytes().take_while(u8::is_ascii_digit).count();
                if n > 0 {
                    skipped = Some(&num[n..]);
                }
            }
        }
        if tail.starts_with("sizes = [") {
            return out;
        }
        match skipped {
            Some(after) => rest = after,
            None => {
                out.push_str(", ");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

static FOLD: OnceLock<Fold> = OnceLock::new();

/// The folding in effect (the setting read once; a bad regex is said once on stderr).
pub(crate) fn current() -> &'static Fold {
    FOLD.get_or_init(
        || match Fold::parse(std::env::var("METRON_NVTX_FOLD").ok().as_deref()) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("metron: {e}");
                Fold::Off
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_instances_fold_to_their_op() {
        let f = Fold::parse(None).unwrap();
        assert_eq!(
            f.apply("aten::addmm, seq = 45, op_id = 32").as_deref(),
            Some("aten::addmm")
        );
        assert_eq!(
            f.apply("autograd::engine::evaluate_function: AddmmBackward0, op_id = 24")
                .as_deref(),
            Some("autograd::engine::evaluate_function: AddmmBackward0")
        );
        assert_eq!(
            f.apply("aten::mm, seq = 3, op_id = 7, sizes = [[2, 3], [3, 4]]")
                .as_deref(),
            Some("aten::mm")
        );
        // Not PyTorch's pattern: unchanged.
        assert_eq!(f.apply("aten::t"), None);
        assert_eq!(f.apply("load, seq = x"), None);
        assert_eq!(f.apply("a, b, c"), None);
    }

    #[test]
    fn a_user_regex_removes_its_matches_and_off_keeps_names() {
        let f = Fold::parse(Some(r"#\d+$")).unwrap();
        assert_eq!(f.apply("step#17").as_deref(), Some("step"));
        assert_eq!(f.apply("step"), None);
        let off = Fold::parse(Some("off")).unwrap();
        assert_eq!(off.apply("aten::addmm, seq = 45, op_id = 32"), None);
        let bad = Fold::parse(Some("(")).err().unwrap();
        assert!(bad.contains("not a regular expression"), "{bad}");
    }
}
