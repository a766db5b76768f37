//! Terminal colours for the demo: on only when stdout is a terminal and `NO_COLOR` is unset or
//! empty (<https://no-color.org>), so pipes, logs and tests get plain text.

use std::io::IsTerminal;

/// Wraps text in ANSI styles when colours are on; returns it unchanged otherwise.
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    enabled: bool,
}

impl Paint {
    /// Colours when stdout is a terminal and `NO_COLOR` does not ask otherwise.
    pub fn detect() -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        Paint {
            enabled: !no_color && std::io::stdout().is_terminal(),
        }
    }

    /// Bold.
    pub fn bold(self, text: &str) -> String {
        self.wrap("1", text)
    }

    /// Dim, for secondary detail.
    pub fn dim(self, text: &str) -> String {
        self.wrap("2", text)
    }

    /// Red: errors and crash closers.
    pub fn red(self, text: &str) -> String {
        self.wrap("31", text)
    }

    /// Green: the model's answers.
    pub fn green(self, text: &str) -> String {
        self.wrap("32", text)
    }

    /// Yellow: tool activity.
    pub fn yellow(self, text: &str) -> String {
        self.wrap("33", text)
    }

    /// Magenta: rewrites (checkpoints, pruned results).
    pub fn magenta(self, text: &str) -> String {
        self.wrap("35", text)
    }

    /// Cyan: what the user typed, and commands to run.
    pub fn cyan(self, text: &str) -> String {
        self.wrap("36", text)
    }

    fn wrap(self, code: &str, text: &str) -> String {
        if self.enabled {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}
