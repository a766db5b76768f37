//! The one place the suite drives the core API from data: case files in,
//! rendered outcomes out.
//!
//! A case file (`tests/core/data/*.txt`) holds named cases:
//!
//! ```text
//! === surface_13_replace_missing_source_reports_missing_1
//! # §11.1 item 13: a replace must cite every shadowed node.
//! {"$":"U"}
//! {"$":"U"}
//! {"$":"U","surfaceOp":{"op":"replace","startSeq":0,"endSeq":1},"sourceEventSeqs":[0]}
//! ---
//! append batch fold: reject replace-uncovered-source seq=2: surface replace: …
//! seed restore extend: reject replace-uncovered-source seq=2 index=2: invalid seed event …
//! ```
//!
//! Above the `---` separator: `#` comments, `> directive` lines and one event
//! row per line (JSON, optionally a `$` template, see [`expand_row`]). Below
//! it: the rendered outcome. Without a directive, the log runs through every
//! entry path ([`Path`]) and paths with identical outcomes share one line.
//! Directives: `> show events` (also print every event), `> window B` (fold a
//! window starting at seq B), `> repair` (closers for both causes), and one
//! or more `> fork closed|any B|-` with an optional `> id NAME` for the source.
//!
//! Set `STRATA_BLESS=1` to rewrite the expected sections from the actual
//! outcomes (then review the diff).
//!
//! Besides rendering, every run asserts the invariants the spec promises on
//! every path: a rejected append leaves the session exactly as it was, the
//! incremental surface equals an offline fold of the same log, the derived
//! messages equal a from-scratch projection, and every event survives a
//! write → read → restore → write round trip byte for byte.

use std::fmt::Write as _;
use std::sync::Mutex;

use serde_json::{json, Map, Value};
use strata_core::fold::{fold_surface, fold_window};
use strata_core::ingest::{PrecheckedRow, ScanArena, ScannedRow};
use strata_core::repair::open_turn_closers;
use strata_core::{
    fork_session, AcceptError, Candidate, CloseCause, ForkMode, Generation, Message, RawEvent,
    SeedOptions, Seq, Session, SessionHeader,
};

/// An entry path a log can take into the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// `Session::append` of `Candidate::dynamic`, one row at a time.
    Append,
    /// `Session::append_batch` of every row at once.
    Batch,
    /// `Session::create_seeded` (constructor seed).
    Seed,
    /// `Session::restore` (stored log).
    Restore,
    /// `Session::create` then `Session::extend_restored` (a store's tail read).
    Extend,
    /// `fold_surface` (offline replay, surface rules only).
    Fold,
}

impl Path {
    pub const ALL: [Path; 6] = [
        Path::Append,
        Path::Batch,
        Path::Seed,
        Path::Restore,
        Path::Extend,
        Path::Fold,
    ];

    fn name(self) -> &'static str {
        match self {
            Path::Append => "append",
            Path::Batch => "batch",
            Path::Seed => "seed",
            Path::Restore => "restore",
            Path::Extend => "extend",
            Path::Fold => "fold",
        }
    }
}

/// One case of a data file.
#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub directives: Vec<String>,
    /// The event rows, already template-expanded, as JSON text.
    pub rows: Vec<String>,
    pub expected: String,
}

/// Reads a case file, never while a blessing test is rewriting it.
fn read_locked(path: &str) -> String {
    let _guard = BLESS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    std::fs::read_to_string(path).expect("read case file")
}

fn data_path(file: &str) -> String {
    format!("{}/tests/core/data/{file}.txt", env!("CARGO_MANIFEST_DIR"))
}

/// Serializes blessing: several tests rewrite the same file.
static BLESS_LOCK: Mutex<()> = Mutex::new(());

/// Parses a data file into cases (names in file order).
pub fn parse_file(text: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    let mut in_expected = false;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("=== ") {
            cases.push(Case {
                name: name.trim().to_owned(),
                directives: Vec::new(),
                rows: Vec::new(),
                expected: String::new(),
            });
            in_expected = false;
            continue;
        }
        let Some(case) = cases.last_mut() else {
            continue;
        };
        if in_expected {
            case.expected.push_str(line);
            case.expected.push('\n');
        } else if line == "---" {
            in_expected = true;
        } else if let Some(directive) = line.strip_prefix("> ") {
            case.directives.push(directive.trim().to_owned());
        } else if !line.trim().is_empty() && !line.starts_with('#') {
            case.rows.push(line.to_owned());
        }
    }
    for case in &mut cases {
        case.expected = case.expected.trim_end().to_owned();
        let base = case
            .directives
            .iter()
            .find_map(|d| d.strip_prefix("window "))
            .map_or(0, |base| base.trim().parse::<u64>().expect("window base"));
        case.rows = case
            .rows
            .iter()
            .enumerate()
            .map(|(index, line)| expand_line(line, base + index as u64))
            .collect();
    }
    cases
}

/// Every case name in a data file.
pub fn case_names(file: &str) -> Vec<String> {
    let text = read_locked(&data_path(file));
    parse_file(&text)
        .into_iter()
        .map(|case| case.name)
        .collect()
}

/// Every case of a data file, parsed.
pub fn cases(file: &str) -> Vec<Case> {
    let text = read_locked(&data_path(file));
    parse_file(&text)
}

/// Runs every case of `file` named `test` or `test/<variant>` and compares
/// the rendered outcome with the expected section (or rewrites it when
/// `STRATA_BLESS` is set).
pub fn check_cases(file: &str, test: &str) {
    let path = data_path(file);
    let text = read_locked(&path);
    let selected: Vec<Case> = parse_file(&text)
        .into_iter()
        .filter(|case| case.name == test || case.name.starts_with(&format!("{test}/")))
        .collect();
    assert!(!selected.is_empty(), "no case named {test} in {file}.txt");
    let bless = std::env::var_os("STRATA_BLESS").is_some();
    let mut failures = Vec::new();
    let mut actuals = Vec::new();
    for case in &selected {
        // Shown only when a harness invariant panics inside the case.
        eprintln!("running case {}", case.name);
        let actual = run_case(case);
        if actual != case.expected {
            failures.push(format!(
                "case {}:\n--- expected\n{}\n--- actual\n{}\n",
                case.name, case.expected, actual
            ));
        }
        actuals.push((case.name.clone(), actual));
    }
    if bless && !failures.is_empty() {
        bless_file(&path, &actuals);
        return;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn bless_file(path: &str, actuals: &[(String, String)]) {
    let _guard = BLESS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let text = std::fs::read_to_string(path).expect("read case file");
    let mut out = String::new();
    let mut current: Option<&str> = None;
    let mut skipping = false;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("=== ") {
            current = actuals
                .iter()
                .find(|(case, _)| case == name.trim())
                .map(|(_, actual)| actual.as_str());
            skipping = false;
        } else if skipping {
            // Keep the blank line that separates cases.
            if line.is_empty() {
                out.push('\n');
                skipping = false;
            }
            continue;
        } else if line == "---" {
            if let Some(actual) = current {
                out.push_str("---\n");
                out.push_str(actual);
                out.push('\n');
                skipping = true;
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    std::fs::write(path, out).expect("write case file");
}

// ---------------------------------------------------------------------------
// Templates
// ---------------------------------------------------------------------------

/// Parses JSON keeping number spelling (`-0`, `1e400`) and lone surrogates (`\ud800`) like
/// the store does.
pub fn parse_json(text: &str) -> Value {
    strata_core::json::parse(text).unwrap_or_else(|error| panic!("bad JSON {text}: {error}"))
}

fn expand_line(line: &str, default_seq: u64) -> String {
    let value = parse_json(line);
    strata_core::json::to_js_string(&expand_row(value, default_seq))
}

/// Expands one row. A row object with a `$` key is a template:
///
/// | `$` | event | data |
/// |---|---|---|
/// | `U` | `user/message` | `{content:[text "u<seq>"], source:{kind:user}, role, id:"m<seq>"}` |
/// | `A` | `assistant/message` | `{turn, step, message:{role, content:[text "a<seq>", tool-call per `$calls`], source:model p/m, id:"a<seq>"}, stream:[]}` |
/// | `S` | `system/message` | `{turn, step, message:{role, content:[] or [text], source:plugin, id:"s<seq>"}}` |
/// | `T` | `tool/result` | `{turn, step, message:{source:{tool, callId}, content:[tool-result block], role:user, id:"t<seq>"}}` |
/// | `H` | `request/header` | `{header:{config:{provider:"p", model:"m"}}, reason:"initial"}` |
/// | `TS` `TE` `SS` `SE` `TC` `AT` `ES` | brackets, `tool/call`, `assistant/attempt`, `session/end-seed` | |
/// | any `a/b` | that type | `$data` (default `{}`) |
///
/// Parameters: `$turn`, `$step` (default 1), `$text`, `$id`, `$call`
/// (default `c1`), `$calls`, `$err` (tool-result `isError`), `$reason`,
/// `$inherited`; `$data`, `$message`, `$header`, `$block` merge into the
/// data, its message, its header, the tool-result block; `$nop` drops the
/// surfaceOp. Other keys set envelope fields (`seq` defaults to the row
/// index, `time` to 0, surface templates get `surfaceOp:"append"`).
pub fn expand_row(value: Value, default_seq: u64) -> Value {
    let Value::Object(map) = value else {
        return value;
    };
    let Some(Value::String(template)) = map.get("$").cloned() else {
        return Value::Object(map);
    };
    let mut params = Map::new();
    let mut envelope = Map::new();
    for (key, value) in map {
        if key == "$" {
            continue;
        }
        if key.starts_with('$') {
            params.insert(key, value);
        } else {
            envelope.insert(key, value);
        }
    }
    let seq = envelope
        .get("seq")
        .and_then(Value::as_u64)
        .unwrap_or(default_seq);
    let turn = params.get("$turn").cloned().unwrap_or(json!(1));
    let step = params.get("$step").cloned().unwrap_or(json!(1));
    let text = |default: String| -> String {
        params
            .get("$text")
            .and_then(Value::as_str)
            .map_or(default, str::to_owned)
    };
    let id =
        |default: String| -> Value { params.get("$id").cloned().unwrap_or(Value::String(default)) };
    let call = params.get("$call").cloned().unwrap_or(json!("c1"));
    let text_block = |text: String| json!({"type": "text", "text": text});
    let (event_type, mut data, surface) = match template.as_str() {
        "U" => (
            "user/message".to_owned(),
            json!({"content": [text_block(text(format!("u{seq}")))], "source": {"kind": "user"}, "role": "user", "id": id(format!("m{seq}"))}),
            true,
        ),
        "A" => {
            let text = text(format!("a{seq}"));
            let mut content: Vec<Value> = Vec::new();
            if !text.is_empty() {
                content.push(text_block(text));
            }
            if let Some(Value::Array(calls)) = params.get("$calls") {
                for call in calls {
                    content.push(
                        json!({"type": "tool-call", "id": call, "name": "read", "arguments": "{}"}),
                    );
                }
            }
            (
                "assistant/message".to_owned(),
                json!({"turn": turn, "step": step, "message": {"role": "assistant", "content": content, "source": {"kind": "model", "provider": "p", "model": "m"}, "id": id(format!("a{seq}"))}, "stream": []}),
                true,
            )
        }
        "S" => {
            let text = text(String::new());
            let content: Vec<Value> = if text.is_empty() {
                Vec::new()
            } else {
                vec![text_block(text)]
            };
            (
                "system/message".to_owned(),
                json!({"turn": turn, "step": step, "message": {"role": "system", "content": content, "source": {"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt"}, "id": id(format!("s{seq}"))}}),
                true,
            )
        }
        "T" => {
            let is_error = params.get("$err").cloned().unwrap_or(json!(false));
            let mut block = json!({"type": "tool-result", "toolCallId": call, "content": [text_block(text(format!("r{seq}")))], "isError": is_error});
            if let Some(Value::Object(extra)) = params.get("$block") {
                merge(&mut block, extra);
            }
            (
                "tool/result".to_owned(),
                json!({"turn": turn, "step": step, "message": {"source": {"kind": "tool", "callId": call}, "content": [block], "role": "user", "id": id(format!("t{seq}"))}}),
                true,
            )
        }
        "H" => {
            let mut header = json!({"config": {"provider": "p", "model": "m"}});
            if let Some(Value::Object(extra)) = params.get("$header") {
                merge(&mut header, extra);
            }
            (
                "request/header".to_owned(),
                json!({"header": header, "reason": "initial"}),
                false,
            )
        }
        "TS" => ("turn/start".to_owned(), json!({"turn": turn}), false),
        "TE" => {
            let reason = params
                .get("$reason")
                .cloned()
                .unwrap_or(json!({"kind": "completed"}));
            (
                "turn/end".to_owned(),
                json!({"turn": turn, "reason": reason}),
                false,
            )
        }
        "SS" => (
            "step/start".to_owned(),
            json!({"turn": turn, "step": step}),
            false,
        ),
        "SE" => (
            "step/end".to_owned(),
            json!({"turn": turn, "step": step}),
            false,
        ),
        "TC" => (
            "tool/call".to_owned(),
            json!({"turn": turn, "step": step, "callId": call, "name": "read", "arguments": "{}"}),
            false,
        ),
        "AT" => (
            "assistant/attempt".to_owned(),
            json!({"turn": turn, "step": step, "stream": []}),
            false,
        ),
        "ES" => {
            let data = if params.get("$inherited") == Some(&json!(true)) {
                json!({"inherited": true})
            } else {
                json!({})
            };
            ("session/end-seed".to_owned(), data, false)
        }
        other if other.contains('/') => (other.to_owned(), json!({}), false),
        other => panic!("unknown template {other}"),
    };
    if let Some(Value::Object(extra)) = params.get("$data") {
        if data.is_object() {
            merge(&mut data, extra);
        } else {
            data = Value::Object(extra.clone());
        }
    }
    if let Some(Value::Object(extra)) = params.get("$message") {
        let message = if event_type == "user/message" {
            Some(&mut data)
        } else {
            data.get_mut("message")
        };
        if let Some(message) = message {
            merge(message, extra);
        }
    }
    let mut row = Map::new();
    row.insert("type".into(), Value::String(event_type));
    row.insert("seq".into(), json!(seq));
    row.insert("time".into(), json!(0));
    row.insert("data".into(), data);
    if surface && params.get("$nop") != Some(&json!(true)) {
        row.insert("surfaceOp".into(), json!("append"));
    }
    for (key, value) in envelope {
        row.insert(key, value);
    }
    if let Some(Value::Array(drop)) = params.get("$drop") {
        for key in drop.iter().filter_map(Value::as_str) {
            row.shift_remove(key);
        }
    }
    // dsh's write order, so typed appends and read rows print alike.
    let rank = |key: &str| {
        [
            "type",
            "seq",
            "time",
            "data",
            "sourceEventSeqs",
            "surfaceOp",
            "ignorable",
        ]
        .iter()
        .position(|k| *k == key)
        .unwrap_or(99)
    };
    let mut entries: Vec<(String, Value)> = row.into_iter().collect();
    entries.sort_by_key(|(key, _)| rank(key));
    Value::Object(entries.into_iter().collect())
}

/// Shallow merge; `null` values set null (they do not delete).
fn merge(target: &mut Value, extra: &Map<String, Value>) {
    if let Value::Object(target) = target {
        for (key, value) in extra {
            target.insert(key.clone(), value.clone());
        }
    }
}

/// Template-expanded rows of a multi-line text (one JSON row per line, `#` comments).
pub fn rows(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .enumerate()
        .map(|(index, line)| expand_line(line, index as u64))
        .collect()
}

/// Rows as `RawEvent`s read through the streaming decoder (what a store does).
pub fn raw_events(rows: &[String]) -> Vec<RawEvent> {
    rows.iter()
        .map(|row| RawEvent::from_json_str(row).expect("row is JSON"))
        .collect()
}

// ---------------------------------------------------------------------------
// Sessions and snapshots
// ---------------------------------------------------------------------------

/// The header every case session uses.
pub fn header(id: &str) -> SessionHeader {
    SessionHeader::fresh(id, 0).expect("valid header")
}

/// A live session holding exactly `rows` (no end-seed marker): created
/// empty, then extended under restore rules. Panics if a row is rejected.
pub fn live(id: &str, rows: &[String]) -> Session {
    let mut session = Session::create_with(header(id), SURFACE_ONLY).expect("fresh session");
    session
        .extend_restored(raw_events(rows))
        .unwrap_or_else(|error| panic!("live log rejected: {}", render_error(&error)));
    session
}

/// A row as an append candidate, or why it cannot be one.
pub fn candidate(row: &Value, index: usize) -> Result<(Candidate, i64), String> {
    let Value::Object(map) = row else {
        return Err(format!("row {index} is not an object"));
    };
    let allowed = [
        "type",
        "seq",
        "time",
        "data",
        "surfaceOp",
        "sourceEventSeqs",
        "ignorable",
    ];
    if let Some(key) = map.keys().find(|key| !allowed.contains(&key.as_str())) {
        return Err(format!("row {index} has key {key}"));
    }
    let Some(Value::String(event_type)) = map.get("type") else {
        return Err(format!("row {index} has no string type"));
    };
    if map.get("seq").and_then(Value::as_u64) != Some(index as u64)
        || map.get("seq").map(Value::to_string) != Some(index.to_string())
    {
        return Err(format!("row {index} has seq other than {index}"));
    }
    let time = map
        .get("time")
        .and_then(Value::as_i64)
        .filter(|time| map.get("time").map(Value::to_string) == Some(time.to_string()))
        .ok_or_else(|| format!("row {index} has no plain integer time"))?;
    let Some(data) = map.get("data") else {
        return Err(format!("row {index} has no data"));
    };
    let mut candidate = Candidate::dynamic(
        event_type,
        data.clone(),
        map.get("surfaceOp").cloned(),
        map.get("sourceEventSeqs").cloned(),
    );
    match map.get("ignorable") {
        None => {}
        Some(Value::Bool(true)) => candidate = candidate.ignorable(),
        Some(_) => return Err(format!("row {index} has ignorable other than true")),
    }
    Ok((candidate, time))
}

/// Everything observable about a session, for "unchanged" assertions.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub events: Vec<String>,
    pub nodes: Vec<Seq>,
    pub replace_generation: u64,
    pub messages: Vec<Value>,
    pub request_header: Option<Value>,
    pub request_context: Option<Value>,
    pub inherited_count: u64,
    pub first_live_seq: u64,
}

impl Snapshot {
    pub fn of(session: &Session) -> Snapshot {
        Snapshot {
            events: session
                .events()
                .unwrap()
                .iter()
                .map(|event| event.to_json())
                .collect(),
            nodes: session.surface().nodes().to_vec(),
            replace_generation: session.surface().replace_generation(),
            messages: session
                .derive_messages()
                .iter()
                .map(|message| message.value().clone())
                .collect(),
            request_header: session.request_header().map(|value| (**value).clone()),
            request_context: session.request_context().map(|value| (**value).clone()),
            inherited_count: session.inherited_count(),
            first_live_seq: session.first_live_seq(),
        }
    }
}

/// The derived messages computed from scratch: every node projected.
pub fn scratch_messages(session: &Session) -> Vec<Message> {
    session
        .surface()
        .nodes()
        .iter()
        .filter_map(|seq| session.project(*seq))
        .collect()
}

/// Asserts the invariants every accepted session must satisfy.
pub fn assert_consistent(session: &Session) {
    for (index, event) in session.events().unwrap().iter().enumerate() {
        assert_eq!(event.seq().get(), index as u64, "seq equals index");
    }
    // Incremental surface == offline fold.
    let fold = fold_surface(session.to_raw_events().unwrap())
        .unwrap_or_else(|error| panic!("fold of an accepted log failed: {error}"));
    assert_eq!(fold.nodes, session.surface().nodes(), "fold nodes");
    assert_eq!(
        fold.replace_generation,
        session.surface().replace_generation(),
        "fold replace generation"
    );
    // Cached derivation == scratch projection.
    assert_eq!(
        session.derive_messages().to_vec(),
        scratch_messages(session),
        "derived messages equal a from-scratch projection"
    );
    // Write → read → restore → write is byte-identical.
    let lines: Vec<String> = session
        .events()
        .unwrap()
        .iter()
        .map(|e| e.to_json())
        .collect();
    let reread: Vec<RawEvent> = lines
        .iter()
        .map(|line| RawEvent::from_json_str(line).expect("written line parses"))
        .collect();
    let options = SeedOptions {
        surface_only: session.is_surface_only(),
        ..SeedOptions::default()
    };
    let restored =
        Session::restore(session.header().clone(), reread, options).unwrap_or_else(|error| {
            panic!(
                "restore of written log failed: {}\n{}",
                render_error(&error),
                lines.join("\n")
            )
        });
    for (line, event) in lines.iter().zip(restored.events().unwrap()) {
        assert_eq!(line, &event.to_json(), "round trip is byte-identical");
    }
    assert_eq!(restored.surface().nodes(), session.surface().nodes());
    assert_eq!(
        restored.inherited_count(),
        session.inherited_count(),
        "the inherited count is a fold of the log too"
    );
}

// ---------------------------------------------------------------------------
// Running one case
// ---------------------------------------------------------------------------

pub fn render_error(error: &AcceptError) -> String {
    let mut text = format!("reject {}", error.rule.id());
    if let Some(seq) = error.seq {
        let _ = write!(text, " seq={seq}");
    }
    if let Some(index) = error.index {
        let _ = write!(text, " index={index}");
    }
    let _ = write!(text, ": {}", error.message);
    text
}

fn render_seqs(seqs: &[Seq]) -> String {
    let items: Vec<String> = seqs.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join(","))
}

pub fn render_messages(messages: &[Message]) -> String {
    let items: Vec<String> = messages
        .iter()
        .map(|message| {
            let id = strata_core::json::text_from_held(message.id());
            format!("{}:{id}", message.role())
        })
        .collect();
    format!("[{}]", items.join(" "))
}

fn render_session(session: &Session, show_events: bool) -> String {
    assert_consistent(session);
    let mut text = format!(
        "nodes {} gen {} messages {}",
        render_seqs(session.surface().nodes()),
        session.surface().replace_generation(),
        render_messages(&session.derive_messages().to_vec()),
    );
    if let Some(header) = session.request_header() {
        let _ = write!(text, " header {}", header);
    }
    if show_events {
        for event in session.events().unwrap() {
            let _ = write!(text, "\n  {}", event.to_json());
        }
    }
    text
}

fn run_path(path: Path, rows: &[String], show_events: bool, options: SeedOptions) -> String {
    let values: Vec<Value> = rows.iter().map(|row| parse_json(row)).collect();
    match path {
        Path::Append | Path::Batch => {
            let mut candidates = Vec::new();
            for (index, value) in values.iter().enumerate() {
                match candidate(value, index) {
                    Ok(candidate) => candidates.push(candidate),
                    Err(reason) => return format!("n/a ({reason})"),
                }
            }
            let mut session = Session::create_with(header("case"), options).expect("fresh session");
            if path == Path::Batch {
                let time = candidates.first().map_or(0, |(_, time)| *time);
                let before = Snapshot::of(&session);
                let result = session
                    .append_batch(candidates.into_iter().map(|(candidate, _)| candidate), time);
                if let Err(error) = result {
                    assert_eq!(
                        Snapshot::of(&session),
                        before,
                        "rejected batch changed nothing"
                    );
                    return render_error(&error);
                }
            } else {
                for (candidate, time) in candidates {
                    let before = Snapshot::of(&session);
                    let next = session.next_seq();
                    if let Err(error) = session.append(candidate, time) {
                        assert_eq!(
                            Snapshot::of(&session),
                            before,
                            "rejected append changed nothing"
                        );
                        assert_eq!(
                            error.seq,
                            Some(next.get()),
                            "append error names the next seq"
                        );
                        assert_eq!(error.index, None, "append errors have no index");
                        return render_error(&error);
                    }
                }
            }
            render_session(&session, show_events)
        }
        Path::Seed => {
            let raws = raw_events(rows);
            match Session::create_seeded(header("case"), raws, None, options) {
                Ok(session) => render_session(&session, show_events),
                Err(error) => render_error(&error),
            }
        }
        Path::Restore => {
            let raws = raw_events(rows);
            let header = header("case");
            let generation = header.generation();
            let plain = match Session::restore(header.clone(), raws.clone(), options) {
                Ok(session) => render_session(&session, show_events),
                Err(error) => render_error(&error),
            };
            // The same log with its rows checked ahead (as a store's decoding threads do)
            // must restore to the same session or fail with the same error.
            let prechecked = raws
                .into_iter()
                .enumerate()
                .map(|(index, raw)| PrecheckedRow::check(generation, index as u64, raw));
            let ahead = match Session::restore(header.clone(), prechecked, options) {
                Ok(session) => render_session(&session, show_events),
                Err(error) => render_error(&error),
            };
            assert_eq!(
                ahead, plain,
                "prechecked restore differs from the plain one"
            );
            // And with each row read as a store's decoder reads it: scanned in one pass (a
            // plain source list held as seqs, the payload's view built) and checked ahead
            // with that view.
            let arena = ScanArena::new();
            let scanned = rows.iter().enumerate().map(|(index, row)| {
                let row = ScannedRow::scan_in(row, Some(&arena)).expect("row is JSON");
                PrecheckedRow::check_scanned(generation, index as u64, row)
            });
            let decoded = match Session::restore(header, scanned, options) {
                Ok(session) => render_session(&session, show_events),
                Err(error) => render_error(&error),
            };
            assert_eq!(
                decoded, plain,
                "a restore of scanned rows differs from the plain one"
            );
            plain
        }
        Path::Extend => {
            let mut session = Session::create_with(header("case"), options).expect("fresh session");
            let before = Snapshot::of(&session);
            match session.extend_restored(raw_events(rows)) {
                Ok(()) => render_session(&session, show_events),
                Err(error) => {
                    assert_eq!(
                        Snapshot::of(&session),
                        before,
                        "rejected extend changed nothing"
                    );
                    render_error(&error)
                }
            }
        }
        Path::Fold => {
            let raws: Vec<RawEvent> = values.into_iter().map(RawEvent::from_value).collect();
            match fold_surface(raws) {
                Ok(fold) => render_fold(&fold),
                Err(error) => render_error(&error),
            }
        }
    }
}

fn render_fold(fold: &strata_core::fold::Fold) -> String {
    let mut text = format!(
        "nodes {} gen {}",
        render_seqs(&fold.nodes),
        fold.replace_generation
    );
    if !fold.replacements.is_empty() {
        let items: Vec<String> = fold
            .replacements
            .iter()
            .map(|r| {
                format!(
                    "{}:{}..{}={}",
                    r.seq,
                    r.start,
                    r.end,
                    render_seqs(&r.shadowed)
                )
            })
            .collect();
        let _ = write!(text, " replaced [{}]", items.join(" "));
    }
    text
}

/// Groups paths with identical output: `append batch fold: …`.
fn render_grouped(outputs: Vec<(Path, String)>) -> String {
    let mut groups: Vec<(Vec<Path>, String)> = Vec::new();
    for (path, output) in outputs {
        match groups.iter_mut().find(|(_, text)| *text == output) {
            Some((paths, _)) => paths.push(path),
            None => groups.push((vec![path], output)),
        }
    }
    let mut text = String::new();
    for (paths, output) in groups {
        let names: Vec<&str> = paths.iter().map(|path| path.name()).collect();
        if !text.is_empty() {
            text.push('\n');
        }
        let _ = write!(text, "{}: {}", names.join(" "), output);
    }
    text
}

/// Runs one case and renders its outcome.
pub fn run_case(case: &Case) -> String {
    let directive = |name: &str| {
        case.directives
            .iter()
            .find_map(|d| d.strip_prefix(name).map(str::trim))
    };
    let show_events = case.directives.iter().any(|d| d == "show events");
    if let Some(base) = directive("window") {
        let base = Seq::new(base.parse().expect("window base")).expect("seq");
        let raws: Vec<RawEvent> = case
            .rows
            .iter()
            .map(|row| RawEvent::from_value(parse_json(row)))
            .collect();
        return match fold_window(Generation::V3, base, raws) {
            Ok(fold) => format!("window: {}", render_fold(&fold)),
            Err(error) => format!("window: {}", render_error(&error)),
        };
    }
    if case.directives.iter().any(|d| d == "repair") {
        return run_repair(&case.rows);
    }
    let forks: Vec<&str> = case
        .directives
        .iter()
        .filter_map(|d| d.strip_prefix("fork "))
        .collect();
    if !forks.is_empty() {
        let source_id = directive("id").unwrap_or("parent");
        let renders: Vec<String> = forks
            .iter()
            .map(|spec| format!("fork {spec}: {}", run_fork(&case.rows, source_id, spec)))
            .collect();
        return renders.join("\n");
    }
    // `> relational`: upstream's relational rules run too (docs/rules.md).
    let options = if case.directives.iter().any(|d| d == "relational") {
        SeedOptions::default()
    } else {
        SURFACE_ONLY
    };
    let outputs = Path::ALL
        .iter()
        .map(|path| (*path, run_path(*path, &case.rows, show_events, options)))
        .collect();
    render_grouped(outputs)
}

fn run_repair(rows: &[String]) -> String {
    let mut text = String::new();
    for cause in [CloseCause::Interrupted, CloseCause::Forked] {
        let mut session = live("repair", rows);
        let planned = open_turn_closers(session.events().unwrap(), cause);
        if cause == CloseCause::Interrupted {
            assert_eq!(
                planned,
                strata_core::repair::interrupted_turn_closers(session.events().unwrap()),
                "interrupted_turn_closers is open_turn_closers(Interrupted)"
            );
        }
        let first_seq = planned.first_seq;
        let time = planned.time;
        let closers = session
            .close_open_turn(cause)
            .unwrap_or_else(|error| panic!("closers rejected: {}", render_error(&error)));
        assert_eq!(closers.len(), planned.candidates.len());
        // A closed log needs no further closers, and stays consistent.
        assert!(open_turn_closers(session.events().unwrap(), cause).is_empty());
        assert_consistent(&session);
        if !text.is_empty() {
            text.push('\n');
        }
        let _ = write!(text, "{}:", cause.as_str());
        if closers.is_empty() {
            text.push_str(" none");
            continue;
        }
        let _ = write!(text, " first_seq={first_seq} time={time}");
        for event in &closers {
            let _ = write!(text, "\n  {}", event.to_json());
        }
        let _ = write!(
            text,
            "\n  messages {}",
            render_messages(&session.derive_messages().to_vec())
        );
    }
    text
}

fn run_fork(rows: &[String], source_id: &str, spec: &str) -> String {
    let mut words = spec.split_whitespace();
    let mode = match words.next() {
        Some("closed") => ForkMode::ClosedTurn,
        Some("any") => ForkMode::AnyPrefix,
        other => panic!("fork mode {other:?}"),
    };
    let boundary = match words.next() {
        Some("-") | None => None,
        Some(number) => Some(number.parse::<u64>().expect("fork boundary")),
    };
    let source = live(source_id, rows);
    let before = Snapshot::of(&source);
    let result = fork_session(&source, "child", boundary, mode, 0);
    assert_eq!(
        Snapshot::of(&source),
        before,
        "fork leaves the source unchanged"
    );
    let child = match result {
        Ok(child) => child,
        Err(error) => return format!("fork error {}: {}", error.code.as_str(), error.message),
    };
    assert_consistent(&child);
    let inherited = child.inherited_count() as usize;
    // The inherited prefix is the parent's, byte for byte.
    for (parent, copy) in source
        .events()
        .unwrap()
        .iter()
        .zip(&child.events().unwrap()[..inherited])
    {
        assert_eq!(parent.to_json(), copy.to_json(), "inherited event differs");
    }
    // The child's stored log restores to the same session.
    let restored = Session::restore(
        child.header().clone(),
        child.to_raw_events().unwrap(),
        SeedOptions {
            surface_only: child.is_surface_only(),
            ..SeedOptions::default()
        },
    )
    .unwrap_or_else(|error| panic!("child log does not restore: {}", render_error(&error)));
    assert_eq!(restored.inherited_count(), child.inherited_count());
    assert_eq!(restored.surface().nodes(), child.surface().nodes());
    // Reopening adds a plain marker unless the child ends in one (§9.1 step 4).
    let ends_in_marker = child
        .events()
        .unwrap()
        .last()
        .map(|e| e.event_type().as_str())
        == Some("session/end-seed");
    assert_eq!(restored.len(), child.len() + usize::from(!ends_in_marker));
    let header = Value::Object(child.header().fields().clone());
    let mut text = format!(
        "child inherited={} first_live={} header {}",
        child.inherited_count(),
        child.first_live_seq(),
        header
    );
    for event in &child.events().unwrap()[inherited..] {
        let _ = write!(text, "\n  {}", event.to_json());
    }
    let _ = write!(
        text,
        "\n  messages {}",
        render_messages(&child.derive_messages().to_vec())
    );
    text
}

/// Generates the `#[test]` functions of one data file: each runs the cases
/// named after it, and `CASE_TESTS` lists them for the orphan check.
#[macro_export]
macro_rules! data_tests {
    ($file:literal; $($name:ident,)*) => {
        /// The data file these tests read.
        pub(crate) const CASE_FILE: &str = $file;
        /// The test names, each the name (or prefix) of its cases.
        pub(crate) const CASE_TESTS: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() {
                $crate::harness::check_cases($file, stringify!($name));
            }
        )*
    };
}

/// The data cases judge the session-core surface rules on their own, outside any turn:
/// upstream's relational rules are off for them (docs/rules.md, "Surface-only sessions").
pub const SURFACE_ONLY: SeedOptions = SeedOptions {
    marker_time: 0,
    surface_only: true,
    defer_marker: false,
    repair: None,
};

/// A fresh surface-only session (see [`SURFACE_ONLY`]).
pub fn create(header: strata_core::SessionHeader) -> Result<Session, strata_core::AcceptError> {
    Session::create_with(header, SURFACE_ONLY)
}
