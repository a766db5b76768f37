//! The HTML report of a session log (`strata report`): one self-contained page a person can
//! open anywhere — a summary, a surface map, every replacement drawn as the span it shadowed,
//! token usage per step as a bar chart, and a timeline of every event by turn and step (of the
//! newest [`MAX_LISTED_EVENTS`] on a longer log).
//!
//! Why it is shaped this way:
//! - **Self-contained.** The stylesheet and script are compiled in (`include_str!`) and inlined;
//!   charts are inline SVG. The page loads nothing: no network, no CDN, no fonts, no images,
//!   and a Content-Security-Policy meta tag forbids it from trying.
//! - **Every log string is escaped** ([`escape_into`]) before it enters the page, in text and in
//!   (always quoted) attributes; no log data is ever placed inside the `<script>` or `<style>`.
//! - **Bounded size.** A 100,000-event log must still give a page a browser opens. Text per
//!   event is a preview whose length shrinks as the log grows ([`Budget`]); the full text is
//!   folded into a `<details>` only while the log is small; big logs start with their turns
//!   collapsed (closed `<details>` are not laid out) and charts bucket their bars and columns.
//!   Past 100,000 events the timeline lists rows for the newest 100,000 only and sums up the
//!   rest in one line; the charts and tables above it still cover the whole log.
//! - The data comes from the library ([`LogStats`]: places, standing, usage, the fold); this
//!   module only draws it, so no surface logic lives here.

use std::sync::Arc;

use strata_core::{Event, LogStats, SessionHeader};

use crate::output;

mod charts;
mod replacements;
mod surface_map;
mod timeline;

use charts::{counts, token_charts};
use replacements::replacements;
use surface_map::surface_map;
use timeline::timeline;

/// What one report shows: the log, named, and the statistics the library computed over it.
pub struct Report<'a> {
    /// How the log was named on the command line (a path or a store reference).
    pub label: &'a str,
    /// The session header.
    pub header: &'a SessionHeader,
    /// The generation's name (`v0` … `V3`).
    pub generation: &'a str,
    /// The stored events, from seq 0.
    pub events: &'a [Arc<Event>],
    /// [`strata_core::log_stats`] over `events`.
    pub stats: &'a LogStats,
}

/// How much text and markup a report spends per event, chosen from the log's size so that the
/// page stays openable: about 4 MB of preview text and 4 MB of folded full text at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Characters of each event's one-line preview.
    pub preview_chars: usize,
    /// Characters of each event's full text, folded under the preview; 0 means no fold.
    pub detail_chars: usize,
    /// How many turns start expanded.
    pub open_turns: usize,
    /// The first event the timeline lists a row for (0: every event). A log longer than
    /// [`MAX_LISTED_EVENTS`] lists its newest events; the older ones are summed up in one line.
    pub listed_from: usize,
}

/// Total characters of preview text a report spends over all events.
const PREVIEW_BUDGET: usize = 4_000_000;
/// Total characters of folded full text a report spends over all events.
const DETAIL_BUDGET: usize = 4_000_000;
/// Logs up to this many events start with every turn expanded.
const ALL_OPEN_EVENTS: usize = 3_000;
/// Most events the timeline lists a row for: the newest. A page with a row for each of a
/// 100,000-event log opens in a browser in seconds; one for a million events was 157 MB and
/// took headless Chromium over two minutes to load.
pub const MAX_LISTED_EVENTS: usize = 100_000;

impl Budget {
    /// The budget for a log of `n_events` events.
    pub fn for_events(n_events: usize) -> Budget {
        let listed_from = n_events.saturating_sub(MAX_LISTED_EVENTS);
        let n = (n_events - listed_from).max(1);
        let preview_chars = (PREVIEW_BUDGET / n).clamp(40, 200);
        let detail = (DETAIL_BUDGET / n).min(4_000);
        Budget {
            preview_chars,
            detail_chars: if detail > preview_chars { detail } else { 0 },
            open_turns: if n_events <= ALL_OPEN_EVENTS {
                usize::MAX
            } else {
                2
            },
            listed_from,
        }
    }
}

/// Renders the whole page.
pub fn render(report: &Report) -> String {
    render_with(report, Budget::for_events(report.events.len()))
}

/// Renders the whole page within `budget`.
pub fn render_with(report: &Report, budget: Budget) -> String {
    let listed = report.events.len().saturating_sub(budget.listed_from);
    let mut page = Html::with_capacity(64 * 1024 + listed * 200);
    page.raw(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>strata report · ",
    );
    page.text(report.header.id());
    page.raw("</title>\n<style>\n");
    page.raw(include_str!("report/style.css"));
    page.raw("</style>\n</head>\n<body>\n<main>\n");
    summary(&mut page, report);
    legend(&mut page);
    surface_map(&mut page, report);
    replacements(&mut page, report);
    token_charts(&mut page, report.stats);
    counts(&mut page, report.stats);
    timeline(&mut page, report, budget);
    page.raw("</main>\n<script>\n");
    page.raw(include_str!("report/script.js"));
    page.raw("</script>\n</body>\n</html>\n");
    page.0
}

/// Appends `text` to `out` with every character that is special in HTML text or in a quoted
/// attribute replaced by its entity, and control characters (other than newline and tab) by
/// U+FFFD, so log text can never open a tag, close an attribute or start a script.
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// `text` cut to at most `max_chars` characters (never inside one), and whether it was cut.
pub fn clip(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// The page being built; [`Html::text`] is the only way log text gets in.
struct Html(String);

impl Html {
    /// An empty page with room for `bytes` (one growth-free pass on typical logs).
    fn with_capacity(bytes: usize) -> Html {
        Html(String::with_capacity(bytes))
    }

    /// Markup written by this module (never log text).
    fn raw(&mut self, markup: &str) {
        self.0.push_str(markup);
    }

    /// Text from the log or the command line, escaped.
    fn text(&mut self, text: &str) {
        escape_into(&mut self.0, text);
    }

    /// A number (or any value whose display has no HTML-special characters).
    fn num(&mut self, value: impl std::fmt::Display) {
        use std::fmt::Write;
        // Writing into a String cannot fail.
        let _ = write!(self.0, "{value}");
    }
}

/// The header (session id, input, generation, creation time) and the headline counts.
fn summary(page: &mut Html, report: &Report) {
    let stats = report.stats;
    let header = report.header;
    page.raw("<header>\n<h1>Session <span class=\"mono\">");
    page.text(header.id());
    page.raw("</span></h1>\n<p class=\"meta\"><span class=\"mono\">");
    page.text(report.label);
    page.raw("</span> · ");
    page.text(report.generation);
    page.raw(" · created ");
    page.text(&output::utc_time(header.created_at()));
    page.raw(" UTC");
    if let Some(cwd) = header.cwd() {
        page.raw(" · cwd <span class=\"mono\">");
        page.text(cwd);
        page.raw("</span>");
    }
    if let Some(parent) = header.parent_session() {
        page.raw(" · forked from <span class=\"mono\">");
        page.text(parent);
        page.raw("</span>");
    }
    page.raw("</p>\n</header>\n<section class=\"cards\">\n");
    let card = |page: &mut Html, class: &str, value: &str, label: &str| {
        page.raw("<div class=\"card ");
        page.raw(class);
        page.raw("\"><b>");
        page.text(value);
        page.raw("</b><span>");
        page.text(label);
        page.raw("</span></div>\n");
    };
    card(page, "", &stats.n_events.to_string(), "events");
    let turns = match stats.open_turn {
        Some(turn) => format!("{} (turn {turn} open)", stats.n_turns),
        None => stats.n_turns.to_string(),
    };
    card(page, "", &turns, "turns");
    card(page, "", &stats.n_steps.to_string(), "steps");
    card(
        page,
        "c-v",
        &stats.fold.nodes.len().to_string(),
        "surface nodes",
    );
    card(page, "c-s", &stats.n_shadowed().to_string(), "shadowed");
    card(
        page,
        "c-r",
        &stats.fold.replacements.len().to_string(),
        "replacements",
    );
    // Usage cards take the colour of their chart (the first MAX_CHARTS keys are charted).
    for (index, (key, total)) in stats.usage.iter().enumerate() {
        let class = ["k0", "k1", "k2", "k3"].get(index).copied().unwrap_or("");
        card(page, class, &group_digits(*total), key);
    }
    page.raw("</section>\n");
}

/// What each colour means, and the toolbar the script fills in.
fn legend(page: &mut Html) {
    page.raw(
        "<section class=\"legend\" aria-label=\"legend\">\n\
         <span><i class=\"sw v\"></i><b>surface node</b> — the model sees it in the next request</span>\n\
         <span><i class=\"sw s\"></i><b>shadowed</b> — once on the surface, replaced by a later event (nothing is deleted)</span>\n\
         <span><i class=\"sw l\"></i><b>log only</b> — bookkeeping the model never sees (turns, steps, requests, tool calls)</span>\n\
         <span><i class=\"sw r\"></i><b>replacement</b> — an event that took the place of a span of surface nodes</span>\n\
         <div id=\"toolbar\"></div>\n</section>\n",
    );
}

/// `1234567` as `1,234,567`.
fn group_digits(value: u64) -> String {
    let digits = value.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
mod tests;
