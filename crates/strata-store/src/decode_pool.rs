//! Parallel decoding of a stored log: one thread reads records (JSONL lines), a pool of threads decodes them (and, for a restore, runs the core's
//! event-local rules on them), and the caller receives the rows in log order. A log any thread
//! can read a page of ([`PageSource`]: SQLite rows, rebuilt as their JSONL lines) has no
//! reading thread: each decoder reads its own pages on its own connection.
//!
//! A full load is mostly per-row work that needs no other row: JSON decoding, the payload's
//! copy, the data and shape rules. One reading thread could not keep up with that (it was the
//! bottleneck of `Store::load`: docs/measurements.md §3); here it only
//! reads (and decompresses) and hands batches of raw records to the decoders, round-robin.
//!
//! Invariants:
//! - Rows arrive in log order, as the source's own sequential reading yields them, errors
//!   included: batch (or page) `k` goes to decoder `k mod n` and the consumer takes batch `k`
//!   from it, so order never depends on thread timing. A page that is not full is the last
//!   the consumer takes, whatever later pages a decoder found. The first error is the last
//!   row; a decoder may have decoded rows past it, which are dropped unseen. (One difference:
//!   a SQLite row that cannot be rebuilt ends the rows right after the rows before it, where a
//!   sequential page read reported it in place of its whole page.)
//! - What the reader reports (an I/O error, an oversized record, the end and its torn tail)
//!   travels as the next batch in sequence, so it arrives after every row before it.
//! - Memory stays bounded: each decoder holds at most [`JOBS_IN_FLIGHT`] batches (about
//!   [`BATCH_BYTES`] or [`BATCH_RECORDS`] records each; a SQLite page of rows) and has at most
//!   [`RESULTS_IN_FLIGHT`] decoded batches waiting (a paged decoder: the page it reads, and as
//!   many decoded).
//! - Buffers go back where they came from: a decoder returns each record batch to the reader,
//!   the consumer returns each emptied row batch to its decoder. A batch freed on another
//!   thread than the one that filled it went back to that thread's heap, which glibc then
//!   trimmed, so the next batch faulted in freshly zeroed pages (docs/measurements.md §3).
//! - Dropping the consumer stops every thread at its next send or receive; no thread holds a
//!   lock, and none outlives the rows it could still deliver.
//! - The mode (wire rows, or rows checked ahead for a restore) is fixed by the first pull;
//!   a later pull of the other kind converts (a checked row back to its wire form).
//! - Inline decoding ([`decode_inline`], for the fuzz harnesses) runs the same reading and
//!   decoding (`RecordSource::fill` or `PageSource::fill_page`, then `decode_batch`) on the
//!   pulling thread, one batch at a time, as one decoder would: the same rows, errors, torn
//!   tail and progress, without starting any thread.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread;

use strata_core::ingest::{PrecheckedRow, ScanArena, ScannedRow};
use strata_core::{Generation, RawEvent};

use crate::backend::{EventRows, TornInfo};
use crate::error::StoreError;

/// A log read as undecoded records, for the pool's reading thread.
pub(crate) trait RecordSource: Send + 'static {
    /// Decodes this source's records.
    type Decoder: RecordDecoder;

    /// A decoder for one pool thread.
    fn decoder(&self) -> Self::Decoder;

    /// Adds the next records to `batch` (until it is full, [`RecordBatch::is_full`], or for a
    /// paged source one page); `Ok(false)` once the log has ended. On an error, the records
    /// read before it are in `batch`.
    fn fill(&mut self, batch: &mut RecordBatch) -> Result<bool, StoreError>;

    /// The rows decoded here, one at a time (when no thread can be started).
    fn next_row(&mut self) -> Option<Result<RawEvent, StoreError>>;

    /// The torn end the read stopped before, once it has ended.
    fn torn(&self) -> Option<TornInfo>;

    /// How far the read has got (see [`EventRows::progress`]).
    fn progress(&self) -> Option<(u64, u64)>;

    /// Where the log lives, for messages.
    fn location(&self) -> String;

    /// The log's pages, when any thread can read one on its own ([`PageSource`]).
    type Pages: PageSource;

    /// The pages of what is left to read, when reading them on the decoders is worth it
    /// (else the pool's reading thread reads with [`RecordSource::fill`]).
    fn pages(&self) -> Option<Arc<Self::Pages>>;
}

/// A log any thread can read a page of on its own (SQLite: a run of rows by seq, on the
/// thread's own connection). Each decoder then reads the pages it decodes: page `k` on decoder
/// `k mod n`, the order the consumer takes them in, so no reading thread copies every record
/// across to a decoder.
pub(crate) trait PageSource: Send + Sync + 'static {
    /// One thread's means of reading (its own connection).
    type Reader: Send;

    /// Opens a reader, on the thread that will use it.
    fn open_reader(&self) -> Result<Self::Reader, StoreError>;

    /// Fills `batch` with page `index`: `Ok(true)` when the page is full (more may follow).
    /// On an error, the records read before it are in `batch`.
    fn fill_page(
        &self,
        reader: &mut Self::Reader,
        index: u64,
        batch: &mut RecordBatch,
    ) -> Result<bool, StoreError>;

    /// How far the read has got once page `index` is read (see [`EventRows::progress`]).
    fn progress(&self, index: u64) -> Option<(u64, u64)>;
}

/// The pages of a source that has none.
pub(crate) enum NoPages {}

impl PageSource for NoPages {
    type Reader = ();

    fn open_reader(&self) -> Result<(), StoreError> {
        match *self {}
    }

    fn fill_page(&self, _: &mut (), _: u64, _: &mut RecordBatch) -> Result<bool, StoreError> {
        match *self {}
    }

    fn progress(&self, _: u64) -> Option<(u64, u64)> {
        match *self {}
    }
}

/// Turns one record into the row the source's sequential reading yields (same errors).
pub(crate) trait RecordDecoder: Clone + Send + 'static {
    /// Decodes the record on `line` (0 when the store has no lines), the row at `seq`; with
    /// an arena, also the view of its payload that checking it ahead reads.
    fn decode<'a>(
        &self,
        line: u64,
        seq: u64,
        bytes: &'a [u8],
        arena: Option<&'a ScanArena>,
    ) -> Result<ScannedRow<'a>, StoreError>;
}

/// Plaintext bytes per batch: large enough to amortize two channel hops, small enough that the
/// first rows arrive at once.
const BATCH_BYTES: usize = 256 * 1024;

/// Records per batch at most (a log of tiny records still hands out batches often).
const BATCH_RECORDS: usize = 1024;

/// Batches a decoder may have queued.
const JOBS_IN_FLIGHT: usize = 2;

/// Decoded batches a decoder may have waiting for the consumer.
const RESULTS_IN_FLIGHT: usize = 2;

/// Decoders at most, whatever the machine offers.
const MAX_DECODERS: usize = 4;

thread_local! {
    /// Whether pools started on this thread decode inline ([`decode_inline`]).
    static INLINE: Cell<bool> = const { Cell::new(false) };
}

/// Makes every pool this thread starts from now on read and decode its batches on this thread
/// (`true`), or on a pool of threads as usual (`false`, the default). The rows are the same
/// either way; a fuzz harness, whose input is a batch or two, otherwise spends most of each
/// execution starting and joining threads.
pub fn decode_inline(inline: bool) {
    INLINE.with(|flag| flag.set(inline));
}

/// Complete records for a decoder, copied out of the reader's buffer.
#[derive(Default)]
pub(crate) struct RecordBatch {
    bytes: Vec<u8>,
    /// `(line, seq, start, end)`: a record is `start..end` of `bytes`.
    records: Vec<(u64, u64, usize, usize)>,
}

impl RecordBatch {
    /// Appends one record.
    pub(crate) fn push(&mut self, line: u64, seq: u64, bytes: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        self.records.push((line, seq, start, self.bytes.len()));
    }

    /// Appends one record written by `write` straight into the batch (nothing is kept when it
    /// fails).
    pub(crate) fn push_with<E>(
        &mut self,
        line: u64,
        seq: u64,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        let start = self.bytes.len();
        match write(&mut self.bytes) {
            Ok(()) => {
                self.records.push((line, seq, start, self.bytes.len()));
                Ok(())
            }
            Err(error) => {
                self.bytes.truncate(start);
                Err(error)
            }
        }
    }

    /// Empties the batch, keeping its buffers for the next.
    fn clear(&mut self) {
        self.bytes.clear();
        self.records.clear();
    }

    /// Records in the batch.
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the batch should be handed out.
    pub(crate) fn is_full(&self) -> bool {
        self.bytes.len() >= BATCH_BYTES || self.records.len() >= BATCH_RECORDS
    }
}

/// What a decoder produces from a record.
enum Decoded {
    Raw(RawEvent),
    Checked(PrecheckedRow),
}

#[derive(Clone, Copy)]
enum Mode {
    Raw,
    Checked(Generation),
}

/// From the reader to a decoder, in sequence.
enum Job {
    Records(RecordBatch, Option<(u64, u64)>),
    Failed(StoreError),
    End(Option<TornInfo>, Option<(u64, u64)>),
}

/// A decoded batch, taken from the front.
type Rows = VecDeque<Result<Decoded, StoreError>>;

/// From a decoder to the consumer, in sequence.
enum Done {
    Rows(Rows, Option<(u64, u64)>),
    /// The last rows (a page that was not full, or that ended in an error).
    Last(Rows, Option<(u64, u64)>),
    End(Option<TornInfo>, Option<(u64, u64)>),
}

/// The rows of a log, decoded by a pool of threads (started by the first pull).
pub(crate) struct DecodePool<S: RecordSource> {
    /// The log, for messages.
    location: String,
    state: State<S>,
    progress: Option<(u64, u64)>,
    torn: Option<TornInfo>,
}

enum State<S: RecordSource> {
    Idle(Box<S>),
    Running(Running),
    /// Threads could not be started: the rows are read here, one at a time.
    Sequential(Box<S>),
    /// Decoding inline ([`decode_inline`]): batches read and decoded here, one at a time.
    Inline(Box<Inline<S>>),
    Ended,
}

struct Running {
    mode: Mode,
    results: Vec<Receiver<Done>>,
    /// Emptied row batches, back to the decoder each came from (same index as `results`).
    spare_rows: Vec<Sender<Rows>>,
    /// Invariant: the decoder whose batch comes next.
    turn: usize,
    current: Rows,
    /// The decoder `current` came from.
    current_from: usize,
    /// `current` holds the last rows.
    last: bool,
}

impl Running {
    /// Rows coming from `results`, one decoder each, taken in turn from the first.
    fn new(mode: Mode, results: Vec<Receiver<Done>>, spare_rows: Vec<Sender<Rows>>) -> Running {
        Running {
            mode,
            results,
            spare_rows,
            turn: 0,
            current: Rows::new(),
            current_from: 0,
            last: false,
        }
    }

    /// Makes `rows`, from the decoder whose turn it was, the current batch (`last`: the end
    /// follows it), and returns the emptied batch to its decoder.
    fn take(&mut self, rows: Rows, last: bool) {
        self.last = last;
        let emptied = std::mem::replace(&mut self.current, rows);
        if let Some(spare) = self.spare_rows.get(self.current_from) {
            // The decoder may have ended; its buffer is then simply dropped.
            let _ = spare.send(emptied);
        }
        self.current_from = self.turn;
        self.turn = (self.turn + 1) % self.results.len();
    }
}

/// A paged source read inline: its pages, the pulling thread's reader, the next page.
type InlinePages<S> = (
    Arc<<S as RecordSource>::Pages>,
    <<S as RecordSource>::Pages as PageSource>::Reader,
    u64,
);

/// The end of a log: its torn tail and the progress.
type LogEnd = (Option<TornInfo>, Option<(u64, u64)>);

/// A pool decoding inline: one decoder's work, on the pulling thread.
struct Inline<S: RecordSource> {
    rows: Box<S>,
    mode: Mode,
    decoder: S::Decoder,
    arena: ScanArena,
    batch: RecordBatch,
    /// A paged source: its pages, this thread's reader and the next page.
    pages: Option<InlinePages<S>>,
    current: Rows,
    /// `current` holds the last rows.
    last: bool,
    /// The reader's end, delivered once `current` is taken (as `Done::End` is).
    end: Option<LogEnd>,
}

/// What an inline refill delivered.
enum Refilled {
    /// Rows in `current` (maybe none), and the progress after them.
    Rows(Option<(u64, u64)>),
    /// The end, with the torn tail and the progress.
    End(Option<TornInfo>, Option<(u64, u64)>),
}

impl<S: RecordSource> Inline<S> {
    /// Reads and decodes the next batch into `current` (empty), as the threads would.
    fn refill(&mut self) -> Refilled {
        if let Some((torn, progress)) = self.end.take() {
            return Refilled::End(torn, progress);
        }
        self.batch.clear();
        if let Some((pages, reader, index)) = &mut self.pages {
            // As `decode_pages` on the only decoder.
            let filled = pages.fill_page(reader, *index, &mut self.batch);
            decode_batch(
                &self.decoder,
                self.mode,
                &self.batch,
                &mut self.arena,
                &mut self.current,
            );
            let failed = self.current.back().is_some_and(Result::is_err);
            let more = match filled {
                Ok(full) => full && !failed,
                Err(error) => {
                    if !failed {
                        self.current.push_back(Err(error));
                    }
                    false
                }
            };
            self.last = !more;
            let progress = pages.progress(*index);
            *index += 1;
            return Refilled::Rows(progress);
        }
        // As `read_records` feeding `decode_jobs`.
        let filled = self.rows.fill(&mut self.batch);
        let progress = self.rows.progress();
        if !self.batch.records.is_empty() {
            decode_batch(
                &self.decoder,
                self.mode,
                &self.batch,
                &mut self.arena,
                &mut self.current,
            );
            if self.current.back().is_some_and(Result::is_err) {
                // The decoder stops at its first bad record: nothing after it arrives.
                self.last = true;
                return Refilled::Rows(progress);
            }
        }
        match filled {
            Ok(true) => {}
            Ok(false) => {
                let end = (self.rows.torn(), self.rows.progress());
                if self.batch.records.is_empty() {
                    return Refilled::End(end.0, end.1);
                }
                self.end = Some(end);
            }
            Err(error) => {
                self.current.push_back(Err(error));
                self.last = true;
                if self.batch.records.is_empty() {
                    // `Job::Failed` travels without progress.
                    return Refilled::Rows(None);
                }
            }
        }
        Refilled::Rows(progress)
    }
}

impl<S: RecordSource> DecodePool<S> {
    /// The rows of `rows`, to be decoded in parallel once pulled.
    pub(crate) fn new(rows: S) -> DecodePool<S> {
        DecodePool {
            location: rows.location(),
            progress: rows.progress(),
            state: State::Idle(Box::new(rows)),
            torn: None,
        }
    }

    fn start(&mut self, mode: Mode) {
        let State::Idle(rows) = std::mem::replace(&mut self.state, State::Ended) else {
            return;
        };
        if INLINE.with(Cell::get) {
            let decoder = rows.decoder();
            self.state = match rows.pages() {
                Some(pages) => match pages.open_reader() {
                    Ok(reader) => State::Inline(Box::new(Inline {
                        rows,
                        mode,
                        decoder,
                        arena: ScanArena::new(),
                        batch: RecordBatch::default(),
                        pages: Some((pages, reader, 0)),
                        current: Rows::new(),
                        last: false,
                        end: None,
                    })),
                    Err(error) => {
                        // As a paged decoder that cannot open its reader.
                        let mut running = Running::new(mode, Vec::new(), Vec::new());
                        running.current.push_back(Err(error));
                        running.last = true;
                        State::Running(running)
                    }
                },
                None => State::Inline(Box::new(Inline {
                    rows,
                    mode,
                    decoder,
                    arena: ScanArena::new(),
                    batch: RecordBatch::default(),
                    pages: None,
                    current: Rows::new(),
                    last: false,
                    end: None,
                })),
            };
            return;
        }
        let n_decoders = thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_DECODERS);
        let decoder = rows.decoder();
        if let Some(pages) = rows.pages() {
            self.state = match start_paged(&pages, &decoder, mode, n_decoders) {
                Some(running) => State::Running(running),
                None => State::Sequential(rows),
            };
            return;
        }
        let mut jobs = Vec::with_capacity(n_decoders);
        let mut results = Vec::with_capacity(n_decoders);
        let mut spare_rows = Vec::with_capacity(n_decoders);
        let (spare_batch_sender, spare_batches) = channel();
        for index in 0..n_decoders {
            let (job_sender, job_receiver) = sync_channel(JOBS_IN_FLIGHT);
            let (done_sender, done_receiver) = sync_channel(RESULTS_IN_FLIGHT);
            let (spare_rows_sender, spare_rows_receiver) = channel();
            let decoder = decoder.clone();
            let channels = DecoderChannels {
                jobs: job_receiver,
                done: done_sender,
                spare_batches: spare_batch_sender.clone(),
                spare_rows: spare_rows_receiver,
            };
            let spawned = thread::Builder::new()
                .name(format!("strata-decode-{index}"))
                .spawn(move || decode_jobs(&decoder, mode, &channels));
            if spawned.is_err() {
                break;
            }
            jobs.push(job_sender);
            results.push(done_receiver);
            spare_rows.push(spare_rows_sender);
        }
        drop(spare_batch_sender);
        if jobs.is_empty() {
            self.state = State::Sequential(rows);
            return;
        }
        let spawned = thread::Builder::new()
            .name("strata-read".into())
            .spawn(move || read_records(*rows, &jobs, &spare_batches));
        match spawned {
            Ok(_) => {
                self.state = State::Running(Running::new(mode, results, spare_rows));
            }
            Err(error) => {
                // No reader: report it as the only row rather than hang (the decoders end as
                // their job senders are dropped with the closure).
                let row = Err(StoreError::io("start a reader thread for", "", error));
                let mut running = Running::new(mode, Vec::new(), Vec::new());
                running.current.push_back(row);
                running.last = true;
                self.state = State::Running(running);
            }
        }
    }

    fn pull(&mut self, mode: Mode) -> Option<Result<Decoded, StoreError>> {
        if matches!(self.state, State::Idle(_)) {
            self.start(mode);
        }
        loop {
            let running = match &mut self.state {
                State::Running(running) => running,
                State::Inline(inline) => {
                    if let Some(next) = next_of_batch(&mut inline.current, inline.last) {
                        return self.deliver(next);
                    }
                    match inline.refill() {
                        Refilled::Rows(progress) => self.progress = progress,
                        Refilled::End(torn, progress) => {
                            self.torn = torn;
                            self.progress = progress;
                            self.state = State::Ended;
                        }
                    }
                    continue;
                }
                State::Sequential(rows) => {
                    // Rows read here are left for the restore to check in full.
                    let row = rows.next_row();
                    self.progress = rows.progress();
                    if row.is_none() {
                        self.torn = rows.torn();
                    }
                    return row.map(|row| row.map(Decoded::Raw));
                }
                State::Idle(_) | State::Ended => return None,
            };
            if let Some(next) = next_of_batch(&mut running.current, running.last) {
                return self.deliver(next);
            }
            let Some(receiver) = running.results.get(running.turn) else {
                self.state = State::Ended;
                return None;
            };
            match receiver.recv() {
                Ok(Done::Rows(rows, progress)) => {
                    self.progress = progress;
                    running.take(rows, false);
                }
                Ok(Done::Last(rows, progress)) => {
                    self.progress = progress;
                    running.take(rows, true);
                }
                Ok(Done::End(torn, progress)) => {
                    self.torn = torn;
                    self.progress = progress;
                    self.state = State::Ended;
                }
                // A decoder stopped without an end (it cannot, short of a panic): end here
                // rather than hang.
                Err(_) => self.state = State::Ended,
            }
        }
    }

    /// Hands out what the current batch gave; the first error is the last row (the threads
    /// stop, and what they decoded past it is dropped), as is the end.
    fn deliver(
        &mut self,
        next: Option<Result<Decoded, StoreError>>,
    ) -> Option<Result<Decoded, StoreError>> {
        if !matches!(next, Some(Ok(_))) {
            self.state = State::Ended;
        }
        next
    }

    fn mode(&self, wanted: Mode) -> Mode {
        match &self.state {
            State::Running(running) => running.mode,
            State::Inline(inline) => inline.mode,
            _ => wanted,
        }
    }
}

/// The next row of a pool's current batch (`Some(Some(row))`), the log's end when that batch
/// was its last and is spent (`Some(None)`), or `None` when the next batch is due — for the
/// threaded and the inline pool alike.
fn next_of_batch(current: &mut Rows, last: bool) -> Option<Option<Result<Decoded, StoreError>>> {
    match current.pop_front() {
        Some(row) => Some(Some(row)),
        None if last => Some(None),
        None => None,
    }
}

/// Starts `n_decoders` threads that each read and decode their pages of `pages`; `None` when
/// not all of them could be started (those that were end at their first send).
fn start_paged<P: PageSource, D: RecordDecoder>(
    pages: &Arc<P>,
    decoder: &D,
    mode: Mode,
    n_decoders: usize,
) -> Option<Running> {
    let mut results = Vec::with_capacity(n_decoders);
    let mut spare_rows = Vec::with_capacity(n_decoders);
    for index in 0..n_decoders {
        let (done_sender, done_receiver) = sync_channel(RESULTS_IN_FLIGHT);
        let (spare_rows_sender, spare_rows_receiver) = channel();
        let (pages, decoder) = (pages.clone(), decoder.clone());
        let first = index as u64;
        let step = n_decoders as u64;
        thread::Builder::new()
            .name(format!("strata-decode-{index}"))
            .spawn(move || {
                decode_pages(
                    &*pages,
                    &decoder,
                    mode,
                    (first, step),
                    &done_sender,
                    &spare_rows_receiver,
                );
            })
            .ok()?;
        results.push(done_receiver);
        spare_rows.push(spare_rows_sender);
    }
    Some(Running::new(mode, results, spare_rows))
}

/// A paged decoder thread: reads and decodes pages `first`, `first + step`, … until one is
/// not full or ends in an error, which it sends as the last rows.
fn decode_pages<P: PageSource, D: RecordDecoder>(
    pages: &P,
    decoder: &D,
    mode: Mode,
    (first, step): (u64, u64),
    done: &SyncSender<Done>,
    spare_rows: &Receiver<Rows>,
) {
    let mut reader = match pages.open_reader() {
        Ok(reader) => reader,
        Err(error) => {
            let _ = done.send(Done::Last(Rows::from([Err(error)]), None));
            return;
        }
    };
    let mut arena = ScanArena::new();
    let mut batch = RecordBatch::default();
    let mut index = first;
    loop {
        batch.clear();
        let filled = pages.fill_page(&mut reader, index, &mut batch);
        let mut rows = spare_rows.try_recv().unwrap_or_default();
        rows.clear();
        decode_batch(decoder, mode, &batch, &mut arena, &mut rows);
        let failed = rows.back().is_some_and(Result::is_err);
        let more = match filled {
            Ok(full) => full && !failed,
            Err(error) => {
                // A bad record before the failed read is the first error.
                if !failed {
                    rows.push_back(Err(error));
                }
                false
            }
        };
        let progress = pages.progress(index);
        let sent = if more {
            done.send(Done::Rows(rows, progress))
        } else {
            done.send(Done::Last(rows, progress))
        };
        if sent.is_err() || !more {
            return;
        }
        index += step;
    }
}

/// The reader thread: splits the log into batches of records, dealt to the decoders in turn.
fn read_records<S: RecordSource>(
    mut rows: S,
    jobs: &[SyncSender<Job>],
    spare_batches: &Receiver<RecordBatch>,
) {
    let mut turn = 0;
    let mut send = |job: Job| {
        let sent = jobs[turn].send(job).is_ok();
        turn = (turn + 1) % jobs.len();
        sent
    };
    loop {
        let mut batch = spare_batches.try_recv().unwrap_or_default();
        batch.clear();
        let filled = rows.fill(&mut batch);
        if !batch.records.is_empty() && !send(Job::Records(batch, rows.progress())) {
            return;
        }
        match filled {
            Ok(true) => {}
            Ok(false) => {
                let _ = send(Job::End(rows.torn(), rows.progress()));
                return;
            }
            Err(error) => {
                let _ = send(Job::Failed(error));
                return;
            }
        }
    }
}

/// A decoder thread's ends of the pool's channels.
struct DecoderChannels {
    jobs: Receiver<Job>,
    done: SyncSender<Done>,
    /// Record batches decoded, back to the reader.
    spare_batches: Sender<RecordBatch>,
    /// Row batches the consumer emptied.
    spare_rows: Receiver<Rows>,
}

/// A decoder thread: decodes its batches in the order it receives them.
fn decode_jobs<D: RecordDecoder>(decoder: &D, mode: Mode, channels: &DecoderChannels) {
    // Reused for every batch: the rows' views live in the arena until they are checked.
    let mut arena = ScanArena::new();
    while let Ok(job) = channels.jobs.recv() {
        let mut rows = channels.spare_rows.try_recv().unwrap_or_default();
        rows.clear();
        let (result, last) = match job {
            Job::Records(mut batch, progress) => {
                decode_batch(decoder, mode, &batch, &mut arena, &mut rows);
                batch.clear();
                // The reader may have ended; the batch is then simply dropped.
                let _ = channels.spare_batches.send(batch);
                let failed = rows.back().is_some_and(Result::is_err);
                (Done::Rows(rows, progress), failed)
            }
            Job::Failed(error) => {
                rows.push_back(Err(error));
                (Done::Rows(rows, None), true)
            }
            Job::End(torn, progress) => (Done::End(torn, progress), true),
        };
        if channels.done.send(result).is_err() || last {
            return;
        }
    }
}

/// Decodes a batch up to its first bad record (one pass per row, [`ScannedRow`]), moves the
/// rows' payloads into one shared block ([`ScannedRow::share_payloads`]) and, for a restore, checks each row ahead.
fn decode_batch<D: RecordDecoder>(
    decoder: &D,
    mode: Mode,
    batch: &RecordBatch,
    arena: &mut ScanArena,
    rows: &mut Rows,
) {
    arena.reset();
    // Views are only for checking rows ahead.
    let arena = matches!(mode, Mode::Checked(_)).then_some(&*arena);
    let mut scanned = Vec::with_capacity(batch.records.len());
    let mut failure = None;
    let source = batch.bytes.as_slice();
    for &(line, seq, start, end) in &batch.records {
        let Some(bytes) = source.get(start..end) else {
            // Cannot happen (`push*` records ranges of the batch's bytes); reported, not
            // skipped, should it ever.
            failure = Some(StoreError::io(
                "decode",
                "",
                std::io::Error::other(format!("record at line {line} outside its batch")),
            ));
            break;
        };
        match decoder.decode(line, seq, bytes, arena) {
            Ok(row) => scanned.push(row),
            Err(error) => {
                failure = Some(error);
                break;
            }
        }
    }
    ScannedRow::share_payloads(&mut scanned);
    rows.extend(
        scanned
            .into_iter()
            .zip(&batch.records)
            .map(|(row, &(_, seq, _, _))| {
                Ok(match mode {
                    Mode::Raw => Decoded::Raw(row.into_raw()),
                    Mode::Checked(generation) => {
                        Decoded::Checked(PrecheckedRow::check_scanned(generation, seq, row))
                    }
                })
            }),
    );
    if let Some(error) = failure {
        rows.push_back(Err(error));
    }
}

impl<S: RecordSource> Iterator for DecodePool<S> {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let row = self.pull(self.mode(Mode::Raw))?;
        Some(row.and_then(|decoded| match decoded {
            Decoded::Raw(raw) => Ok(raw),
            Decoded::Checked(checked) => checked.into_raw().map_err(|error| StoreError::Corrupt {
                location: self.location.clone(),
                line: None,
                seq: error.seq,
                detail: error.to_string(),
            }),
        }))
    }
}

impl<S: RecordSource> EventRows for DecodePool<S> {
    fn torn(&self) -> Option<TornInfo> {
        self.torn
    }

    fn progress(&self) -> Option<(u64, u64)> {
        self.progress
    }

    fn next_prechecked(
        &mut self,
        generation: Generation,
    ) -> Option<Result<PrecheckedRow, StoreError>> {
        let row = self.pull(self.mode(Mode::Checked(generation)))?;
        Some(row.map(|decoded| match decoded {
            Decoded::Raw(raw) => PrecheckedRow::deferred(raw),
            Decoded::Checked(checked) => checked,
        }))
    }
}

#[cfg(test)]
pub(crate) mod tests;
