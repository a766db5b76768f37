//! Every replacement as the span it shadowed, joined to the seq that replaced it, packed into
//! lanes; then the same as a table.

use strata_core::Replacement;

use super::surface_map::{seq_axis, seq_x};
use super::{Html, Report};

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

/// Every replacement as the span it shadowed (a bar over the shadowed seqs) joined to the seq
/// that replaced them (a marker), packed into lanes; then the same as a table.
pub(super) fn replacements(page: &mut Html, report: &Report) {
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
