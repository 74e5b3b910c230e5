//! SSE framing + decode + replay throughput on a generated Chat Completions capture.
//!
//! The capture (about 100 MB of `data: {chat.completion.chunk}` events with small text deltas,
//! the per-event overhead case) is generated in memory; set `REWIND_BENCH_MB` to change its size.
//! Three measurements, each reported in events/s: framing only, framing + protocol decode +
//! the `opencode-fixed` processor (what `rewind replay` does), and the same with the `opencode`
//! processor alongside (what `rewind diagnose` does).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rewind::streams::FileId;
use rewind::streams::Format;
use rewind::streams::{Envelope, Framing, Locator};
use rewind::streams::{Profile, StreamOptions, replay_reader};

fn capture(target: usize) -> (Vec<u8>, u64) {
    let words = [
        "the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog ", "while ",
        "rewind ", "reads ", "every ", "event ",
    ];
    let head = r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1770000000,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"#;
    let mut out = Vec::with_capacity(target + 1024);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(br#""role":"assistant","content":""},"finish_reason":null}]}"#);
    out.extend_from_slice(b"\n\n");
    let mut events = 1u64;
    let mut i = 0;
    while out.len() < target {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(br#""content":""#);
        out.extend_from_slice(words[i % words.len()].as_bytes());
        out.extend_from_slice(br#""},"finish_reason":null}]}"#);
        out.extend_from_slice(b"\n\n");
        events += 1;
        i += 1;
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(br#"},"finish_reason":"stop"}]}"#);
    out.extend_from_slice(b"\n\ndata: [DONE]\n\n");
    (out, events + 2)
}

fn bench(c: &mut Criterion) {
    let mb: usize = std::env::var("REWIND_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let (bytes, events) = capture(mb * 1_000_000);
    let mut g = c.benchmark_group(format!("sse-chat-{mb}MB"));
    g.sample_size(10);
    g.throughput(Throughput::Elements(events));
    g.bench_function("framing", |b| {
        b.iter(|| {
            let mut f = Framing::new(Envelope::Sse);
            let mut n = 0u64;
            for chunk in bytes.chunks(64 * 1024) {
                let _ = f.feed(chunk, &mut |p| {
                    n += p.data.len() as u64;
                    Ok(())
                });
            }
            let _ = f.finish(&mut |_| Ok(()));
            black_box(n)
        })
    });
    for (name, profiles) in [
        (
            "framing+decode+replay (opencode-fixed)",
            vec![Profile::OpencodeFixed],
        ),
        (
            "framing+decode+replay (opencode-fixed and opencode)",
            vec![Profile::OpencodeFixed, Profile::Opencode],
        ),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let options = StreamOptions::new(Format::Sse, profiles.clone());
                let units =
                    replay_reader(&bytes[..], Envelope::Sse, Locator::File(FileId(0)), options);
                black_box(units.map(|u| u.len()).unwrap_or(0))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
