//! `strata compact`: replace the oldest history with a checkpoint summary (issue 5).
//!
//! Manual compaction (persistence-compaction §5.7): keeps only the newest indivisible unit,
//! needs no open turn. `--dry-run` reads the file, resumes it in memory (crash closers
//! included) and prints what would be shadowed and the token counts before and after;
//! otherwise the session is opened for writing through its store (taking the writer lock
//! and closing a crashed turn durably) and the compaction batch is appended durably, and the
//! seqs appended are reported. Where that is (a loose file as its own store, dsh's folder, an
//! older generation) is `crate::writable`'s decision.

use std::path::Path;

use anyhow::Context;
use strata_compact::deadline::block_on;
use strata_compact::summarizer::CHECKPOINT_PREAMBLE;
use strata_compact::IdGenerator;
use strata_compact::{
    restore_resumed, resume_stream, ByteEstimator, CompactionConfig, CompactionOutcome, Compactor,
    ExtractiveSummarizer, TokenEstimator as _, Trigger, WriterHost,
};
use strata_core::{SeedOptions, Seq, Session};
use strata_store::SessionWriter;

use super::compact_model::{ModelFlags, ModelSummarizer};
use super::{load_for_view, report_load_error, Status};
use crate::cli::Format;
use crate::input::{resolve, resume_input};
use crate::output;
use crate::writable::{writable_session, Loose};

pub(crate) fn run(
    file: &Path,
    offline: bool,
    dry_run: bool,
    model: &ModelFlags,
) -> anyhow::Result<Status> {
    let compactor = Compactor::new(CompactionConfig::default())?;
    if dry_run {
        let Some(session) = load_resumed(file)? else {
            return Ok(Status::Invalid);
        };
        return dry_run_report(file, &session, &compactor, offline);
    }
    // Without --offline the model summarizes (see `compact_model`); its configuration is
    // checked before the session is opened for writing.
    let mut summarizer = None;
    if !offline {
        summarizer = Some(ModelSummarizer::new(model)?);
    }
    let writer = open_for_write(file)?;
    // The first seq this run writes: the closers and marker the open appended, then the batch.
    let first_new = writer
        .added_on_open()
        .first()
        .map_or_else(|| writer.durable_len(), |event| event.seq().get());
    let before = writer.with_session(|session| compactor.measure(session));
    let mut host = WriterHost::new(&writer);
    let ids = IdGenerator::seeded(entropy()).next_ids();
    let outcome = match &mut summarizer {
        Some(summarizer) => {
            summarizer.set_session(writer.with_session(|session| session.id().to_owned()));
            block_on(compactor.compact_now(&mut host, &*summarizer, &ids))
        }
        None => block_on(compactor.compact_now(&mut host, &ExtractiveSummarizer, &ids)),
    }
    .with_context(|| format!("compacting {}", file.display()))?;
    let after = writer.with_session(|session| compactor.measure(session));
    let end = writer.durable_len();
    drop(host);
    writer
        .close()
        .with_context(|| format!("closing {}", file.display()))?;
    report_appended(file, first_new, end)?;
    match outcome {
        None => {
            output::line(&output::visible(&format!(
                "{}: no compactable history yet",
                file.display()
            )))?;
            Ok(Status::Ok)
        }
        Some(CompactionOutcome::Compacted {
            checkpoint_seq,
            n_shadowed,
            ..
        }) => {
            output::line(&output::visible(&format!(
                "{}: compacted {n_shadowed} history items into a checkpoint at seq {checkpoint_seq}; tokens {} → {}",
                file.display(),
                before.total_tokens,
                after.total_tokens
            )))?;
            Ok(Status::Ok)
        }
        Some(CompactionOutcome::Failed { error }) => {
            eprintln!(
                "{}",
                output::visible_lines(&format!(
                    "{}: compaction failed and was recorded; the conversation is unchanged: \
                     {error}",
                    file.display()
                ))
            );
            Ok(Status::Invalid)
        }
    }
}

/// Says which seqs the run appended (`first..end`, half-open), or that it wrote nothing.
fn report_appended(file: &Path, first: u64, end: u64) -> anyhow::Result<()> {
    let text = match end.checked_sub(first) {
        Some(0) | None => format!("{}: appended nothing", file.display()),
        Some(1) => format!("{}: appended seq {first}", file.display()),
        Some(n) => format!(
            "{}: appended seqs {first}..={} ({n} events)",
            file.display(),
            end - 1
        ),
    };
    output::line(&output::visible(&text))
}

fn dry_run_report(
    file: &Path,
    session: &Session,
    compactor: &Compactor,
    offline: bool,
) -> anyhow::Result<Status> {
    let before = compactor.measure(session);
    let Some(plan) = compactor.plan(session, Trigger::Manual)? else {
        output::line(&output::visible(&format!(
            "{}: no compactable history yet ({} surface nodes, {} tokens)",
            file.display(),
            before.n_nodes,
            before.total_tokens
        )))?;
        return Ok(Status::Ok);
    };
    let region = plan.region();
    output::line(&output::visible(&format!(
        "{}: would shadow {} of {} surface nodes (positions {}..={}, {} tokens), keeping {} tokens verbatim",
        file.display(),
        plan.shadowed().len(),
        before.n_nodes,
        region.start_index,
        region.end_index,
        region.shadowed_tokens,
        region.retained_tokens
    )))?;
    output::line(&output::visible(&format!(
        "  shadowed seqs: {}",
        seq_ranges(plan.shadowed(), 12)
    )))?;
    for seq in [plan.start(), plan.end()] {
        if let Some(message) = session.project(seq) {
            output::line(&output::visible(&format!(
                "  {:>8}  {}",
                seq.get(),
                output::message_preview(&message, 60)
            )))?;
        }
    }
    if !offline {
        let framing = ByteEstimator.text_tokens_for_len(CHECKPOINT_PREAMBLE.len() + 64);
        let bound = before.total_tokens - region.shadowed_tokens
            + u64::from(compactor.config().max_summary_tokens)
            + framing;
        output::line(&output::visible(&format!(
            "  tokens: {} → at most {bound} (summary capped at {} tokens)",
            before.total_tokens,
            compactor.config().max_summary_tokens
        )))?;
        return Ok(Status::Ok);
    }
    let request = plan.summary_request(session);
    let result = block_on(compactor.summarize(&request, &ExtractiveSummarizer));
    let ids = IdGenerator::seeded(0).next_ids();
    let batch = compactor.finish(&plan, session, result, &ids)?;
    match batch.outcome {
        CompactionOutcome::Compacted {
            checkpoint_tokens, ..
        } => {
            output::line(&output::visible(&format!(
                "  tokens: {} → {} (extractive checkpoint of {checkpoint_tokens} tokens)",
                before.total_tokens,
                before.total_tokens - region.shadowed_tokens + checkpoint_tokens
            )))?;
            Ok(Status::Ok)
        }
        CompactionOutcome::Failed { error } => {
            output::line(&output::visible(&format!(
                "  would fail (and be recorded): {error}"
            )))?;
            Ok(Status::Invalid)
        }
    }
}

/// Loads and validates `file`, then resumes it in memory as a writer would (closing an
/// open compaction bracket and turn), so a dry run plans on what a real run would see. The
/// rows stream into the resumed session as in a load; a rejected log is reported and yields
/// `None`.
pub(crate) fn load_resumed(file: &Path) -> anyhow::Result<Option<Session>> {
    let format = Format { json: false };
    let resumed = resolve(file, None).and_then(|input| {
        resume_input(&input, |stream| {
            resume_stream(stream, SeedOptions::default())
        })
    });
    match resumed {
        Ok(Some(resumed)) => return Ok(Some(resumed.session)),
        Ok(None) => {}
        Err(error) => return report_load_error(error, format).map(|_| None),
    }
    // An older generation's file: loaded in its own numbering, then resumed.
    let Some(loaded) = load_for_view(file, format)? else {
        return Ok(None);
    };
    let header = loaded.session.header().clone();
    // The stored events, without the end-seed marker the viewing restore added.
    let mut rows = loaded
        .session
        .to_raw_events()
        .with_context(|| format!("reading {}", file.display()))?;
    rows.truncate(loaded.n_stored);
    let resumed = restore_resumed(header, rows, SeedOptions::default())
        .with_context(|| format!("resuming {}", file.display()))?;
    Ok(Some(resumed.session))
}

/// Opens the session `arg` names for writing (taking the writer lock; a crashed turn is
/// closed durably): a stored session (`sqlite://PATH#ID` or an id in the default store), a
/// file inside a JSONL store layout or dsh's folder, or a loose V3 file, appended in place.
pub(crate) fn open_for_write(arg: &Path) -> anyhow::Result<SessionWriter> {
    let session = writable_session(arg, Loose::Maintain)?;
    session
        .store
        .open_write(&session.id)
        .with_context(|| format!("opening {} for writing", arg.display()))
}

/// Seqs as compact ranges (`4..9, 12, 15..20`), at most `limit` ranges.
pub(crate) fn seq_ranges(seqs: &[Seq], limit: usize) -> String {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for seq in seqs {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == seq.get() => *end = seq.get(),
            _ => ranges.push((seq.get(), seq.get())),
        }
    }
    let shown: Vec<String> = ranges
        .iter()
        .take(limit)
        .map(|(start, end)| {
            if start == end {
                start.to_string()
            } else {
                format!("{start}..{end}")
            }
        })
        .collect();
    let more = ranges.len().saturating_sub(limit);
    if more > 0 {
        format!("{}, … ({more} more ranges)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Seed for compaction ids: the clock and the pid (ids need uniqueness, not secrecy).
fn entropy() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}
