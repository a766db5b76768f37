//! `strata prune`: which oversized tool results would be middle-elided, one replacement each
//! (issue 5) — and why a finished session is not rewritten (issue 23).
//!
//! Every `tool/result` on the surface whose text exceeds 8,192 code points keeps its first
//! 4,096 and last 1,024 code points around a marker; each rewrite is logged next to a
//! `compaction/prune` audit event. `--dry-run` prints what would be rewritten and the token
//! counts before and after.
//!
//! dsh accepts such a rewrite only inside an open turn (its format layer refuses "tool/result
//! replacement is outside an open turn"); upstream prunes only in the agent's pre-step and
//! writes no turn of its own for a manual action. A session this command can open is never
//! inside a turn — opening it for writing closes a crashed one — so without `--dry-run` the
//! command refuses (exit 2) when there is anything to prune, naming what does shrink a
//! finished session (`strata compact --offline`) and where pruning happens (the agent's
//! pre-step). The log is read, never opened for writing, so a refusal writes nothing, not even
//! the end-seed marker a writer's open adds. docs/divergences.md records the choice.

use std::path::Path;

use strata_compact::{PruneError, Pruner, PrunerConfig, TokenMeter};

use super::compact::load_resumed;
use super::Status;
use crate::output;

pub(crate) fn run(file: &Path, dry_run: bool) -> anyhow::Result<Status> {
    let pruner = Pruner::new(PrunerConfig::default())?;
    // Resumed as a writer would see it (a crashed turn closed), without writing anything.
    let Some(session) = load_resumed(file)? else {
        return Ok(Status::Invalid);
    };
    let plan = pruner.plan(&session);
    if plan.is_empty() {
        output::line(&output::visible(&format!(
            "{}: no tool result over {} code points",
            file.display(),
            pruner.config().threshold_chars
        )))?;
        return Ok(Status::Ok);
    }
    // A resumed session has no open turn (a crashed one is closed), so the pruner refuses to
    // plan the rewrites for appending; this command never holds the writer either way.
    let refusal = pruner
        .plan_in_turn(&session)
        .err()
        .unwrap_or(PruneError::NoOpenTurn {
            n_results: plan.results.len(),
        });
    if !dry_run {
        eprintln!(
            "{}",
            output::visible_lines(&format!(
                "strata: {}: not pruned: {}. dsh prunes only in an agent's pre-step, \
                 between two steps of an open turn, and writes no turn of its own for a manual \
                 action, so a finished session is not rewritten; nothing was written. To shrink \
                 its history now, run `strata compact --offline {}` (a checkpoint summary, which \
                 dsh accepts outside a turn); an agent that continues it (`strata run --resume`, \
                 `strata chat`) prunes oversized results at its pre-step when the context nears \
                 its window. `--dry-run` shows what would be elided.",
                file.display(),
                refusal,
                file.display()
            ))
        );
        return Ok(Status::Failed);
    }
    let before = TokenMeter::new().measure(&session).total_tokens;
    let after = before - plan.tokens_saved();
    output::line(&output::visible(&format!(
        "{}: would prune {} tool results; tokens {before} → {after}",
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
    output::line(
        "  (what an agent's pre-step would prune; no turn is open here, so without --dry-run \
         strata prune refuses to rewrite the session)",
    )?;
    Ok(Status::Ok)
}
