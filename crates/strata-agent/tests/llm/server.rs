//! A minimal HTTP/1.1 test server: each request gets the next scripted [`Reply`], whose body
//! is sent piece by piece, with pauses, stalls and abrupt disconnects on demand.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use strata_agent::llm::{ChatMessage, ChatRequest, LlmConfig};
use tokio::net::TcpListener;

/// One piece of a response body.
#[derive(Debug, Clone)]
pub enum Part {
    /// Send these bytes as one write.
    Bytes(String),
    /// Wait before the next part.
    Pause(Duration),
    /// Send nothing more, keep the connection open.
    Stall,
    /// Drop the connection without finishing the chunked body.
    Abort,
}

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    /// Wait this long before sending the response head.
    pub head_delay: Duration,
    pub parts: Vec<Part>,
}

impl Reply {
    /// A 200 event stream.
    pub fn sse(parts: Vec<Part>) -> Reply {
        Reply {
            status: 200,
            headers: vec![
                ("content-type", "text/event-stream; charset=utf-8".into()),
                ("x-request-id", "req-ok".into()),
            ],
            head_delay: Duration::ZERO,
            parts,
        }
    }

    /// An error response with a JSON body.
    pub fn error(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type", "application/json".into())],
            head_delay: Duration::ZERO,
            parts: vec![Part::Bytes(body.into())],
        }
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Reply {
        self.headers.push((name, value.into()));
        self
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    pub content_type: Option<String>,
    pub accept: Option<String>,
    pub body: Vec<u8>,
}

/// The running server; stops with the test's runtime.
pub struct TestServer {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl TestServer {
    /// Starts a server answering requests with `replies` in order (then 500s).
    pub async fn start(replies: Vec<Reply>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let received = Arc::new(Mutex::new(Vec::new()));
        let state = (replies, received.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (replies, received) = state.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        answer(request, replies.clone(), received.clone())
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
            }
        });
        TestServer { addr, received }
    }

    /// A client configuration for this server with short timeouts and exact (jitter-free)
    /// backoff.
    pub fn config(&self) -> LlmConfig {
        let mut config = LlmConfig::new(format!("http://{}/", self.addr), "deepseek-reasoner");
        config.api_key = Some("sk-test".into());
        config.connect_timeout = Duration::from_secs(2);
        config.first_byte_timeout = Duration::from_secs(5);
        config.idle_timeout = Duration::from_secs(5);
        config.max_retries = 3;
        config.backoff.initial = Duration::from_millis(5);
        config.backoff.max = Duration::from_secs(1);
        config.backoff.jitter = 0.0;
        config
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

type Body = StreamBody<
    std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Send>,
    >,
>;

async fn answer(
    request: Request<Incoming>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
) -> Result<Response<Body>, Infallible> {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let mut seen = Received {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        accept: header("accept"),
        body: Vec::new(),
    };
    seen.body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(_) => Vec::new(),
    };
    received.lock().unwrap().push(seen);
    let reply = replies.lock().unwrap().pop_front().unwrap_or_else(|| {
        Reply::error(
            500,
            r#"{"error":{"message":"test server has no reply left"}}"#,
        )
    });
    if !reply.head_delay.is_zero() {
        tokio::time::sleep(reply.head_delay).await;
    }
    let frames = stream::unfold(VecDeque::from(reply.parts), |mut parts| async move {
        loop {
            match parts.pop_front()? {
                Part::Bytes(text) => return Some((Ok(Frame::data(Bytes::from(text))), parts)),
                Part::Pause(delay) => tokio::time::sleep(delay).await,
                Part::Stall => futures_util::future::pending::<()>().await,
                Part::Abort => {
                    let error = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "abort");
                    return Some((Err(error), VecDeque::new()));
                }
            }
        }
    });
    let body: Body = StreamBody::new(Box::pin(frames));
    let mut response = Response::builder().status(reply.status);
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    Ok(response.body(body).unwrap())
}

/// `data: <json>\n\n`.
pub fn data(json: &str) -> Part {
    Part::Bytes(format!("data: {json}\n\n"))
}

/// A chunk with one delta for choice 0, as DeepSeek frames it.
pub fn delta(delta: &str) -> Part {
    data(&format!(
        r#"{{"id":"2f8a","object":"chat.completion.chunk","created":1767225600,"model":"deepseek-reasoner","system_fingerprint":"fp_1","choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null}}]}}"#
    ))
}

/// The role chunk DeepSeek sends first.
pub fn role() -> Part {
    delta(r#"{"role":"assistant","content":null,"reasoning_content":""}"#)
}

/// The chunk carrying the finish reason.
pub fn finish(reason: &str) -> Part {
    data(&format!(
        r#"{{"id":"2f8a","object":"chat.completion.chunk","created":1767225600,"model":"deepseek-reasoner","system_fingerprint":"fp_1","choices":[{{"index":0,"delta":{{"content":""}},"logprobs":null,"finish_reason":"{reason}"}}]}}"#
    ))
}

/// The final usage chunk, with empty choices.
pub fn usage() -> Part {
    data(
        r#"{"id":"2f8a","object":"chat.completion.chunk","created":1767225600,"model":"deepseek-reasoner","system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":64,"completion_tokens":40,"total_tokens":104,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":12},"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":64}}"#,
    )
}

pub fn done() -> Part {
    Part::Bytes("data: [DONE]\n\n".into())
}

/// A short successful answer.
pub fn hello_reply() -> Reply {
    Reply::sse(vec![
        role(),
        delta(r#"{"content":"Hello"}"#),
        finish("stop"),
        usage(),
        done(),
    ])
}

/// The request most tests send.
pub fn request() -> ChatRequest {
    ChatRequest::new(
        "deepseek-reasoner",
        vec![
            ChatMessage::system("You are a coding agent."),
            ChatMessage::user("What is in src/?"),
        ],
    )
}
