//! The surface map: the seq axis as a strip of columns, each coloured by how many of its events
//! are surface nodes, shadowed or log-only; and the seq axis the charts share.

use strata_core::stats::Standing;

use super::{group_digits, Html, Report};

/// Most columns the surface map draws; more events share a column.
const MAX_COLUMNS: usize = 1_000;

/// The seq axis as a strip: each column is a run of events, coloured by how many are surface
/// nodes, shadowed or log-only.
pub(super) fn surface_map(page: &mut Html, report: &Report) {
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
pub(super) fn seq_axis(page: &mut Html, n: usize, y: f64) {
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
pub(super) fn seq_x(seq: u64, n: usize) -> f64 {
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
