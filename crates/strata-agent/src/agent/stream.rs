//! Recording one model attempt: live [`StreamEvent`]s in, the settled assistant content and the
//! compact embedded `stream` of session-core §4.6 out.
//!
//! The recorder derives dsh's block bookkeeping from the provider-neutral events: a run of
//! reasoning or text deltas is one content block, each tool call (by its stream `index`) is one
//! block, and a block opens with a `block-start` chunk at its first delta. Consecutive deltas of
//! the same kind and block (and, for tool calls, the same id and name presence) are compacted
//! as they arrive into one `text-chunks` / `reasoning-chunks` / `tool-call-chunks` record
//! `{time0, dt[], texts[]|args[]}`; every other chunk is a `chunk` record `{time, chunk}`. Delta
//! texts are moved in, never joined, so the record is lossless (token boundaries are data).
//!
//! Per delta the work is: compare with the last record, push the text, append it to the block
//! text. That is the loop's whole per-token cost; nothing touches the store until the attempt
//! settles.

use serde_json::{Map, Value};

use crate::llm::{FinishReason, LlmError, StreamEvent, Usage};

/// Accumulates one attempt.
#[derive(Debug, Default)]
pub struct StreamRecorder {
    records: Vec<Record>,
    blocks: Vec<Block>,
    /// The block a reasoning/text delta of the same kind extends, if still open.
    open_text: Option<usize>,
    /// Tool-call stream index → block index.
    calls: Vec<(u32, usize)>,
    usage: Option<Usage>,
    n_events: u64,
}

/// A settled attempt: what the `assistant/message` (or `assistant/attempt`) carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// The message content blocks, in block order.
    pub content: Vec<Value>,
    /// The compact stream records.
    pub stream: Vec<Value>,
    /// `TokenUsage` for the event (`{inputTokens, outputTokens, cacheReadTokens?, reasoningTokens?}`).
    pub usage: Option<Value>,
    /// The tool calls of the content, in block order.
    pub tool_calls: Vec<CallBlock>,
}

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallBlock {
    /// The provider's call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The raw JSON argument text.
    pub arguments: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextKind {
    Reasoning,
    Text,
}

#[derive(Debug)]
enum Block {
    Text {
        kind: TextKind,
        text: String,
    },
    Call {
        id: Option<String>,
        name: String,
        arguments: String,
    },
}

#[derive(Debug)]
enum Record {
    Texts {
        kind: TextKind,
        time0: i64,
        last: i64,
        index: usize,
        dt: Vec<i64>,
        texts: Vec<String>,
    },
    Args {
        time0: i64,
        last: i64,
        index: usize,
        id: String,
        name: Option<String>,
        dt: Vec<i64>,
        args: Vec<String>,
    },
    Chunk {
        time: i64,
        chunk: Value,
    },
}

impl StreamRecorder {
    /// An empty recorder.
    pub fn new() -> StreamRecorder {
        StreamRecorder::default()
    }

    /// Records `event`, delivered at `time` (epoch ms). A [`StreamEvent::Finish`] is recorded
    /// by [`StreamRecorder::settle`], not here.
    pub fn push(&mut self, event: StreamEvent, time: i64) {
        self.n_events += 1;
        match event {
            StreamEvent::ReasoningDelta { text } => self.push_text(TextKind::Reasoning, text, time),
            StreamEvent::TextDelta { text } => self.push_text(TextKind::Text, text, time),
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments_delta,
            } => self.push_call(index, id, name, arguments_delta, time),
            StreamEvent::Usage(usage) => {
                self.records.push(Record::Chunk {
                    time,
                    chunk: object([("type", "usage".into()), ("usage", usage_value(&usage))]),
                });
                self.usage = Some(usage);
            }
            StreamEvent::Finish { .. } => self.n_events -= 1,
        }
    }

    /// How many events were pushed.
    pub fn n_events(&self) -> u64 {
        self.n_events
    }

    /// Whether reasoning or text was delivered: what the user may already have seen.
    pub fn has_visible(&self) -> bool {
        self.blocks
            .iter()
            .any(|block| matches!(block, Block::Text { text, .. } if !text.is_empty()))
    }

    /// Ends a finished attempt: `block-end` for every block, then the `finish` chunk.
    pub fn settle(mut self, reason: &FinishReason, time: i64) -> Settled {
        for index in 0..self.blocks.len() {
            let block = self.block_value(index);
            self.records.push(Record::Chunk {
                time,
                chunk: object([
                    ("type", "block-end".into()),
                    ("index", index.into()),
                    ("block", block),
                ]),
            });
        }
        self.finish(finish_reason(reason), time, true)
    }

    /// Ends a failed or cancelled attempt: a `finish` chunk of kind `error` (or `aborted` for
    /// [`LlmError::Cancelled`]) carrying the failure. The content holds the delivered reasoning
    /// and text only: tool calls that were never dispatched are dropped (persistence §7.3).
    pub fn fail(self, error: &LlmError, time: i64) -> Settled {
        let kind = if matches!(error, LlmError::Cancelled) {
            "aborted"
        } else {
            "error"
        };
        let reason = object([("kind", kind.into()), ("failure", failure_value(error))]);
        self.finish(reason, time, false)
    }

    fn finish(mut self, reason: Value, time: i64, keep_calls: bool) -> Settled {
        self.records.push(Record::Chunk {
            time,
            chunk: object([("type", "finish".into()), ("reason", reason)]),
        });
        let mut content = Vec::with_capacity(self.blocks.len());
        let mut tool_calls = Vec::new();
        for index in 0..self.blocks.len() {
            let value = self.block_value(index);
            match &self.blocks[index] {
                Block::Text { text, .. } if text.is_empty() => {}
                Block::Text { .. } => content.push(value),
                Block::Call {
                    name, arguments, ..
                } if keep_calls => {
                    tool_calls.push(CallBlock {
                        id: call_id(&self.blocks[index], index),
                        name: name.clone(),
                        arguments: arguments.clone(),
                    });
                    content.push(value);
                }
                Block::Call { .. } => {}
            }
        }
        let usage = self.usage.as_ref().map(usage_value);
        Settled {
            content,
            stream: self.records.into_iter().map(Record::into_value).collect(),
            usage,
            tool_calls,
        }
    }

    fn push_text(&mut self, kind: TextKind, text: String, time: i64) {
        let index = match self.open_text {
            Some(index) if matches!(self.blocks[index], Block::Text { kind: held, .. } if held == kind) => {
                index
            }
            _ => {
                let index = self.open_block(
                    Block::Text {
                        kind,
                        text: String::new(),
                    },
                    time,
                );
                self.open_text = Some(index);
                index
            }
        };
        if let Some(Block::Text { text: held, .. }) = self.blocks.get_mut(index) {
            held.push_str(&text);
        }
        if let Some(Record::Texts {
            kind: run_kind,
            last,
            index: run_index,
            dt,
            texts,
            ..
        }) = self.records.last_mut()
        {
            if *run_kind == kind && *run_index == index {
                dt.push(time - *last);
                *last = time;
                texts.push(text);
                return;
            }
        }
        self.records.push(Record::Texts {
            kind,
            time0: time,
            last: time,
            index,
            dt: Vec::new(),
            texts: vec![text],
        });
    }

    fn push_call(
        &mut self,
        call: u32,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
        time: i64,
    ) {
        let index = match self.calls.iter().find(|(held, _)| *held == call) {
            Some((_, index)) => *index,
            None => {
                self.open_text = None;
                let index = self.open_block(
                    Block::Call {
                        id: None,
                        name: String::new(),
                        arguments: String::new(),
                    },
                    time,
                );
                self.calls.push((call, index));
                index
            }
        };
        let known_id = match self.blocks.get_mut(index) {
            Some(Block::Call {
                id: held_id,
                name: held_name,
                arguments: held_arguments,
            }) => {
                if held_id.is_none() {
                    held_id.clone_from(&id);
                }
                if let Some(name) = &name {
                    held_name.push_str(name);
                }
                held_arguments.push_str(&arguments);
                held_id.clone()
            }
            _ => None,
        };
        let Some(known_id) = known_id else {
            // A delta of a call whose id never arrived: keep it raw.
            let mut chunk = Map::new();
            chunk.insert("type".into(), "tool-call-delta".into());
            chunk.insert("index".into(), index.into());
            if let Some(name) = name {
                chunk.insert("name".into(), name.into());
            }
            chunk.insert("argumentsDelta".into(), arguments.into());
            self.records.push(Record::Chunk {
                time,
                chunk: Value::Object(chunk),
            });
            return;
        };
        if let Some(Record::Args {
            last,
            index: run_index,
            id: run_id,
            name: run_name,
            dt,
            args,
            ..
        }) = self.records.last_mut()
        {
            if *run_index == index && *run_id == known_id && *run_name == name {
                dt.push(time - *last);
                *last = time;
                args.push(arguments);
                return;
            }
        }
        self.records.push(Record::Args {
            time0: time,
            last: time,
            index,
            id: known_id,
            name,
            dt: Vec::new(),
            args: vec![arguments],
        });
    }

    fn open_block(&mut self, block: Block, time: i64) -> usize {
        let index = self.blocks.len();
        let block_type = match &block {
            Block::Text {
                kind: TextKind::Reasoning,
                ..
            } => "reasoning",
            Block::Text { .. } => "text",
            Block::Call { .. } => "tool-call",
        };
        self.blocks.push(block);
        self.records.push(Record::Chunk {
            time,
            chunk: object([
                ("type", "block-start".into()),
                ("index", index.into()),
                ("blockType", block_type.into()),
            ]),
        });
        index
    }

    fn block_value(&self, index: usize) -> Value {
        match &self.blocks[index] {
            Block::Text { kind, text } => object([
                (
                    "type",
                    match kind {
                        TextKind::Reasoning => "reasoning",
                        TextKind::Text => "text",
                    }
                    .into(),
                ),
                ("text", text.as_str().into()),
            ]),
            block @ Block::Call {
                name, arguments, ..
            } => strata_core::payload::tool_call_block(&call_id(block, index), name, arguments),
        }
    }
}

/// A call's id, or `call-<block index>` for a provider that never sent one (the id is needed to
/// pair the result).
fn call_id(block: &Block, index: usize) -> String {
    match block {
        Block::Call { id: Some(id), .. } => id.clone(),
        _ => format!("call-{index}"),
    }
}

impl Record {
    fn into_value(self) -> Value {
        match self {
            Record::Texts {
                kind,
                time0,
                index,
                dt,
                texts,
                ..
            } => object([
                (
                    "type",
                    match kind {
                        TextKind::Reasoning => "reasoning-chunks",
                        TextKind::Text => "text-chunks",
                    }
                    .into(),
                ),
                ("time0", time0.into()),
                ("index", index.into()),
                ("dt", dt.into()),
                ("texts", texts.into()),
            ]),
            Record::Args {
                time0,
                index,
                id,
                name,
                dt,
                args,
                ..
            } => {
                let mut record = Map::new();
                record.insert("type".into(), "tool-call-chunks".into());
                record.insert("time0".into(), time0.into());
                record.insert("index".into(), index.into());
                record.insert("dt".into(), dt.into());
                record.insert("id".into(), id.into());
                if let Some(name) = name {
                    record.insert("name".into(), name.into());
                }
                record.insert("args".into(), args.into());
                Value::Object(record)
            }
            Record::Chunk { time, chunk } => object([
                ("type", "chunk".into()),
                ("time", time.into()),
                ("chunk", chunk),
            ]),
        }
    }
}

/// dsh's `finish.reason` for a provider finish reason.
fn finish_reason(reason: &FinishReason) -> Value {
    let kind = match reason {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool-calls",
        FinishReason::Length => "max-tokens",
        FinishReason::ContentFilter => "content-filter",
        FinishReason::Other(other) => {
            return object([
                ("kind", "other".into()),
                ("providerReason", other.as_str().into()),
            ])
        }
    };
    object([("kind", kind.into())])
}

/// dsh's `LlmFailure {message, code, status?, providerRetryAfterMs?, requestId?}`.
pub fn failure_value(error: &LlmError) -> Value {
    let mut failure = Map::new();
    failure.insert("message".into(), error.to_string().into());
    failure.insert("code".into(), error.code().into());
    if let Some(status) = error.status() {
        failure.insert("status".into(), status.into());
    }
    if let Some(after) = error.http().and_then(|http| http.retry_after_ms) {
        failure.insert("providerRetryAfterMs".into(), after.into());
    }
    if let Some(request_id) = error.request_id() {
        failure.insert("requestId".into(), request_id.into());
    }
    Value::Object(failure)
}

/// dsh's `TokenUsage`: input excludes cache reads, which are counted apart, so that
/// input + cacheRead + output is the provider's total.
pub fn usage_value(usage: &Usage) -> Value {
    let cache_read = usage.prompt_cache_hit_tokens;
    let input = usage
        .prompt_cache_miss_tokens
        .unwrap_or_else(|| usage.prompt_tokens.saturating_sub(cache_read.unwrap_or(0)));
    let mut value = Map::new();
    value.insert("inputTokens".into(), input.into());
    value.insert("outputTokens".into(), usage.completion_tokens.into());
    if let Some(cache_read) = cache_read {
        value.insert("cacheReadTokens".into(), cache_read.into());
    }
    if let Some(reasoning) = usage.reasoning_tokens {
        value.insert("reasoningTokens".into(), reasoning.into());
    }
    Value::Object(value)
}

fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let mut map = Map::with_capacity(N);
    for (key, value) in entries {
        map.insert(key.to_owned(), value);
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests;
