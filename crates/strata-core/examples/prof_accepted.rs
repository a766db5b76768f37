//! Profiling aid: restore a generated log from its accepted events.
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let reps: usize = std::env::args()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let config = strata_core::synth::SynthConfig {
        events: n,
        ..Default::default()
    };
    let Ok(session) = strata_core::synth::generate(&config) else {
        return;
    };
    let header = session.header().clone();
    let copies: Vec<Vec<_>> = (0..reps)
        .map(|_| session.events().unwrap().to_vec())
        .collect();
    let mut kept = Vec::new();
    let start = std::time::Instant::now();
    for events in copies {
        if let Ok(restored) =
            strata_core::Session::restore(header.clone(), events, Default::default())
        {
            kept.push(restored);
        }
    }
    let elapsed = start.elapsed() / reps as u32;
    eprintln!(
        "{} events, {:?} per restore, {:.0} events/s",
        session.len(),
        elapsed,
        session.len() as f64 / elapsed.as_secs_f64()
    );
}
