//! Profiling aid: decode + restore a generated V3 log from JSONL text.
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let reps: usize = std::env::args()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let config = strata_core::synth::SynthConfig {
        events: n,
        ..Default::default()
    };
    let Ok(session) = strata_core::synth::generate(&config) else {
        return;
    };
    let header = session.header().clone();
    let mut text = Vec::new();
    for event in session.events().unwrap() {
        text.extend_from_slice(event.to_json().as_bytes());
        text.push(b'\n');
    }
    drop(session);
    let start = std::time::Instant::now();
    let mut kept = Vec::new();
    for _ in 0..reps {
        let rows = text
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|line| strata_core::RawEvent::from_json_slice(line).ok());
        if let Ok(restored) =
            strata_core::Session::restore(header.clone(), rows, Default::default())
        {
            kept.push(restored);
        }
    }
    let elapsed = start.elapsed() / reps as u32;
    eprintln!(
        "{} bytes, {:?} per restore, {:.1} MB/s",
        text.len(),
        elapsed,
        text.len() as f64 / elapsed.as_secs_f64() / 1e6
    );
}
