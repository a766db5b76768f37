//! Token accounting: the context size of the next request (persistence-compaction §5.2).
//!
//! A [`TokenMeter`] follows one session's log incrementally: each call to
//! [`TokenMeter::measure`] reads only the events appended since the previous call
//! (O(new events)), prices each new surface event once with its [`TokenEstimator`], and
//! mirrors the surface fold so it always knows the price of every current node. The
//! estimate for the next request is
//!
//! ```text
//! total = baseline + (surface tokens now − surface tokens at the anchor)
//! ```
//!
//! where the *anchor* is the newest `assistant/message` that carried provider usage and
//! `baseline = max(provider tokens, estimate at the anchor)` (the provider's count wins
//! unless it is below our own estimate of what it was sent). A replacement lowers the
//! surface tokens, so the meter moves after a compaction even though the summary call
//! reports no usage to the session (upstream bug, persistence §10 item 22). When the
//! request header (tools) changed since the anchor, the total falls back to the pure
//! estimate.
//!
//! The same pass records what compaction needs to decide quickly: the open turn, an open
//! `compaction/start` bracket, and for each node a *call balance delta* (an assistant
//! message adds the tool calls that will be answered, a tool result that answers one
//! subtracts 1), so "does cutting here separate a call from its result" is a prefix sum.
//!
//! Invariants (after a sync):
//! - `nodes` equals the session's surface nodes, and `surface_tokens` is the sum of
//!   `price[seq]` over them;
//! - `price` and `delta` hold one entry per event of the log (log-only events price 0);
//! - the balance of a cut (sum of deltas before it) counts the calls whose assistant
//!   message is before the cut and whose result is after it, plus unanswered calls of
//!   the step still open.
//!
//! A rolled-back batch, or a different session, is detected (the meter keeps a handle on
//! the last event it read) and the meter replays the log from the start.
//!
//! On a lazily resumed session (issue 9) the meter does not read history: it starts from the
//! session's current state — the surface nodes (each priced from its own event), the request
//! header, the open turn, the latest compaction bracket events — and reads only later events.
//! Prices are exact. Balance deltas of the nodes it starts from are re-derived from the
//! surface (an assistant node announces its calls, a result node answers one, a call left
//! unanswered when the next step's assistant node arrives, or that the session's open turn
//! no longer lists, is abandoned), which is what a replay gives for the logs strata writes.
//! The provider anchor is the latest assistant message if it carries usage, with the surface
//! it saw taken as the nodes up to it (no header change assumed since).

use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use strata_core::repair::TurnState;
use strata_core::request::canonical_header;
use strata_core::{Event, EventType, Generation, Seq, Session, SurfaceOp};

use crate::estimate::{message_tokens, ByteEstimator, TokenEstimator, FRAME_TOKENS};

/// The estimated size of the next request, with how it was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measurement {
    /// The context size the next request is expected to have, in tokens.
    pub total_tokens: u64,
    /// The pure estimate: header tokens plus surface tokens.
    pub estimated_tokens: u64,
    /// The estimated price of the current surface.
    pub surface_tokens: u64,
    /// The estimated price of the request header's tool schemas.
    pub header_tokens: u64,
    /// The provider sample the total was projected from, if it is still usable.
    pub anchor: Option<Anchor>,
    /// The number of surface nodes.
    pub n_nodes: usize,
}

/// A provider usage sample: the newest `assistant/message` carrying `usage`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// The assistant message's seq.
    pub seq: Seq,
    /// `inputTokens + cacheReadTokens + cacheWriteTokens + outputTokens`.
    pub provider_tokens: u64,
    /// Our estimate of the same request plus response, when the message landed.
    pub estimated_tokens: u64,
    /// The surface price right after the message landed.
    pub surface_tokens: u64,
}

impl Anchor {
    /// The anchor an `assistant/message` at `seq` with provider `usage` sets, our estimate
    /// of the same request being `header_tokens + surface_tokens`.
    fn of_usage(seq: Seq, usage: &Value, header_tokens: u64, surface_tokens: u64) -> Anchor {
        let field = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        Anchor {
            seq,
            provider_tokens: field("inputTokens")
                + field("cacheReadTokens")
                + field("cacheWriteTokens")
                + field("outputTokens"),
            estimated_tokens: header_tokens + surface_tokens,
            surface_tokens,
        }
    }

    /// The larger of the provider count and our estimate.
    pub fn baseline(&self) -> u64 {
        self.provider_tokens.max(self.estimated_tokens)
    }
}

/// Incremental token accounting for one session (see the module docs).
#[derive(Debug)]
pub struct TokenMeter {
    estimator: Arc<dyn TokenEstimator>,
    ledger: Ledger,
}

/// An open `compaction/start` bracket (no `compaction/end` and no newer `session/end-seed`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OpenBracket {
    pub(crate) seq: Seq,
    pub(crate) data: Value,
}

/// Everything the meter has learned from the log so far.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    session_id: String,
    /// Invariant: the number of events ingested.
    synced: usize,
    /// The last event ingested, kept alive so pointer identity detects a rolled-back log.
    last_event: Option<Arc<Event>>,
    /// Invariant: equals the session's surface nodes after a sync.
    pub(crate) nodes: Vec<Seq>,
    /// Invariant: one entry per ingested event (index = seq − `base`); 0 for log-only events.
    pub(crate) price: Vec<u32>,
    /// Invariant: one entry per ingested event (index = seq − `base`); see the module docs.
    pub(crate) delta: Vec<i32>,
    /// The first seq `price` and `delta` describe: 0, or where a lazy session was picked up.
    base: u64,
    /// `(price, delta)` of the surface nodes below `base` (lazy sessions only).
    seeded: HashMap<u64, (u32, i32)>,
    /// Invariant: the sum of `price` over `nodes`.
    surface_tokens: u64,
    replace_generation: u64,
    /// Calls announced by assistant messages of the open step and not yet answered:
    /// (call id, assistant seq).
    pending_calls: Vec<(String, Seq)>,
    /// The open turn's `turn` value, if a turn is open.
    pub(crate) open_turn: Option<Value>,
    pub(crate) bracket: Option<OpenBracket>,
    header: Option<Arc<Value>>,
    header_tokens: u64,
    anchor: Option<Anchor>,
    /// A `request/header` with different content arrived after the anchor.
    header_changed_since_anchor: bool,
    /// False if the log held something the mirror could not follow.
    pub(crate) consistent: bool,
}

impl TokenMeter {
    /// A meter with the default [`ByteEstimator`].
    pub fn new() -> TokenMeter {
        TokenMeter::with_estimator(Arc::new(ByteEstimator))
    }

    /// A meter pricing text with `estimator`.
    pub fn with_estimator(estimator: Arc<dyn TokenEstimator>) -> TokenMeter {
        TokenMeter {
            estimator,
            ledger: Ledger {
                consistent: true,
                ..Ledger::default()
            },
        }
    }

    /// The estimator.
    pub fn estimator(&self) -> &Arc<dyn TokenEstimator> {
        &self.estimator
    }

    /// Catches up with `session` (O(new events)) and returns the estimated size of the
    /// next request.
    pub fn measure(&mut self, session: &Session) -> Measurement {
        self.sync(session);
        self.ledger.measurement()
    }

    /// The price of the event at `seq` (0 for log-only events and seqs not yet seen).
    pub fn price(&self, seq: Seq) -> u64 {
        self.ledger.price_of(seq)
    }

    /// Catches up with `session` and returns the ledger (crate-internal users).
    pub(crate) fn sync(&mut self, session: &Session) -> &Ledger {
        let len = session.len();
        let last_matches = match (&self.ledger.last_event, self.ledger.synced.checked_sub(1)) {
            (Some(last), Some(index)) => Seq::new(index as u64)
                .ok()
                .and_then(|seq| session.event(seq))
                .is_some_and(|event| Arc::ptr_eq(event, last)),
            (None, None) => true,
            _ => false,
        };
        let diverged =
            self.ledger.session_id != session.id() || len < self.ledger.synced || !last_matches;
        let generation = session.generation();
        let base = usize::try_from(session.resident_base()).unwrap_or(usize::MAX);
        if diverged {
            self.ledger = Ledger {
                session_id: session.id().to_owned(),
                consistent: true,
                ..Ledger::default()
            };
            if session.is_lazy() {
                self.ledger
                    .seed(session, generation, self.estimator.as_ref());
            }
        }
        // A lazy session's events below its resident tail are never read: the ledger was
        // seeded past them.
        let start = self.ledger.synced.max(base);
        let new = session.resident_events().get(start - base..).unwrap_or(&[]);
        self.ledger.price.reserve(new.len());
        self.ledger.delta.reserve(new.len());
        for event in new {
            self.ledger
                .ingest(event, generation, self.estimator.as_ref());
        }
        self.ledger.synced = len;
        self.ledger.last_event = session.last_event().cloned();
        if self.ledger.nodes.len() != session.surface().len()
            || self.ledger.replace_generation != session.surface().replace_generation()
        {
            self.ledger.consistent = false;
        }
        &self.ledger
    }
}

impl Default for TokenMeter {
    fn default() -> TokenMeter {
        TokenMeter::new()
    }
}

impl Ledger {
    pub(crate) fn measurement(&self) -> Measurement {
        let estimated = self.header_tokens + self.surface_tokens;
        let anchor = self
            .anchor
            .clone()
            .filter(|_| !self.header_changed_since_anchor);
        let total = match &anchor {
            Some(anchor) => {
                let projected = i128::from(anchor.baseline()) + i128::from(self.surface_tokens)
                    - i128::from(anchor.surface_tokens);
                u64::try_from(projected.max(0)).unwrap_or(u64::MAX)
            }
            None => estimated,
        };
        Measurement {
            total_tokens: total,
            estimated_tokens: estimated,
            surface_tokens: self.surface_tokens,
            header_tokens: self.header_tokens,
            anchor,
            n_nodes: self.nodes.len(),
        }
    }

    /// The price of the event at `seq`.
    pub(crate) fn price_of(&self, seq: Seq) -> u64 {
        match self.index(seq) {
            Some(index) => self.price.get(index).map_or(0, |price| u64::from(*price)),
            None => self
                .seeded
                .get(&seq.get())
                .map_or(0, |(price, _)| u64::from(*price)),
        }
    }

    /// The balance delta of the event at `seq`.
    pub(crate) fn delta_of(&self, seq: Seq) -> i64 {
        match self.index(seq) {
            Some(index) => self.delta.get(index).map_or(0, |delta| i64::from(*delta)),
            None => self
                .seeded
                .get(&seq.get())
                .map_or(0, |(_, delta)| i64::from(*delta)),
        }
    }

    /// The index of `seq` in `price` and `delta`, when it is at or after `base`.
    fn index(&self, seq: Seq) -> Option<usize> {
        seq.get()
            .checked_sub(self.base)
            .and_then(|offset| usize::try_from(offset).ok())
    }

    /// The delta slot of `seq`, wherever it is kept.
    fn delta_slot(&mut self, seq: Seq) -> Option<&mut i32> {
        match self.index(seq) {
            Some(index) => self.delta.get_mut(index),
            None => self.seeded.get_mut(&seq.get()).map(|(_, delta)| delta),
        }
    }

    /// Starts the ledger from a lazy session's current state (see the module docs).
    fn seed(&mut self, session: &Session, generation: Generation, estimator: &dyn TokenEstimator) {
        let len = session.len() as u64;
        self.base = len;
        if let Some(header) = session.request_header() {
            self.header_tokens = header
                .get("tools")
                .map_or(0, |tools| estimator.json_tokens(tools) + FRAME_TOKENS);
            self.header = Some(Arc::clone(header));
        }
        let _ = generation;
        let turn = session.turn_state();
        self.open_turn = turn.turn.clone().map(|turn| turn.unwrap_or(Value::Null));
        self.bracket = open_bracket(session);
        self.seed_surface(session, &turn, estimator);
        self.replace_generation = session.surface().replace_generation();
        self.seed_anchor(session);
        self.synced = usize::try_from(len).unwrap_or(usize::MAX);
    }

    /// Prices the surface's nodes and pairs their tool calls: a call whose result is not on
    /// the surface stays pending when the open turn still lists it, else it was abandoned.
    fn seed_surface(
        &mut self,
        session: &Session,
        turn: &TurnState,
        estimator: &dyn TokenEstimator,
    ) {
        let mut pending: Vec<(String, Seq)> = Vec::new();
        let mut step: Option<(Option<Value>, Option<Value>)> = None;
        for seq in session.surface().nodes() {
            let Some(event) = session.event(*seq) else {
                self.consistent = false;
                continue;
            };
            // Parsed without keeping the tree: a resumed session's surface may be a million
            // nodes, all held as text until now.
            let data = event.data_uncached();
            let data = &*data;
            let mut delta = 0_i32;
            let price = match event.event_type() {
                EventType::UserMessage => message_tokens(data, estimator),
                EventType::SystemMessage => projected_price(data.get("message"), estimator),
                EventType::AssistantMessage => {
                    let key = (data.get("turn").cloned(), data.get("step").cloned());
                    if step.as_ref() != Some(&key) {
                        for (_, assistant) in pending.drain(..) {
                            if let Some(slot) = self.seeded.get_mut(&assistant.get()) {
                                slot.1 -= 1;
                            }
                        }
                        step = Some(key);
                    }
                    for call_id in tool_call_ids(data) {
                        pending.push((call_id.to_owned(), *seq));
                        delta += 1;
                    }
                    projected_price(data.get("message"), estimator)
                }
                EventType::ToolResult => {
                    let call_id = data
                        .get("message")
                        .and_then(|message| message.get("source"))
                        .and_then(|source| source.get("callId"))
                        .and_then(Value::as_str);
                    if let Some(index) =
                        call_id.and_then(|id| pending.iter().position(|(call, _)| call == id))
                    {
                        pending.remove(index);
                        delta -= 1;
                    }
                    data.get("message")
                        .map_or(0, |message| message_tokens(message, estimator))
                }
                _ => 0,
            };
            let price = u32::try_from(price).unwrap_or(u32::MAX);
            self.seeded.insert(seq.get(), (price, delta));
            self.surface_tokens += u64::from(price);
            self.nodes.push(*seq);
        }
        // Calls the session's open turn still lists stay pending; the others were abandoned.
        for (call_id, assistant) in pending {
            let open = turn
                .pending
                .iter()
                .any(|call| call.call_id.as_str() == Some(call_id.as_str()));
            if open {
                self.pending_calls.push((call_id, assistant));
            } else if let Some(slot) = self.seeded.get_mut(&assistant.get()) {
                slot.1 -= 1;
            }
        }
    }

    /// The newest `assistant/message` with usage anchors the estimate to the provider's count.
    fn seed_anchor(&mut self, session: &Session) {
        if let Some(assistant) = session.latest(&EventType::AssistantMessage) {
            if let Some(usage) = assistant.data_uncached().get("usage") {
                let surface_tokens: u64 = self
                    .nodes
                    .iter()
                    .filter(|node| **node <= assistant.seq())
                    .map(|node| self.price_of(*node))
                    .sum();
                self.anchor = Some(Anchor::of_usage(
                    assistant.seq(),
                    usage,
                    self.header_tokens,
                    surface_tokens,
                ));
            }
        }
    }

    fn ingest(
        &mut self,
        event: &Arc<Event>,
        generation: Generation,
        estimator: &dyn TokenEstimator,
    ) {
        let seq = event.seq();
        // `data()` is only read for the types that need it: stored events may parse their
        // payload lazily, and most log-only events (tool calls, steps) never need parsing. It
        // is parsed at most once here and never kept in the event: the meter follows a whole
        // log, and the trees `Event::data` keeps held gigabytes over a large one.
        let parsed = OnceCell::new();
        let data = || &**parsed.get_or_init(|| event.data_uncached());
        let mut price = 0_u64;
        let mut delta = 0_i64;
        match event.event_type() {
            EventType::TurnStart => {
                self.abandon_pending();
                self.open_turn = match data().get("turn") {
                    Some(Value::Null) => None,
                    Some(turn) => Some(turn.clone()),
                    None => Some(Value::Null),
                };
            }
            EventType::TurnEnd => {
                self.abandon_pending();
                self.open_turn = None;
            }
            EventType::StepEnd => self.abandon_pending(),
            EventType::RequestHeader => {
                if let Some(header) = data().get("header") {
                    self.ingest_header(header, generation, estimator);
                }
            }
            EventType::SessionEndSeed => self.bracket = None,
            EventType::Other(name) => match name.as_str() {
                "compaction/start" => {
                    self.bracket = Some(OpenBracket {
                        seq,
                        data: data().clone(),
                    })
                }
                "compaction/end" => self.bracket = None,
                _ => {}
            },
            EventType::UserMessage => price = message_tokens(data(), estimator),
            EventType::SystemMessage => {
                price = projected_price(data().get("message"), estimator);
            }
            EventType::AssistantMessage => {
                price = projected_price(data().get("message"), estimator);
                for call_id in tool_call_ids(data()) {
                    self.pending_calls.push((call_id.to_owned(), seq));
                    delta += 1;
                }
            }
            EventType::ToolResult => {
                let message = data().get("message");
                price = message.map_or(0, |message| message_tokens(message, estimator));
                if self.answer_call(message) {
                    delta -= 1;
                }
            }
            _ => {}
        }
        let price = u32::try_from(price).unwrap_or(u32::MAX);
        self.price.push(price);
        self.delta.push(i32::try_from(delta).unwrap_or(0));
        match event.surface_op() {
            Some(SurfaceOp::Append) => {
                self.nodes.push(seq);
                self.surface_tokens += u64::from(price);
            }
            Some(SurfaceOp::Replace(range)) => self.replace(seq, range.start, range.end, price),
            None => {}
        }
        if *event.event_type() == EventType::AssistantMessage {
            if let Some(usage) = data().get("usage") {
                self.anchor = Some(Anchor::of_usage(
                    seq,
                    usage,
                    self.header_tokens,
                    self.surface_tokens,
                ));
                self.header_changed_since_anchor = false;
            }
        }
    }

    /// A new request header: its tools' price, and whether it differs from the one the
    /// anchor's request was sent with (the anchor then no longer prices this request).
    fn ingest_header(
        &mut self,
        header: &Value,
        generation: Generation,
        estimator: &dyn TokenEstimator,
    ) {
        let header = canonical_header(header, generation);
        let tools = header
            .get("tools")
            .map_or(0, |tools| estimator.json_tokens(tools) + FRAME_TOKENS);
        if let (Some(anchor_header), Some(_)) = (&self.header, &self.anchor) {
            if **anchor_header != header {
                self.header_changed_since_anchor = true;
            }
        }
        self.header = Some(Arc::new(header));
        self.header_tokens = tools;
    }

    /// Settles the pending call a tool result's `source.callId` answers; whether it did.
    fn answer_call(&mut self, message: Option<&Value>) -> bool {
        let call_id = message
            .and_then(|message| message.get("source"))
            .and_then(|source| source.get("callId"))
            .and_then(Value::as_str);
        let Some(call_id) = call_id else {
            return false;
        };
        match self.pending_calls.iter().position(|(id, _)| id == call_id) {
            Some(index) => {
                self.pending_calls.remove(index);
                true
            }
            None => false,
        }
    }

    /// Mirrors a replacement: the span's prices leave the surface, the new node carries
    /// the span's total balance delta (a summary of balanced nodes carries 0; a pruned
    /// tool result keeps the −1 of the result it rewrites).
    fn replace(&mut self, seq: Seq, start: Seq, end: Seq, price: u32) {
        let start_index = self.nodes.iter().position(|node| *node == start);
        let end_index = self.nodes.iter().position(|node| *node == end);
        let (Some(start_index), Some(end_index)) = (start_index, end_index) else {
            self.consistent = false;
            return;
        };
        if start_index > end_index {
            self.consistent = false;
            return;
        }
        let mut shadowed_price = 0_u64;
        let mut shadowed_delta = 0_i64;
        let shadowed: Vec<Seq> = self
            .nodes
            .splice(start_index..=end_index, std::iter::once(seq))
            .collect();
        for node in shadowed {
            shadowed_price += self.price_of(node);
            shadowed_delta += self.delta_of(node);
        }
        self.surface_tokens = self.surface_tokens.saturating_sub(shadowed_price) + u64::from(price);
        if let Some(slot) = self.delta_slot(seq) {
            *slot = i32::try_from(shadowed_delta).unwrap_or(0);
        }
        self.replace_generation += 1;
    }

    /// Calls still unanswered when their step or turn ends will never be answered: they
    /// no longer hold a cut open.
    fn abandon_pending(&mut self) {
        for (_, assistant) in std::mem::take(&mut self.pending_calls) {
            if let Some(slot) = self.delta_slot(assistant) {
                *slot -= 1;
            }
        }
    }
}

/// The price of a projected `message` (0 when its content is empty: it is not sent).
fn projected_price(message: Option<&Value>, estimator: &dyn TokenEstimator) -> u64 {
    match message {
        Some(message) => {
            let empty = message
                .get("content")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty);
            if empty {
                0
            } else {
                message_tokens(message, estimator)
            }
        }
        None => 0,
    }
}

/// The ids of the `tool-call` blocks of an assistant message payload.
fn tool_call_ids(data: &Value) -> impl Iterator<Item = &str> {
    data.get("message")
        .and_then(|message| message.get("content"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool-call"))
        .filter_map(|block| block.get("id").and_then(Value::as_str))
}

/// The compaction bracket a session leaves open: its newest `compaction/start`, when no
/// `compaction/end` or `session/end-seed` came after it.
fn open_bracket(session: &Session) -> Option<OpenBracket> {
    let newest = |tag: &'static str| {
        session
            .latest(&EventType::parse(tag))
            .map(|event| (event.seq(), tag))
    };
    [
        newest("compaction/start"),
        newest("compaction/end"),
        newest("session/end-seed"),
    ]
    .into_iter()
    .flatten()
    .max()
    .filter(|(_, tag)| *tag == "compaction/start")
    .and_then(|(seq, _)| session.event(seq))
    .map(|event| OpenBracket {
        seq: event.seq(),
        data: event.data().clone(),
    })
}

#[cfg(test)]
mod tests;
