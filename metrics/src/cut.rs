//! Cutting user input that an error message quotes, so one hostile value (a 40 KB expression,
//! a setting pasted twice) cannot turn a message into a 40 KB stderr line.

use std::borrow::Cow;

/// The most characters of user input one message quotes; longer input is cut there and
/// `…` is appended.
pub const MAX_QUOTED_CHARS: usize = 80;

/// `text` cut to [`MAX_QUOTED_CHARS`] characters plus `…` when it is longer; unchanged
/// (borrowed) otherwise. Cuts on a character boundary.
///
/// ```
/// use metron_metrics::cut_input;
/// assert_eq!(cut_input("IPC"), "IPC");
/// let long = "(".repeat(20_000);
/// assert_eq!(cut_input(&long), format!("{}…", "(".repeat(80)));
/// ```
pub fn cut_input(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        None => Cow::Borrowed(text),
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_up_to_the_limit_is_kept_and_longer_input_is_cut_with_an_ellipsis() {
        let exact = "a".repeat(MAX_QUOTED_CHARS);
        assert!(matches!(cut_input(&exact), Cow::Borrowed(_)));
        let long = "é".repeat(MAX_QUOTED_CHARS + 1);
        let cut = cut_input(&long);
        assert_eq!(cut.chars().count(), MAX_QUOTED_CHARS + 1);
        assert!(cut.ends_with("é…"), "{cut}");
        assert_eq!(cut_input(""), "");
    }
}
