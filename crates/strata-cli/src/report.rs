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

use std::collections::HashMap;
use std::sync::Arc;

use strata_core::{
    projected_message, Event, EventType, LogStats, Replacement, SessionHeader, Standing,
};

use crate::output;

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
/// Most bars a token chart draws; more steps are averaged into buckets.
const MAX_BARS: usize = 400;
/// Most columns the surface map draws; more events share a column.
const MAX_COLUMNS: usize = 1_000;
/// Most replacements drawn in the span chart (all of them are still listed, up to the next cap).
const MAX_DRAWN_REPLACEMENTS: usize = 1_500;
/// Most lanes the span chart stacks; a replacement that fits none is listed but not drawn.
const MAX_LANES: usize = 24;
/// Most rows of the replacement table.
const MAX_TABLE_REPLACEMENTS: usize = 1_000;
/// Most shadowed seqs ticked inside one drawn span (a bigger span is drawn as a plain bar).
const MAX_SHADOWED_TICKS: usize = 400;
/// Logs up to this many events tick shadowed seqs (beyond it a seq is under half a unit wide).
const MAX_TICKED_EVENTS: usize = 2_400;
/// Most shadowed seqs listed for one replacement.
const MAX_LISTED_SHADOWED: usize = 30;
/// Most usage keys charted (the rest are in the totals).
const MAX_CHARTS: usize = 4;

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

/// The seq axis as a strip: each column is a run of events, coloured by how many are surface
/// nodes, shadowed or log-only.
fn surface_map(page: &mut Html, report: &Report) {
    let stats = report.stats;
    let n = stats.standing.len();
    page.raw(
        "<section>\n<h2>Surface map</h2>\n<p class=\"note\">Every event by seq, left to right",
    );
    let columns = n.clamp(1, MAX_COLUMNS);
    if n > MAX_COLUMNS {
        page.raw(" (each column is ~");
        page.num(n.div_ceil(MAX_COLUMNS));
        page.raw(" events, split by share)");
    }
    page.raw(".</p>\n");
    if n == 0 {
        page.raw("<p class=\"empty\">The log has no events.</p>\n</section>\n");
        return;
    }
    let (width, height) = (1200.0, 46.0);
    let column_width = width / columns as f64;
    page.raw("<svg class=\"chart map\" viewBox=\"0 0 1200 64\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"surface map\">\n");
    for column in 0..columns {
        let (first, last) = (
            column * n / columns,
            ((column + 1) * n / columns).max(column * n / columns + 1),
        );
        let mut tally = [0usize; 3];
        for standing in stats.standing.get(first..last.min(n)).unwrap_or_default() {
            tally[standing_index(standing)] += 1;
        }
        let total = tally.iter().sum::<usize>().max(1) as f64;
        let x = column as f64 * column_width;
        let mut y = 0.0;
        page.raw("<g><title>");
        if last - first <= 1 {
            page.raw("seq ");
            page.num(first);
        } else {
            page.raw("seqs ");
            page.num(first);
            page.raw("–");
            page.num(last - 1);
        }
        page.raw(": ");
        page.num(tally[0]);
        page.raw(" visible, ");
        page.num(tally[1]);
        page.raw(" shadowed, ");
        page.num(tally[2]);
        page.raw(" log-only</title>");
        for (index, class) in ["v", "s", "l"].iter().enumerate() {
            if tally[index] == 0 {
                continue;
            }
            let h = height * tally[index] as f64 / total;
            page.raw("<rect class=\"");
            page.raw(class);
            page.raw("\" x=\"");
            page.num(format_args!("{x:.2}"));
            page.raw("\" y=\"");
            page.num(format_args!("{y:.2}"));
            page.raw("\" width=\"");
            page.num(format_args!("{:.2}", column_width.max(0.6)));
            page.raw("\" height=\"");
            page.num(format_args!("{h:.2}"));
            page.raw("\"/>");
            y += h;
        }
        page.raw("</g>\n");
    }
    seq_axis(page, n, 58.0);
    page.raw("</svg>\n</section>\n");
}

/// Seq tick labels under a chart whose x runs over seqs `0..n` on a 1200-unit width.
fn seq_axis(page: &mut Html, n: usize, y: f64) {
    let last = n.saturating_sub(1);
    let ticks: Vec<usize> = if last < 4 {
        (0..=last).collect()
    } else {
        vec![0, last / 4, last / 2, last * 3 / 4, last]
    };
    for seq in ticks {
        let x = seq_x(seq as u64, n);
        let anchor = if seq == 0 {
            "start"
        } else if seq == last {
            "end"
        } else {
            "middle"
        };
        page.raw("<text class=\"axis\" x=\"");
        page.num(format_args!("{x:.1}"));
        page.raw("\" y=\"");
        page.num(y);
        page.raw("\" text-anchor=\"");
        page.raw(anchor);
        page.raw("\">");
        page.text(&group_digits(seq as u64));
        page.raw("</text>");
    }
    page.raw("\n");
}

/// The x of the left edge of seq `seq` on a 1200-unit axis over `0..n`.
fn seq_x(seq: u64, n: usize) -> f64 {
    1200.0 * seq as f64 / n.max(1) as f64
}

/// The surface map's tally slot of a standing: visible, shadowed, log-only.
fn standing_index(standing: &Standing) -> usize {
    match standing {
        Standing::Visible => 0,
        Standing::Shadowed { .. } => 1,
        Standing::LogOnly => 2,
    }
}

/// Every replacement as the span it shadowed (a bar over the shadowed seqs) joined to the seq
/// that replaced them (a marker), packed into lanes; then the same as a table.
fn replacements(page: &mut Html, report: &Report) {
    let fold = &report.stats.fold;
    let n = report.events.len();
    page.raw("<section>\n<h2>Replacements</h2>\n");
    if fold.replacements.is_empty() {
        page.raw("<p class=\"empty\">No replacements: every surface event the log appended is still on the surface.</p>\n</section>\n");
        return;
    }
    page.raw("<p class=\"note\">Each bar is the span a replacement declared, with the seqs it shadowed in solid red; the dotted line runs to the ◆ event that took their place. Click one to highlight it in the timeline.</p>\n");
    // Greedy lane packing on [span start, replacing seq]: replacements that do not overlap
    // share a lane, which keeps chained compactions on one line.
    let mut lane_ends: Vec<u64> = Vec::new();
    let mut placed: Vec<(usize, &Replacement)> = Vec::new();
    let mut n_undrawn = 0usize;
    for replacement in &fold.replacements {
        if placed.len() >= MAX_DRAWN_REPLACEMENTS {
            n_undrawn += 1;
            continue;
        }
        let (low, _) = span_bounds(replacement);
        let free = lane_ends.iter().position(|end| *end < low);
        let lane = match free {
            Some(lane) => lane,
            None if lane_ends.len() < MAX_LANES => {
                lane_ends.push(0);
                lane_ends.len() - 1
            }
            None => {
                n_undrawn += 1;
                continue;
            }
        };
        if let Some(end) = lane_ends.get_mut(lane) {
            *end = replacement.seq.get();
        }
        placed.push((lane, replacement));
    }
    let lane_height = 18.0;
    let chart_height = lane_height * lane_ends.len() as f64 + 22.0;
    page.raw("<svg class=\"chart spans\" viewBox=\"0 0 1200 ");
    page.num(chart_height);
    page.raw("\" preserveAspectRatio=\"none\" style=\"height:");
    page.num(chart_height);
    page.raw("px\" role=\"img\" aria-label=\"replacement spans\">\n");
    for (lane, replacement) in &placed {
        let (low, high) = span_bounds(replacement);
        let y = *lane as f64 * lane_height + 4.0;
        let x0 = seq_x(low, n);
        let x1 = seq_x(high + 1, n).max(x0 + 2.0);
        let marker = seq_x(replacement.seq.get(), n) + 0.5 * 1200.0 / n.max(1) as f64;
        page.raw("<g class=\"rep\" data-rep=\"");
        page.num(replacement.seq.get());
        page.raw("\"><title>");
        replacement_caption(page, replacement);
        page.raw("</title><line x1=\"");
        page.num(format_args!("{x1:.2}"));
        page.raw("\" x2=\"");
        page.num(format_args!("{marker:.2}"));
        page.raw("\" y1=\"");
        page.num(y + 6.0);
        page.raw("\" y2=\"");
        page.num(y + 6.0);
        page.raw("\"/><rect x=\"");
        page.num(format_args!("{x0:.2}"));
        page.raw("\" y=\"");
        page.num(y);
        page.raw("\" width=\"");
        page.num(format_args!("{:.2}", x1 - x0));
        page.raw("\" height=\"12\" rx=\"2\"/>");
        // The seqs actually shadowed, darker inside the declared span (a span may cover
        // events that were never, or no longer, on the surface).
        if n <= MAX_TICKED_EVENTS && replacement.shadowed.len() <= MAX_SHADOWED_TICKS {
            for shadowed in &replacement.shadowed {
                let tick = seq_x(shadowed.get(), n);
                page.raw("<rect class=\"sh\" x=\"");
                page.num(format_args!("{tick:.2}"));
                page.raw("\" y=\"");
                page.num(y);
                page.raw("\" width=\"");
                page.num(format_args!("{:.2}", (1200.0 / n.max(1) as f64).max(1.0)));
                page.raw("\" height=\"12\"/>");
            }
        }
        page.raw("<path d=\"M");
        page.num(format_args!("{marker:.2}"));
        page.raw(" ");
        page.num(y);
        page.raw("l6 6-6 6-6-6z\"/></g>\n");
    }
    seq_axis(page, n, chart_height - 6.0);
    page.raw("</svg>\n");
    if n_undrawn > 0 {
        page.raw("<p class=\"note\">");
        page.num(n_undrawn);
        page.raw(
            " more replacements are not drawn (too many overlap); the table lists them.</p>\n",
        );
    }
    page.raw("<div class=\"scroll\"><table class=\"reps\">\n<thead><tr><th>replacing seq</th><th>type</th><th>declared span</th><th>shadowed</th><th>shadowed seqs</th></tr></thead>\n<tbody>\n");
    for replacement in fold.replacements.iter().take(MAX_TABLE_REPLACEMENTS) {
        let seq = replacement.seq.get();
        page.raw("<tr id=\"r");
        page.num(seq);
        page.raw("\" data-rep=\"");
        page.num(seq);
        page.raw("\"><td><a href=\"#e");
        page.num(seq);
        page.raw("\">#");
        page.num(seq);
        page.raw("</a></td><td class=\"mono\">");
        let tag = usize::try_from(seq)
            .ok()
            .and_then(|index| report.events.get(index))
            .map_or("?", |event| event.event_type().as_str());
        page.text(tag);
        page.raw("</td><td>");
        page.num(replacement.start.get());
        page.raw("–");
        page.num(replacement.end.get());
        page.raw("</td><td>");
        page.num(replacement.shadowed.len());
        page.raw("</td><td class=\"seqs\">");
        for (index, shadowed) in replacement
            .shadowed
            .iter()
            .take(MAX_LISTED_SHADOWED)
            .enumerate()
        {
            if index > 0 {
                page.raw(" ");
            }
            page.raw("<a href=\"#e");
            page.num(shadowed.get());
            page.raw("\">");
            page.num(shadowed.get());
            page.raw("</a>");
        }
        if replacement.shadowed.len() > MAX_LISTED_SHADOWED {
            page.raw(" … and ");
            page.num(replacement.shadowed.len() - MAX_LISTED_SHADOWED);
            page.raw(" more");
        }
        page.raw("</td></tr>\n");
    }
    page.raw("</tbody></table></div>\n");
    if fold.replacements.len() > MAX_TABLE_REPLACEMENTS {
        page.raw("<p class=\"note\">The table shows the first ");
        page.num(MAX_TABLE_REPLACEMENTS);
        page.raw(" of ");
        page.num(fold.replacements.len());
        page.raw(" replacements; each replacing event is marked in the timeline.</p>\n");
    }
    page.raw("</section>\n");
}

/// The lowest and highest seq a replacement's span covers: its declared endpoints, widened to
/// any shadowed node outside them.
fn span_bounds(replacement: &Replacement) -> (u64, u64) {
    let shadowed = replacement.shadowed.iter().map(|seq| seq.get());
    let low = shadowed
        .clone()
        .min()
        .map_or(replacement.start.get(), |seq| {
            seq.min(replacement.start.get())
        });
    let high = shadowed
        .max()
        .map_or(replacement.end.get(), |seq| seq.max(replacement.end.get()));
    (low, high.max(low))
}

/// `#118 replaced 44–113 (27 shadowed)`, the tooltip of a drawn span.
fn replacement_caption(page: &mut Html, replacement: &Replacement) {
    page.raw("#");
    page.num(replacement.seq.get());
    page.raw(" replaced ");
    page.num(replacement.start.get());
    page.raw("–");
    page.num(replacement.end.get());
    page.raw(" (");
    page.num(replacement.shadowed.len());
    page.raw(" shadowed)");
}

/// One bar chart per usage key (small multiples over the same step axis): stacking keys would
/// double-count, since providers report cache reads inside input tokens.
fn token_charts(page: &mut Html, stats: &LogStats) {
    page.raw("<section>\n<h2>Token usage per step</h2>\n");
    let steps = &stats.step_usage;
    if steps.is_empty() {
        page.raw("<p class=\"empty\">No assistant message reported token usage.</p>\n</section>\n");
        return;
    }
    let n_bars = steps.len().min(MAX_BARS);
    page.raw("<p class=\"note\">One bar per assistant message that reported usage (");
    page.num(steps.len());
    page.raw(" steps)");
    if steps.len() > MAX_BARS {
        page.raw("; each bar is the mean of ~");
        page.num(steps.len().div_ceil(MAX_BARS));
        page.raw(" consecutive steps");
    }
    page.raw(". Hover a bar for its turn, step and seq.</p>\n<div class=\"charts\">\n");
    for (chart_index, (key, _)) in stats.usage.iter().take(MAX_CHARTS).enumerate() {
        let bars: Vec<(usize, usize, f64)> = (0..n_bars)
            .map(|bar| {
                let (first, last) = (bar * steps.len() / n_bars, (bar + 1) * steps.len() / n_bars);
                let slice = steps.get(first..last).unwrap_or_default();
                let sum: u64 = slice.iter().map(|step| usage_value(&step.usage, key)).sum();
                (first, last, sum as f64 / slice.len().max(1) as f64)
            })
            .collect();
        let max = bars.iter().map(|(_, _, value)| *value).fold(0.0, f64::max);
        let (width, height, top) = (1200.0, 110.0, 8.0);
        let bar_width = width / n_bars as f64;
        page.raw("<figure><figcaption><i class=\"sw k");
        page.num(chart_index);
        page.raw("\"></i>");
        page.text(key);
        page.raw(" <span class=\"note\">max ");
        page.text(&group_digits(max.round() as u64));
        page.raw("</span></figcaption>\n<svg class=\"chart bars k");
        page.num(chart_index);
        page.raw(
            "\" viewBox=\"0 0 1200 124\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"",
        );
        page.text(key);
        page.raw(" per step\">\n<line class=\"grid\" x1=\"0\" x2=\"1200\" y1=\"");
        page.num(top);
        page.raw("\" y2=\"");
        page.num(top);
        page.raw("\"/><line class=\"grid\" x1=\"0\" x2=\"1200\" y1=\"");
        page.num(top + height / 2.0);
        page.raw("\" y2=\"");
        page.num(top + height / 2.0);
        page.raw("\"/><line class=\"base\" x1=\"0\" x2=\"1200\" y1=\"");
        page.num(top + height);
        page.raw("\" y2=\"");
        page.num(top + height);
        page.raw("\"/>\n");
        for (bar, (first, last, value)) in bars.iter().enumerate() {
            let h = if max > 0.0 { height * value / max } else { 0.0 };
            let x = bar as f64 * bar_width;
            page.raw("<rect x=\"");
            page.num(format_args!("{:.2}", x + bar_width * 0.1));
            page.raw("\" y=\"");
            page.num(format_args!("{:.2}", top + height - h));
            page.raw("\" width=\"");
            page.num(format_args!("{:.2}", (bar_width * 0.8).max(0.5)));
            page.raw("\" height=\"");
            page.num(format_args!("{h:.2}"));
            page.raw("\"><title>");
            if let Some(step) = steps.get(*first) {
                if last - first > 1 {
                    page.raw("mean of ");
                    page.num(last - first);
                    page.raw(" steps from ");
                }
                place_caption(page, step.place);
                page.raw(" (seq ");
                page.num(step.seq.get());
                page.raw("): ");
            }
            page.text(&group_digits(value.round() as u64));
            page.raw(" ");
            page.text(key);
            page.raw("</title></rect>\n");
        }
        page.raw("</svg>\n</figure>\n");
    }
    page.raw("</div>\n</section>\n");
}

/// One key of one step's usage; a key the step did not report counts as 0.
fn usage_value(usage: &[(String, u64)], key: &str) -> u64 {
    usage
        .iter()
        .find(|(name, _)| name == key)
        .map_or(0, |(_, value)| *value)
}

/// `turn 3 step 2`, for tooltips.
fn place_caption(page: &mut Html, place: strata_core::Place) {
    match (place.turn, place.step) {
        (Some(turn), Some(step)) => {
            page.raw("turn ");
            page.num(turn);
            page.raw(" step ");
            page.num(step);
        }
        (Some(turn), None) => {
            page.raw("turn ");
            page.num(turn);
        }
        _ => page.raw("outside turns"),
    }
}

/// How many events of each type the log holds.
fn counts(page: &mut Html, stats: &LogStats) {
    page.raw("<section>\n<h2>Events by type</h2>\n<div class=\"counts\">\n");
    for (tag, count) in &stats.counts {
        page.raw("<span class=\"count\"><span class=\"mono\">");
        page.text(tag);
        page.raw("</span><b>");
        page.num(count);
        page.raw("</b></span>\n");
    }
    page.raw("</div>\n</section>\n");
}

/// Every event, grouped into turns (`<details>`) and steps, each row marked by its standing.
fn timeline(page: &mut Html, report: &Report, budget: Budget) {
    let stats = report.stats;
    let events = report.events;
    let by_replacing: HashMap<u64, &Replacement> = stats
        .fold
        .replacements
        .iter()
        .map(|replacement| (replacement.seq.get(), replacement))
        .collect();
    let usage_by_seq: HashMap<u64, &[(String, u64)]> = stats
        .step_usage
        .iter()
        .map(|step| (step.seq.get(), step.usage.as_slice()))
        .collect();
    page.raw("<section>\n<h2>Timeline</h2>\n<p class=\"note\">");
    let n_listed = events.len().saturating_sub(budget.listed_from);
    if n_listed < events.len() {
        page.raw("The newest ");
        page.num(n_listed);
        page.raw(" events");
    } else {
        page.raw("Every event");
    }
    page.raw(" in log order, by turn and step. Text is cut to ");
    page.num(budget.preview_chars);
    page.raw(" characters");
    if budget.detail_chars > 0 {
        page.raw(" (click a row to read up to ");
        page.num(budget.detail_chars);
        page.raw(")");
    } else {
        page.raw(
            " (this log is large; use <span class=\"mono\">strata messages</span> for full text)",
        );
    }
    page.raw(".</p>\n<div class=\"timeline\">\n");
    let listed_from = budget.listed_from.min(events.len());
    if listed_from > 0 {
        unlisted(page, report, listed_from);
    }
    let place = |index: usize| stats.places.get(index).copied().unwrap_or_default();
    let mut index = 0;
    let mut n_turn_groups = 0;
    while index < events.len() {
        let turn = place(index).turn;
        let mut end = index + 1;
        while end < events.len()
            && place(end).turn == turn
            && events
                .get(end)
                .is_some_and(|event| *event.event_type() != EventType::TurnStart)
        {
            end += 1;
        }
        if end <= listed_from {
            index = end;
            continue;
        }
        // A turn the cut falls in is listed from the cut.
        let start = index.max(listed_from);
        let open = n_turn_groups < budget.open_turns;
        n_turn_groups += 1;
        // `continued`: the cut fell in this turn, whose first events are not listed.
        turn_group(
            page,
            report,
            start..end,
            open,
            start > index,
            &|page, range| {
                for event_index in range {
                    if let Some(event) = events.get(event_index) {
                        event_row(
                            page,
                            event,
                            stats.standing.get(event_index),
                            &by_replacing,
                            &usage_by_seq,
                            budget,
                        );
                    }
                }
            },
        );
        index = end;
    }
    page.raw("</div>\n</section>\n");
}

/// The one line that stands for the events before `listed_from`, which get no rows: how many,
/// in how many turns, how many are shadowed, and where to read them.
fn unlisted(page: &mut Html, report: &Report, listed_from: usize) {
    let stats = report.stats;
    let first = stats.places.first().and_then(|place| place.turn);
    let last = stats
        .places
        .get(listed_from - 1)
        .and_then(|place| place.turn);
    let n_shadowed = shadowed_in(stats, 0..listed_from);
    page.raw("<p class=unlisted><b>Seqs 0–");
    page.num(listed_from - 1);
    page.raw(" are not listed</b> (");
    page.num(listed_from);
    page.raw(" events");
    if let (Some(first), Some(last)) = (first, last) {
        page.raw(", turns ");
        page.num(first);
        page.raw("–");
        page.num(last);
    }
    if n_shadowed > 0 {
        page.raw(", ");
        page.num(n_shadowed);
        page.raw(" shadowed");
    }
    page.raw("): this log has ");
    page.num(report.events.len());
    page.raw(" events and the timeline lists the newest ");
    page.num(report.events.len() - listed_from);
    page.raw(", so the page still opens. The charts above cover every event; <span class=\"mono\">strata inspect</span> and <span class=\"mono\">strata surface</span> read the whole log.</p>\n");
}

/// How many of the events at `range` (indexes into the log) are shadowed.
fn shadowed_in(stats: &LogStats, range: std::ops::Range<usize>) -> usize {
    stats
        .standing
        .get(range)
        .unwrap_or_default()
        .iter()
        .filter(|standing| matches!(standing, Standing::Shadowed { .. }))
        .count()
}

/// The rows of one step (or of the events of a turn outside any step).
type Rows<'f> = dyn Fn(&mut Html, std::ops::Range<usize>) + 'f;

/// One turn as a `<details>` (open if the budget says so) with its steps as row lists; the
/// summary line counts events, steps and shadowed events so a collapsed turn still informs,
/// and says "(continued)" when `range` starts past the turn's first event (the timeline's cut).
fn turn_group(
    page: &mut Html,
    report: &Report,
    range: std::ops::Range<usize>,
    open: bool,
    continued: bool,
    rows: &Rows,
) {
    let stats = report.stats;
    let place = |index: usize| stats.places.get(index).copied().unwrap_or_default();
    let turn = place(range.start).turn;
    let n_shadowed = shadowed_in(stats, range.clone());
    let n_steps = report
        .events
        .get(range.clone())
        .unwrap_or_default()
        .iter()
        .filter(|event| *event.event_type() == EventType::StepStart)
        .count();
    page.raw(if open {
        "<details class=turn open>"
    } else {
        "<details class=turn>"
    });
    page.raw("<summary><b>");
    match turn {
        Some(turn) => {
            page.raw("Turn ");
            page.num(turn);
        }
        None => page.raw("Outside turns"),
    }
    if continued {
        page.raw(" (continued)");
    }
    page.raw("</b><small>seqs ");
    page.num(range.start);
    page.raw("–");
    page.num(range.end.saturating_sub(1));
    page.raw(" · ");
    page.num(range.len());
    page.raw(" events · ");
    page.num(n_steps);
    page.raw(if n_steps == 1 { " step" } else { " steps" });
    if n_shadowed > 0 {
        page.raw(" · <em>");
        page.num(n_shadowed);
        page.raw(" shadowed</em>");
    }
    if let Some(event) = report.events.get(range.start) {
        page.raw(" · ");
        page.text(&output::utc_time(u64::try_from(event.time()).unwrap_or(0)));
    }
    page.raw("</small></summary>\n");
    let mut index = range.start;
    while index < range.end {
        let step = place(index).step;
        let mut end = index + 1;
        while end < range.end
            && place(end).step == step
            && report
                .events
                .get(end)
                .is_some_and(|event| *event.event_type() != EventType::StepStart)
        {
            end += 1;
        }
        page.raw("<div class=step>");
        if let Some(step) = step {
            page.raw("<h3>Step ");
            page.num(step);
            page.raw("</h3>");
        }
        page.raw("<ol>\n");
        rows(page, index..end);
        page.raw("</ol></div>\n");
        index = end;
    }
    page.raw("</details>\n");
}

/// A short label for the usual usage keys, the key itself for any other.
fn short_usage_key(key: &str) -> &str {
    match key {
        "inputTokens" => "in",
        "outputTokens" => "out",
        "cacheReadTokens" => "cache read",
        "cacheWriteTokens" => "cache write",
        "reasoningTokens" => "reasoning",
        other => other,
    }
}

/// One event: seq, type, standing, and its text cut to the budget. Class `v`, `s` or `l` is
/// the standing; shadowed rows carry `data-by` (the replacing seq) for the script's highlight.
/// Markup is terse on purpose (unquoted attribute values, `b`/`i`/`span` children styled by
/// position): a row is written once per event, and a 100,000-event log must stay openable.
fn event_row(
    page: &mut Html,
    event: &Arc<Event>,
    standing: Option<&Standing>,
    by_replacing: &HashMap<u64, &Replacement>,
    usage_by_seq: &HashMap<u64, &[(String, u64)]>,
    budget: Budget,
) {
    let seq = event.seq().get();
    let replacement = by_replacing.get(&seq);
    page.raw("<li id=e");
    page.num(seq);
    page.raw(match (standing, replacement.is_some()) {
        (Some(Standing::Visible), false) => " class=v",
        (Some(Standing::Visible), true) => " class=\"v r\"",
        (Some(Standing::Shadowed { .. }), false) => " class=s",
        (Some(Standing::Shadowed { .. }), true) => " class=\"s r\"",
        (_, false) => " class=l",
        (_, true) => " class=\"l r\"",
    });
    if let Some(Standing::Shadowed { by }) = standing {
        page.raw(" data-by=");
        page.num(by.get());
    }
    page.raw("><b>");
    page.num(seq);
    page.raw("</b><i>");
    page.text(event.event_type().as_str());
    page.raw("</i>");
    if let Some(Standing::Shadowed { by }) = standing {
        page.raw("<a class=by href=#e");
        page.num(by.get());
        page.raw(">shadowed by #");
        page.num(by.get());
        page.raw("</a>");
    }
    if let Some(replacement) = replacement {
        page.raw("<a class=rp href=#r");
        page.num(seq);
        page.raw(" data-rep=");
        page.num(seq);
        page.raw(">replaces ");
        page.num(replacement.start.get());
        page.raw("–");
        page.num(replacement.end.get());
        page.raw(" (");
        page.num(replacement.shadowed.len());
        page.raw(")</a>");
    }
    if let Some(usage) = usage_by_seq.get(&seq) {
        page.raw("<em>");
        for (index, (key, value)) in usage.iter().enumerate() {
            if index > 0 {
                page.raw(" · ");
            }
            page.text(short_usage_key(key));
            page.raw(" ");
            page.text(&group_digits(*value));
        }
        page.raw("</em>");
    }
    let text = event_text(event, budget.preview_chars.max(budget.detail_chars));
    let (preview, cut) = clip(&text, budget.preview_chars);
    if cut && budget.detail_chars > 0 {
        let (detail, detail_cut) = clip(&text, budget.detail_chars);
        page.raw("<details><summary>");
        page.text(&preview.replace('\n', " ⏎ "));
        page.raw("…</summary><pre>");
        page.text(detail);
        if detail_cut {
            page.raw("\n… (cut at ");
            page.num(budget.detail_chars);
            page.raw(" characters)");
        }
        page.raw("</pre></details>");
    } else if !text.is_empty() {
        page.raw("<span>");
        page.text(&preview.replace('\n', " ⏎ "));
        if cut {
            page.raw("…");
        }
        page.raw("</span>");
    }
    page.raw("</li>\n");
}

/// What a person reads for an event: a surface event's message text (text, reasoning, tool
/// calls and results), a tool call's name and arguments, else the event's data as stored.
/// At most about `max_chars` characters are kept, so a huge payload is never copied whole.
///
/// Payloads are parsed without keeping the trees in the events (`Event::data_uncached`): a
/// report passes over every event once, and kept trees held gigabytes on a large log.
fn event_text(event: &Arc<Event>, max_chars: usize) -> String {
    if event.surface_op().is_some() {
        let data = event.data_uncached();
        if let Some(message) = projected_message(event.event_type(), &data) {
            return output::message_value_text(message);
        }
    }
    match event.event_type() {
        EventType::TurnStart | EventType::StepStart | EventType::StepEnd => String::new(),
        EventType::ToolCall => {
            let data = event.data_uncached();
            let field = |key: &str| {
                data.get(key)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("?")
            };
            let (arguments, _) = clip(field("arguments"), max_chars);
            strata_core::json::text_from_held(&format!("{}({arguments})", field("name")))
                .into_owned()
        }
        _ => clip(event.data_json(), max_chars + 1).0.to_owned(),
    }
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
