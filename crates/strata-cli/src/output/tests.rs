//! Unit tests of the plain-text output helpers.

use super::{visible, visible_lines};

#[test]
fn visible_spells_out_what_a_terminal_would_act_on() {
    assert_eq!(visible("plain id-1.2_x"), "plain id-1.2_x");
    assert!(matches!(
        visible("héllo wörld 🦀"),
        std::borrow::Cow::Borrowed(_)
    ));
    assert_eq!(
        visible("evil\u{1b}[31mRED\0nul\nnl\rcr\u{7f}\u{7}bel"),
        "evil\\u{1b}[31mRED\\0nul\\nnl\\rcr\\u{7f}\\u{7}bel"
    );
    // C1 controls (U+009B is CSI on some terminals), bidi overrides and isolates, separators.
    assert_eq!(
        visible("a\u{9b}b\u{202e}c\u{2066}d\u{2028}e\u{200f}"),
        "a\\u{9b}b\\u{202e}c\\u{2066}d\\u{2028}e\\u{200f}"
    );
    // Tabs and backslashes stay as they are.
    assert_eq!(visible("C:\\work\tx"), "C:\\work\tx");
}

#[test]
fn visible_lines_keeps_the_line_breaks_only() {
    assert_eq!(
        visible_lines("one\u{1b}[2J\ntwo\r\n"),
        "one\\u{1b}[2J\ntwo\\r\n"
    );
}
