//! Lazy resume (issue 9): a session resumed from a checkpoint of a log prefix plus the rows
//! after it must be indistinguishable from a full restore of the same log — same surface,
//! derived messages, request folds, latest-by-type fold, open turn and crash closers, the same
//! checkpoint, and the same accept/reject decision (rule, message, seq, index) for every next
//! candidate — at every split point, on data cases, model-generated logs and synthetic
//! sessions with compactions, crash-truncated or not.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};
use strata_core::synth::{generate, SynthConfig};
use strata_core::{
    payload, AcceptError, Candidate, Checkpoint, CloseCause, EventSource, EventType, RawEvent,
    ResumeError, SeedOptions, Seq, Session, SessionHeader, SourceError, SurfaceIntent,
};

use crate::harness::{cases, header, raw_events, render_error};
use crate::properties::{bad_candidate, config, raws, script, Action, Model};

/// Stored rows served by seq, counting the rows served.
struct Rows {
    rows: Vec<RawEvent>,
    n_loaded: AtomicUsize,
}

impl Rows {
    fn new(rows: Vec<RawEvent>) -> Arc<Rows> {
        Arc::new(Rows {
            rows,
            n_loaded: AtomicUsize::new(0),
        })
    }
}

impl EventSource for Rows {
    fn load(&self, seq: Seq) -> Result<RawEvent, SourceError> {
        self.n_loaded.fetch_add(1, Ordering::Relaxed);
        usize::try_from(seq.get())
            .ok()
            .and_then(|index| self.rows.get(index))
            .cloned()
            .ok_or_else(|| SourceError::new(seq.get(), "no such row"))
    }
}

/// The checkpoint of a session holding exactly `rows` (no marker), or `None` when the rows
/// are not a valid live log.
fn prefix_checkpoint(
    header: &SessionHeader,
    rows: &[RawEvent],
    relational: bool,
) -> Option<Checkpoint> {
    let mut session = Session::create_with(header.clone(), options(relational)).ok()?;
    session.extend_restored(rows.to_vec()).ok()?;
    session.checkpoint()
}

/// Restore options: upstream's relational rules on (`relational`) or off (the surface cases).
fn options(relational: bool) -> SeedOptions {
    SeedOptions {
        marker_time: 77,
        surface_only: !relational,
        defer_marker: false,
        repair: None,
    }
}

fn restore(
    header: &SessionHeader,
    rows: &[RawEvent],
    repair: Option<CloseCause>,
    relational: bool,
) -> Result<Session, AcceptError> {
    let options = options(relational);
    match repair {
        Some(cause) => Session::restore(header.clone(), rows.to_vec(), options.repaired(cause)),
        None => Session::restore(header.clone(), rows.to_vec(), options),
    }
}

fn resume(
    header: &SessionHeader,
    checkpoint: Checkpoint,
    rows: &[RawEvent],
    repair: Option<CloseCause>,
    relational: bool,
) -> Result<Session, ResumeError> {
    let options = options(relational);
    let n_covered = usize::try_from(checkpoint.n_events).unwrap();
    let source = Rows::new(rows.to_vec());
    let tail = rows[n_covered..].to_vec();
    match repair {
        Some(cause) => Session::resume(
            header.clone(),
            checkpoint,
            tail,
            source,
            options.repaired(cause),
        ),
        None => Session::resume(header.clone(), checkpoint, tail, source, options),
    }
}

fn jsons<'e>(events: impl IntoIterator<Item = &'e Arc<strata_core::Event>>) -> Vec<String> {
    events.into_iter().map(|event| event.to_json()).collect()
}

/// Everything a caller can observe of a session, compared between a full and a lazy one.
fn assert_same_session(full: &Session, lazy: &Session) {
    assert!(!full.is_lazy());
    assert_eq!(full.len(), lazy.len(), "length");
    assert_eq!(full.next_seq(), lazy.next_seq());
    assert_eq!(full.surface(), lazy.surface(), "surface");
    let messages = |session: &Session| -> Vec<Value> {
        session
            .derive_messages()
            .iter()
            .map(|message| message.value().clone())
            .collect()
    };
    assert_eq!(messages(full), messages(lazy), "derived messages");
    assert_eq!(
        full.request_header(),
        lazy.request_header(),
        "request header"
    );
    assert_eq!(
        full.request_context(),
        lazy.request_context(),
        "request context"
    );
    assert_eq!(full.inherited_count(), lazy.inherited_count());
    assert_eq!(full.first_live_seq(), lazy.first_live_seq());
    let base = usize::try_from(lazy.resident_base()).unwrap();
    assert_eq!(
        jsons(&full.events().unwrap()[base..]),
        jsons(lazy.resident_events()),
        "resident tail"
    );
    assert_eq!(
        full.last_event().map(|event| event.to_json()),
        lazy.last_event().map(|event| event.to_json())
    );
    for event in full.events().unwrap() {
        let event_type = event.event_type();
        assert_eq!(
            full.latest(event_type).map(|event| event.to_json()),
            lazy.latest(event_type).map(|event| event.to_json()),
            "latest {event_type}"
        );
    }
    for seq in full.surface().nodes() {
        assert_eq!(
            full.event(*seq).map(|event| event.to_json()),
            lazy.event(*seq).map(|event| event.to_json()),
            "surface node {seq}"
        );
    }
    assert_eq!(full.turn_state(), lazy.turn_state(), "turn state");
    for cause in [CloseCause::Interrupted, CloseCause::Forked] {
        assert_eq!(
            full.open_turn_closers(cause),
            lazy.open_turn_closers(cause),
            "closers"
        );
        assert_eq!(
            full.open_turn_closers(cause),
            strata_core::repair::open_turn_closers(full.events().unwrap(), cause),
            "the session's closers equal a scan of the whole log"
        );
    }
    assert_eq!(full.checkpoint(), lazy.checkpoint(), "checkpoint");
    // Materializing the lazy log gives the full one (and it then follows appends).
    assert_eq!(
        jsons(full.events().unwrap()),
        jsons(lazy.events().unwrap()),
        "materialized log"
    );
}

fn assert_same_outcome(full: &Result<Session, AcceptError>, lazy: &Result<Session, ResumeError>) {
    match (full, lazy) {
        (Ok(full), Ok(lazy)) => assert_same_session(full, lazy),
        (Err(full), Err(ResumeError::Rejected(lazy))) => assert_eq!(full, lazy),
        (full, lazy) => panic!(
            "full and lazy disagree:\nfull: {:?}\nlazy: {:?}",
            full.as_ref().map(|_| "ok").map_err(render_error),
            lazy.as_ref().map(|_| "ok")
        ),
    }
}

/// Offers `candidates` to both sessions one by one; both must decide alike and stay alike.
fn assert_same_decisions(
    full: &mut Session,
    lazy: &mut Session,
    candidates: impl IntoIterator<Item = Candidate>,
) {
    for (time, candidate) in (1_000..).zip(candidates) {
        let decided_full = full.append(candidate.clone(), time);
        let decided_lazy = lazy.append(candidate, time);
        match (&decided_full, &decided_lazy) {
            (Ok(a), Ok(b)) => assert_eq!(a.to_json(), b.to_json()),
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("full {decided_full:?} vs lazy {decided_lazy:?}"),
        }
    }
    assert_same_session(full, lazy);
}

/// Every split point of every data case, plain and repaired.
#[test]
fn lazy_resume_equals_full_restore_on_data_cases() {
    let mut n_compared = 0;
    for file in [
        "surface",
        "canonical_envelopes",
        "session",
        "repair",
        "fork",
        "relations",
    ] {
        for case in cases(file) {
            let relational = case.directives == ["relational"];
            if !case.directives.is_empty() && !relational {
                continue;
            }
            let rows = raw_events(&case.rows);
            let header = header("case");
            for repair in [None, Some(CloseCause::Interrupted)] {
                let full = restore(&header, &rows, repair, relational);
                for split in 0..=rows.len() {
                    let Some(checkpoint) = prefix_checkpoint(&header, &rows[..split], relational)
                    else {
                        break;
                    };
                    let lazy = resume(&header, checkpoint, &rows, repair, relational);
                    eprintln!("case {} split {split} repair {repair:?}", case.name);
                    assert_same_outcome(&full, &lazy);
                    n_compared += 1;
                }
            }
        }
    }
    assert!(n_compared > 500, "only {n_compared} comparisons");
}

/// A model-generated continuation of `model`'s log, as append candidates.
fn continuation(model: &mut Model, actions: &[Action]) -> Vec<Candidate> {
    let start = model.rows.len();
    for action in actions {
        model.apply(action);
    }
    model.rows[start..]
        .iter()
        .enumerate()
        .map(|(index, row)| crate::harness::candidate(row, start + index).unwrap().0)
        .collect()
}

fn end_seed_row(seq: u64) -> Value {
    json!({"type": "session/end-seed", "seq": seq, "time": 77, "data": {}})
}

// Random valid logs, cut anywhere (a crash), resumed from a checkpoint at any earlier point:
// identical to a full restore, then identical decisions for valid and invalid next events.
#[test]
fn lazy_resume_equals_full_restore_on_model_logs() {
    strata_testkit::proptest!(config(64), |(
        script in script(40),
        cut in any::<usize>(),
        split in any::<usize>(),
        more in prop::collection::vec(crate::properties::action(), 0..12),
        bad in prop::collection::vec((0usize..12, any::<usize>()), 0..6),
    )| {
        let mut model = Model::build(&script);
        let header = header("prop");
        let cut = cut % (model.rows.len() + 1);
        let rows = raws(&model.rows[..cut]);
        let split = split % (cut + 1);
        let checkpoint = prefix_checkpoint(&header, &rows[..split], false).unwrap();
        for repair in [None, Some(CloseCause::Interrupted)] {
            let full = restore(&header, &rows, repair, false);
            let lazy = resume(&header, checkpoint.clone(), &rows, repair, false);
            assert_same_outcome(&full, &lazy);
        }
        // Continue the uncut log: the model's next rows, after the marker a restore adds.
        let rows = raws(&model.rows);
        let mut full = restore(&header, &rows, None, false).unwrap();
        let mut lazy = resume(&header, checkpoint, &rows, None, false).unwrap();
        if full.len() > model.rows.len() {
            model.rows.push(end_seed_row(model.rows.len() as u64));
        }
        let mut candidates = continuation(&mut model, &more);
        for (kind, pick) in bad {
            candidates.push(bad_candidate(&full, kind, pick).0);
        }
        assert_same_decisions(&mut full, &mut lazy, candidates);
        // A rejected batch rolls both back alike.
        let (bad, _) = bad_candidate(&full, 0, 1);
        let user = payload::UserMessage { message: payload::user_text_message("u", "x") };
        let batch = vec![Candidate::surface(user, SurfaceIntent::append()), bad];
        let a = full.append_batch(batch.clone(), 5);
        let b = lazy.append_batch(batch, 5);
        prop_assert_eq!(a.err(), b.err());
        assert_same_session(&full, &lazy);
    });
}

fn synth_config() -> impl Strategy<Value = SynthConfig> {
    (
        100u64..1_200,
        any::<u64>(),
        prop_oneof![Just(0u64), 2u64..9],
        0.0f64..0.3,
        8usize..64,
    )
        .prop_map(
            |(events, seed, compact_every, prune_rate, content_bytes)| SynthConfig {
                events,
                seed,
                content_bytes,
                compact_every,
                prune_rate,
                id: "synth".into(),
            },
        )
}

// Realistic sessions with compactions and prunes, crash-truncated at any event and resumed
// from a checkpoint anywhere before the cut; then a chain: checkpoint the lazy session and
// resume again from that.
#[test]
fn lazy_resume_equals_full_restore_on_synthetic_sessions() {
    strata_testkit::proptest!(config(24), |(
        config in synth_config(),
        cut in any::<usize>(),
        split in any::<usize>(),
        bad in prop::collection::vec((0usize..12, any::<usize>()), 0..6),
    )| {
        let generated = generate(&config).unwrap();
        let header = generated.header().clone();
        let all: Vec<RawEvent> = generated.to_raw_events().unwrap();
        let cut = cut % (all.len() + 1);
        let rows = &all[..cut];
        let split = split % (cut + 1);
        let checkpoint = prefix_checkpoint(&header, &rows[..split], true).unwrap();
        let full = restore(&header, rows, Some(CloseCause::Interrupted), true);
        let lazy = resume(&header, checkpoint, rows, Some(CloseCause::Interrupted), true);
        assert_same_outcome(&full, &lazy);
        let (full, lazy) = (full.unwrap(), lazy.unwrap());
        // The lazy session checkpoints like the full one; resuming from that is the same again.
        let stored = full.to_raw_events().unwrap();
        let again = resume(&header, lazy.checkpoint().unwrap(), &stored, None, true);
        let reloaded = restore(&header, &stored, None, true);
        assert_same_outcome(&reloaded, &again);
        let (mut full, mut lazy) = (reloaded.unwrap(), again.unwrap());
        let candidates: Vec<Candidate> = bad
            .into_iter()
            .map(|(kind, pick)| bad_candidate(&full, kind, pick).0)
            .collect();
        assert_same_decisions(&mut full, &mut lazy, candidates);
    });
}

/// A lazy session holds O(surface) events: the surface nodes and a few fold events.
#[test]
fn lazy_resume_loads_only_what_the_checkpoint_names() {
    let generated = generate(&SynthConfig {
        events: 3_000,
        ..SynthConfig::default()
    })
    .unwrap();
    let rows = generated.to_raw_events().unwrap();
    let checkpoint = generated.checkpoint().unwrap();
    let expected = checkpoint.pinned_seqs().len();
    assert!(expected < generated.surface().len() + 30);
    let source = Rows::new(rows.clone());
    let lazy = Session::resume(
        generated.header().clone(),
        checkpoint,
        Vec::new(),
        source.clone(),
        crate::harness::SURFACE_ONLY,
    )
    .unwrap();
    assert_eq!(source.n_loaded.load(Ordering::Relaxed), expected);
    assert_eq!(lazy.n_pinned(), expected);
    assert!(lazy.is_lazy());
    assert_eq!(lazy.resident_base(), rows.len() as u64);
    // Any event can still be fetched, and passes the rules again.
    let first = lazy.load_event(Seq::ZERO).unwrap().unwrap();
    assert_eq!(first.to_json(), generated.events().unwrap()[0].to_json());
    assert!(lazy.event(Seq::ZERO).is_none() || generated.surface().nodes().contains(&Seq::ZERO));
    assert!(lazy.load_event(lazy.next_seq()).unwrap().is_none());
}

fn small_session() -> (Session, Vec<RawEvent>) {
    let generated = generate(&SynthConfig {
        events: 200,
        ..SynthConfig::default()
    })
    .unwrap();
    let rows = generated.to_raw_events().unwrap();
    (generated, rows)
}

fn mismatch(checkpoint: Checkpoint, rows: &[RawEvent], header: &SessionHeader) -> String {
    match Session::resume(
        header.clone(),
        checkpoint,
        Vec::new(),
        Rows::new(rows.to_vec()),
        crate::harness::SURFACE_ONLY,
    ) {
        Err(ResumeError::Mismatch { detail, .. }) => detail,
        Err(other) => panic!("expected a mismatch, got {other}"),
        Ok(_) => panic!("expected a mismatch, the resume succeeded"),
    }
}

// A checkpoint that does not fit the log is refused, never trusted.
#[test]
fn lazy_resume_refuses_a_checkpoint_that_does_not_fit() {
    let (session, rows) = small_session();
    let header = session.header().clone();
    let good = session.checkpoint().unwrap();

    let mut past = good.clone();
    past.nodes.push(Seq::new(good.n_events).unwrap());
    assert!(mismatch(past, &rows, &header).contains("not among the"));

    let mut twice = good.clone();
    twice.nodes.push(good.nodes[0]);
    assert!(mismatch(twice, &rows, &header).contains("twice"));

    let log_only = rows
        .iter()
        .position(|row| row.type_tag() == Some("turn/start"))
        .unwrap();
    let mut not_surface = good.clone();
    not_surface.nodes.push(Seq::new(log_only as u64).unwrap());
    assert!(mismatch(not_surface, &rows, &header).contains("not a surface event"));

    let mut wrong_latest = good.clone();
    wrong_latest.latest.push((EventType::ToolCall, Seq::ZERO));
    assert!(mismatch(wrong_latest, &rows, &header).contains("not tool/call"));

    let mut wrong_header = good.clone();
    wrong_header.request_header_seq = Some(Seq::ZERO);
    assert!(mismatch(wrong_header, &rows, &header).contains("request/header"));

    // A source that serves the wrong row for a seq: the seq check catches it.
    let mut shifted = rows.clone();
    shifted.rotate_left(1);
    assert!(mismatch(good.clone(), &shifted, &header).contains("fails the rules"));

    // A record written before strata enforced the relational rules holds none of their
    // state: a relational resume sets it aside (the store then restores the whole log).
    let mut stateless = good.clone();
    stateless.relations = None;
    let refused = Session::resume(
        header.clone(),
        stateless,
        Vec::new(),
        Rows::new(rows.clone()),
        options(true),
    );
    assert!(
        matches!(&refused, Err(ResumeError::Mismatch { detail, .. }) if detail.contains("relational state")),
        "{:?}",
        refused.as_ref().err()
    );
    let resumed = resume(&header, good.clone(), &rows, None, true);
    assert!(resumed.is_ok(), "{:?}", resumed.err());

    // A source that fails: its error, with the seq.
    let failed = Session::resume(
        header.clone(),
        good.clone(),
        Vec::new(),
        Rows::new(Vec::new()),
        crate::harness::SURFACE_ONLY,
    );
    assert!(matches!(failed, Err(ResumeError::Source(_))));
}

// A tail row that breaks a rule is reported exactly as a full restore reports it.
#[test]
fn lazy_resume_reports_tail_rejections_like_a_full_restore() {
    let (session, mut rows) = small_session();
    let header = session.header().clone();
    let split = rows.len() / 2;
    let checkpoint = prefix_checkpoint(&header, &rows[..split], true).unwrap();
    let mut broken = rows[split + 3].to_value();
    broken["seq"] = json!(split as u64 + 9);
    rows[split + 3] = RawEvent::from_value(broken);
    let full = restore(&header, &rows, None, true);
    let lazy = resume(&header, checkpoint, &rows, None, true);
    assert!(full.is_err());
    assert_same_outcome(&full, &lazy);
}

/// A source that serves only the rows the resume pins, then fails: what a store whose files
/// went away after the open looks like.
struct Failing {
    rows: Vec<RawEvent>,
    served: std::sync::Mutex<std::collections::BTreeSet<u64>>,
    failing: std::sync::atomic::AtomicBool,
}

impl EventSource for Failing {
    fn load(&self, seq: Seq) -> Result<RawEvent, SourceError> {
        if self.failing.load(Ordering::Relaxed) {
            return Err(SourceError::new(seq.get(), "the log is gone"));
        }
        if let Ok(mut served) = self.served.lock() {
            served.insert(seq.get());
        }
        usize::try_from(seq.get())
            .ok()
            .and_then(|index| self.rows.get(index))
            .cloned()
            .ok_or_else(|| SourceError::new(seq.get(), "no such row"))
    }
}

fn title(messages: &[u64]) -> Candidate {
    Candidate::dynamic(
        "session/title",
        json!({"title": "t", "source": {"kind": "llm"}, "messageSeqs": messages}),
        None,
        None,
    )
}

/// The seqs of `session`'s human `user/message` events, and of every other event.
fn human_and_other_seqs(session: &Session) -> (Vec<u64>, Vec<u64>) {
    let (humans, others): (Vec<_>, Vec<_>) = session.events().unwrap().iter().partition(|event| {
        *event.event_type() == EventType::UserMessage
            && event.data()["source"]["kind"] == json!("user")
    });
    let seqs = |events: Vec<&Arc<strata_core::Event>>| -> Vec<u64> {
        events.into_iter().map(|event| event.seq().get()).collect()
    };
    (seqs(humans), seqs(others))
}

// R37 on a resumed session: the checkpoint keeps no list of the human messages (it would
// grow with every user turn, and a lazy resume would read it whole); a title citing seqs
// below the checkpoint is decided from the log, exactly as a full session decides it.
#[test]
fn lazy_titles_cite_messages_below_the_checkpoint_as_a_full_session_decides() {
    let generated = generate(&SynthConfig {
        events: 2_000,
        ..SynthConfig::default()
    })
    .unwrap();
    let rows = generated.to_raw_events().unwrap();
    let header = generated.header().clone();
    let checkpoint = prefix_checkpoint(&header, &rows, true).expect("a valid live log");
    let relations = checkpoint.relations.as_ref().expect("relational state");
    assert!(relations.growing.human_users.is_empty(), "left out");
    assert_eq!(relations.growing.human_users_from, rows.len() as u64);
    let mut full = restore(&header, &rows, None, true).unwrap();
    let (humans, others) = human_and_other_seqs(&full);
    assert!(humans.len() > 10, "the synthetic log has human messages");
    let mut lazy = resume(&header, checkpoint, &rows, None, true).unwrap();
    assert!(lazy.is_lazy());
    let below: Vec<u64> = humans.iter().copied().take(3).collect();
    let candidates = vec![
        title(&below),
        title(&[others[1]]),
        title(&[below[0], others[2]]),
        title(&[humans[humans.len() - 1], below[1]]),
        title(&[u64::MAX]),
    ];
    assert_same_decisions(&mut full, &mut lazy, candidates);
    // And the checkpoint after them is the same again.
    assert_eq!(full.checkpoint(), lazy.checkpoint());
}

// A resumed session whose source fails cannot decide such a title: it refuses it under its
// own rule, naming the failure, and changes nothing.
#[test]
fn a_lazy_title_the_source_cannot_check_is_refused_and_changes_nothing() {
    let generated = generate(&SynthConfig {
        events: 600,
        ..SynthConfig::default()
    })
    .unwrap();
    let rows = generated.to_raw_events().unwrap();
    let header = generated.header().clone();
    let checkpoint = prefix_checkpoint(&header, &rows, true).expect("a valid live log");
    let (humans, _) = human_and_other_seqs(&generated);
    let source = Arc::new(Failing {
        rows: rows.clone(),
        served: Default::default(),
        failing: Default::default(),
    });
    let n_covered = usize::try_from(checkpoint.n_events).unwrap();
    let mut lazy = Session::resume(
        header,
        checkpoint,
        rows[n_covered..].to_vec(),
        source.clone(),
        options(true),
    )
    .unwrap();
    let pinned = source.served.lock().unwrap().clone();
    let cited = *humans
        .iter()
        .find(|seq| !pinned.contains(seq))
        .expect("a human message the resume did not pin");
    source.failing.store(true, Ordering::Relaxed);
    let before = lazy.len();
    let refused = lazy.append(title(&[cited]), 5_000).unwrap_err();
    assert_eq!(refused.rule, strata_core::Rule::EventSourceFailed);
    assert!(
        refused.message.contains(&format!("cites seq {cited}")) && refused.message.contains("gone"),
        "{}",
        refused.message
    );
    assert_eq!(lazy.len(), before, "nothing appended");
    source.failing.store(false, Ordering::Relaxed);
    lazy.append(title(&[cited]), 5_001).unwrap();
}
