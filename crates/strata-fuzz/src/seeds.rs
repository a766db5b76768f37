//! The seed corpus: each target's inputs built from the repository's fixtures, examples and
//! golden logs, in the input format of that target (a leading mode byte, fields split the way
//! the harness splits them). `strata-fuzz-seeds` writes them to `fuzz/corpus/<target>/`.

use std::path::Path;

use strata_core::Checkpoint;
use strata_format::checkpoint::{encode as encode_checkpoint, fnv64};
use strata_format::{checkpoint::Evidence, JsonlReader, ReaderOptions};

use crate::checkpoint::{base, BASE_LOG};

/// A named seed input.
pub type Seed = (String, Vec<u8>);

/// The V3 and V4 logs the repository ships (relative to its root).
const V3_LOGS: &[&str] = &[
    "examples/sample.v3.jsonl",
    "examples/sample.v4.jsonl",
    "crates/strata-store/tests/golden/v3-every-type.jsonl",
];

/// The largest fixture file taken as a seed: small seeds fuzz fast.
const MAX_SEED_LEN: usize = 16 * 1024;

fn read(root: &Path, path: &str) -> Option<Vec<u8>> {
    std::fs::read(root.join(path)).ok()
}

fn v3_logs(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut logs: Vec<_> = V3_LOGS
        .iter()
        .filter_map(|path| {
            let name = Path::new(path).file_name()?.to_string_lossy().into_owned();
            Some((name, read(root, path)?))
        })
        .collect();
    // Short prefixes too: a log cut after its header and a few rows.
    let prefixes: Vec<_> = logs
        .iter()
        .flat_map(|(name, log)| {
            [2_usize, 6, 24].map(|n_lines| {
                let end = log
                    .iter()
                    .enumerate()
                    .filter(|(_, byte)| **byte == b'\n')
                    .nth(n_lines - 1)
                    .map_or(log.len(), |(at, _)| at + 1);
                (format!("{name}.{n_lines}-lines"), log[..end].to_vec())
            })
        })
        .collect();
    logs.extend(prefixes);
    logs
}

fn with_mode(mode: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 1);
    out.push(mode);
    out.extend_from_slice(bytes);
    out
}

fn legacy_logs(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut logs = Vec::new();
    for dir in ["fixtures/v0/rules", "fixtures/v0/generated"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .filter_map(|entry| Some(entry.ok()?.path()))
            .collect();
        paths.sort();
        for path in paths {
            if path.extension().is_some_and(|ext| ext == "jsonl") {
                if let Ok(bytes) = std::fs::read(&path) {
                    if bytes.len() <= MAX_SEED_LEN {
                        let name = path.file_name().unwrap_or_default().to_string_lossy();
                        logs.push((name.into_owned(), bytes));
                    }
                }
            }
        }
    }
    logs
}

/// The seeds of `target`, built from the repository at `root`.
pub fn corpus(target: &str, root: &Path) -> Vec<Seed> {
    match target {
        "line_codec" | "accept" => v3_logs(root)
            .into_iter()
            .flat_map(|(name, log)| {
                [(5_u8, "4k"), (2, "3b")]
                    .map(|(mode, chunk)| (format!("{name}.{chunk}"), with_mode(mode, &log)))
            })
            .collect(),
        "legacy" => legacy_logs(root)
            .into_iter()
            .map(|(name, log)| (name, with_mode(0, &log)))
            .collect(),
        "zstd_log" => v3_logs(root)
            .into_iter()
            .flat_map(|(name, log)| zstd_seeds(&name, &log))
            .collect(),
        "sqlite_rows" => v3_logs(root)
            .into_iter()
            .map(|(name, log)| (name, sqlite_seed(&log)))
            .collect(),
        "sse" => sse_seeds(),
        "model_script" => [
            "crates/strata-cli/src/demo/script.json",
            "crates/strata-agent/scripts/demo.json",
        ]
        .iter()
        .filter_map(|path| {
            let name = Path::new(path).file_name()?.to_string_lossy().into_owned();
            Some((name, read(root, path)?))
        })
        .collect(),
        "checkpoint" => checkpoint_seeds(),
        "offset_index" => offset_index_seeds(),
        _ => Vec::new(),
    }
}

/// A log as harness-framed plaintext (header frame, then frames of 8 lines, the last torn in
/// one seed), and as a real zstd file of one frame.
fn zstd_seeds(name: &str, log: &[u8]) -> Vec<Seed> {
    let mut framed = Vec::new();
    for (index, line) in log.split_inclusive(|byte| *byte == b'\n').enumerate() {
        if index == 1 || (index > 1 && index % 8 == 1) {
            framed.push(0x1e);
        }
        framed.extend_from_slice(line);
    }
    let mut seeds = vec![
        (format!("{name}.framed"), with_mode(1, &framed)),
        (format!("{name}.framed-torn"), with_mode(3, &framed)),
    ];
    if let Ok(mut encoder) = zstd::bulk::Compressor::new(1) {
        let _ = encoder.include_checksum(true);
        if let Ok(frame) = encoder.compress(log) {
            seeds.push((format!("{name}.zstd"), with_mode(0, &frame)));
        }
    }
    seeds
}

/// A log's rows in the SQLite harness's row format (the header line dropped).
fn sqlite_seed(log: &[u8]) -> Vec<u8> {
    let Ok(mut reader) = JsonlReader::new(log, ReaderOptions::default()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for row in reader.by_ref().flatten() {
        let value = row.event.to_value();
        let field = |key: &str| value.get(key).map(|value| value.to_string());
        let text = |key: &str| match value.get(key) {
            Some(serde_json::Value::String(text)) => text.clone(),
            _ => String::new(),
        };
        if !out.is_empty() {
            out.push(b'\n');
        }
        let columns = [
            Some(text("type")),
            field("time"),
            field("data"),
            field("sourceEventSeqs"),
            field("surfaceOp"),
            value.get("ignorable").map(|_| "\u{4}1".to_owned()),
        ];
        let cells: Vec<String> = columns
            .into_iter()
            .map(|cell| cell.unwrap_or_else(|| "\u{3}".to_owned()))
            .collect();
        out.extend_from_slice(cells.join("\t").as_bytes());
    }
    out
}

fn chunk(delta: &str, finish: &str) -> String {
    format!(
        "data: {{\"id\":\"2f8a\",\"object\":\"chat.completion.chunk\",\"model\":\"deepseek-reasoner\",\
         \"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
    )
}

/// SSE bodies as DeepSeek sends them: text, reasoning, tool calls, usage, keep-alives, an error
/// object, a body cut before `[DONE]`.
fn sse_seeds() -> Vec<Seed> {
    let usage = "data: {\"id\":\"2f8a\",\"choices\":[],\"usage\":{\"prompt_tokens\":64,\
                 \"completion_tokens\":20,\"total_tokens\":84,\"prompt_cache_hit_tokens\":0,\
                 \"prompt_cache_miss_tokens\":64,\"completion_tokens_details\":\
                 {\"reasoning_tokens\":5}}}\n\n";
    let text = [
        chunk("{\"role\":\"assistant\",\"content\":\"\"}", "null"),
        ": keep-alive\n\n".to_owned(),
        chunk("{\"reasoning_content\":\"Think \\u00e9\"}", "null"),
        chunk("{\"content\":\"Hello\"}", "null"),
        chunk("{\"content\":\" world\"}", "\"stop\""),
        usage.to_owned(),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let tools = [
        chunk("{\"role\":\"assistant\",\"content\":\"\"}", "null"),
        chunk(
            "{\"tool_calls\":[{\"index\":0,\"id\":\"call_0\",\"type\":\"function\",\
             \"function\":{\"name\":\"list_dir\",\"arguments\":\"\"}}]}",
            "null",
        ),
        chunk(
            "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\": \\\".\\\"}\"}}]}",
            "null",
        ),
        chunk(
            "{\"tool_calls\":[{\"index\":1,\"id\":\"call_1\",\"function\":{\"name\":\"read_file\",\
             \"arguments\":\"{}\"}}]}",
            "\"tool_calls\"",
        ),
        usage.to_owned(),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let error = "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\
                 \"code\":\"500\"}}\n\n";
    let cut = [
        chunk("{\"content\":\"partial\"}", "\"length\""),
        "data: {\"id\":\"2f8a\",\"choi".to_owned(),
    ]
    .concat();
    let reads = [7_u8, 64, 1, 3, 100, 127, 2, 9];
    let mut seeds = Vec::new();
    for (name, body) in [
        ("text", text),
        ("tools", tools),
        ("error", error.to_owned()),
        ("cut", cut),
    ] {
        let mut input = reads.to_vec();
        input.extend_from_slice(body.as_bytes());
        seeds.push((name.to_owned(), input.clone()));
        input[0] |= 0x80;
        seeds.push((format!("{name}.broken"), input));
    }
    seeds
}

/// The body line of a record.
fn body(record: &[u8]) -> Vec<u8> {
    record
        .split(|byte| *byte == b'\n')
        .nth(1)
        .unwrap_or_default()
        .to_vec()
}

/// Checkpoint bodies of the base log: the whole log, and prefixes restored on their own.
fn checkpoint_seeds() -> Vec<Seed> {
    let Some(base) = base() else {
        return Vec::new();
    };
    let evidence = |checkpoint: &Checkpoint| Evidence {
        n_events: checkpoint.n_events,
        log_bytes: BASE_LOG.len() as u64,
        last_frame: 0,
        last_offset: 0,
        last_hash: format!("{:016x}", 0),
        header_hash: format!("{:016x}", 1),
        file: Some([1, 2]),
    };
    let mut seeds = Vec::new();
    for n in [base.rows.len(), 1, 5, 17, 40, 80] {
        let Some(rows) = base.rows.get(..n) else {
            continue;
        };
        let restored = strata_core::Session::restore(
            base.header.clone(),
            rows.to_vec(),
            strata_core::SeedOptions::default(),
        );
        let Some(checkpoint) = restored.ok().and_then(|session| session.checkpoint()) else {
            continue;
        };
        let record = encode_checkpoint(base.header.id(), &checkpoint, &evidence(&checkpoint));
        seeds.push((format!("prefix-{n}"), body(&record)));
    }
    seeds
}

/// Index files: valid entries for a raw and a zstd log, one garbage entry, a torn entry.
fn offset_index_seeds() -> Vec<Seed> {
    let entry = |seq: u64, frame: u64, offset: u32| {
        let mut bytes = [0_u8; 20];
        bytes[..8].copy_from_slice(&seq.to_le_bytes());
        bytes[8..16].copy_from_slice(&frame.to_le_bytes());
        bytes[16..].copy_from_slice(&offset.to_le_bytes());
        let check = fnv64(&bytes) as u32;
        let mut out = Vec::with_capacity(16);
        out.extend_from_slice(&frame.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&check.to_le_bytes());
        out
    };
    let raw: Vec<u8> = (0..8)
        .flat_map(|seq| entry(seq, 200 + seq * 90, 0))
        .collect();
    let zstd: Vec<u8> = (0..8)
        .flat_map(|seq| entry(seq, 64, seq as u32 * 90))
        .collect();
    let mut damaged = raw.clone();
    damaged[16 * 3 + 2] ^= 0xff;
    damaged.truncate(damaged.len() - 5);
    vec![
        ("raw".to_owned(), with_mode(1, &raw)),
        ("zstd".to_owned(), with_mode(1, &zstd)),
        ("damaged".to_owned(), with_mode(1, &damaged)),
        ("headerless".to_owned(), with_mode(0, &raw)),
    ]
}
