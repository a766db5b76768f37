//! Benches for surface replacement on a large surface (target ≤ 50 µs per
//! replace on 100,000 nodes). Each iteration plans and commits a one-node
//! replace of a user message at the head, middle or tail of the surface, so
//! the surface keeps its size; both the endpoint search and the splice are in.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use strata_core::{payload, Candidate, Session, SessionHeader, SurfaceIntent};

fn replace(c: &mut Criterion) {
    let mut group = c.benchmark_group("Session::append/replace");
    for nodes in [100_000_usize] {
        for (label, position) in [("head", 0.0), ("middle", 0.5), ("tail", 0.999_99)] {
            let header = SessionHeader::fresh("bench", 0).expect("header");
            let mut session = Session::create(header).expect("session");
            for k in 0..nodes {
                let message = payload::user_text_message(&format!("m{k}"), "hello");
                session
                    .append(
                        Candidate::surface(
                            payload::UserMessage { message },
                            SurfaceIntent::append(),
                        ),
                        0,
                    )
                    .expect("append");
            }
            let index = ((nodes as f64) * position) as usize;
            let mut k = 0_u64;
            group.bench_function(BenchmarkId::new(label, nodes), |b| {
                b.iter(|| {
                    k += 1;
                    let target = session.surface().nodes()[index];
                    let message = payload::user_text_message(&format!("r{k}"), "summary");
                    let event = session
                        .append(
                            Candidate::surface(
                                payload::UserMessage { message },
                                SurfaceIntent::replace(target, target, vec![target]),
                            ),
                            0,
                        )
                        .expect("replace");
                    black_box(event.seq())
                })
            });
            assert_eq!(session.surface().len(), nodes);
        }
    }
    group.finish();
}

criterion_group!(benches, replace);
criterion_main!(benches);
