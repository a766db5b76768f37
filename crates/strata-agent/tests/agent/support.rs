//! Shared helpers: agents on stores, an observer that records and can cancel, log readers.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use strata_agent::agent::{
    chat_request, Agent, AgentConfig, CallConfig, Observer, ReasoningReplay,
};
use strata_agent::llm::{ChatModel, ChatRequest, StreamEvent};
use strata_agent::tools::{ToolSet, ToolsConfig, Workspace};
use strata_core::{Event, RawEvent, SeedOptions, Session, SessionHeader};
use strata_store::{Compression, Store};
use tokio_util::sync::CancellationToken;

/// A JSONL store and a workspace in temporary directories.
pub struct Fixture {
    pub store: Store,
    pub workspace: Workspace,
    _store_dir: tempfile::TempDir,
    pub work_dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        let store_dir = tempfile::tempdir().unwrap();
        let work_dir = tempfile::tempdir().unwrap();
        Fixture {
            store: Store::jsonl(store_dir.path(), Compression::None),
            workspace: Workspace::new(work_dir.path()).unwrap(),
            _store_dir: store_dir,
            work_dir,
        }
    }

    /// An agent on a new session `id`.
    pub fn agent(&self, id: &str, model: Arc<dyn ChatModel>, config: AgentConfig) -> Agent {
        let writer = self
            .store
            .create(SessionHeader::fresh(id, 1).unwrap())
            .unwrap();
        Agent::new(writer, model, self.tools(), self.workspace.clone(), config)
    }

    /// An agent on the stored session `id`, reopened (crash repair applied).
    pub fn reopen(&self, id: &str, model: Arc<dyn ChatModel>, config: AgentConfig) -> Agent {
        let writer = self.store.open_write(id).unwrap();
        Agent::new(writer, model, self.tools(), self.workspace.clone(), config)
    }

    pub fn tools(&self) -> ToolSet {
        ToolSet::builtin(&ToolsConfig::default())
    }

    /// The stored session, validated by the core (`Session::restore` of what the store holds).
    pub fn load(&self, id: &str) -> Session {
        self.store.load(id).unwrap()
    }

    /// The stored events, raw.
    pub fn raw(&self, id: &str) -> Vec<RawEvent> {
        self.store.read(id).unwrap().events
    }
}

pub fn config(model: &str) -> AgentConfig {
    let mut config = AgentConfig::new(CallConfig::new("deepseek", model));
    config.retry.backoff.initial = std::time::Duration::from_millis(1);
    config.retry.backoff.jitter = 0.0;
    config
}

/// The event types of a session, in order.
pub fn types(session: &Session) -> Vec<String> {
    session
        .events()
        .unwrap()
        .iter()
        .map(|event| event.event_type().to_string())
        .collect()
}

/// The events of one type.
pub fn of_type<'a>(session: &'a Session, kind: &str) -> Vec<&'a Arc<Event>> {
    session
        .events()
        .unwrap()
        .iter()
        .filter(|event| event.event_type().as_str() == kind)
        .collect()
}

/// `(role, text)` of each derived message; tool results as `tool:<text>`, tool calls as
/// `call:<name>`.
pub fn derived(session: &Session) -> Vec<(String, String)> {
    session
        .derive_messages()
        .iter()
        .map(|message| {
            let parts: Vec<String> = message
                .content()
                .iter()
                .map(|block| match block["type"].as_str() {
                    Some("tool-call") => format!("call:{}", block["name"].as_str().unwrap_or("")),
                    Some("tool-result") => format!(
                        "tool:{}",
                        block["content"][0]["text"].as_str().unwrap_or("")
                    ),
                    Some("reasoning") => {
                        format!("thought:{}", block["text"].as_str().unwrap_or(""))
                    }
                    _ => block["text"].as_str().unwrap_or("").to_owned(),
                })
                .collect();
            (message.role().to_owned(), parts.join("|"))
        })
        .collect()
}

/// The request the stored log implies before each model call: every `assistant/message` and
/// `assistant/attempt` marks one dispatched request, rebuilt from the log prefix before it.
pub fn reconstructed_requests(
    fixture: &Fixture,
    id: &str,
    reasoning: ReasoningReplay,
) -> Vec<ChatRequest> {
    let stored = fixture.store.read(id).unwrap();
    let mut requests = Vec::new();
    for (idx, raw) in stored.events.iter().enumerate() {
        let kind = raw.type_tag().unwrap_or("");
        if kind != "assistant/message" && kind != "assistant/attempt" {
            continue;
        }
        let prefix = stored.events[..idx].to_vec();
        let session =
            Session::restore(stored.header.clone(), prefix, SeedOptions::default()).unwrap();
        requests.push(chat_request(&session, reasoning).unwrap());
    }
    requests
}

/// Records everything the loop reports, and cancels a token on a chosen trigger.
#[derive(Default)]
pub struct Watch {
    pub events: Mutex<Vec<Arc<Event>>>,
    pub deltas: Mutex<Vec<StreamEvent>>,
    pub warnings: Mutex<Vec<String>>,
    pub cancel: Option<(CancellationToken, Trigger)>,
}

/// When [`Watch`] cancels.
pub enum Trigger {
    /// After this many content deltas.
    Deltas(usize),
    /// When an event of this type is appended.
    Event(&'static str),
}

impl Watch {
    pub fn cancelling(token: CancellationToken, trigger: Trigger) -> Watch {
        Watch {
            cancel: Some((token, trigger)),
            ..Watch::default()
        }
    }
}

impl Observer for Watch {
    fn event(&self, event: &Arc<Event>) {
        self.events.lock().unwrap().push(event.clone());
        if let Some((token, Trigger::Event(kind))) = &self.cancel {
            if event.event_type().as_str() == *kind {
                token.cancel();
            }
        }
    }

    fn stream(&self, event: &StreamEvent) {
        let mut deltas = self.deltas.lock().unwrap();
        deltas.push(event.clone());
        if let Some((token, Trigger::Deltas(n))) = &self.cancel {
            if deltas.iter().filter(|delta| delta.is_content()).count() >= *n {
                token.cancel();
            }
        }
    }

    fn warning(&self, message: &str) {
        self.warnings.lock().unwrap().push(message.to_owned());
    }
}

/// `data.<path>` of an event as a string.
pub fn field<'a>(event: &'a Event, path: &[&str]) -> &'a Value {
    let mut value = event.data();
    for key in path {
        value = &value[*key];
    }
    value
}

impl Fixture {
    /// Upstream's released V3 format layer accepts every log this fixture's store holds (issue
    /// 23): what the loop, its retries, cancellations, crash repair and compaction wrote.
    pub fn assert_logs_accepted(&self) {
        let listing = self.store.list().unwrap();
        let files: Vec<String> = listing
            .sessions
            .iter()
            .map(|session| self.store.read(session.id()).unwrap().location)
            .collect();
        assert!(!files.is_empty(), "the test wrote no log");
        strata_conformance::format_oracle::assert_accepted(&files);
    }
}
