//! The JSONL storage form of an envelope's `sourceEventSeqs` (session-core §10.1).
//!
//! On disk a strictly increasing list stores each maximal run of three or more consecutive seqs
//! as an inclusive `[first, last]` pair, so a summary citing a million chunks costs one pair
//! instead of a million numbers. Any other list is stored verbatim. Only the envelope
//! `sourceEventSeqs` uses this form; replace endpoints and payload seq lists never do.
//!
//! Invariants:
//! - `decode_source_seqs(&encode_source_seqs(xs), m) == Ok(xs)` for every list of seqs at most
//!   [`MAX_SAFE_SEQ`] whose length is at most `m`.
//! - Decoding never allocates for a range before checking the range against `max_entries`, so a
//!   hostile `[[0, 9007199254740991]]` fails in constant time and memory.
//! - Numbers are judged with JavaScript semantics, as dsh's `JSON.parse` sees them: `3.0` is the
//!   integer 3, while `-0`, `0.5`, `1e400` and anything above 2^53 − 1 are rejected.
//! - Rules are checked in dsh's order (entry by entry, strict increase last), so the first failure
//!   reported is the one dsh reports.

use serde_json::Value;

/// The largest seq a log can hold: JavaScript's `Number.MAX_SAFE_INTEGER` (2^53 − 1), because
/// dsh stores seqs as JavaScript numbers.
pub const MAX_SAFE_SEQ: u64 = (1 << 53) - 1;

/// Why a stored `sourceEventSeqs` value could not be expanded, one variant per rule of
/// session-core §10.1 so callers can match the rule rather than the text.
///
/// Each message starts with dsh's text for the rule (see [`RangeError::upstream_text`]) and then
/// names the offending entry. `entry_idx` is the zero-based index in the stored array.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RangeError {
    /// The stored value is not a JSON array.
    #[error("sourceEventSeqs must be an array, got {found}")]
    NotArray {
        /// The JSON kind that was found instead (`object`, `string`, ...).
        found: &'static str,
    },
    /// A plain entry or a pair endpoint is not a non-negative safe integer.
    #[error(
        "sourceEventSeqs must contain non-negative safe integers: entry {entry_idx} has {found}"
    )]
    NotSeq {
        /// Index of the stored entry holding the bad number.
        entry_idx: usize,
        /// The offending value as written in the file.
        found: String,
    },
    /// An entry is neither a number nor a two-element array.
    #[error(
        "sourceEventSeqs range entries must be [start, end] pairs: entry {entry_idx} is {found}"
    )]
    NotPair {
        /// Index of the malformed stored entry.
        entry_idx: usize,
        /// The malformed entry, re-serialized as compact JSON (truncated when long).
        found: String,
    },
    /// A pair has `start > end`.
    #[error("sourceEventSeqs ranges require start <= end: entry {entry_idx} is [{start}, {end}]")]
    StartAfterEnd {
        /// Index of the inverted pair.
        entry_idx: usize,
        /// The pair's first element.
        start: u64,
        /// The pair's second element.
        end: u64,
    },
    /// A list containing at least one pair does not expand to a strictly increasing list.
    #[error(
        "sourceEventSeqs ranges must be strictly increasing: entry {entry_idx} starts at {found} after {previous}"
    )]
    NotIncreasing {
        /// Index of the first stored entry whose expansion does not exceed what precedes it.
        entry_idx: usize,
        /// The last expanded seq before that entry.
        previous: u64,
        /// The first expanded seq of that entry.
        found: u64,
    },
    /// A plain entry would take the expanded list past `max_entries`.
    #[error("sourceEventSeqs exceeds its event sequence: entry {entry_idx} would make {n_entries} entries, at most {max_entries} allowed")]
    TooManyEntries {
        /// Index of the plain entry that overflows.
        entry_idx: usize,
        /// Length the expanded list would reach with this entry.
        n_entries: u64,
        /// The bound the caller passed (the owning event's seq).
        max_entries: u64,
    },
    /// A pair would take the expanded list past `max_entries`.
    #[error("sourceEventSeqs range exceeds its event sequence: entry {entry_idx} is [{start}, {end}] after {n_before} entries, at most {max_entries} allowed")]
    RangeTooLong {
        /// Index of the overflowing pair.
        entry_idx: usize,
        /// The pair's first element.
        start: u64,
        /// The pair's second element.
        end: u64,
        /// How many seqs were expanded before this pair.
        n_before: u64,
        /// The bound the caller passed (the owning event's seq).
        max_entries: u64,
    },
}

impl RangeError {
    /// dsh's exact message for this rule, without strata's evidence suffix, for hosts that must
    /// report byte-identical texts.
    pub fn upstream_text(&self) -> &'static str {
        match self {
            RangeError::NotArray { .. } => "sourceEventSeqs must be an array",
            RangeError::NotSeq { .. } => "sourceEventSeqs must contain non-negative safe integers",
            RangeError::NotPair { .. } => {
                "sourceEventSeqs range entries must be [start, end] pairs"
            }
            RangeError::StartAfterEnd { .. } => "sourceEventSeqs ranges require start <= end",
            RangeError::NotIncreasing { .. } => {
                "sourceEventSeqs ranges must be strictly increasing"
            }
            RangeError::TooManyEntries { .. } => "sourceEventSeqs exceeds its event sequence",
            RangeError::RangeTooLong { .. } => "sourceEventSeqs range exceeds its event sequence",
        }
    }
}

/// Encodes seqs into their storage form: a JSON array where, if `seqs` is strictly increasing,
/// each maximal run of three or more consecutive seqs becomes a `[first, last]` pair.
///
/// A list that is not strictly increasing (including one with duplicates) is stored verbatim,
/// because ranges could not represent it losslessly. Values above [`MAX_SAFE_SEQ`] are written
/// as given; the decoder will reject them, as dsh does.
pub fn encode_source_seqs(seqs: &[u64]) -> Value {
    if !is_strictly_increasing(seqs) {
        return Value::Array(seqs.iter().map(|&seq| Value::from(seq)).collect());
    }
    let mut encoded = Vec::new();
    let mut run_start = 0;
    while run_start < seqs.len() {
        let mut run_end = run_start;
        // Strictly increasing, so `seqs[run_end] < u64::MAX` whenever a successor exists.
        while run_end + 1 < seqs.len() && seqs[run_end + 1] == seqs[run_end] + 1 {
            run_end += 1;
        }
        if run_end - run_start >= 2 {
            encoded.push(Value::Array(vec![
                Value::from(seqs[run_start]),
                Value::from(seqs[run_end]),
            ]));
        } else {
            encoded.extend(
                seqs[run_start..=run_end]
                    .iter()
                    .map(|&seq| Value::from(seq)),
            );
        }
        run_start = run_end + 1;
    }
    Value::Array(encoded)
}

/// Expands a stored `sourceEventSeqs` value back into the list of seqs it encodes.
///
/// `max_entries` bounds the expanded length; pass the owning event's seq, since every source is
/// an earlier, distinct event. It is also the memory bound: the result never holds more than
/// `max_entries` seqs, so a caller decoding untrusted input must pass a bound it can afford
/// (the event's seq after checking it against the expected dense seq, not a seq read on trust).
///
/// A list without pairs is returned as stored, even if it is not increasing: duplicates and
/// order are the surface rules' business (session-core §5.2), not the codec's.
pub fn decode_source_seqs(value: &Value, max_entries: u64) -> Result<Vec<u64>, RangeError> {
    let Value::Array(entries) = value else {
        return Err(RangeError::NotArray {
            found: json_kind(value),
        });
    };
    let mut decoded: Vec<u64> = Vec::with_capacity(entries.len().min(clamp_usize(max_entries)));
    let mut has_range = false;
    // The first entry whose expansion fails to exceed its predecessor; reported only if a pair
    // occurs anywhere, and only after every per-entry rule has passed, as dsh does.
    let mut first_non_increase: Option<RangeError> = None;
    for (entry_idx, entry) in entries.iter().enumerate() {
        let (start, end) = match entry {
            Value::Number(_) => {
                let seq = parse_seq(entry, entry_idx)?;
                let n_before = decoded.len() as u64;
                if n_before >= max_entries {
                    return Err(RangeError::TooManyEntries {
                        entry_idx,
                        n_entries: n_before + 1,
                        max_entries,
                    });
                }
                note_order(&decoded, entry_idx, seq, &mut first_non_increase);
                decoded.push(seq);
                continue;
            }
            Value::Array(pair) if pair.len() == 2 => (
                parse_seq(&pair[0], entry_idx)?,
                parse_seq(&pair[1], entry_idx)?,
            ),
            _ => {
                return Err(RangeError::NotPair {
                    entry_idx,
                    found: short_json(entry),
                })
            }
        };
        if end < start {
            return Err(RangeError::StartAfterEnd {
                entry_idx,
                start,
                end,
            });
        }
        // Both endpoints are at most 2^53 − 1, so neither subtraction nor `+ 1` can overflow.
        let n_range = end - start + 1;
        let n_before = decoded.len() as u64;
        if n_range > max_entries.saturating_sub(n_before) {
            return Err(RangeError::RangeTooLong {
                entry_idx,
                start,
                end,
                n_before,
                max_entries,
            });
        }
        note_order(&decoded, entry_idx, start, &mut first_non_increase);
        decoded.reserve(clamp_usize(n_range));
        decoded.extend(start..=end);
        has_range = true;
    }
    match first_non_increase {
        Some(error) if has_range => Err(error),
        _ => Ok(decoded),
    }
}

/// Whether `value` is a list [`decode_source_seqs`] would return as it is: at most
/// `max_entries` seqs, each a plain integer in canonical spelling (no range, no `7.0`), so
/// decoding and re-encoding it gives back the same value. For lists decoded as values (serde's
/// rows); the one-pass scanner holds such a list as seqs already
/// (`RawEvent::plain_source_seqs`), and the codec checks only its length. Allocates nothing.
pub fn is_plain_seq_list(value: &Value, max_entries: u64) -> bool {
    let Value::Array(entries) = value else {
        return false;
    };
    entries.len() as u64 <= max_entries
        && entries.iter().all(|entry| {
            let Value::Number(number) = entry else {
                return false;
            };
            strata_core::json::plain_integer(number.as_str()).is_some_and(|seq| seq <= MAX_SAFE_SEQ)
        })
}

/// Whether every element is greater than the one before it.
fn is_strictly_increasing(seqs: &[u64]) -> bool {
    seqs.windows(2).all(|pair| pair[0] < pair[1])
}

/// Records the first place where `next` does not exceed the last decoded seq.
fn note_order(decoded: &[u64], entry_idx: usize, next: u64, first: &mut Option<RangeError>) {
    if first.is_some() {
        return;
    }
    if let Some(&previous) = decoded.last() {
        if next <= previous {
            *first = Some(RangeError::NotIncreasing {
                entry_idx,
                previous,
                found: next,
            });
        }
    }
}

/// Reads one seq with JavaScript semantics: the number's value as a double must be finite,
/// integral, non-negative, not negative zero and at most 2^53 − 1.
fn parse_seq(value: &Value, entry_idx: usize) -> Result<u64, RangeError> {
    let not_seq = || RangeError::NotSeq {
        entry_idx,
        found: short_json(value),
    };
    let Value::Number(number) = value else {
        return Err(not_seq());
    };
    // With `arbitrary_precision` this parses the number's text as a double, which is what
    // `JSON.parse` does; non-finite results come back as `None`.
    let Some(double) = number.as_f64() else {
        return Err(not_seq());
    };
    let is_seq = double.is_finite()
        && double.fract() == 0.0
        && double.is_sign_positive()
        && double <= MAX_SAFE_SEQ as f64;
    if !is_seq {
        return Err(not_seq());
    }
    // Exact: an integral double in [0, 2^53 − 1] converts to u64 without rounding.
    Ok(double as u64)
}

/// The JSON kind of a value, for error messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Compact JSON for an offending value, cut to a bounded length so a hostile entry cannot make
/// the error message huge.
fn short_json(value: &Value) -> String {
    const MAX_CHARS: usize = 64;
    let text = value.to_string();
    match text.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Converts a count to `usize`, saturating on targets where `usize` is narrower than 64 bits.
fn clamp_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests;
