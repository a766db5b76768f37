//! Log statistics: what a person asks of a log before reading it — how many events of each
//! type, how many turns and steps, what each step cost in tokens, where every event sits in
//! its turn and step, and what the surface kept or shadowed. `strata inspect` prints them and
//! `strata report` draws them; both are pure folds over accepted events.

use std::borrow::Cow;
use std::sync::Arc;

use crate::event::{Event, EventType};
use crate::fold::{fold_accepted, Fold};
use crate::rule::AcceptError;
use crate::seq::Seq;
use crate::view::{Kind, Node, View};

/// What a log holds, counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogStats {
    /// Events in the log.
    pub n_events: u64,
    /// Events per type, sorted by type name.
    pub counts: Vec<(String, u64)>,
    /// `turn/start` events.
    pub n_turns: u64,
    /// `step/start` events.
    pub n_steps: u64,
    /// The turn left open at the end of the log (a crash, or a log still being written).
    pub open_turn: Option<u64>,
    /// Provider-reported token usage summed over every `assistant/message` (the keys of
    /// `data.usage`, e.g. `inputTokens`, `outputTokens`, `cacheReadTokens`, in first-seen
    /// order; a sum past `u64::MAX` stays there).
    pub usage: Vec<(String, u64)>,
    /// Each event's turn and step, by seq.
    pub places: Vec<Place>,
    /// Each event's standing on the surface, by seq.
    pub standing: Vec<Standing>,
    /// Every `assistant/message` that reported usage, in log order.
    pub step_usage: Vec<StepUsage>,
    /// The surface after the whole log, and every replacement with what it shadowed.
    pub fold: Fold,
}

/// Where an event sits: inside which turn and step brackets (the bracket events included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Place {
    /// The enclosing turn's number.
    pub turn: Option<u64>,
    /// The enclosing step's number.
    pub step: Option<u64>,
}

/// An event's standing on the final surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Not a surface event: the model never sees it.
    LogOnly,
    /// A surface node now: the model sees it.
    Visible,
    /// Once a surface node, now shadowed by the replacement at this seq.
    Shadowed {
        /// The replacing event.
        by: Seq,
    },
}

/// The usage one `assistant/message` reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepUsage {
    /// The message's event.
    pub seq: Seq,
    /// Its turn and step.
    pub place: Place,
    /// The usage counts, in stored key order.
    pub usage: Vec<(String, u64)>,
}

impl LogStats {
    /// How many events the final surface shadows (once visible, now replaced).
    pub fn n_shadowed(&self) -> usize {
        self.standing
            .iter()
            .filter(|standing| matches!(standing, Standing::Shadowed { .. }))
            .count()
    }
}

/// Counts `events` (a session's log from seq 0), replaying the surface from their placements.
/// Fails only if the events were never accepted together.
pub fn log_stats(events: &[Arc<Event>]) -> Result<LogStats, AcceptError> {
    let fold = fold_accepted(events)?;
    let mut counts: Vec<(String, u64)> = Vec::new();
    let mut places = Vec::with_capacity(events.len());
    let mut step_usage = Vec::new();
    let mut usage: Vec<(String, u64)> = Vec::new();
    let (mut n_turns, mut n_steps) = (0, 0);
    let mut current = Place::default();
    for event in events {
        let tag = event.event_type().as_str();
        match counts.iter_mut().find(|(name, _)| name == tag) {
            Some((_, count)) => *count += 1,
            None => counts.push((tag.to_owned(), 1)),
        }
        // Payloads are read through borrowed views, never `Event::data`: that parses the
        // whole payload into a tree and keeps it in the event, which over a log of a million
        // events holds gigabytes (docs/measurements.md §7).
        let depth = match event.event_type() {
            EventType::TurnStart | EventType::StepStart => 2,
            EventType::AssistantMessage => 3,
            _ => 0,
        };
        let data = (depth > 0)
            .then(|| View::parse(event.data_json(), depth))
            .flatten();
        let number = |key: &str| data.as_ref().and_then(|data| unsigned(data.get(key)?));
        match event.event_type() {
            EventType::TurnStart => {
                n_turns += 1;
                current = Place {
                    turn: number("turn"),
                    step: None,
                };
            }
            EventType::StepStart => {
                n_steps += 1;
                current.step = number("step");
            }
            _ => {}
        }
        places.push(current);
        if *event.event_type() == EventType::AssistantMessage {
            let reported = data
                .as_ref()
                .and_then(|data| data.get("usage"))
                .filter(|usage| usage.kind() == Kind::Object);
            if let Some(reported) = reported {
                let counted: Vec<(String, u64)> = distinct_members(reported)
                    .into_iter()
                    .filter_map(|(key, value)| Some((key.into_owned(), unsigned(value)?)))
                    .collect();
                for (key, value) in &counted {
                    match usage.iter_mut().find(|(name, _)| name == key) {
                        Some((_, total)) => *total = total.saturating_add(*value),
                        None => usage.push((key.clone(), *value)),
                    }
                }
                step_usage.push(StepUsage {
                    seq: event.seq(),
                    place: current,
                    usage: counted,
                });
            }
        }
        match event.event_type() {
            EventType::TurnEnd => current = Place::default(),
            EventType::StepEnd => current.step = None,
            _ => {}
        }
    }
    counts.sort();
    let standing = standing(events, &fold);
    Ok(LogStats {
        n_events: events.len() as u64,
        counts,
        n_turns,
        n_steps,
        open_turn: current.turn,
        usage,
        places,
        standing,
        step_usage,
        fold,
    })
}

/// A number as `Value::as_u64` reads it (with `arbitrary_precision`, the text parsed as a
/// `u64`); `None` for anything else.
fn unsigned(node: &View<'_>) -> Option<u64> {
    match node {
        View::Number(text) => text.parse().ok(),
        View::Deep(raw) if node.kind() == Kind::Number => raw.parse().ok(),
        _ => None,
    }
}

/// An object's members as a `Value` map holds them: a repeated key keeps its first place and
/// its last value.
fn distinct_members<'n, 'a>(object: &'n View<'a>) -> Vec<(Cow<'n, str>, &'n View<'a>)> {
    let mut members: Vec<(Cow<'n, str>, &'n View<'a>)> = Vec::new();
    for (key, value) in object.members() {
        match members.iter_mut().find(|(seen, _)| *seen == key) {
            Some(member) => member.1 = value,
            None => members.push((key, value)),
        }
    }
    members
}

/// Each event's standing: visible if a final node, shadowed by the last replacement that
/// removed it, log-only otherwise.
fn standing(events: &[Arc<Event>], fold: &Fold) -> Vec<Standing> {
    let mut standing: Vec<Standing> = events
        .iter()
        .map(|event| match event.surface_op() {
            Some(_) => Standing::Visible,
            None => Standing::LogOnly,
        })
        .collect();
    for replacement in &fold.replacements {
        for seq in &replacement.shadowed {
            if let Some(slot) = usize::try_from(seq.get())
                .ok()
                .and_then(|index| standing.get_mut(index))
            {
                *slot = Standing::Shadowed {
                    by: replacement.seq,
                };
            }
        }
    }
    for seq in &fold.nodes {
        if let Some(slot) = usize::try_from(seq.get())
            .ok()
            .and_then(|index| standing.get_mut(index))
        {
            *slot = Standing::Visible;
        }
    }
    standing
}

#[cfg(test)]
mod tests;
