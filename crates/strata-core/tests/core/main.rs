//! strata-core's acceptance suite: the session-core §11 test catalogue, every
//! rejection path, and property tests of the surface algebra.
//!
//! Behaviour cases live as data in `core/data/*.txt` (an event log, a `---`
//! separator, the rendered outcome on every entry path) and run through one
//! check function in `harness`; each test is named after its catalogue entry.
//! Set `STRATA_BLESS=1` to rewrite expected outcomes, then review the diff.

#[macro_use]
mod harness;

// §11.1 surface.spec: surface rules, folds, windows and derived messages.
mod surface;
// §11.2 canonical-envelopes.spec: envelope, data rules, metadata on every path.
mod canonical_envelopes;
// §11.3 session.spec: seeds, restores, shapes, headers, plans.
mod session;
// §11.4 repair.spec: closers for an open turn.
mod repair;
// §11.5 fork.spec: closed-turn and any-prefix forks.
mod fork;
