//! Names of JSONL session directories and files (persistence §2.1, §2.4; session-core §10.4).
//!
//! A session lives at `<root>/--<projectKey(cwd)>--/<encodeSegment(id)>/<session file>`, or under
//! `_no-cwd/` when its header has no cwd. The functions here compute those names from strings;
//! they never touch the file system.
//!
//! Invariants:
//! - Both encoders work on UTF-16 code units, as dsh (JavaScript) does, so the names match what
//!   dsh creates byte for byte, including for characters outside the Basic Multilingual Plane.
//! - [`encode_segment`] is injective and its output is always one safe path component: only
//!   `A–Z a–z 0–9 . _ - ~`, never empty, never `.` or `..`. [`decode_segment`] accepts exactly
//!   the strings `encode_segment` produces, so a listing can tell session directories from
//!   foreign entries.
//! - [`project_key`] is lossy by design (`/a/b-c` and `/a-b/c` share a directory); sessions in a
//!   shared project directory are told apart by their encoded id alone.

use std::fmt::Write as _;

/// The project directory of sessions whose header has no cwd.
pub const NO_CWD_DIR: &str = "_no-cwd";

/// Most code units a project slug keeps, so that `--<slug>--` fits a 255-byte file name.
pub const MAX_PROJECT_SLUG_UNITS: usize = 251;

/// Most bytes an encoded session id ([`encode_segment`]) may take: it names a directory, and a
/// file name holds at most 255 bytes (`NAME_MAX` on Linux; APFS and most other file systems
/// too). Unlike a project slug, an id cannot be cut (it is the session's identity).
pub const MAX_SEGMENT_BYTES: usize = 255;

/// Why a string is not a session id segment; one variant per way the mapping can fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// dsh rejects the empty session id, which would name the project directory itself.
    #[error("session id must not be empty")]
    EmptySessionId,
    /// A directory name to decode is empty.
    #[error("encoded session id segment is empty")]
    EmptySegment,
    /// The segment holds a byte that `encode_segment` never writes.
    #[error(
        "encoded session id segment {segment:?} has an unsafe byte 0x{byte:02x} at offset {offset}"
    )]
    UnsafeByte {
        /// The whole segment, for context.
        segment: String,
        /// Byte offset of the offending byte.
        offset: usize,
        /// The offending byte.
        byte: u8,
    },
    /// A `~` is not followed by four hexadecimal digits.
    #[error("encoded session id segment {segment:?} has a malformed escape at offset {offset}")]
    BadEscape {
        /// The whole segment, for context.
        segment: String,
        /// Byte offset of the `~`.
        offset: usize,
    },
    /// The escapes decode to a lone surrogate, which a Rust string cannot hold.
    #[error("encoded session id segment {segment:?} decodes to a lone utf-16 surrogate")]
    LoneSurrogate {
        /// The whole segment, for context.
        segment: String,
    },
    /// The segment decodes, but `encode_segment` would have spelled the id differently (an
    /// escaped safe character, lower-case hex, a bare `.` or `..`), so it is not one of ours.
    #[error("encoded session id segment {segment:?} is not canonical; the id {id:?} encodes as {canonical:?}")]
    NonCanonical {
        /// The segment as found.
        segment: String,
        /// The id it decodes to.
        id: String,
        /// How that id is spelled by `encode_segment`.
        canonical: String,
    },
}

/// Encodes a session id as one directory name, so any id — including `..`, `a/b` or NUL — stays
/// inside its project directory and maps to a distinct name.
///
/// Each UTF-16 code unit in `A–Z a–z 0–9 . _ -` is kept; every other unit, `~` included, becomes
/// `~` and four upper-case hex digits. The whole ids `.` and `..` are escaped as `~002E` and
/// `~002E~002E`. No length limit is applied here, and dsh applies none: an id whose encoding
/// exceeds the file system's name limit fails in dsh when its directory is created. The JSONL
/// store refuses such an id before writing anything ([`MAX_SEGMENT_BYTES`]).
pub fn encode_segment(id: &str) -> Result<String, LayoutError> {
    if id.is_empty() {
        return Err(LayoutError::EmptySessionId);
    }
    if id == "." || id == ".." {
        return Ok("~002E".repeat(id.len()));
    }
    let mut encoded = String::with_capacity(id.len());
    for unit in id.encode_utf16() {
        match safe_ascii(unit) {
            Some(byte) => encoded.push(char::from(byte)),
            None => push_escape(&mut encoded, unit),
        }
    }
    Ok(encoded)
}

/// Decodes a directory name written by [`encode_segment`] back into the session id, so a
/// listing can recover ids from names and skip entries that are not session directories.
///
/// Only canonical encodings are accepted: `decode_segment(s)` succeeds exactly when
/// `s == encode_segment(id)` for the returned id.
pub fn decode_segment(segment: &str) -> Result<String, LayoutError> {
    if segment.is_empty() {
        return Err(LayoutError::EmptySegment);
    }
    let bytes = segment.as_bytes();
    let mut units = Vec::with_capacity(bytes.len());
    let mut offset = 0;
    while offset < bytes.len() {
        let byte = bytes[offset];
        if byte == b'~' {
            let unit = bytes
                .get(offset + 1..offset + 5)
                .and_then(parse_hex4)
                .ok_or_else(|| LayoutError::BadEscape {
                    segment: segment.to_owned(),
                    offset,
                })?;
            units.push(unit);
            offset += 5;
        } else if safe_ascii(u16::from(byte)).is_some() {
            units.push(u16::from(byte));
            offset += 1;
        } else {
            return Err(LayoutError::UnsafeByte {
                segment: segment.to_owned(),
                offset,
                byte,
            });
        }
    }
    let id = String::from_utf16(&units).map_err(|_| LayoutError::LoneSurrogate {
        segment: segment.to_owned(),
    })?;
    // The id is non-empty here (the segment was), so encoding cannot fail; treat a failure as
    // non-canonical rather than trusting that reasoning with a panic.
    let canonical = encode_segment(&id).unwrap_or_default();
    if canonical != segment {
        return Err(LayoutError::NonCanonical {
            segment: segment.to_owned(),
            id,
            canonical,
        });
    }
    Ok(id)
}

/// Names the project directory for a session's cwd, so sessions of one working directory are
/// listed together: `--<slug>--`, or [`NO_CWD_DIR`] when there is no cwd.
///
/// The slug walks the cwd's UTF-16 code units: each run of `/`, `\` or `:` becomes one `-`,
/// `A–Z a–z 0–9 . _ -` are kept, every other unit becomes `~XXXX`. Leading `-` are stripped,
/// an empty slug becomes `root`, and the slug is cut to [`MAX_PROJECT_SLUG_UNITS`] units (it is
/// ASCII by then, so units are bytes; the cut may split an escape, as in dsh).
pub fn project_key(cwd: Option<&str>) -> String {
    let Some(cwd) = cwd else {
        return NO_CWD_DIR.to_owned();
    };
    let mut slug = String::with_capacity(cwd.len());
    let mut in_separator_run = false;
    for unit in cwd.encode_utf16() {
        let is_separator = matches!(unit, 0x2F | 0x5C | 0x3A); // `/`, `\`, `:`
        if is_separator {
            if !in_separator_run {
                slug.push('-');
            }
        } else {
            match safe_ascii(unit) {
                Some(byte) => slug.push(char::from(byte)),
                None => push_escape(&mut slug, unit),
            }
        }
        in_separator_run = is_separator;
    }
    let slug = slug.trim_start_matches('-');
    let slug = if slug.is_empty() { "root" } else { slug };
    // ASCII only, so any byte index is a char boundary.
    let slug = &slug[..slug.len().min(MAX_PROJECT_SLUG_UNITS)];
    format!("--{slug}--")
}

/// Names the log file of one format generation (persistence §2.4): `session.jsonl` for v0,
/// `session.vN.jsonl` for N ≥ 1, with `.zstd` appended for the zstd encoding.
pub fn session_file_name(generation: u32, zstd: bool) -> String {
    let suffix = if zstd { ".zstd" } else { "" };
    match generation {
        0 => format!("session.jsonl{suffix}"),
        n => format!("session.v{n}.jsonl{suffix}"),
    }
}

/// Reads a file name written by [`session_file_name`] back as `(generation, zstd)`, so a store
/// can pick the highest generation in a session directory and ignore every other entry.
///
/// Only canonical names are accepted: `session.v0.jsonl` and `session.v01.jsonl` are not
/// generation names (v0 is `session.jsonl`, and digits have no leading zeros).
pub fn parse_session_file_name(name: &str) -> Option<(u32, bool)> {
    let (stem, zstd) = match name.strip_suffix(".zstd") {
        Some(stem) => (stem, true),
        None => (name, false),
    };
    let stem = stem.strip_prefix("session.")?.strip_suffix("jsonl")?;
    if stem.is_empty() {
        return Some((0, zstd));
    }
    let digits = stem.strip_prefix('v')?.strip_suffix('.')?;
    let canonical = !digits.is_empty()
        && !digits.starts_with('0')
        && digits.bytes().all(|byte| byte.is_ascii_digit());
    if !canonical {
        return None;
    }
    let generation = digits.parse().ok()?;
    Some((generation, zstd))
}

/// The byte for a code unit kept literally (`A–Z a–z 0–9 . _ -`), or `None` if it is escaped.
fn safe_ascii(unit: u16) -> Option<u8> {
    let byte = u8::try_from(unit).ok()?;
    let safe = byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-');
    safe.then_some(byte)
}

/// Appends `~XXXX`, the escape for one UTF-16 code unit.
fn push_escape(out: &mut String, unit: u16) {
    // Writing to a String cannot fail.
    let _ = write!(out, "~{unit:04X}");
}

/// Parses four hexadecimal digits (either case; canonical spelling is checked separately).
fn parse_hex4(digits: &[u8]) -> Option<u16> {
    if digits.len() != 4 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let text = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests;
