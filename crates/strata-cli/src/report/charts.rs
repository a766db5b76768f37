//! Token usage per step as small-multiple bar charts, and the event counts by type.

use strata_core::LogStats;

use super::{group_digits, Html};

/// Most bars a token chart draws; more steps are averaged into buckets.
const MAX_BARS: usize = 400;
/// Most usage keys charted (the rest are in the totals).
const MAX_CHARTS: usize = 4;

/// One bar chart per usage key (small multiples over the same step axis): stacking keys would
/// double-count, since providers report cache reads inside input tokens.
pub(super) fn token_charts(page: &mut Html, stats: &LogStats) {
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
fn place_caption(page: &mut Html, place: strata_core::stats::Place) {
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
pub(super) fn counts(page: &mut Html, stats: &LogStats) {
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
