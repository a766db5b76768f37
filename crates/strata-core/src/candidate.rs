//! Typed appends: candidates that carry exactly the surface intent their type allows.
//!
//! A surface event cannot be built without its placement and a log-only event
//! cannot be given one: [`Candidate::surface`] takes the intent type its
//! payload declares ([`SurfaceIntent`], or [`Placement`] for assistant messages,
//! which embed their stream and may not cite sources), and
//! [`Candidate::log_only`] takes none. [`Candidate::dynamic`] is the escape
//! hatch for plugin and replayed events; acceptance checks it at runtime.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::event::{EventType, SurfaceOp};
use crate::seq::Seq;

/// A candidate event for `Session::append`: type, payload and surface intent.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub(crate) event_type: EventType,
    pub(crate) data: Value,
    pub(crate) meta: MetaInput,
    pub(crate) ignorable: bool,
}

/// Where a surface event goes and what it cites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SurfaceIntent {
    op: SurfaceOp,
    sources: Option<Vec<Seq>>,
}

impl SurfaceIntent {
    /// Append to the tail, citing nothing.
    pub fn append() -> SurfaceIntent {
        SurfaceIntent {
            op: SurfaceOp::Append,
            sources: None,
        }
    }

    /// Append to the tail, citing earlier events (a tool result cites its `tool/call`).
    pub fn append_citing(sources: Vec<Seq>) -> SurfaceIntent {
        SurfaceIntent {
            op: SurfaceOp::Append,
            sources: Some(sources),
        }
    }

    /// Replace the inclusive span `start..=end` (surface order), citing `sources`,
    /// which must include every shadowed node.
    pub fn replace(start: Seq, end: Seq, sources: Vec<Seq>) -> SurfaceIntent {
        SurfaceIntent {
            op: SurfaceOp::replace(start, end),
            sources: Some(sources),
        }
    }

    /// The placement.
    pub fn op(&self) -> SurfaceOp {
        self.op
    }

    /// The cited sources.
    pub fn sources(&self) -> Option<&[Seq]> {
        self.sources.as_deref()
    }
}

/// The placement of an assistant message: an op and no sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement(pub SurfaceOp);

impl Placement {
    /// Append to the tail.
    pub fn append() -> Placement {
        Placement(SurfaceOp::Append)
    }
}

/// The intent a surface payload accepts: its placement and, where the type
/// allows, cited sources.
pub trait Intent {
    /// The placement.
    fn op(&self) -> SurfaceOp;
    /// The cited sources (always `None` for [`Placement`]).
    fn into_sources(self) -> Option<Vec<Seq>>;
}

impl Intent for SurfaceIntent {
    fn op(&self) -> SurfaceOp {
        self.op
    }
    fn into_sources(self) -> Option<Vec<Seq>> {
        self.sources
    }
}

impl Intent for Placement {
    fn op(&self) -> SurfaceOp {
        self.0
    }
    fn into_sources(self) -> Option<Vec<Seq>> {
        None
    }
}

/// A payload of a surface event type.
pub trait SurfacePayload {
    /// The intent this type takes.
    type Intent: Intent;
    /// The event type.
    fn event_type(&self) -> EventType;
    /// The `data` object in dsh's key order.
    fn into_data(self) -> Value;
}

/// A payload of a log-only event type.
pub trait LogOnlyPayload {
    /// The event type.
    fn event_type(&self) -> EventType;
    /// The `data` value in dsh's key order.
    fn into_data(self) -> Value;
}

impl Candidate {
    /// A surface event with its required intent.
    pub fn surface<P: SurfacePayload>(payload: P, intent: P::Intent) -> Candidate {
        Candidate {
            event_type: payload.event_type(),
            data: payload.into_data(),
            meta: MetaInput::Typed {
                op: intent.op(),
                sources: intent.into_sources(),
            },
            ignorable: false,
        }
    }

    /// A log-only event, which carries no surface metadata.
    pub fn log_only<P: LogOnlyPayload>(payload: P) -> Candidate {
        Candidate {
            event_type: payload.event_type(),
            data: payload.into_data(),
            meta: MetaInput::None,
            ignorable: false,
        }
    }

    /// Any event given as raw JSON (plugin events, replays). Every surface
    /// rule is checked at runtime, including the shapes of `surface_op` and
    /// `source_event_seqs`.
    pub fn dynamic(
        event_type: &str,
        data: Value,
        surface_op: Option<Value>,
        source_event_seqs: Option<Value>,
    ) -> Candidate {
        let meta = if surface_op.is_none() && source_event_seqs.is_none() {
            MetaInput::None
        } else {
            MetaInput::Raw {
                surface_op: surface_op.map(Cow::Owned),
                sources: source_event_seqs.map(RawSources::Value),
            }
        };
        Candidate {
            event_type: EventType::parse(event_type),
            data,
            meta,
            ignorable: false,
        }
    }

    /// Marks the candidate `ignorable: true` (plugin events older readers may skip).
    pub fn ignorable(mut self) -> Candidate {
        self.ignorable = true;
        self
    }

    /// The candidate's type.
    pub fn event_type(&self) -> &EventType {
        &self.event_type
    }

    /// The candidate's payload.
    pub fn data(&self) -> &Value {
        &self.data
    }
}

impl Candidate {
    /// The candidate as a stored row at `seq` (dsh's write order: `type, seq, time, data,
    /// sourceEventSeqs?, surfaceOp?`); `time: None` leaves the row without one.
    pub(crate) fn into_row(self, seq: u64, time: Option<Value>) -> Value {
        let mut row = serde_json::Map::new();
        row.insert("type".into(), Value::from(self.event_type.as_str()));
        row.insert("seq".into(), Value::from(seq));
        if let Some(time) = time {
            row.insert("time".into(), time);
        }
        row.insert("data".into(), self.data);
        if let MetaInput::Typed { op, sources } = self.meta {
            if let Some(sources) = sources {
                row.insert("sourceEventSeqs".into(), crate::wire::seqs_value(&sources));
            }
            row.insert(
                "surfaceOp".into(),
                op.to_value(crate::generation::ReplaceSpelling::StartEnd),
            );
        }
        Value::Object(row)
    }
}

pub(crate) fn object(entries: Vec<(&str, Value)>) -> Value {
    let mut map = Map::with_capacity(entries.len());
    for (key, value) in entries {
        map.insert(key.to_owned(), value);
    }
    Value::Object(map)
}

/// A candidate's surface metadata before validation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum MetaInput {
    /// Neither field.
    None,
    /// Typed by the caller (typed append): shapes already hold.
    Typed {
        op: SurfaceOp,
        sources: Option<Vec<Seq>>,
    },
    /// Metadata of an event accepted before (replay of accepted events):
    /// shapes hold; the source list is shared, not copied.
    Accepted {
        op: SurfaceOp,
        sources: Option<Arc<[Seq]>>,
    },
    /// Raw JSON (wire rows, dynamic appends): every shape rule applies.
    Raw {
        /// Borrowed for the plain `"append"` of a stored row (no allocation per row).
        surface_op: Option<Cow<'static, Value>>,
        sources: Option<RawSources>,
    },
}

/// A `sourceEventSeqs` not yet validated.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RawSources {
    /// Any JSON: every shape rule applies.
    Value(Value),
    /// A compact list of plain seqs as a store's decoder read it: an array whose entries are
    /// all seqs under every generation, so the shape rules 4b–4d hold; the list is shared
    /// with the accepted event as it is.
    Seqs(Arc<[Seq]>),
}

impl RawSources {
    /// The list as the JSON it was written as (opaque events keep it verbatim).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            RawSources::Value(value) => value.clone(),
            RawSources::Seqs(seqs) => crate::wire::seqs_value(seqs),
        }
    }
}
