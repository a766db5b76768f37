//! strata's verdict on a V3 log file, from the library: the store's reader streaming rows into
//! the core's restore, as `strata validate --json` loads a file (crates/strata-cli/src/input.rs).

use std::path::Path;

use strata_core::SeedOptions;
use strata_store::{restore_stream, scan_log, StoreError};

/// What strata said about one log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StrataVerdict {
    /// Accepted.
    Accepted,
    /// Refused under `rule` (a strata rule id, or `codec` / `corrupt-record` / `io` for a row
    /// the reader could not decode).
    Refused {
        /// The rule id.
        rule: String,
        /// The seq strata names, when it names one.
        seq: Option<u64>,
        /// The refused event's position in the log (0 for the first event), when known.
        index: Option<u64>,
        /// strata's message.
        message: String,
    },
}

/// strata's verdict on the log at `path`.
pub fn verdict(path: &Path) -> StrataVerdict {
    let restored = scan_log(path)
        .and_then(|mut stream| restore_stream(&mut stream, SeedOptions::default()).map(|_| ()));
    match restored {
        Ok(()) => StrataVerdict::Accepted,
        Err(error) => refusal(error),
    }
}

fn refusal(error: StoreError) -> StrataVerdict {
    // A line L of the file is event L - 2 (the header is line 1).
    let index_of_line = |line: Option<u64>| line.and_then(|line| line.checked_sub(2));
    match error {
        StoreError::Invalid { line, source, .. } => StrataVerdict::Refused {
            rule: source.rule.id().to_owned(),
            seq: source.seq.or(source.index),
            index: source.index.or(index_of_line(line)),
            message: source.message.clone(),
        },
        StoreError::Corrupt {
            line, seq, detail, ..
        } => StrataVerdict::Refused {
            rule: "corrupt-record".to_owned(),
            seq,
            index: index_of_line(line),
            message: detail,
        },
        StoreError::Codec(error) => {
            let line = error.line();
            let seq = error.location().and_then(|location| location.seq);
            StrataVerdict::Refused {
                rule: "codec".to_owned(),
                seq,
                index: index_of_line(line),
                message: error.to_string(),
            }
        }
        other => StrataVerdict::Refused {
            rule: "io".to_owned(),
            seq: None,
            index: None,
            message: other.to_string(),
        },
    }
}
