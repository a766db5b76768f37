//! `strata prune`: middle-elide oversized tool results, one replacement each (issue 5).
//!
//! Every `tool/result` on the surface whose text exceeds 8,192 code points keeps its first
//! 4,096 and last 1,024 code points around a marker; each rewrite is logged next to a
//! `compaction/prune` audit event. `--dry-run` prints what would be rewritten and the token
//! counts before and after; otherwise the rewrites are appended durably through the
//! session's store.

use std::path::Path;

use anyhow::Context;
use strata_compact::{system_clock_ms, Pruner, PrunerConfig, TokenMeter};

use super::compact::{load_resumed, open_for_write};
use super::Status;
use crate::output;

pub(crate) fn run(file: &Path, dry_run: bool) -> anyhow::Result<Status> {
    let pruner = Pruner::new(PrunerConfig::default())?;
    let mut meter = TokenMeter::new();
    let (plan, before, after) = if dry_run {
        let Some(session) = load_resumed(file)? else {
            return Ok(Status::Invalid);
        };
        let before = meter.measure(&session).total_tokens;
        let plan = pruner.plan(&session);
        let after = before - plan.tokens_saved();
        (plan, before, after)
    } else {
        let writer = open_for_write(file)?;
        let (plan, before) = writer
            .with_session(|session| (pruner.plan(session), meter.measure(session).total_tokens));
        if !plan.is_empty() {
            writer
                .append(plan.candidates.clone(), system_clock_ms())
                .with_context(|| format!("appending to {}", file.display()))?;
        }
        let after = writer.with_session(|session| meter.measure(session).total_tokens);
        writer
            .close()
            .with_context(|| format!("closing {}", file.display()))?;
        (plan, before, after)
    };
    if plan.is_empty() {
        output::line(&output::visible(&format!(
            "{}: no tool result over {} code points",
            file.display(),
            pruner.config().threshold_chars
        )))?;
        return Ok(Status::Ok);
    }
    let verb = if dry_run { "would prune" } else { "pruned" };
    output::line(&output::visible(&format!(
        "{}: {verb} {} tool results; tokens {before} → {after}",
        file.display(),
        plan.results.len()
    )))?;
    for result in &plan.results {
        output::line(&output::visible(&format!(
            "  {:>8}  {} → {} code points, {} → {} tokens",
            result.seq.get(),
            result.chars_before,
            result.chars_after,
            result.tokens_before,
            result.tokens_after
        )))?;
    }
    Ok(Status::Ok)
}
