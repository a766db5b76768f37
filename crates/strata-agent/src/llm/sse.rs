//! Decoding an OpenAI-compatible chat-completion SSE body into [`StreamEvent`]s.
//!
//! The SSE framing (lines, `data:` fields, comments, UTF-8 split across reads) is
//! `eventsource-stream`'s job; this module reads each event's JSON chunk. What it knows about
//! the wire, as DeepSeek sends it:
//!
//! - the first chunk carries `delta.role` and an empty `content`: no event;
//! - `delta.reasoning_content` and `delta.content` pieces: one event each when non-empty;
//! - `delta.tool_calls[]` pieces keyed by `index`, the first with `id` and `function.name`;
//! - `finish_reason` on the last content chunk, then (with `include_usage`) a chunk with empty
//!   `choices` and the `usage`, then `data: [DONE]`;
//! - `: keep-alive` comments while the server is busy (skipped by the SSE parser).
//!
//! Usage and finish are held back and emitted together at `[DONE]`, usage first, so that
//! [`StreamEvent::Finish`] is always the last event. A body that ends (or breaks, or stalls)
//! after the finish reason but before `[DONE]` still counts as finished, since nothing of the
//! answer is missing.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::Stream;
use serde::Deserialize;
use strata_core::json;

use super::{EventStream, FinishReason, HttpFailure, LlmError, StreamEvent, Usage};

/// Turns the raw bytes of a chat-completion SSE body into the event stream of one attempt.
///
/// `bytes` may split lines, events and UTF-8 sequences anywhere; its errors are passed through
/// as they are (the HTTP client sends [`LlmError::StreamDisconnected`] and
/// [`LlmError::TimeoutIdle`] this way). `request_id` is attached to the errors this decoder
/// raises. Public so that benchmarks and other transports can reuse the exact decoding the
/// HTTP client uses.
pub fn decode_sse_stream<S, B>(bytes: S, request_id: Option<String>) -> EventStream
where
    S: Stream<Item = Result<B, LlmError>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    Box::pin(SseEvents {
        sse: Box::pin(BomStripped::new(bytes).eventsource()),
        decoder: ChunkDecoder::new(request_id),
        pending: VecDeque::new(),
    })
}

type Item = Result<StreamEvent, LlmError>;

struct SseEvents<S, B> {
    sse: Pin<Box<eventsource_stream::EventStream<BomStripped<S, B>>>>,
    decoder: ChunkDecoder,
    pending: VecDeque<Item>,
}

impl<S, B> Stream for SseEvents<S, B>
where
    S: Stream<Item = Result<B, LlmError>>,
    B: AsRef<[u8]>,
{
    type Item = Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.pending.pop_front() {
                return Poll::Ready(Some(item));
            }
            if this.decoder.terminated {
                return Poll::Ready(None);
            }
            match this.sse.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(event))) => this.decoder.on_event(&event, &mut this.pending),
                Poll::Ready(Some(Err(error))) => this.decoder.on_error(error, &mut this.pending),
                Poll::Ready(None) => this.decoder.on_eof(&mut this.pending),
            }
        }
    }
}

/// The body as `eventsource-stream` must see it: its one leading UTF-8 byte-order mark
/// stripped (the SSE spec strips exactly one), then a `:` comment line put first.
///
/// `eventsource-stream` 0.2.3 strips a leading BOM itself by slicing its first string at byte 1,
/// inside the 3-byte character: a body starting with a BOM panicked the client (found by the
/// `sse` fuzz target). Behind the comment line the parser never sees a BOM first, and a second
/// BOM stays part of the first line, as the spec says.
struct BomStripped<S, B> {
    inner: Pin<Box<S>>,
    /// The body's first bytes while they may still be a BOM; `None` once decided.
    head: Option<Vec<u8>>,
    /// Whether the comment line has been sent.
    started: bool,
    /// The end (or error) that came while bytes were held, served after them.
    end: Option<Option<Result<B, LlmError>>>,
}

const BOM: &[u8] = "\u{feff}".as_bytes();

// Nothing of `S` or `B` is pinned in place: `inner` is boxed, the held end only moved.
impl<S, B> Unpin for BomStripped<S, B> {}

impl<S, B> BomStripped<S, B> {
    fn new(inner: S) -> BomStripped<S, B> {
        BomStripped {
            inner: Box::pin(inner),
            head: Some(Vec::new()),
            started: false,
            end: None,
        }
    }
}

/// A chunk of the stripped body: the comment line, the bytes held while looking for the BOM,
/// or a chunk passed through as it came.
enum BodyChunk<B> {
    Owned(Vec<u8>),
    Passed(B),
}

impl<B: AsRef<[u8]>> AsRef<[u8]> for BodyChunk<B> {
    fn as_ref(&self) -> &[u8] {
        match self {
            BodyChunk::Owned(bytes) => bytes,
            BodyChunk::Passed(bytes) => bytes.as_ref(),
        }
    }
}

impl<S, B> Stream for BomStripped<S, B>
where
    S: Stream<Item = Result<B, LlmError>>,
    B: AsRef<[u8]>,
{
    type Item = Result<BodyChunk<B>, LlmError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if !this.started {
            this.started = true;
            return Poll::Ready(Some(Ok(BodyChunk::Owned(b":\n".to_vec()))));
        }
        if let Some(end) = this.end.take() {
            return Poll::Ready(end.map(|item| item.map(BodyChunk::Passed)));
        }
        loop {
            let Some(head) = this.head.as_mut() else {
                return this
                    .inner
                    .as_mut()
                    .poll_next(cx)
                    .map(|item| item.map(|chunk| chunk.map(BodyChunk::Passed)));
            };
            match this.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => {
                    head.extend_from_slice(chunk.as_ref());
                    let n = head.len().min(BOM.len());
                    if head[..n] != BOM[..n] {
                        let held = std::mem::take(head);
                        this.head = None;
                        return Poll::Ready(Some(Ok(BodyChunk::Owned(held))));
                    }
                    if head.len() >= BOM.len() {
                        let rest = head.split_off(BOM.len());
                        this.head = None;
                        return Poll::Ready(Some(Ok(BodyChunk::Owned(rest))));
                    }
                }
                // The body ends, or breaks, inside what could have been a BOM: what was held
                // goes first.
                Poll::Ready(other) => {
                    let held = std::mem::take(head);
                    this.head = None;
                    if held.is_empty() {
                        return Poll::Ready(other.map(|item| item.map(BodyChunk::Passed)));
                    }
                    this.end = Some(other);
                    return Poll::Ready(Some(Ok(BodyChunk::Owned(held))));
                }
            }
        }
    }
}

/// The state of one body between SSE events.
struct ChunkDecoder {
    request_id: Option<String>,
    /// The finish reason, once seen; emitted at `[DONE]`.
    finish: Option<FinishReason>,
    /// The latest usage seen; emitted at `[DONE]`, before the finish.
    usage: Option<Usage>,
    saw_content: bool,
    /// Invariant: once true, nothing more is pushed.
    terminated: bool,
}

impl ChunkDecoder {
    fn new(request_id: Option<String>) -> ChunkDecoder {
        ChunkDecoder {
            request_id,
            finish: None,
            usage: None,
            saw_content: false,
            terminated: false,
        }
    }

    fn on_event(&mut self, event: &Event, out: &mut VecDeque<Item>) {
        match event.event.as_str() {
            "message" => {}
            "error" => {
                let error = self.stream_error(&event.data);
                return self.fail(error, out);
            }
            // Named events are not part of the chat-completion protocol; skip rather than fail.
            _ => return,
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            return self.complete(out);
        }
        // Read as JSON.parse reads it: a lone surrogate in a delta is kept (held), not an error.
        let chunk: ChunkWire = match json::from_str(data) {
            Ok(chunk) => chunk,
            Err(error) => {
                let error = LlmError::Protocol {
                    detail: format!("chunk is not valid chat-completion json: {error}"),
                    excerpt: excerpt(data),
                    request_id: self.request_id.clone(),
                };
                return self.fail(error, out);
            }
        };
        if chunk.error.is_some() {
            let error = self.stream_error(data);
            return self.fail(error, out);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into_usage());
        }
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            if let Some(delta) = choice.delta {
                self.push_delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(FinishReason::from_wire(&reason));
            }
        }
    }

    fn push_delta(&mut self, delta: DeltaWire, out: &mut VecDeque<Item>) {
        if let Some(text) = delta.reasoning_content.filter(|text| !text.is_empty()) {
            self.saw_content = true;
            out.push_back(Ok(StreamEvent::ReasoningDelta { text }));
        }
        if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
            self.saw_content = true;
            out.push_back(Ok(StreamEvent::TextDelta { text }));
        }
        for call in delta.tool_calls.unwrap_or_default() {
            let (name, arguments) = match call.function {
                Some(function) => (function.name, function.arguments.unwrap_or_default()),
                None => (None, String::new()),
            };
            if call.id.is_none() && name.is_none() && arguments.is_empty() {
                continue;
            }
            self.saw_content = true;
            out.push_back(Ok(StreamEvent::ToolCallDelta {
                index: call.index,
                id: call.id,
                name,
                arguments_delta: arguments,
            }));
        }
    }

    fn on_error(&mut self, error: EventStreamError<LlmError>, out: &mut VecDeque<Item>) {
        let error = match error {
            EventStreamError::Transport(
                LlmError::StreamDisconnected { .. } | LlmError::TimeoutIdle { .. },
            ) if self.finish.is_some() => return self.complete(out),
            EventStreamError::Transport(error) => error,
            EventStreamError::Utf8(error) => LlmError::Protocol {
                detail: format!("body is not utf-8: {error}"),
                excerpt: String::new(),
                request_id: self.request_id.clone(),
            },
            EventStreamError::Parser(error) => LlmError::Protocol {
                detail: format!("invalid sse line ({:?})", error.code),
                excerpt: excerpt(&error.input),
                request_id: self.request_id.clone(),
            },
        };
        self.fail(error, out);
    }

    fn on_eof(&mut self, out: &mut VecDeque<Item>) {
        if self.finish.is_some() {
            return self.complete(out);
        }
        let error = LlmError::StreamDisconnected {
            detail: "body ended".into(),
            request_id: self.request_id.clone(),
        };
        self.fail(error, out);
    }

    fn complete(&mut self, out: &mut VecDeque<Item>) {
        let Some(reason) = self.finish.take() else {
            let error = LlmError::Protocol {
                detail: "[DONE] arrived before any finish_reason".into(),
                excerpt: "[DONE]".into(),
                request_id: self.request_id.clone(),
            };
            return self.fail(error, out);
        };
        if let Some(usage) = self.usage.take() {
            out.push_back(Ok(StreamEvent::Usage(usage)));
        }
        if reason == FinishReason::Stop && !self.saw_content {
            let error = LlmError::EmptyResponse {
                request_id: self.request_id.clone(),
            };
            return self.fail(error, out);
        }
        out.push_back(Ok(StreamEvent::Finish { reason }));
        self.terminated = true;
    }

    fn fail(&mut self, error: LlmError, out: &mut VecDeque<Item>) {
        out.push_back(Err(error));
        self.terminated = true;
    }

    /// An error the server reported inside a 200 stream (`{"error": {...}}` or `event: error`).
    fn stream_error(&self, data: &str) -> LlmError {
        LlmError::Server(HttpFailure {
            status: 200,
            message: format!("error in stream: {}", error_message(data)),
            retry_after_ms: None,
            request_id: self.request_id.clone(),
        })
    }
}

/// The provider's message in an OpenAI-style error body (`{"error": {"message": …}}`), else the
/// start of the body itself.
pub(crate) fn error_message(body: &str) -> String {
    #[derive(Deserialize)]
    struct ErrorBody {
        error: Option<ErrorObject>,
        message: Option<String>,
    }
    #[derive(Deserialize)]
    struct ErrorObject {
        message: Option<String>,
    }
    let parsed = serde_json::from_str::<ErrorBody>(body)
        .ok()
        .and_then(|body| body.error.and_then(|error| error.message).or(body.message));
    parsed.unwrap_or_else(|| excerpt(body.trim()))
}

/// The first 300 characters of `text`, marked when cut: enough evidence without flooding logs.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX_CHARS: usize = 300;
    match text.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[derive(Deserialize)]
struct ChunkWire {
    #[serde(default)]
    choices: Vec<ChoiceWire>,
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct ChoiceWire {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<DeltaWire>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct DeltaWire {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDeltaWire>>,
}

#[derive(Deserialize)]
struct ToolCallDeltaWire {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDeltaWire>,
}

#[derive(Deserialize)]
struct FunctionDeltaWire {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct UsageWire {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    prompt_cache_miss_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetailsWire>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetailsWire>,
}

#[derive(Deserialize)]
struct PromptDetailsWire {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetailsWire {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl UsageWire {
    fn into_usage(self) -> Usage {
        let cached = self.prompt_tokens_details.and_then(|d| d.cached_tokens);
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            prompt_cache_hit_tokens: self.prompt_cache_hit_tokens.or(cached),
            prompt_cache_miss_tokens: self.prompt_cache_miss_tokens,
            reasoning_tokens: self
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens),
        }
    }
}

#[cfg(test)]
mod tests;
