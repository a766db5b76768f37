//! `strata messages`: the request a log implies — the derived messages the next model call would
//! send, or (`--at SEQ`) what a call made right after event SEQ would have sent — in strata's
//! own message shape (`dsh`) or exported as an OpenAI or Anthropic request.
//!
//! `--at` replays the prefix with [`strata_core::request::request_at`]; the exports are
//! [`strata_agent::export`], which run the tool-pairing check and refuse a request in which a
//! tool call has no result (exit 1): the providers reject such a request, and the answer is
//! crash repair in the log (`strata repair`), not a patched export. A seq past the end of the
//! log is a usage error (exit 2).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use serde_json::{json, Value};
use strata_agent::export::{anthropic_request, openai_request, ExportError, ExportedRequest};
use strata_core::request::{request_at, RequestAtError};
use strata_core::{json, Message, PairingError, Seq};

use super::{load_for_view, Status};
use crate::cli::{Format, MessageFormat};
use crate::input::Loaded;
use crate::output;

/// Prints the request `file` implies now, or right after seq `at`, in `shape`.
pub(crate) fn run(
    file: &Path,
    shape: MessageFormat,
    at: Option<u64>,
    format: Format,
) -> anyhow::Result<Status> {
    let Some(loaded) = load_for_view(file, format)? else {
        return Ok(Status::Invalid);
    };
    let request = match at {
        Some(seq) => implied_at(&loaded, seq)?,
        None => Implied {
            header: loaded.session.request_header().cloned(),
            messages: loaded.session.derive_messages().iter().cloned().collect(),
        },
    };
    match shape {
        MessageFormat::Dsh => print_dsh(&request.messages, format),
        MessageFormat::Openai => print_export(
            &loaded.label,
            "openai",
            openai_request(
                loaded.session.id(),
                request.header.as_deref(),
                &request.messages,
            ),
            format,
        ),
        MessageFormat::Anthropic => print_export(
            &loaded.label,
            "anthropic",
            anthropic_request(request.header.as_deref(), &request.messages),
            format,
        ),
    }
}

/// The parts of a request the three shapes are built from.
struct Implied {
    /// The canonical `request/header` fold, if the log has one.
    header: Option<Arc<Value>>,
    /// The derived messages, in surface order.
    messages: Vec<Message>,
}

/// The request right after stored event `at` (the end-seed marker a load adds is not part of
/// the log, so it is out of range too).
fn implied_at(loaded: &Loaded, at: u64) -> anyhow::Result<Implied> {
    let events = loaded.stored_events();
    let last = events
        .len()
        .checked_sub(1)
        .map_or_else(|| "none".to_owned(), |last| last.to_string());
    let seq = Seq::new(at)
        .map_err(|error| anyhow::anyhow!("{}: --at {at}: not a seq: {error}", loaded.label))?;
    match request_at(events, loaded.session.generation(), seq) {
        Ok(request) => Ok(Implied {
            header: request.header,
            messages: request.messages,
        }),
        Err(RequestAtError::OutOfRange { seq, n_events }) => anyhow::bail!(
            "{}: --at {seq}: seq-out-of-range: the log holds {n_events} events (last seq: {last})",
            loaded.label
        ),
        Err(error) => {
            Err(error).with_context(|| format!("{}: --at {at}: replaying the prefix", loaded.label))
        }
    }
}

/// strata's own shape: the message values as a JSON array, or a readable list; written as it
/// is produced, each message read once and dropped.
fn print_dsh(messages: &[Message], format: Format) -> anyhow::Result<Status> {
    let mut out = output::Stdout::new();
    if format.json {
        out.json_line(|writer| json::to_js_writer(writer, messages))?;
    } else {
        for message in messages {
            let (heading, text) = output::message_lines(message);
            out.line(&heading)?;
            out.line(&text)?;
        }
    }
    out.finish()?;
    Ok(Status::Ok)
}

/// An exported request: one JSON line with `--json`, indented JSON otherwise, serialized
/// straight to stdout; a refusal is reported (exit 1).
fn print_export(
    label: &str,
    shape: &str,
    exported: Result<ExportedRequest<'_>, ExportError>,
    format: Format,
) -> anyhow::Result<Status> {
    let error = match exported {
        Ok(request) => {
            let mut out = output::Stdout::new();
            out.json_line(|writer| {
                if format.json {
                    json::to_js_writer(writer, &request)
                } else {
                    json::to_js_writer_pretty(writer, &request)
                }
            })?;
            out.finish()?;
            return Ok(Status::Ok);
        }
        Err(error) => error,
    };
    let (rule, seq, hint) = match &error {
        ExportError::Pairing(pairing) => (
            "tool-pairing",
            pairing_seq(pairing),
            "a crashed turn is closed by `strata repair`; or pick an earlier point with --at SEQ",
        ),
        ExportError::Header(_) => (
            "request-header",
            None,
            "the log's request/header cannot be turned into a request",
        ),
        _ => ("export", None, ""),
    };
    if format.json {
        output::line(
            &json!({
                "ok": false,
                "file": label,
                "error": {"rule": rule, "seq": seq, "message": json::text_from_held(&error.to_string())},
            })
            .to_string(),
        )?;
    } else {
        eprintln!(
            "{}",
            output::visible_lines(&format!(
                "{label}: cannot export as {shape}: {rule}: {error}"
            ))
        );
        if !hint.is_empty() {
            eprintln!("hint: {hint}");
        }
    }
    Ok(Status::Invalid)
}

/// The seq of the message a pairing error is about.
fn pairing_seq(error: &PairingError) -> Option<u64> {
    match error {
        PairingError::MissingResult { seq, .. } | PairingError::OrphanResult { seq, .. } => {
            Some(*seq)
        }
        _ => None,
    }
}
