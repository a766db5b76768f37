//! Composing the adjacent edges: a vN log is carried to V3 through every edge from vN on
//! (session-core §2.4: v0→v1→v2→v3), each edge a streaming adapter over the previous one.

use serde_json::{Map, Value};
use strata_core::Generation;

use super::artifact::{ArtifactCheck, HopVerdict};
use super::error::MigrateError;
use super::stage::{StageContext, StageItem};
use super::v0_v1::{self, V0ToV1};
use super::v1_v2::{self, V1ToV2};
use super::v2_v3::{self, V2ToV3};

/// A migrated log in flight: the V3 header object and the V3 events, produced lazily.
pub struct Migrated {
    /// The V3 logical header (without `type`), in dsh's key order.
    pub header: Map<String, Value>,
    /// The V3 events, renumbered densely from 0.
    pub events: Box<dyn Iterator<Item = StageItem> + Send>,
    /// For a v0/v1 source, the first hop's verdict (see `artifact`): read it after the
    /// stream ends, and after a v2→v3 refusal keep pulling `events` to their end first.
    pub hop: Option<HopVerdict>,
}

/// Chains the edges from `context.source_generation` to V3 over `events` (the source log's
/// events in order, already validated under the source generation's rules).
pub fn migrate_events(
    header: &Map<String, Value>,
    events: impl Iterator<Item = StageItem> + Send + 'static,
    context: StageContext,
) -> Result<Migrated, MigrateError> {
    let generation = context.source_generation;
    if generation == Generation::V3 {
        return Err(MigrateError::AlreadyNative {
            file: context.file.to_string(),
        });
    }
    if generation == Generation::V4 {
        return Err(MigrateError::AlreadyNewer {
            file: context.file.to_string(),
        });
    }
    let mut header = header.clone();
    let mut events: Box<dyn Iterator<Item = StageItem> + Send> = Box::new(events);
    if generation == Generation::V0 {
        header = v0_v1::header(header);
        events = Box::new(V0ToV1::new(events, context.clone()));
    }
    let mut hop = None;
    if generation == Generation::V1 {
        let context = context.clone();
        events = Box::new(
            events.map(move |item| item.and_then(|staged| v1_v2::audit_decoded(&context, staged))),
        );
    }
    if generation <= Generation::V1 {
        let seed_length = v1_v2::seed_length(&header);
        header = v1_v2::header(&header);
        let v2 = V1ToV2::new(events, context.clone(), seed_length);
        let (checked, verdict) = ArtifactCheck::new(v2, &header, context.clone());
        events = Box::new(checked);
        hop = Some(verdict);
    }
    header = v2_v3::header(header);
    events = Box::new(V2ToV3::new(events, context));
    Ok(Migrated {
        header,
        events,
        hop,
    })
}
