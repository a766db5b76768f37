//! The SSE stream decoder of the LLM client (a chat-completion body as a peer sends it).

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use futures_util::Stream;
use strata_agent::llm::{decode_sse_stream, LlmError, StreamEvent};

/// Cuts the body into the reads the decoder sees: byte `i` of the first eight (cycled) is the
/// length of read `i` (0 means 1), so a line, an event or a UTF-8 sequence may be split
/// anywhere. A set top bit of the first byte ends the body with a disconnect error instead of
/// a clean end, as the HTTP client sends it.
fn reads(data: &[u8]) -> (Vec<Result<Vec<u8>, LlmError>>, bool) {
    let (lens, body) = data.split_at(data.len().min(8));
    let broken = lens.first().is_some_and(|first| first & 0x80 != 0);
    let mut items = Vec::new();
    let mut rest = body;
    let mut index = 0;
    while !rest.is_empty() {
        let len = lens
            .get(index % lens.len().max(1))
            .map_or(rest.len(), |len| usize::from(len & 0x7f).max(1));
        let (head, tail) = rest.split_at(len.min(rest.len()));
        items.push(Ok(head.to_vec()));
        rest = tail;
        index += 1;
    }
    if broken {
        items.push(Err(LlmError::StreamDisconnected {
            detail: "fuzz: body broken".into(),
            request_id: None,
        }));
    }
    (items, broken)
}

/// Decodes the body to its end and checks the stream contract (`EventStream`): the stream ends
/// right after an `Ok(Finish)` or an `Err`, and nothing is yielded after it.
pub fn sse(data: &[u8]) {
    let (items, _) = reads(data);
    let mut stream = decode_sse_stream(futures_util::stream::iter(items), Some("fuzz".into()));
    let mut context = Context::from_waker(Waker::noop());
    let mut terminal = false;
    loop {
        // Every read is ready: the decoder never waits here.
        let item = match Pin::new(&mut stream).poll_next(&mut context) {
            Poll::Ready(item) => item,
            Poll::Pending => panic!("the SSE decoder waited on a ready body"),
        };
        let Some(item) = item else {
            break;
        };
        assert!(!terminal, "the SSE decoder yielded after its terminal item");
        terminal = matches!(item, Ok(StreamEvent::Finish { .. }) | Err(_));
    }
    assert!(
        terminal,
        "the SSE stream ended without a Finish or an error"
    );
}
