//! Row-by-row verification of a stored log without holding it: the restore path of §5.4 for
//! logs larger than memory (validating a file, checking a migration's source and target).
//!
//! A [`Verifier`] runs every row through the same acceptance code as `Session::restore`, in
//! the header's generation, and keeps only what later rows can be judged against: the surface
//! and the events on it (a tool-result rewrite compares itself with the node it shadows, and
//! the V3 system head is read by type). An event that leaves the surface is dropped, so memory
//! follows the surface, not the log. [`Verifier::finish`] applies the constructor's checks of a
//! restore (inherited count, end-seed marker) and returns what a restored session would show:
//! its surface, derived messages and counts.
//!
//! Invariant: `on_surface` holds exactly the events whose seqs are current surface nodes, and
//! every row pushed so far was accepted (a rejected row leaves the verifier unchanged).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::accept::{accept_raw, relate, Context, EventLookup, Path};
use crate::event::{Event, EventType};
use crate::generation::Generation;
use crate::header::SessionHeader;
use crate::message::{project, Message};
use crate::rule::AcceptError;
use crate::seq::Seq;
use crate::surface::{SurfacePlan, SurfaceState, SurfaceUndo};
use crate::wire::RawEvent;

/// A stored log being verified row by row.
pub struct Verifier {
    header: SessionHeader,
    surface: SurfaceState,
    /// Invariant: exactly the events of the current surface nodes.
    on_surface: HashMap<Seq, Arc<Event>>,
    /// Rows accepted so far (also the next row's seq).
    n_events: u64,
    last_is_end_seed: bool,
    last_inherited_marker: Option<u64>,
    /// Upstream's relational and head rules' state (docs/rules.md), V3 logs.
    relations: crate::relations::Relations,
    /// Whether the V3 head rules apply (not to a migration artifact, which has no head).
    head_rules: bool,
}

/// What a verified log restores to.
#[derive(Debug)]
pub struct Verified {
    /// The header.
    pub header: SessionHeader,
    /// The surface nodes, in model order.
    pub surface: Vec<Seq>,
    /// The derived messages (§7.1).
    pub messages: Vec<Message>,
    /// Rows in the log.
    pub n_events: u64,
    /// Events the restored session holds: the rows plus the end-seed marker a restore adds
    /// unless the log already ends with one.
    pub n_session_events: u64,
    /// Replacements applied.
    pub replace_generation: u64,
    /// The inherited event count.
    pub inherited_count: u64,
}

struct OnSurface<'a>(&'a HashMap<Seq, Arc<Event>>);

impl EventLookup for OnSurface<'_> {
    fn event(&self, seq: Seq) -> Option<&Event> {
        self.0.get(&seq).map(|event| event.as_ref())
    }
}

impl Verifier {
    /// A verifier for a log with `header` (its generation's rules apply).
    pub fn new(header: SessionHeader) -> Verifier {
        Verifier {
            header,
            surface: SurfaceState::new(),
            on_surface: HashMap::new(),
            n_events: 0,
            last_is_end_seed: false,
            last_inherited_marker: None,
            relations: crate::relations::Relations::new(),
            head_rules: true,
        }
    }

    /// A verifier of the v2 artifact an older log's first migration hop writes, given in V3
    /// spelling under a V3 `header`: upstream's chain restores that artifact under its
    /// released V2 validator before the v2→v3 edge runs (docs/migration.md, "Order of
    /// refusals"), and its V3 restore is that same validator plus the system-head rules. So
    /// the artifact is judged by the V3 rules without the head rules.
    pub fn for_migration_artifact(header: SessionHeader) -> Verifier {
        Verifier {
            head_rules: false,
            relations: crate::relations::Relations::without_head_rules(),
            ..Verifier::new(header)
        }
    }

    /// The generation whose rules apply.
    pub fn generation(&self) -> Generation {
        self.header.generation()
    }

    /// Rows accepted so far.
    pub fn n_events(&self) -> u64 {
        self.n_events
    }

    /// The current surface nodes.
    pub fn surface(&self) -> &[Seq] {
        self.surface.nodes()
    }

    /// Accepts the next stored row under restore rules; a rejected row changes nothing.
    pub fn push(&mut self, raw: RawEvent) -> Result<(), AcceptError> {
        let expected_seq = Seq::new(self.n_events).map_err(|error| {
            AcceptError::new(crate::rule::Rule::SeqNotContiguous, error.to_string())
        })?;
        let (event, plan) = {
            let lookup = OnSurface(&self.on_surface);
            let context = Context {
                generation: self.header.generation(),
                path: Path::Restore,
                surface: &self.surface,
                lookup: &lookup,
                expected_seq,
                index: self.n_events,
                head: (self.head_rules && self.header.generation().checks_relations())
                    .then(|| self.relations.head()),
            };
            let (event, plan, facts) = accept_raw(&context, raw)?;
            // Row by row, so in seq order: R39 is judged without its look-ahead and a
            // relational refusal is not held for a later row's (docs/rules.md).
            let change = relate(
                &context,
                &self.relations,
                &self.header,
                &event,
                facts.as_ref(),
                false,
                // A verifier holds every seq it judged (it never resumes).
                &[],
            )?;
            self.relations.apply(change);
            (event, plan)
        };
        let event = Arc::new(event);
        let undo = self.surface.apply(&plan);
        if let SurfaceUndo::Unreplace { shadowed, .. } = undo {
            for seq in shadowed {
                self.on_surface.remove(&seq);
            }
        }
        if !matches!(plan, SurfacePlan::None) {
            self.on_surface.insert(event.seq, Arc::clone(&event));
        }
        self.last_is_end_seed = event.event_type == EventType::SessionEndSeed;
        if self.header.generation() >= Generation::V2 && event.is_inherited_marker() {
            self.last_inherited_marker = Some(event.seq.get());
        }
        self.n_events += 1;
        Ok(())
    }

    /// The constructor checks of a restore, and what the restored session shows.
    pub fn finish(self) -> Result<Verified, AcceptError> {
        let inherited = self
            .header
            .inherited_count(self.last_inherited_marker, self.n_events)?;
        let messages = self
            .surface
            .nodes()
            .iter()
            .filter_map(|seq| self.on_surface.get(seq))
            .filter_map(project)
            .collect();
        Ok(Verified {
            surface: self.surface.nodes().to_vec(),
            messages,
            n_events: self.n_events,
            n_session_events: self.n_events + u64::from(!self.last_is_end_seed),
            replace_generation: self.surface.replace_generation(),
            inherited_count: inherited,
            header: self.header,
        })
    }
}

impl Verified {
    /// The derived messages as JSON values.
    pub fn message_values(&self) -> Vec<Value> {
        self.messages
            .iter()
            .map(|message| message.value().clone())
            .collect()
    }
}

#[cfg(test)]
mod tests;
