//! One pass over a stored row: its envelope, its payload's text and its payload's view together.
//!
//! Loading a log used to tokenize every payload twice: serde captured the `data` text while
//! decoding the envelope, then acceptance parsed that text again into the [`View`] its rules
//! read. [`ScannedRow::scan`] reads a row once: a small scanner walks the envelope, validates
//! the payload while building its view, and borrows the payload's text from the row, so the
//! decoder copies it exactly once (into the batch's shared block).
//!
//! The scanner claims only the rows strata and dsh write: compact JSON (no whitespace outside
//! strings: a space where a token belongs ends the scan like any other stray byte), the
//! envelope keys each at most once with `type` before `data`, no escapes in keys or in `type`,
//! numeric `seq`/`time`. Any other row, and every row with an error, goes to serde whole, so
//! what a row decodes to and every error message are serde's.
//!
//! Invariants:
//! - When the scanner claims a row, serde_json accepts that text and decodes it to the same
//!   [`RawEvent`] (payload text included; a compact list of plain seqs in `sourceEventSeqs` is
//!   held as seqs, which [`RawEvent::source_event_seqs`] gives back as serde's value); the
//!   scanner refuses what it cannot prove that of (a `\u` escape of a surrogate where serde
//!   would check pairing, nesting past [`MAX_NESTING`], serde's private number key).
//! - The view is the one `View::parse(data, depth)` builds, except that a materialized string
//!   with escapes (or with a code point the `json` module holds behind a marker) is kept as its
//!   raw text (a `View::Deep`) and read through `json` when asked: every
//!   [`Node`](crate::view::Node) query answers the same.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::data::{Payload, Text};
use crate::event::{EnvelopeKey, EventType, KeyOrder};
use crate::seq::Seq;
use crate::view::{Entries, View};
use crate::wire::{RawEvent, Scalar, TypeField};

/// Containers deeper than this send the row to serde (whose own limit is 128).
const MAX_NESTING: u32 = 64;

/// serde_json's private map key for numbers under `arbitrary_precision`: an object whose first
/// key it is reads as a number there, so the scanner leaves such rows to serde.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A stored row decoded in one pass, its payload still borrowed from the row's text.
///
/// A store's decoder scans a batch of rows, moves their payloads into one block
/// ([`ScannedRow::share_payloads`]) and checks each row ahead
/// ([`PrecheckedRow::check_scanned`](crate::ingest::PrecheckedRow::check_scanned)) with the view the
/// scan built, so no payload is tokenized twice.
#[derive(Debug)]
pub struct ScannedRow<'a> {
    /// The row; its `data` is unset while `payload` borrows the text.
    raw: RawEvent,
    payload: Option<&'a str>,
    view: Option<PreparedView<'a>>,
    /// The scanner (not serde) decoded the row.
    scanned: bool,
}

/// Where a decoder's scans keep the containers of their views: one arena per decoding thread,
/// reset between batches, so building a view allocates nothing of its own (per-container
/// vectors cost a load's decoding much of its time in malloc and free: docs/measurements.md §4).
#[derive(Debug, Default)]
pub struct ScanArena(bumpalo::Bump);

impl ScanArena {
    /// An empty arena.
    pub fn new() -> ScanArena {
        ScanArena::default()
    }

    /// Frees every view built in the arena for reuse (the borrow checker sees that none is
    /// left).
    pub fn reset(&mut self) {
        self.0.reset();
    }
}

/// A payload's view and the depth it was built to.
#[derive(Debug)]
pub(crate) struct PreparedView<'a> {
    pub(crate) depth: u8,
    pub(crate) view: View<'a>,
}

impl<'a> ScannedRow<'a> {
    /// Decodes one JSON text (a JSONL line without its newline): in one pass when the row has
    /// the shape strata and dsh write, else through serde (same result, same errors). The
    /// payload is validated but no view of it is built: for a reader that wants rows.
    pub fn scan(text: &'a str) -> Result<ScannedRow<'a>, serde_json::Error> {
        ScannedRow::scan_in(text, None)
    }

    /// [`ScannedRow::scan`] also building, given an arena, the view of the payload its rules
    /// read, for [`PrecheckedRow::check_scanned`](crate::ingest::PrecheckedRow::check_scanned).
    pub fn scan_in(
        text: &'a str,
        arena: Option<&'a ScanArena>,
    ) -> Result<ScannedRow<'a>, serde_json::Error> {
        let arena = arena.map(|arena| &arena.0);
        if let Some(row) = scan_envelope(text, arena) {
            return Ok(row);
        }
        RawEvent::from_json_str(text).map(ScannedRow::from)
    }

    /// The row's envelope fields (its `data` may be unset until the payload is shared or the
    /// row is taken with [`ScannedRow::into_raw`]).
    pub fn envelope(&self) -> &RawEvent {
        &self.raw
    }

    /// Rewrites the row's envelope (a store expanding its encoding of `sourceEventSeqs`); the
    /// payload and its view are kept.
    pub fn try_map_envelope<E>(
        mut self,
        map: impl FnOnce(RawEvent) -> Result<RawEvent, E>,
    ) -> Result<ScannedRow<'a>, E> {
        self.raw = map(std::mem::take(&mut self.raw))?;
        Ok(self)
    }

    /// Whether the one-pass scanner decoded this row (else serde did).
    pub fn is_scanned(&self) -> bool {
        self.scanned
    }

    /// The row as an owned wire row (a payload still borrowed is copied).
    pub fn into_raw(mut self) -> RawEvent {
        self.own_payload();
        self.raw
    }

    /// Splits the row into an owned wire row and the view built for it.
    pub(crate) fn into_parts(mut self) -> (RawEvent, Option<PreparedView<'a>>) {
        self.own_payload();
        (self.raw, self.view)
    }

    fn own_payload(&mut self) {
        if let Some(text) = self.payload.take() {
            self.raw.data = Some(Payload::Text(Text::whole(text)));
        }
    }

    /// Moves the payloads of `rows` (borrowed or decoded by serde) into one shared block, as
    /// [`RawEvent::share_payloads`] does for rows.
    pub fn share_payloads(rows: &mut [ScannedRow<'a>]) {
        Text::share_among(rows, ScannedRow::unshared_payload, |row, text| {
            row.raw.data = Some(Payload::Text(text));
            row.payload = None;
        });
    }

    /// The payload text not yet in a shared block.
    fn unshared_payload(&self) -> Option<&str> {
        match (self.payload, &self.raw.data) {
            (Some(text), _) => Some(text),
            (None, Some(Payload::Raw(raw))) => Some(raw.get()),
            _ => None,
        }
    }
}

impl From<RawEvent> for ScannedRow<'_> {
    /// A row decoded some other way (serde on bytes that are not UTF-8, say).
    fn from(raw: RawEvent) -> Self {
        ScannedRow {
            raw,
            payload: None,
            view: None,
            scanned: false,
        }
    }
}

/// The envelope in one pass, or `None` for a row serde must decode.
fn scan_envelope<'a>(text: &'a str, arena: Option<&'a bumpalo::Bump>) -> Option<ScannedRow<'a>> {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        arena,
    };
    let mut raw = RawEvent::default();
    let mut order = KeyOrder::empty();
    let mut payload = None;
    let mut view = None;
    scanner.eat(b'{')?;
    if scanner.eat(b'}').is_none() {
        loop {
            let key = scanner.envelope_key()?;
            // A repeated key keeps its first position and its last value in serde's reading.
            if !order.push(key) {
                return None;
            }
            let start = scanner.pos;
            match key {
                EnvelopeKey::Type => {
                    let (tag, escaped) = scanner.string(false)?;
                    if escaped {
                        return None;
                    }
                    raw.event_type = Some(TypeField::Tag(EventType::parse(tag)));
                }
                EnvelopeKey::Seq | EnvelopeKey::Time => {
                    let number = scanner.double()?;
                    if key == EnvelopeKey::Seq {
                        raw.seq = Some(Scalar::Number(number));
                    } else {
                        raw.time = Some(Scalar::Number(number));
                    }
                }
                EnvelopeKey::Data => {
                    let Some(TypeField::Tag(event_type)) = &raw.event_type else {
                        return None;
                    };
                    let depth = crate::read_depth::scan_depth(event_type);
                    if depth > 0 && arena.is_some() {
                        let built = scanner.view(depth, 0)?;
                        view = Some(PreparedView { depth, view: built });
                    } else {
                        scanner.skip(0)?;
                    }
                    payload = Some(text.get(start..scanner.pos)?);
                }
                EnvelopeKey::SurfaceOp
                    if text
                        .get(start..)
                        .is_some_and(|rest| rest.starts_with("\"append\"")) =>
                {
                    scanner.string(false)?;
                    raw.append_op = true;
                }
                EnvelopeKey::SurfaceOp | EnvelopeKey::SourceEventSeqs | EnvelopeKey::Ignorable => {
                    scanner.skip(0)?;
                    let field = text.get(start..scanner.pos)?;
                    // A tool result's `[7]` is kept as seqs (as a `Value`, its numbers' heap
                    // strings and the rules' copies of them were two fifths of a load's
                    // allocations), anything else as serde's value of the validated text.
                    let plain = (key == EnvelopeKey::SourceEventSeqs)
                        .then(|| plain_seq_list(field))
                        .flatten();
                    if let Some(seqs) = plain {
                        raw.plain_sources = Some(seqs);
                    } else {
                        let value = Box::new(serde_json::from_str::<Value>(field).ok()?);
                        match key {
                            EnvelopeKey::SurfaceOp => raw.surface_op = Some(value),
                            EnvelopeKey::SourceEventSeqs => raw.source_event_seqs = Some(value),
                            _ => raw.ignorable = Some(value),
                        }
                    }
                }
            }
            match scanner.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
    }
    if scanner.pos != text.len() {
        return None;
    }
    raw.order = Some(order);
    Some(ScannedRow {
        raw,
        payload,
        view,
        scanned: true,
    })
}

/// A compact list of plain seqs (`[]`, `[7]`, `[3,9]`): integers in canonical spelling up to
/// 2^53 - 1, which serde reads as numbers spelled alike and every generation reads as seqs.
/// `None` for any other text (serde takes it).
fn plain_seq_list(text: &str) -> Option<Arc<[Seq]>> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    if inner.is_empty() {
        return Some(Arc::from([]));
    }
    // Most lists cite one seq (a tool result its call): parsed on the stack, allocated once.
    let mut few = [Seq::default(); 4];
    let mut many = Vec::new();
    let mut count = 0;
    for digits in inner.split(',') {
        let seq = Seq::new(crate::json::plain_integer(digits)?).ok()?;
        if let Some(slot) = few.get_mut(count) {
            *slot = seq;
        } else {
            if many.is_empty() {
                many.extend_from_slice(&few);
            }
            many.push(seq);
        }
        count += 1;
    }
    Some(match few.get(..count) {
        Some(seqs) => Arc::from(seqs),
        None => Arc::from(many),
    })
}

/// Entries a view's container has room for before it grows: most payload containers (a
/// message, its source, its content list) have fewer, and growing one whose children were
/// allocated after it copies it within the arena.
const CONTAINER_CAPACITY: usize = 8;

/// Where the first `"`, `\` or control byte (below 0x20) in `bytes` is: the end of a string's
/// plain run, or a byte no JSON string holds raw.
#[inline(always)]
fn string_stop(bytes: &[u8]) -> Option<usize> {
    stop::<false>(bytes).map(|(at, _)| at)
}

/// [`string_stop`], and whether the run may hold a reserved code point's lead byte (the
/// `json` module's markers): never `false` when it does, so only a run flagged `true` needs
/// [`crate::json::has_reserved`]'s exact search. A view reads every payload string it keeps,
/// so a second pass over each for the lead byte would cost a measurable share of a decoding
/// thread (docs/measurements.md §4).
#[inline(always)]
fn string_stop_with_leads(bytes: &[u8]) -> Option<(usize, bool)> {
    stop::<true>(bytes)
}

/// The search of [`string_stop`], with `LEADS` the lead-byte flag of
/// [`string_stop_with_leads`] (compiled out without it).
///
/// Eight bytes a word, to the end (as serde's own string skipping does): one pass finds both
/// the run's end and any control byte in it, where a `memchr2` for the end left the control
/// bytes to a separate pass over the whole row (docs/measurements.md §4).
#[inline(always)]
fn stop<const LEADS: bool>(bytes: &[u8]) -> Option<(usize, bool)> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    const SPACES: u64 = u64::from_ne_bytes([0x20; 8]);
    const LEAD_BYTES: u64 = u64::from_ne_bytes([crate::json::RESERVED_LEAD; 8]);
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    let mut leads = 0;
    for chunk in &mut words {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(chunk);
        // A byte of `x` is zero where `word` has the byte searched for. `(x - ONES) & !x`
        // sets the high bit of every zero byte, and may set it above one (a borrow), never
        // below the first: the lowest set bit is exact. Likewise `(word - SPACES) & !word`
        // for the bytes below 0x20 (a byte of 0x80 or more has its high bit, which `!word`
        // clears). The lead-byte flag may be set by a borrow or by bytes past the stop: a
        // `true` is only a "maybe", and a word holding a lead byte always sets it.
        if LEADS {
            let lead = word ^ LEAD_BYTES;
            leads |= lead.wrapping_sub(ONES) & !lead;
        }
        let quotes = word ^ QUOTES;
        let backslashes = word ^ BACKSLASHES;
        let found = ((quotes.wrapping_sub(ONES) & !quotes)
            | (backslashes.wrapping_sub(ONES) & !backslashes)
            | (word.wrapping_sub(SPACES) & !word))
            & HIGHS;
        if found != 0 {
            let at = offset + found.trailing_zeros() as usize / 8;
            return Some((at, leads & HIGHS != 0));
        }
        offset += 8;
    }
    let rest = words.remainder();
    let at = rest
        .iter()
        .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
    let leads = LEADS && (leads & HIGHS != 0 || rest[..at].contains(&crate::json::RESERVED_LEAD));
    Some((offset + at, leads))
}

/// A cursor over a row. Outside strings it takes only the bytes compact JSON has there (any
/// other, whitespace included, ends the scan); inside, [`string_stop`] ends it at a raw
/// control byte, which serde refuses.
struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Where views keep their containers (`None`: no view is built).
    arena: Option<&'a bumpalo::Bump>,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.pos += 1;
        Some(byte)
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.pos += 1)
    }

    /// A number as serde reads one under `arbitrary_precision` into a `seq` or `time`: its
    /// text as a double. The plain integers of at most 15 digits (below 2^53, so exact) that
    /// every `seq` and nearly every `time` is are read in the pass that finds their end.
    fn double(&mut self) -> Option<f64> {
        let start = self.pos;
        let mut value = 0u64;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            value = value.wrapping_mul(10).wrapping_add(u64::from(digit - b'0'));
            self.pos += 1;
        }
        let digits = self.pos - start;
        let plain =
            digits == 1 || ((2..=15).contains(&digits) && self.bytes.get(start) != Some(&b'0'));
        if plain && !matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return Some(value as f64);
        }
        self.pos = start;
        self.number()?;
        self.text.get(start..self.pos)?.parse::<f64>().ok()
    }

    /// An envelope key and its colon, spelled without escapes (any other key, or a key with
    /// escapes, is `None`: serde takes the row). Matched as bytes, not by a general string scan
    /// and a match on its text (docs/measurements.md §4).
    fn envelope_key(&mut self) -> Option<EnvelopeKey> {
        let rest = self.bytes.get(self.pos..)?;
        // Each spelling a constant where it is compared, so the comparison is a few loads,
        // not a `memcmp` call.
        macro_rules! spelled {
            ($key:ident, $spelling:literal) => {
                rest.starts_with($spelling)
                    .then_some((EnvelopeKey::$key, $spelling.len()))
            };
        }
        let (key, len) = match (rest.get(1)?, rest.get(2)?) {
            (b't', b'y') => spelled!(Type, b"\"type\":"),
            (b't', _) => spelled!(Time, b"\"time\":"),
            (b's', b'e') => spelled!(Seq, b"\"seq\":"),
            (b's', b'u') => spelled!(SurfaceOp, b"\"surfaceOp\":"),
            (b's', _) => spelled!(SourceEventSeqs, b"\"sourceEventSeqs\":"),
            (b'd', _) => spelled!(Data, b"\"data\":"),
            (b'i', _) => spelled!(Ignorable, b"\"ignorable\":"),
            _ => None,
        }?;
        self.pos += len;
        Some(key)
    }

    /// A string: its text between the quotes and whether it has escapes. `strict` refuses
    /// surrogate escapes (serde checks their pairing where it unescapes, not where it skips).
    ///
    /// Inlined where it is read: most strings have no escape and end within the first words
    /// searched, so a call's frame is a large share of their cost (docs/measurements.md §4);
    /// a string with escapes goes
    /// on in [`Scanner::escaped_string`]. A raw control byte in a string ends the scan (serde
    /// refuses it, with its own message).
    #[inline(always)]
    fn string(&mut self, strict: bool) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let start = self.pos;
        let end = start + string_stop(self.bytes.get(start..)?)?;
        self.string_end(start, end, strict)
    }

    /// A string a view keeps: its text between the quotes, and whether it is plain (no
    /// escape and no reserved code point), which is what a view may borrow as it stands.
    #[inline(always)]
    fn plain_string(&mut self) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let start = self.pos;
        let (stop, leads) = string_stop_with_leads(self.bytes.get(start..)?)?;
        let (content, escaped) = self.string_end(start, start + stop, true)?;
        // A reserved code point is held behind a marker (the `json` module), so such a
        // string is read as one with escapes is.
        let plain = !(escaped || (leads && crate::json::has_reserved(content)));
        Some((content, plain))
    }

    /// The end of a string whose plain run from `start` stops at `end`.
    #[inline(always)]
    fn string_end(&mut self, start: usize, end: usize, strict: bool) -> Option<(&'a str, bool)> {
        self.pos = end + 1;
        match self.bytes.get(end) {
            Some(b'"') => Some((self.text.get(start..end)?, false)),
            Some(b'\\') => self.escaped_string(start, strict),
            // A raw control byte: serde refuses the row.
            _ => None,
        }
    }

    /// The rest of a string that started at `start` from the escape just before the cursor.
    #[inline(never)]
    fn escaped_string(&mut self, start: usize, strict: bool) -> Option<(&'a str, bool)> {
        loop {
            match self.next()? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                b'u' => {
                    let hex = self.bytes.get(self.pos..self.pos + 4)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    if strict && matches!(hex[0], b'd' | b'D') {
                        return None;
                    }
                    self.pos += 4;
                }
                _ => return None,
            }
            self.pos += string_stop(self.bytes.get(self.pos..)?)?;
            match self.next()? {
                b'"' => return Some((self.text.get(start..self.pos - 1)?, true)),
                b'\\' => {}
                _ => return None,
            }
        }
    }

    /// A number, by JSON's grammar (what serde accepts).
    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b'.').is_some() {
            self.digit()?;
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.digit()?;
            self.digits();
        }
        Some(())
    }

    fn digit(&mut self) -> Option<()> {
        self.peek()
            .is_some_and(|byte| byte.is_ascii_digit())
            .then(|| self.pos += 1)
    }

    fn digits(&mut self) {
        while self.digit().is_some() {}
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.pos + word.len();
        (self.bytes.get(self.pos..end)? == word).then(|| self.pos = end)
    }

    /// Validates any value.
    fn skip(&mut self, nesting: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(false).map(drop),
            b'{' => self.container(b'}', nesting, |scanner, nesting| {
                scanner.string(false)?;
                scanner.eat(b':')?;
                scanner.skip(nesting)
            }),
            b'[' => self.container(b']', nesting, |scanner, nesting| scanner.skip(nesting)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    /// The entries of the container at the cursor, closed by `close`, each read by `entry`.
    fn container(
        &mut self,
        close: u8,
        nesting: u32,
        mut entry: impl FnMut(&mut Scanner<'a>, u32) -> Option<()>,
    ) -> Option<()> {
        if nesting >= MAX_NESTING {
            return None;
        }
        self.pos += 1;
        if self.eat(close).is_some() {
            return Some(());
        }
        loop {
            entry(self, nesting + 1)?;
            match self.next()? {
                b',' => {}
                byte if byte == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// A value's view, materializing containers at depths `< depth` (as `View::parse`).
    fn view(&mut self, depth: u8, nesting: u32) -> Option<View<'a>> {
        let start = self.pos;
        if depth == 0 {
            self.skip(nesting)?;
            return Some(View::Deep(self.text.get(start..self.pos)?));
        }
        Some(match self.peek()? {
            b'"' => {
                let (content, plain) = self.plain_string()?;
                if plain {
                    View::Str(Cow::Borrowed(content))
                } else {
                    View::Deep(self.text.get(start..self.pos)?)
                }
            }
            b'{' => {
                let mut members =
                    bumpalo::collections::Vec::with_capacity_in(CONTAINER_CAPACITY, self.arena?);
                self.container(b'}', nesting, |scanner, nesting| {
                    let (key, plain) = scanner.plain_string()?;
                    if !plain || (members.is_empty() && key == NUMBER_TOKEN) {
                        return None;
                    }
                    scanner.eat(b':')?;
                    members.push((Cow::Borrowed(key), scanner.view(depth - 1, nesting)?));
                    Some(())
                })?;
                View::Object(Entries::Arena(members.into_bump_slice()))
            }
            b'[' => {
                let mut items =
                    bumpalo::collections::Vec::with_capacity_in(CONTAINER_CAPACITY, self.arena?);
                self.container(b']', nesting, |scanner, nesting| {
                    items.push(scanner.view(depth - 1, nesting)?);
                    Some(())
                })?;
                View::Array(Entries::Arena(items.into_bump_slice()))
            }
            b't' => {
                self.literal(b"true")?;
                View::Bool(true)
            }
            b'f' => {
                self.literal(b"false")?;
                View::Bool(false)
            }
            b'n' => {
                self.literal(b"null")?;
                View::Null
            }
            _ => {
                self.number()?;
                View::Number(Cow::Borrowed(self.text.get(start..self.pos)?))
            }
        })
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod double_tests {
    use proptest::prelude::*;

    use super::Scanner;

    fn scanner(text: &str) -> Scanner<'_> {
        Scanner {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            arena: None,
        }
    }

    /// What `Scanner::double` reads at the start of `text`, and where it stops.
    fn read(text: &str) -> Option<(f64, usize)> {
        let mut scanner = scanner(text);
        scanner.double().map(|value| (value, scanner.pos))
    }

    /// What the grammar and the general parser read there: the number's extent by
    /// `Scanner::number`, its value by `str::parse`.
    fn by_grammar(text: &str) -> Option<(f64, usize)> {
        let mut scanner = scanner(text);
        scanner.number()?;
        let value = text[..scanner.pos].parse::<f64>().ok()?;
        Some((value, scanner.pos))
    }

    strata_testkit::proptest! {
        /// The integer shortcut reads what the grammar and the general parser read, whatever
        /// follows the digits (the next token, a fraction, an exponent) and however many
        /// digits and leading zeros there are.
        #[test]
        fn numbers_read_as_the_grammar_and_str_parse_read_them(
            value in prop_oneof![0u64..1000, 0u64..1_000_000_000_000_000, any::<u64>()],
            zeros in 0usize..3,
            minus in any::<bool>(),
            after in prop::sample::select(vec!["", ",", "}", ".5", "e3", "E+1", ".", "x", "0"]),
        ) {
            let text = format!("{}{}{value}{after}", if minus { "-" } else { "" }, "0".repeat(zeros));
            prop_assert_eq!(read(&text), by_grammar(&text), "{}", text);
        }
    }

    #[test]
    fn other_numbers_take_the_general_parser() {
        for text in [
            "-0",
            "-1",
            "1.5",
            "1e3",
            "0",
            "0,",
            "00",
            "9007199254740993",
            "999999999999999",
            "1000000000000000",
            "1234567890123456789",
            "123456789012345678901234567890",
            "-",
            "",
        ] {
            assert_eq!(read(text), by_grammar(text), "{text}");
        }
    }
}
