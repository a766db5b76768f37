//! The timeline: every listed event grouped into turns and steps, each row marked by its
//! standing, and the one line that stands for the events before the listed ones.

use std::collections::HashMap;
use std::sync::Arc;

use strata_core::message::projected_message;
use strata_core::stats::Standing;
use strata_core::{Event, EventType, LogStats, Replacement};

use super::{clip, group_digits, Budget, Html, Report};
use crate::output;

/// Every event, grouped into turns (`<details>`) and steps, each row marked by its standing.
pub(super) fn timeline(page: &mut Html, report: &Report, budget: Budget) {
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
