//! Name patterns with one wildcard character that matches any run of characters: the kernel,
//! region and API names of `metron whatif --faster` (`*`) and the causal profiler's binary and
//! source scopes (`%`, as Coz writes them). One matcher, so that both read a pattern the same
//! way; each caller picks its wildcard because `*` is an ordinary character in Coz's scopes
//! and `%` in kernel names.

/// Whether `text` matches `pattern`, where `wildcard` matches any run of characters (none
/// included) and every other character matches itself. A pattern without the wildcard matches
/// only the text equal to it.
pub fn wildcard_match(pattern: &str, text: &str, wildcard: char) -> bool {
    let parts: Vec<&str> = pattern.split(wildcard).collect();
    let [first, .., last] = parts[..] else {
        return text == pattern;
    };
    // The prefix and the suffix may not overlap in the text: "a*a" does not match "a".
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    // The middle parts in order, each as early as it occurs: the leftmost match leaves the
    // most room to the parts after it, so no backtracking is needed.
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::wildcard_match;

    #[test]
    fn the_wildcard_matches_any_run_and_the_rest_itself() {
        assert!(wildcard_match("gemm*", "gemm_kernel", '*'));
        assert!(!wildcard_match("gemm*", "my_gemm", '*'));
        assert!(wildcard_match("*reduce*", "block_reduce_sum", '*'));
        assert!(wildcard_match("*", "", '*'));
        assert!(wildcard_match("a*b*c", "abc", '*'));
        assert!(wildcard_match("a*b*c", "a_c_b_c", '*'));
        assert!(!wildcard_match("a*b*c", "a_c_c", '*'));
        assert!(!wildcard_match("a*a", "a", '*'));
        assert!(wildcard_match("step", "step", '*'));
        assert!(!wildcard_match("step", "steps", '*'));
        // Another wildcard leaves `*` an ordinary character (a C++ name in a Coz scope).
        assert!(wildcard_match("%operator*%", "T::operator*(int)", '%'));
        assert!(!wildcard_match("op*", "operator", '%'));
        assert!(wildcard_match(
            "%/tests/causal/%",
            "/w/tests/causal/b.c",
            '%'
        ));
        assert!(!wildcard_match("%.c", "x/y.h", '%'));
    }
}
