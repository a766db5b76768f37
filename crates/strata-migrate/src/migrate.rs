//! Migration of older dsh generations to V3 (session-core §2.4, §4.6, §7.3, §10.3;
//! persistence §2.10): adjacent, streaming edges v0→v1→v2→v3 and the `strata migrate` file
//! operation that publishes `session.v3.jsonl[.zstd]` beside an untouched source.

pub use artifact::HopVerdict;
pub use chain::{migrate_events, Migrated};
pub use error::MigrateError;
pub use pipeline::{
    compare_messages, encode_v3_line, migrate_file, target_path, MigrateReport, FRAME_PLAINTEXT_LEN,
};
pub use refusal::Refusal;
pub use remap::{remap_references, remap_references_strictly, BadReference, SeqMap, Unmapped};
pub use stage::{StageContext, StageItem, Staged};
pub use stream::{embeddable, encode_stream};
pub use v0_v1::V0ToV1;
pub use v1_v2::{header as v2_header, seed_length as v1_seed_length, V1ToV2};
pub use v2_v3::{V2ToV3, HEADER_KEY_ORDER, SYSTEM_ID_PREFIX, SYSTEM_PROMPT_PLUGIN};
pub use verify::{validate_source, verify_target, Checked};

mod artifact;
mod chain;
mod error;
mod payload_audit;
mod pipeline;
mod refusal;
mod remap;
mod stage;
mod stream;
mod v0_v1;
mod v1_v2;
mod v2_v3;
mod verify;
